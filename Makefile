# otelcol-nexovue: build, test and package the distribution.
#   make build        the collector for this machine: _build/otelcol-nexovue
#   make crossbuild   linux/arm64, darwin/amd64, darwin/arm64, windows/amd64 into _build/<os>-<arch>/
#   make test         every test (unit, fuzz seeds, the other platforms' type-check, a small Windows
#                     build under Wine, smoke and end-to-end with the built binary), each step timed
#   make run          profile this host (see README)
SHELL := /bin/bash
GO ?= go
REAL_GO := $(shell command -v $(GO))
# -trimpath for every go command (build, vet, test, list, and the go builds
# tests run): the compiled packages are cached under keys that include it, so
# the collector's build, go vet and go test share one compilation of the
# dependency tree instead of compiling it once with and once without it.
export GOFLAGS := -buildvcs=false -trimpath
export CGO_ENABLED := 0

BUILD_DIR := $(CURDIR)/_build
BINARY := $(BUILD_DIR)/otelcol-nexovue
TOOLS_DIR := $(CURDIR)/.tools
MDATAGEN := $(TOOLS_DIR)/mdatagen
OCB := $(TOOLS_DIR)/ocb
TYPECHECK := $(TOOLS_DIR)/typecheck
CROSS_TARGETS := linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
# Tools installed into .tools (ocb, mdatagen, kustomize where kubectl is absent).
export PATH := $(TOOLS_DIR):$(PATH)
LDFLAGS := -s -w

.PHONY: all
all: build

# ---- tools, pinned in internal/tools/go.mod ----
.PHONY: tools
tools: $(MDATAGEN) $(OCB) $(TYPECHECK)

$(MDATAGEN): internal/tools/go.mod internal/tools/go.sum
	cd internal/tools && $(GO) build -o $@ go.opentelemetry.io/collector/cmd/mdatagen

$(OCB): internal/tools/go.mod internal/tools/go.sum
	cd internal/tools && $(GO) build -o $@ go.opentelemetry.io/collector/cmd/builder

$(TYPECHECK): internal/tools/go.mod internal/tools/go.sum internal/tools/typecheck/main.go
	cd internal/tools && $(GO) build -o $@ ./typecheck

# generate re-runs mdatagen for every component's metadata.yaml.
.PHONY: generate
generate: $(MDATAGEN)
	@set -e; for m in $$(find receiver processor exporter -name metadata.yaml -not -path '*/testdata/*'); do \
		echo "mdatagen $$m"; (cd $$(dirname $$m) && $(MDATAGEN) metadata.yaml); done

# ---- the collector ----
# ocb writes the sources and go.mod of the distribution into _build; the go
# wrapper in internal/buildtools/ocbgo explains why ocb's module steps go
# through it. Then the binary is compiled here, static (CGO off).
# SOURCES_READY=1 skips it (make test runs ocb once, then builds and checks
# from its output).
.PHONY: sources
sources: $(if $(SOURCES_READY),,$(OCB))
ifeq ($(SOURCES_READY),)
	PATH="$(CURDIR)/internal/buildtools/ocbgo:$$PATH" REAL_GO="$(REAL_GO)" \
		$(OCB) --config builder-config.yaml --skip-compilation
else
	@test -f $(BUILD_DIR)/components.go || { echo "$(BUILD_DIR) holds no ocb sources: run make sources" >&2; exit 1; }
endif

.PHONY: build
build: sources
	cd $(BUILD_DIR) && $(GO) build -ldflags "$(LDFLAGS)" -o $(BINARY) .
	@$(BINARY) --version

