#!/bin/bash
# background.sh low|idle PID...: the CPU priority of make test's background
# builds (kube-apiserver, the small Windows binary, the type-check, go tool
# pprof), each PID with every process and thread under it.
#   low   SCHED_OTHER at nice 19: it gets ~1.5% of a CPU that a task at
#         nice 0 wants, and the rest of the machine's idle time.
#   idle  SCHED_IDLE: it runs only when no other task wants the CPU, and a
#         task that wakes up takes the CPU from it at once. make test sets
#         it while the tests whose figures are timings and rates run: beside
#         a cold kube-apiserver build at idle priority the fleets read
#         96.2/96.2/95.8% of the limit, as alone; in a whole cold make test
#         (all the builds at idle priority) 93.4/95.9/95.9%; beside builds
#         at nice 19 the fleet with Retry-After read 93.5% and 90.7%.
# chrt keeps each thread's nice value: the builds are started at nice 19.
# Processes the builds start later (the go command's compilers and linker)
# inherit the policy of the thread that starts them. A process that ends
# between listing and setting is skipped; the list is walked twice, for the
# processes started in between.
set -u
mode=${1:-}
shift || true
case $mode in
low) policy=(--other 0) ;;
idle) policy=(--idle 0) ;;
*)
	echo "usage: background.sh low|idle PID..." >&2
	exit 2
	;;
esac
chrt --idle 0 true 2>/dev/null || exit 0 # no SCHED_IDLE here: leave them at nice 19

tree() {
	local p
	for p in "$@"; do
		echo "$p"
		tree $(pgrep -P "$p")
	done
}

for _ in 1 2; do
	for p in $(tree "$@"); do
		chrt --all-tasks --pid "${policy[@]}" "$p" >/dev/null 2>&1
	done
done
exit 0
