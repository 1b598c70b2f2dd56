#include <stdio.h>
#include <string.h>
#define F(n) \
  static long f##n(const char *s, long k) { long a[64]; memset(a, 0, sizeof a); \
    for (long i = 0; s[i]; i++) { a[(s[i] * (n + 3) + k) & 63] += i ^ k; \
      if (a[i & 63] > 1000) a[(i * 7) & 63] -= a[i & 63] / 3; } \
    long r = 0; for (int i = 0; i < 64; i++) r = r * 31 + a[i] * (n + 1); return r; }
#define G(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
G(1) G(2) G(3) G(4) G(5) G(6)
int main(int argc, char **argv) {
  const char *s = argc > 1 ? argv[1] : "x";
  long r = f10(s, 1) + f25(s, 2) + f37(s, 3) + f49(s, 4) + f51(s, 5) + f69(s, 6);
  printf("%ld\n", r);
  return 0;
}
