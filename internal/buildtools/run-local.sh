#!/usr/bin/env bash
# `make run`: profile this host with the eBPF receiver and the shipped agent
# pipeline (distributions/otelcol-nexovue/agent.yaml).
#   NEXOVUE_KEY set:   profiles go to nexovue (or NEXOVUE_ENDPOINT).
#   NEXOVUE_KEY unset: profiles go to a local ingest on 127.0.0.1:4319 (the
#                      project's nexovue ingest double) that prints the busiest
#                      services and their hottest functions every 10 seconds.
# Stop with Ctrl-C.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/_build
bin=$build/otelcol-nexovue
config=$root/distributions/otelcol-nexovue/agent.yaml
rundir=$build/run
mkdir -p "$rundir"

say() { printf '\n== %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
	say "The eBPF profiler watches every process from the kernel: run this as root (sudo -E make run)."
	exit 1
fi
if [ ! -e /sys/kernel/tracing/events ]; then
	say "Mounting tracefs at /sys/kernel/tracing (the eBPF profiler needs it)."
	mount -t tracefs none /sys/kernel/tracing
fi

export NEXOVUE_STORAGE_DIR=${NEXOVUE_STORAGE_DIR:-$rundir/file_storage}
export NEXOVUE_HEALTH_ENDPOINT=${NEXOVUE_HEALTH_ENDPOINT:-127.0.0.1:13133}
export NEXOVUE_METRICS_HOST=${NEXOVUE_METRICS_HOST:-127.0.0.1}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM

log=$rundir/collector.log
if [ -n "${NEXOVUE_KEY:-}" ]; then
	say "Sending this host's profiles to ${NEXOVUE_ENDPOINT:-https://ingest.nexovue.com} with your NEXOVUE_KEY. Collector log: below."
	log=/dev/stderr
else
	(cd "$root" && go build -o "$build/nexovue-ingest" ./tests/ingest/cmd/nexovue-ingest)
	export NEXOVUE_ENDPOINT=http://127.0.0.1:4319
	export NEXOVUE_KEY=local-preview
	"$build/nexovue-ingest" -listen 127.0.0.1:4319 -print-top 10s &
	pids+=($!)
	say "NEXOVUE_KEY is not set, so profiles go to a local ingest on 127.0.0.1:4319 that prints
   this host's busiest services and their hottest functions every 10 seconds.
   To send them to nexovue instead:  NEXOVUE_KEY=<your ingest key> make run
   Collector log: $log"
fi

# Where the process may not raise RLIMIT_MEMLOCK (no CAP_SYS_RESOURCE), the
# profiling receiver itself copes on Linux 5.11+ and logs one line saying so
# (receiver/profilingreceiver/internal/memlock); on older kernels it stops and
# says which capability to grant.
"$bin" --config "$config" --feature-gates=service.profilesSupport >>"$log" 2>&1 &
collector=$!
pids+=($collector)
status=0
wait "$collector" || status=$?
say "The collector exited with status $status; its log: $log"
tail -n 20 "$log" >&2 || true
exit "$status"