.PHONY: crossbuild
crossbuild: sources
	@set -e; for t in $(CROSS_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "building $$os/$$arch"; \
		(cd $(BUILD_DIR) && GOOS=$$os GOARCH=$$arch $(GO) build -ldflags "$(LDFLAGS)" \
			-o $(BUILD_DIR)/$$os-$$arch/otelcol-nexovue$$ext .); \
	done

# ---- run and test ----
# Profile this host (as root). See internal/buildtools/run-local.sh.
.PHONY: run
run: build
	internal/buildtools/run-local.sh

# What the tests need from the machine: tracefs for the eBPF receiver, podman
# and runc for the container test, etcd and kube-apiserver for the Kubernetes
# test. Needs root; does nothing when all is there.
.PHONY: prereqs
prereqs: kube-apiserver
	internal/buildtools/prereqs.sh

# kube-apiserver for tests/kubernetes, built from k8s.io/kubernetes (pinned in
# internal/tools/kube/go.mod) once and kept in _build/kube: rebuilt only when
# that go.mod or go.sum change. A cold build takes minutes.
KUBE_APISERVER := $(BUILD_DIR)/kube/kube-apiserver
.PHONY: kube-apiserver
kube-apiserver: $(KUBE_APISERVER)
$(KUBE_APISERVER): internal/tools/kube/go.mod internal/tools/kube/go.sum
	cd internal/tools/kube && $(GO) build -ldflags "$(LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-apiserver

# Every test: unit, fuzz seeds, the other platforms' type-check, the Windows
# binary under Wine, and the smoke, end-to-end, distribution and container
# tests that drive the built binary. Each step prints
# "== make test: <step> took Ns".
#
# What the four cross-builds proved, for less: the collector ships to
# linux/arm64, darwin/amd64, darwin/arm64 and windows/amd64. For the first
# three, `typecheck` (internal/tools/typecheck) type-checks the distribution
# ocb generated, every package it imports (ours included) and our component
# packages from source for that platform, function bodies included, with
# go/types: what the compiler would reject (a file missing for the platform,
# an undefined name, a type mismatch) fails it, in seconds, where a
# cross-build compiles the whole dependency tree again for its platform (5 to
# 6 minutes each on a cold cache, nothing shared between platforms). go vet
# would not be cheaper: it compiles the dependencies of what it checks.
# windows/amd64 is type-checked the same way; what only running proves (our
# components validate pprof.yaml and the docs' pprof config, and the profile
# view serves, under Windows) TestWindowsValidateUnderWine proves with a
# small Windows binary of only those components (windows-test-binary below),
# not the whole distribution cross-built. Linking for the other platforms,
# and the archives, are `make crossbuild` and `make dist` (whose
# TestDistArchives checks them).
#
# The machine's packages (apt) and kube-apiserver (make prereqs) are
# prepared in the background while the collector compiles; the test steps
# wait for them. The tests of the built binary run verbosely: each prints a
# line of figures; the manifest tests (Wine, kustomize, each configuration's
# `validate`) run with them, so they overlap the end-to-end tests, which
# spend most of their time waiting for profiles (see system-tests). Tests
# that run at once keep out of each other's way themselves: ports through
# testenv.FreePort's lock files, and the programs each test profiles carry
# service names no other test uses.
GO_TEST_FLAGS ?= -count=1 -timeout 25m
SYSTEM_TESTS := ./tests/e2e/ ./tests/kubernetes/ ./tests/manifests/ ./tests/smoke/ ./tests/container/
TYPECHECK_TARGETS := linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
OUR_PACKAGES := ./receiver/... ./processor/... ./exporter/... ./connector/... ./converter/... ./internal/...
TEST_LOG_DIR := $(BUILD_DIR)/test
# $(call timed,<step>,<command>): runs the command, then prints how long it took.
timed = s=$$(date +%s); $(2); rc=$$?; echo "== make test: $(1) took $$(( $$(date +%s) - s ))s"; [ $$rc = 0 ]

.PHONY: test
test:
	@[ "$$(id -u)" = 0 ] || { echo "make test: run it as root (make prereqs, the eBPF and container tests need it)" >&2; exit 1; }; \
	mkdir -p $(TEST_LOG_DIR); start=$$(date +%s); \
	echo "== make test: prereqs (machine packages, kube-apiserver) run in the background, log in $(TEST_LOG_DIR)/prereqs.log"; \
	( $(call timed,prereqs,$(MAKE) --no-print-directory prereqs) ) >$(TEST_LOG_DIR)/prereqs.log 2>&1 & prereqs=$$!; \
	fail() { wait $$prereqs; exit 1; }; \
	{ $(call timed,sources (ocb),$(MAKE) --no-print-directory sources); } || fail; \
	{ $(call timed,build,$(MAKE) --no-print-directory build SOURCES_READY=1); } || fail; \
	{ $(call timed,typecheck $(TYPECHECK_TARGETS),$(MAKE) --no-print-directory typecheck SOURCES_READY=1); } || fail; \
	{ $(call timed,windows test binary,$(MAKE) --no-print-directory windows-test-binary SOURCES_READY=1); } || fail; \
	{ $(call timed,vet,$(GO) vet ./... && $(GO) vet -tags bench ./tests/bench/ && $(GO) vet -tags dist ./tests/manifests/); } || fail; \
	{ $(call timed,wait for prereqs,wait $$prereqs); } || { cat $(TEST_LOG_DIR)/prereqs.log; echo "make test: make prereqs failed (its log is above)" >&2; exit 1; }; \
	cat $(TEST_LOG_DIR)/prereqs.log; \
	{ $(call timed,unit tests,$(GO) test $(GO_TEST_FLAGS) $$($(GO) list ./... | grep -v -e /tests/smoke -e /tests/e2e -e /tests/container -e /tests/kubernetes -e /tests/manifests)); } || exit 1; \
	{ $(call timed,system tests,$(MAKE) --no-print-directory system-tests); } || exit 1; \
	echo "== make test: all took $$(( $$(date +%s) - start ))s"

# system-tests: the tests of the built binary, in four phases:
#   e2e-serial  the end-to-end tests whose figures are timings, throughputs
#               or CPU ratios (E2E_SERIAL: throttle, one agent's pacing, the
#               gateway tier, profile metrics, key routing, and the bench
#               harness's runs, which take the CPU), one after the other with
#               nothing beside them;
#   e2e-rest    every other end-to-end test, three at a time (tests/e2e
#               TestMain), and beside them the Kubernetes, manifest and
#               container packages ("other", one after the other);
#   smoke       alone: TestViewInBrowser needs its burner to be the busiest
#               service on the host;
#   e2e-alone   the fleet pacing tests (E2E_ALONE), alone: eight collectors
#               must reach 90% of the key's limit, and on 2026-12-04 one fell
#               to 84% beside the Kubernetes and container tests (alone:
#               96.5%).
# The end-to-end test binary is built once. Each phase prints its log when it
# ends, and its time. The Kubernetes tests ran after the end-to-end ones
# until 2026-12-04, because a pod created after their API server's restart
# was once not enriched beside them; the cause was the test's launch of the
# pod's process (it entered its cgroup after the profiler had met it, see
# distributions/README.md), not the load. Tests that run at once keep out of
# each other's way themselves: ports through testenv.FreePort's lock files,
# and the programs each test profiles carry service names no other test uses.
E2E_SERIAL ?= TestThrottlePacedBelowLimit|TestThrottlePacedSlowIngest|TestThrottle429PathLosesNothing|TestPacingOneAgentDefaults|TestPacingShutdownInMemoryQueueSendsHeldBackRequests|TestPacingShutdownPersistentQueueKeepsHeldBackRequests|TestGatewayTierScales|TestGatewayDrainsOnSIGTERM|TestProfileMetricsWithEBPF|TestRoutingKeysKeptApart|TestBenchHarnessLeavesNothing
E2E_ALONE ?= TestPacingFleetSharesOneKey|TestPacingFleetSharesOneKeyWithoutRetryAfter|TestPacingFleetBurst
E2E_FLAGS ?= -test.count=1 -test.timeout=25m -test.v
OTHER_SYSTEM_TESTS := $(filter-out ./tests/e2e/ ./tests/smoke/,$(SYSTEM_TESTS))
.PHONY: system-tests
system-tests:
	@mkdir -p $(TEST_LOG_DIR); \
	$(GO) test -c -o $(TEST_LOG_DIR)/e2e.test ./tests/e2e/ || exit 1; \
	run() { name=$$1; shift; s=$$(date +%s); "$$@" >$(TEST_LOG_DIR)/$$name.log 2>&1; rc=$$?; \
		echo "== make test: $$name took $$(( $$(date +%s) - s ))s (exit $$rc)" >>$(TEST_LOG_DIR)/$$name.log; \
		cat $(TEST_LOG_DIR)/$$name.log; [ $$rc = 0 ] || echo "$$name" >>$(TEST_LOG_DIR)/failed; return $$rc; }; \
	rm -f $(TEST_LOG_DIR)/failed; \
	(cd tests/e2e && run e2e-serial $(TEST_LOG_DIR)/e2e.test $(E2E_FLAGS) -test.run '^($(E2E_SERIAL))$$'); \
	(cd tests/e2e && run e2e-rest $(TEST_LOG_DIR)/e2e.test $(E2E_FLAGS) -test.skip '^($(E2E_SERIAL)|$(E2E_ALONE))$$') & a=$$!; \
	(run other $(GO) test $(GO_TEST_FLAGS) -p 1 -v $(OTHER_SYSTEM_TESTS)) & b=$$!; \
	wait $$a; wait $$b; \
	run smoke $(GO) test $(GO_TEST_FLAGS) -v ./tests/smoke/; \
	(cd tests/e2e && run e2e-alone $(TEST_LOG_DIR)/e2e.test $(E2E_FLAGS) -test.run '^($(E2E_ALONE))$$'); \
	failed=$$(cat $(TEST_LOG_DIR)/failed 2>/dev/null | tr '\n' ' '); \
	[ -z "$$failed" ] || { echo "make test: system tests failed:$$failed (logs above and in $(TEST_LOG_DIR))" >&2; exit 1; }

# typecheck: the distribution and our packages type-check for each of
# TYPECHECK_TARGETS (see above), in one process that parses each file once.
.PHONY: typecheck
typecheck: sources $(TYPECHECK)
	@$(TYPECHECK) -targets "$(TYPECHECK_TARGETS)" -C $(BUILD_DIR) . \
		$(patsubst ./%,github.com/nexovue/otelcol-nexovue/%,$(OUR_PACKAGES))

# windows-test-binary: the small Windows binary TestWindowsValidateUnderWine
# runs under Wine (internal/buildtools/wine-builder.yaml says what it holds
# and why). ocb writes only its sources, into _build/wine: a package of the
# module `make sources` generated, so it compiles with exactly the module
# versions of the shipped binary, and downloads nothing.
.PHONY: windows-test-binary
windows-test-binary: sources $(OCB)
	$(OCB) --config internal/buildtools/wine-builder.yaml --skip-compilation --skip-get-modules
	cd $(BUILD_DIR) && GOOS=windows GOARCH=amd64 $(GO) build -ldflags "$(LDFLAGS)" -o $(BUILD_DIR)/wine/otelcol-nexovue-wine.exe ./wine

.PHONY: clean
clean:
	rm -rf $(BUILD_DIR) $(TOOLS_DIR)

-include distributions/dist.mk
-include tests/bench/bench.mk
