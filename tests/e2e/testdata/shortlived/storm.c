/* storm: runs /bin/true over and over, one at a time (posix_spawn, then
   waitpid), for argv[1] seconds, and prints how many it ran. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 1;
  char *args[] = {"/bin/true", NULL};
  long n = 0;
  for (double end = now() + secs; now() < end; n++) {
    pid_t pid;
    if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0) {
      perror("posix_spawn");
      return 1;
    }
    if (waitpid(pid, NULL, 0) < 0) {
      perror("waitpid");
      return 1;
    }
  }
  printf("%ld\n", n);
  return 0;
}
