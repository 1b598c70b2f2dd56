/* The language coverage test's C program: burns CPU in nxv_hot for the number
 * of seconds given as its argument. Built with -g by the test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile uint64_t sink;

__attribute__((noinline)) uint64_t nxv_hot(int n) {
	uint64_t x = 1;
	for (int i = 0; i < n; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: burn SECONDS\n");
		return 2;
	}
	time_t end = time(NULL) + atoi(argv[1]);
	while (time(NULL) < end) {
		sink += nxv_hot(1000000);
	}
	return 0;
}
