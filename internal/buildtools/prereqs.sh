#!/usr/bin/env bash
# Prepares a fresh Linux machine for `make test` (and `make run`): it mounts
# tracefs, which the eBPF profiler needs, and installs podman and runc from
# the distribution's packages for the container test. Idempotent.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
	echo "prereqs: run as root (the eBPF and container tests need it)" >&2
	exit 1
fi
if [ ! -e /sys/kernel/tracing/events ]; then
	mkdir -p /sys/kernel/tracing
	mount -t tracefs none /sys/kernel/tracing
	echo "prereqs: mounted tracefs at /sys/kernel/tracing"
fi
missing=()
for cmd in podman runc; do
	command -v "$cmd" >/dev/null || missing+=("$cmd")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "prereqs: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
