# make bench: the benchmark harness (tests/bench) against the built binary.
# Included by the top Makefile, which defines build, GO and BUILD_DIR. It
# writes BENCHMARKS.md at the repository root; BENCH_ARGS passes harness
# flags, e.g. BENCH_ARGS=-bench.quick (tiny run) or -bench.only=gateway,split.
BENCH_OUT ?= $(CURDIR)/BENCHMARKS.md
BENCH_ARGS ?=

.PHONY: bench
bench: build
	$(GO) test -tags bench -run '^TestBench$$' -count=1 -timeout 30m -v ./tests/bench \
		-args -bench.out=$(BENCH_OUT) $(BENCH_ARGS)
