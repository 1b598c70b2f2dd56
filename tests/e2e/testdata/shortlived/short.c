/* short: a short-lived native program. It spends 30 ms of CPU time in
   nxv_short_work, then exits. NXV_ID (-DNXV_ID=n) makes each build's code,
   and so its build ID, its own. */
#include <stdio.h>
#include <time.h>

#ifndef NXV_ID
#define NXV_ID 0
#endif

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long nxv_short_work(double secs) {
  unsigned long x = NXV_ID + 1;
  double end = cpu_seconds() + secs;
  while (cpu_seconds() < end)
    for (int i = 0; i < 10000; i++)
      x = x * 6364136223846793005UL + 1442695040888963407UL + NXV_ID;
  return x;
}

int main(void) {
  printf("%lu\n", nxv_short_work(0.030));
  return 0;
}
