// A program for the DWARF tests of the symbolize processor (and the
// end-to-end test): a hot function that gcc -O2 inlines into its caller,
// which is not inlined. With "wait" it prints "ready" and sleeps until
// killed (the unit tests need a process mapping it); with "for N" it burns
// CPU in the inlined function for N ms, then exits (a short-lived process); otherwise it burns CPU there until killed (the
// profiler's samples land there).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long nxv_sink;
#ifdef NXV_OTHER
unsigned long nxv_other = NXV_OTHER; /* another build id */
#endif

static inline unsigned long nxv_inl_hot(unsigned long x) {
	for (int i = 0; i < 4096; i++) {
		x = x * 6364136223846793005UL + 1442695040888963407UL;
		x ^= x >> 13;
	}
	return x;
}

__attribute__((noinline)) void nxv_inl_caller(unsigned long n) {
	unsigned long x = nxv_sink;
	for (unsigned long i = 0; i < n; i++) {
		x = nxv_inl_hot(x);
		nxv_sink = x;
	}
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		for (;;) pause();
	}
	if (argc > 2 && strcmp(argv[1], "for") == 0) {
		struct timespec start, now;
		clock_gettime(CLOCK_MONOTONIC, &start);
		do {
			nxv_inl_caller(100);
			clock_gettime(CLOCK_MONOTONIC, &now);
		} while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 < atol(argv[2]));
		return 0;
	}
	for (;;) nxv_inl_caller(1000);
	return 0;
}
