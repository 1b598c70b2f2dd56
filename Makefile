# otelcol-nexovue: build, test and package the distribution.
#   make build        the collector for this machine: _build/otelcol-nexovue
#   make crossbuild   linux/arm64, darwin/amd64, darwin/arm64, windows/amd64 into _build/<os>-<arch>/
#   make test         every test (unit, fuzz seeds, cross-builds, smoke and end-to-end with the built binary)
#   make run          profile this host (see README)
SHELL := /bin/bash
GO ?= go
REAL_GO := $(shell command -v $(GO))
export GOFLAGS := -buildvcs=false
export CGO_ENABLED := 0

BUILD_DIR := $(CURDIR)/_build
BINARY := $(BUILD_DIR)/otelcol-nexovue
TOOLS_DIR := $(CURDIR)/.tools
MDATAGEN := $(TOOLS_DIR)/mdatagen
OCB := $(TOOLS_DIR)/ocb
CROSS_TARGETS := linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
# Tools installed into .tools (ocb, mdatagen, kustomize where kubectl is absent).
export PATH := $(TOOLS_DIR):$(PATH)
LDFLAGS := -s -w

.PHONY: all
all: build

# ---- tools, pinned in internal/tools/go.mod ----
.PHONY: tools
tools: $(MDATAGEN) $(OCB)

$(MDATAGEN): internal/tools/go.mod internal/tools/go.sum
	cd internal/tools && $(GO) build -o $@ go.opentelemetry.io/collector/cmd/mdatagen

$(OCB): internal/tools/go.mod internal/tools/go.sum
	cd internal/tools && $(GO) build -o $@ go.opentelemetry.io/collector/cmd/builder

# generate re-runs mdatagen for every component's metadata.yaml.
.PHONY: generate
generate: $(MDATAGEN)
	@set -e; for m in $$(find receiver processor exporter -name metadata.yaml -not -path '*/testdata/*'); do \
		echo "mdatagen $$m"; (cd $$(dirname $$m) && $(MDATAGEN) metadata.yaml); done

# ---- the collector ----
# ocb writes the sources and go.mod of the distribution into _build; the go
# wrapper in internal/buildtools/ocbgo explains why ocb's module steps go
# through it. Then the binary is compiled here, static (CGO off).
.PHONY: sources
sources: $(OCB)
	PATH="$(CURDIR)/internal/buildtools/ocbgo:$$PATH" REAL_GO="$(REAL_GO)" \
		$(OCB) --config builder-config.yaml --skip-compilation

.PHONY: build
build: sources
	cd $(BUILD_DIR) && $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BINARY) .
	@$(BINARY) --version

.PHONY: crossbuild
crossbuild: sources
	@set -e; for t in $(CROSS_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "building $$os/$$arch"; \
		(cd $(BUILD_DIR) && GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" \
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
	cd internal/tools/kube && $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $@ k8s.io/kubernetes/cmd/kube-apiserver

# Every test: unit, fuzz seeds, the cross-builds, and the smoke, end-to-end,
# distribution and container tests that drive the built binary.
# The tests of the built binary run verbosely: each prints a line of figures.
GO_TEST_FLAGS ?= -count=1 -timeout 25m
SYSTEM_TESTS := ./tests/smoke/ ./tests/e2e/ ./tests/container/ ./tests/kubernetes/
.PHONY: test
test: prereqs build crossbuild
	$(GO) vet ./...
	$(GO) vet -tags bench ./tests/bench/
	$(GO) test $(GO_TEST_FLAGS) $$($(GO) list ./... | grep -v -e /tests/smoke -e /tests/e2e -e /tests/container -e /tests/kubernetes)
	$(GO) test $(GO_TEST_FLAGS) -v $(SYSTEM_TESTS)

.PHONY: clean
clean:
	rm -rf $(BUILD_DIR) $(TOOLS_DIR)

-include distributions/dist.mk
-include tests/bench/bench.mk
