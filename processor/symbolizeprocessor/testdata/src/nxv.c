// A small program for the symbolize processor's tests: named functions
// (one static, so only in .symtab), one with a Rust legacy and one with a
// Rust v0 mangled name (asm labels), and a main that sleeps until killed
// when given "wait", so that the test has a process mapping it.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) int nxv_leaf(int n) {
	volatile int x = n;
	for (int i = 0; i < n; i++) x += i * 3;
	return x;
}

__attribute__((noinline)) static int nxv_middle(int n) {
	return nxv_leaf(n) + 1;
}

__attribute__((noinline, used)) int nxv_rust_legacy(int n) __asm__("_ZN7nxvrust4burn17h0123456789abcdefE");
int nxv_rust_legacy(int n) { return nxv_middle(n) * 2; }

__attribute__((noinline, used)) int nxv_rust_v0(int n) __asm__("_RNvCs1234_7nxvrust3hot");
int nxv_rust_v0(int n) { return nxv_rust_legacy(n) - 1; }

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		for (;;) pause();
	}
	return nxv_rust_v0(argc) & 1;
}
