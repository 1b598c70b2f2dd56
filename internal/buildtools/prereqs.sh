#!/usr/bin/env bash
# Prepares a fresh Linux machine for `make test` (and `make run`): it mounts
# tracefs, which the eBPF profiler needs, and debugfs (the docs' command mounts
# /sys/kernel/debug into the container), and installs from the distribution's
# packages what the tests use: podman and runc (container test), wine and the
# mingw-w64 binutils (the Windows binary's `validate` under Wine), zip (the
# Windows archive), etcd-server (the Kubernetes test; `make prereqs` also
# builds its kube-apiserver), kustomize into .tools when neither kubectl nor
# kustomize is on PATH (the manifests test renders the kustomizations with
# either; Debian ships no kubectl), and the runtimes of the language coverage
# test (gcc, g++, python3, nodejs, the JDK, PHP, Perl, Ruby, Erlang), libc's
# debug file (libc6-dbg) and binutils for the symbolize processor, lld (a Go
# binary linked externally by lld, internal/gopclntab), and what
# internal/debugfile's tests use: Debian's debuginfod server, xz and
# libbinutils-dbg (DWZ-compressed debug info), chromium (the profile
# view's browser tests drive it headless), and prometheus (the server and
# promtool: the alert rules of distributions/monitoring are checked by
# promtool and evaluated by a real Prometheus). Idempotent.
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
# The docs' `docker run` command brings tracefs into the container through
# -v /sys/kernel/debug:/sys/kernel/debug, as on most hosts (the container test
# runs it as printed).
if [ ! -e /sys/kernel/debug/tracing/events ]; then
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	echo "prereqs: mounted debugfs at /sys/kernel/debug"
fi
# command -> Debian package(s)
declare -A need=(
	[podman]=podman
	[runc]=runc
	[wine]="wine wine64"
	[wineserver]="wine wine64"
	[x86_64-w64-mingw32-as]=binutils-mingw-w64-x86-64
	[zip]=zip
	[etcd]=etcd-server
	[debuginfod]=debuginfod
	[ip]=iproute2
	[xz]=xz-utils
	[objcopy]=binutils
	[ld.lld]=lld
	[chromium]=chromium
	[prometheus]=prometheus
	[promtool]=prometheus
)
pkgs=()
for cmd in "${!need[@]}"; do
	command -v "$cmd" >/dev/null || pkgs+=(${need[$cmd]})
done
[ -r /etc/ssl/certs/ca-certificates.crt ] || pkgs+=(ca-certificates)
# The language coverage test (tests/e2e/languages_test.go) runs Debian's
# runtimes by path: file -> Debian package.
declare -A runtimes=(
	[/usr/bin/gcc]=gcc
	[/usr/bin/g++]=g++
	[/usr/bin/python3]=python3
	[/usr/bin/node]=nodejs
	[/usr/bin/java]=default-jdk-headless
	[/usr/bin/javac]=default-jdk-headless
	[/usr/bin/php]=php-cli
	[/usr/bin/perl]=perl
	[/usr/bin/ruby]=ruby
	[/usr/bin/erl]=erlang-nox
	[/usr/bin/erlc]=erlang-nox
)
for f in "${!runtimes[@]}"; do
	[ -x "$f" ] || pkgs+=(${runtimes[$f]})
done
# internal/debugfile's tests: DWZ-compressed debug info (a .gnu_debugaltlink
# to an alternate file) as Debian ships it.
dpkg -s libbinutils-dbg >/dev/null 2>&1 || pkgs+=(libbinutils-dbg)
# The symbolize processor's tests read libc's separate debug file (Debian's
# libc6-dbg, under /usr/lib/debug/.build-id) and use binutils (readelf,
# objcopy, strip) and dwz to make and check stripped programs and debug files.
dpkg -s libc6-dbg >/dev/null 2>&1 || pkgs+=(libc6-dbg)
command -v readelf >/dev/null && command -v objcopy >/dev/null || pkgs+=(binutils)
command -v dwz >/dev/null || pkgs+=(dwz)
if [ ${#pkgs[@]} -gt 0 ]; then
	mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
	echo "prereqs: installing ${pkgs[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi
# Debian's prometheus package enables a Prometheus service (on :9090) where
# systemd runs: the tests start their own, on loopback, so it is stopped.
if command -v systemctl >/dev/null && systemctl is-enabled prometheus.service >/dev/null 2>&1; then
	systemctl disable --now prometheus.service >/dev/null 2>&1 || true
	echo "prereqs: stopped and disabled the prometheus service the package enabled (the tests start their own)"
fi
if ! command -v kubectl >/dev/null && ! command -v kustomize >/dev/null; then
	echo "prereqs: installing kustomize (no kubectl on this machine)"
	GOBIN="$(cd "$(dirname "$0")/../.." && pwd)/.tools" go install sigs.k8s.io/kustomize/kustomize/v5@v5.5.0
fi
