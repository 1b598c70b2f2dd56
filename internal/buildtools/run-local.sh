#!/usr/bin/env bash
# `make run`: profile this host with the eBPF receiver and the shipped agent
# pipeline (distributions/otelcol-nexovue/agent.yaml).
#   NEXOVUE_KEY set:   profiles go to nexovue (or NEXOVUE_ENDPOINT).
#   NEXOVUE_KEY unset: profiles go to a local ingest on NEXOVUE_LOCAL_INGEST
#                      (127.0.0.1:4319; the project's nexovue ingest double)
#                      that prints the busiest services and their hottest
#                      functions every 10 seconds.
# The local profile view (exporter/profileviewexporter: flame graph, top,
# source, pprof downloads) is on without a key and off with one unless
# NEXOVUE_VIEW=1 (NEXOVUE_VIEW=0 turns it off); it listens on
# NEXOVUE_VIEW_ENDPOINT (127.0.0.1:4390) and its URL is the first line shown.
# NEXOVUE_RUN_DIR (_build/run) holds the queue and the logs; the agent's own
# ports are NEXOVUE_HEALTH_ENDPOINT (127.0.0.1:13133) and NEXOVUE_METRICS_PORT
# (8888, on NEXOVUE_METRICS_HOST 127.0.0.1); OTELCOL_NEXOVUE_BIN is the binary
# (_build/otelcol-nexovue). Stop with Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/_build
bin=${OTELCOL_NEXOVUE_BIN:-$build/otelcol-nexovue}
config=$root/distributions/otelcol-nexovue/agent.yaml
rundir=${NEXOVUE_RUN_DIR:-$build/run}
ingest_addr=${NEXOVUE_LOCAL_INGEST:-127.0.0.1:4319}
view=${NEXOVUE_VIEW:-}
[ -n "$view" ] || { [ -n "${NEXOVUE_KEY:-}" ] && view=0 || view=1; }
export NEXOVUE_VIEW_ENDPOINT=${NEXOVUE_VIEW_ENDPOINT:-127.0.0.1:4390}
configs=(--config "$config")
[ "$view" = 1 ] && configs+=(--config "$root/internal/buildtools/run-view.yaml")
mkdir -p "$rundir"

say() { printf '\n== %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
	say "The eBPF profiler watches every process from the kernel: run this as root (sudo -E make run)."
	exit 1
fi
if [ "$view" = 1 ]; then
	printf 'Profile view: http://%s/  (flame graphs of the last 5 minutes, once the collector has started)\n' "$NEXOVUE_VIEW_ENDPOINT" >&2
fi

if [ ! -e /sys/kernel/tracing/events ]; then
	say "Mounting tracefs at /sys/kernel/tracing (the eBPF profiler needs it)."
	mount -t tracefs none /sys/kernel/tracing
fi

export NEXOVUE_STORAGE_DIR=${NEXOVUE_STORAGE_DIR:-$rundir/file_storage}
export NEXOVUE_HEALTH_ENDPOINT=${NEXOVUE_HEALTH_ENDPOINT:-127.0.0.1:13133}
export NEXOVUE_METRICS_HOST=${NEXOVUE_METRICS_HOST:-127.0.0.1}

# Stopping: the collector first (its last requests reach the ingest), then
# the ingest (it prints what it accepted), then whatever is left.
pids=()
cleanup() {
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null || true
		wait "${pids[i]}" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# The collector's log always goes to a file, so that its last lines can be
# read back when it exits; with a key it is also shown as it is written.
log=$rundir/collector.log
show_log=
if [ -n "${NEXOVUE_KEY:-}" ]; then
	say "Sending this host's profiles to ${NEXOVUE_ENDPOINT:-https://ingest.nexovue.com} with your NEXOVUE_KEY. Collector log: below, and in $log."
	show_log=1
else
	(cd "$root" && go build -o "$build/nexovue-ingest" ./tests/ingest/cmd/nexovue-ingest)
	export NEXOVUE_ENDPOINT=http://$ingest_addr
	export NEXOVUE_KEY=local-preview
	# The ingest's output goes through a file so that this script can tell it
	# listens before the collector starts sending to that address.
	ingest_out=$rundir/ingest.out
	: >"$ingest_out"
	"$build/nexovue-ingest" -listen "$ingest_addr" -print-top 10s >"$ingest_out" 2>&1 &
	ingest=$!
	pids+=($ingest)
	listening() { grep -q '^nexovue-ingest: listening on' "$ingest_out"; }
	for _ in $(seq 1 100); do # at most 10 s
		listening || ! kill -0 "$ingest" 2>/dev/null && break
		sleep 0.1
	done
	if ! listening; then
		cat "$ingest_out" >&2
		say "The local ingest could not start on $ingest_addr (above), so the collector was not started.
   If another program holds that port, use another:  NEXOVUE_LOCAL_INGEST=127.0.0.1:4329 make run"
		exit 1
	fi
	# Not in pids: it ends by itself once the ingest has printed its last line.
	tail -n +1 -f --pid="$ingest" "$ingest_out" &
	say "NEXOVUE_KEY is not set, so profiles go to a local ingest on $ingest_addr that prints
   this host's busiest services and their hottest functions every 10 seconds.
   To send them to nexovue instead:  NEXOVUE_KEY=<your ingest key> make run
   Collector log: $log"
fi

# Where the process may not raise RLIMIT_MEMLOCK (no CAP_SYS_RESOURCE), the
# profiling receiver itself copes on Linux 5.11+ and logs one line saying so
# (receiver/profilingreceiver/internal/memlock); on older kernels it stops and
# says which capability to grant.
# The log exists before the collector starts: the collector's shell opens it
# (>>) only after the fork, and `tail -f` below, started at once, gives up on
# a file that is not there yet.
: >>"$log"
logged=$(stat -c %s "$log") # what earlier runs appended
"$bin" "${configs[@]}" --feature-gates=service.profilesSupport >>"$log" 2>&1 &
collector=$!
pids+=($collector)
if [ -n "$show_log" ]; then
	# Not in pids, like the ingest's: it ends once the collector has.
	tail -c "+$((logged + 1))" -f --pid="$collector" "$log" >&2 &
	shown=$!
fi
status=0
wait "$collector" || status=$?
last=$(tail -n 20 "$log")
if [ -n "$show_log" ]; then
	wait "$shown" || true # until its last lines are on screen
fi
say "The collector exited with status $status; its log: $log"
[ -n "$show_log" ] || printf '%s\n' "$last" >&2
if grep -q 'address already in use' <<<"$last"; then
	say "A port the collector listens on is taken (above). Choose others with
   NEXOVUE_HEALTH_ENDPOINT (now $NEXOVUE_HEALTH_ENDPOINT), NEXOVUE_METRICS_PORT (now ${NEXOVUE_METRICS_PORT:-8888})
   and NEXOVUE_VIEW_ENDPOINT (now $NEXOVUE_VIEW_ENDPOINT)."
fi
exit "$status"
