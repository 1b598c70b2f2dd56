#!/usr/bin/env bash
# The agent's CPU with and without span_links, in the same run: two shipped
# agents (distributions/otelcol-nexovue/agent.yaml; one with the profiles
# pipeline overridden to leave out span_links) profile this host side by side
# while tests/e2e/testdata/spanburn runs spans A, B and C (PHASE each, its
# samples labelled) and both send to one ingest double. Prints each agent's
# CPU seconds (utime+stime from /proc) over the phases and the double's
# linked sample count. Needs root, tracefs and _build/otelcol-nexovue.
#
#   PHASE=40s tests/bench/spanlinks-cpu.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
phase=${PHASE:-40s}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

(cd "$root/tests/ingest/cmd/nexovue-ingest" && go build -o "$work/ingest" .)
(cd "$root/tests/e2e/testdata/spanburn" && CGO_ENABLED=0 go build -o "$work/spanburn" .)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$work/ingest" -listen "127.0.0.1:$port" -print-top 0 >"$work/ingest.log" 2>&1 & pids+=($!)
OTEL_SERVICE_NAME=spanburn "$work/spanburn" -listen 127.0.0.1:0 -spans "$work/spans.jsonl" -phase "$phase" >"$work/spanburn.log" 2>&1 &
burn=$!; pids+=($burn)

cat >"$work/without.yaml" <<'YAML'
service:
  pipelines:
    profiles:
      processors: [memory_limiter, service_name, symbolize, frame_limit]
YAML
start_agent() { # name, extra args...; sets agent_pid (not in a subshell, so cleanup sees it)
  local name=$1; shift
  NEXOVUE_KEY=bench NEXOVUE_ENDPOINT="http://127.0.0.1:$port" NEXOVUE_STORAGE_DIR="$work/$name-storage" \
  NEXOVUE_HEALTH_ENDPOINT="127.0.0.1:0" NEXOVUE_METRICS_HOST=127.0.0.1 NEXOVUE_METRICS_PORT=0 \
    "$root/_build/otelcol-nexovue" --config "$root/distributions/otelcol-nexovue/agent.yaml" "$@" \
    --feature-gates=service.profilesSupport >"$work/$name.log" 2>&1 &
  agent_pid=$!; pids+=($agent_pid)
}
start_agent with; with=$agent_pid
start_agent without --config "$work/without.yaml"; without=$agent_pid
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
sleep 30 # the agents load their eBPF programs and see spanburn (outside any span)
kill -USR1 "$burn"
w0=$(cpu "$with"); o0=$(cpu "$without"); t0=$(date +%s)
until grep -q '^done$' "$work/spans.jsonl" 2>/dev/null; do sleep 1; done
w1=$(cpu "$with"); o1=$(cpu "$without"); t1=$(date +%s)
sleep 10
stats=$(curl -s "http://127.0.0.1:$port/stats")
echo "window: $((t1 - t0)) s (phases of $phase)"
awk -v a="$w0" -v b="$w1" -v hz="$hz" 'BEGIN{printf "agent with span_links:    %.2f CPU s\n", (b-a)/hz}'
awk -v a="$o0" -v b="$o1" -v hz="$hz" 'BEGIN{printf "agent without span_links: %.2f CPU s\n", (b-a)/hz}'
echo "double: samples_accepted=$(echo "$stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_accepted"])') samples_linked=$(echo "$stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples_linked"])')"
