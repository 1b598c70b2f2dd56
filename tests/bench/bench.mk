# make bench: the benchmark harness (tests/bench) against the built binary.
# Included by the top Makefile, which defines build and GO. It writes
# BENCHMARKS.md at the repository root (BENCH_OUT); BENCH_ARGS passes harness
# flags, e.g. BENCH_ARGS=-bench.quick (a tiny run whose figures mean nothing)
# or BENCH_ARGS=-bench.only=gateway,split. An ablation runs a variant of
# agent.yaml in its place in section 2, e.g.
#   make bench BENCH_OUT=/tmp/ablation.md BENCH_ARGS='-bench.only=agent
#   -bench.agent-pairs=3 -bench.ours=/tmp/agent-without-processors.yaml'
# The harness prints at its start how long it will take (the agent section
# alone, -bench.only=agent: about 32 minutes plus the build). Nothing it
# starts outlives it, however it ends (timeout, Ctrl-C, SIGKILL of go test):
# see tests/testenv/children.go and tests/e2e/benchchildren_test.go.
# The harness's files carry the
# build tag `bench`, so `make test` compiles and vets them (go vet -tags bench)
# without running them.
BENCH_OUT ?= $(CURDIR)/BENCHMARKS.md
BENCH_ARGS ?=
# When make started (before the build), for the report's total time.
BENCH_MAKE_START := $(shell date +%s)

.PHONY: bench
bench: build
	$(GO) test -tags bench -run '^TestBench$$' -count=1 -timeout 60m -v ./tests/bench \
		-args -bench.run -bench.out=$(BENCH_OUT) -bench.make-start=$(BENCH_MAKE_START) $(BENCH_ARGS)

# make bench-profile: CPU profiles (perf) of two shipped agents and one plain
# agent side by side, and where their CPU goes, in BENCH_PROFILE_OUT
# (tests/bench/profile-agents.sh; about 14 minutes with the default windows:
# BENCH_PROFILE_STAT_SECONDS of perf stat, then BENCH_PROFILE_SECONDS of perf
# record).
# It rebuilds the binary with its symbols, which perf needs. What the script
# starts ends with it, however it ends (setpriv --pdeathsig, traps, -for).
BENCH_PROFILE_OUT ?= $(BUILD_DIR)/bench-profile
BENCH_PROFILE_SECONDS ?= 600
BENCH_PROFILE_STAT_SECONDS ?= 120

.PHONY: bench-profile
bench-profile:
	$(MAKE) build LDFLAGS=
	tests/bench/profile-agents.sh $(BINARY) $(BENCH_PROFILE_OUT) $(BENCH_PROFILE_SECONDS) $(BENCH_PROFILE_STAT_SECONDS)
