// Spends its time in libc's qsort: glibc sorts with a merge sort in static
// functions (msort_with_tmp, in msort.c), which only libc's debug file
// names (Debian's libc6-dbg). Runs until killed.
#include <stdlib.h>

#define N 100000

static int cmp(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int main(void) {
	static int v[N];
	unsigned s = 1;
	for (;;) {
		for (int i = 0; i < N; i++) {
			s = s * 1103515245u + 12345u;
			v[i] = (int)(s >> 8);
		}
		qsort(v, N, sizeof v[0], cmp);
	}
}
