#!/usr/bin/env bash
# make bench-profile: CPU profiles (perf) of the shipped agent and of the plain
# upstream pipeline, side by side on this host, and where their CPU goes
# (tests/bench/cmd/perfattr). Two agents of ours run beside one plain, so that
# the two of ours show how far identical agents differ over the same window.
#
#   tests/bench/profile-agents.sh BINARY OUT_DIR [WINDOW_SECONDS [STAT_SECONDS]]
#
# BINARY must keep its symbols (make build LDFLAGS=): perf names functions
# from the ELF symbol table, which `make build` strips. Needs root, perf and
# what the eBPF receiver needs. The setting mirrors BENCHMARKS.md section 2:
# 20 busy processes (tests/bench/testdata/benchload, busy 4% of every 100 ms,
# half with OTEL_SERVICE_NAME), each agent exporting to an ingest double of
# its own (tests/ingest/cmd/nexovue-ingest), profiled after a minute.
set -euo pipefail

bin=${1:?usage: $0 BINARY OUT_DIR [WINDOW_SECONDS [STAT_SECONDS]]}
out=${2:?usage: $0 BINARY OUT_DIR [WINDOW_SECONDS [STAT_SECONDS]]}
window=${3:-600}
stat=${4:-120}
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v perf >/dev/null || { echo "profile-agents: perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
if ! go tool nm "$bin" 2>/dev/null | grep -q ' T main.main$'; then
	echo "profile-agents: $bin has no symbol table; build it with: make build LDFLAGS=" >&2
	exit 1
fi
command -v setpriv >/dev/null || { echo "profile-agents: setpriv is not installed (apt-get install util-linux)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
# Everything this script starts ends with it, however it ends: each child
# gets SIGKILL when the script dies (setpriv --pdeathsig, even on SIGKILL of
# the script), the script kills them on exit, on SIGTERM (timeout) and on
# SIGINT (Ctrl-C), and the busy processes end by themselves a few minutes
# after the planned run (-for). Waits are `wait`, so a signal acts at once.
life=$((60 + 60 + stat + window + 300))s
own() { exec setpriv --pdeathsig KILL -- "$@"; } # only as `own cmd &`: the background subshell becomes cmd
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

(cd "$root" && go build -o "$work/benchload" ./tests/bench/testdata/benchload && go build -o "$work/ingest" ./tests/ingest/cmd/nexovue-ingest)

for i in $(seq 1 20); do
	if ((i % 2)); then
		OTEL_SERVICE_NAME=bench-busy-$i own "$work/benchload" -for "$life" -duty 0.04 busy "$i" &
	else
		own "$work/benchload" -for "$life" -duty 0.04 busy "$i" &
	fi
	pids+=($!)
done

# Loopback ports: an ingest double, health_check and metrics per agent,
# below the kernel's ephemeral range (32768 up) like the tests' ports.
base=$((10000 + RANDOM % 20000))
port() { echo $((base + $1)); }
start_ingest() { # $1: index
	own "$work/ingest" -listen "127.0.0.1:$(port "$1")" -print-top 0 >"$out/ingest-$1.log" 2>&1 &
	pids+=($!)
}
agents=(ours-1 ours-2 plain)
declare -A agent_pid metrics_port
for n in 0 1 2; do
	start_ingest "$n"
	metrics_port[${agents[$n]}]=$(port $((20 + n)))
done
for n in 0 1; do
	mkdir -p "$work/storage-$n"
	NEXOVUE_KEY=bench NEXOVUE_ENDPOINT="http://127.0.0.1:$(port $n)" NEXOVUE_STORAGE_DIR="$work/storage-$n" \
		NEXOVUE_HEALTH_ENDPOINT="127.0.0.1:$(port $((10 + n)))" NEXOVUE_METRICS_HOST=127.0.0.1 NEXOVUE_METRICS_PORT="${metrics_port[${agents[$n]}]}" \
		own "$bin" --config "$root/distributions/otelcol-nexovue/agent.yaml" --feature-gates=service.profilesSupport >"$out/${agents[$n]}.log" 2>&1 &
	agent_pid[${agents[$n]}]=$!
	pids+=($!)
done
BENCH_PLAIN_ENDPOINT="http://127.0.0.1:$(port 2)" BENCH_PLAIN_KEY=bench BENCH_PLAIN_METRICS_HOST=127.0.0.1 BENCH_PLAIN_METRICS_PORT="${metrics_port[plain]}" \
	own "$bin" --config "$root/tests/bench/testdata/plain-agent.yaml" --feature-gates=service.profilesSupport >"$out/plain.log" 2>&1 &
agent_pid[plain]=$!
pids+=($!)

# Each agent answers on its metrics port once its pipelines run.
for a in "${agents[@]}"; do
	p=${metrics_port[$a]}
	for _ in $(seq 1 60); do
		curl -sf "http://127.0.0.1:$p/metrics" >/dev/null && break
		kill -0 "${agent_pid[$a]}" 2>/dev/null || { echo "profile-agents: $a exited; see $out/$a.log" >&2; exit 1; }
		sleep 1 & wait $!
	done
	curl -sf "http://127.0.0.1:$p/metrics" >/dev/null || { echo "profile-agents: $a not ready in a minute; see $out/$a.log" >&2; exit 1; }
done
echo "profile-agents: agents ready; a minute of warm-up (the start-up scan), ${stat}s under perf stat, then ${window}s under perf record"
sleep 60 & wait $!

# First the agents' CPU and context switches, without the profiler (perf
# record's sampling costs each agent CPU of its own), then their profiles.
stats=()
for a in "${agents[@]}"; do
	own perf stat -x, -e task-clock,context-switches -p "${agent_pid[$a]}" -o "$out/$a.stat" -- sleep "$stat" &
	stats+=($!)
	pids+=($!)
done
wait "${stats[@]}"
perfs=()
for a in "${agents[@]}"; do
	own perf record -q -F 499 --call-graph fp -p "${agent_pid[$a]}" -o "$out/$a.data" -- sleep "$window" &
	perfs+=($!)
	pids+=($!)
done
wait "${perfs[@]}"
{
	echo "Without the profiler, over ${stat}s (perf stat): CPU s per minute, context switches per second"
	echo
	for a in "${agents[@]}"; do
		awk -F, -v a="$a" -v s="$stat" '$3 == "task-clock" { cpu = $1 } $3 == "context-switches" { cs = $1 }
			END { printf "- %s: %.3f CPU s/min, %.1f context switches/s\n", a, cpu / 1000 / (s / 60), cs / s }' "$out/$a.stat"
	done
	echo
	echo "Profiles over ${window}s (perf record -F 499 --call-graph fp):"
	echo
} | tee "$out/summary.md"
for a in "${agents[@]}"; do
	perf script -i "$out/$a.data" >"$out/$a.txt" 2>/dev/null
done
(cd "$root" &&
	go run ./tests/bench/cmd/perfattr -a "ours-1=$out/ours-1.txt" -b "plain=$out/plain.txt" &&
	echo && go run ./tests/bench/cmd/perfattr -a "ours-2=$out/ours-2.txt" -b "plain=$out/plain.txt" &&
	echo && go run ./tests/bench/cmd/perfattr -a "ours-1=$out/ours-1.txt" -b "ours-2=$out/ours-2.txt") | tee -a "$out/summary.md"
