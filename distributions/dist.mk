# Packaging of otelcol-nexovue, included by the top Makefile
# (-include distributions/dist.mk):
#   make image       the container image $(IMAGE):$(IMAGE_TAG) (after make build)
#   make image-only  the same from the binary already in _build, without rebuilding it
#   make dist        archives for darwin/amd64, darwin/arm64 and windows/amd64 in _build/dist
#                    (after make crossbuild), then TestDistArchives checks them
#   make dist-only   the same from the cross-built binaries already in _build
# Every variable can be overridden on the command line.

DIST_DIR_SRC := distributions
BUILD_DIR ?= $(CURDIR)/_build
BINARY ?= $(BUILD_DIR)/otelcol-nexovue
DIST_VERSION ?= $(or $(shell sed -n 's/^  version:[[:space:]]*//p' builder-config.yaml 2>/dev/null | head -n1),dev)
DIST_REVISION ?= $(or $(shell git rev-parse --short HEAD 2>/dev/null),unknown)

# ---- container image ----
# The image is FROM scratch: it needs the static binary (CGO_ENABLED=0) that
# make build produces, which image-only checks.
IMAGE ?= ghcr.io/nexovue/otelcol-nexovue
IMAGE_TAG ?= $(DIST_VERSION)
IMAGE_LICENSE ?= Apache-2.0
IMAGE_SOURCE ?= https://github.com/nexovue/otelcol-nexovue
# podman (daemonless) if installed, else docker.
CONTAINER_ENGINE ?= $(or $(shell command -v podman 2>/dev/null),$(shell command -v docker 2>/dev/null),podman)
# FROM scratch pulls nothing and the build runs nothing, so it needs no network;
# no intermediate images are kept.
IMAGE_BUILD_FLAGS ?= --network=none $(if $(findstring podman,$(notdir $(CONTAINER_ENGINE))),--pull=never --layers=false)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
IMAGE_CONTEXT := $(BUILD_DIR)/image

.PHONY: image image-only
image: build
	@$(MAKE) --no-print-directory image-only

image-only:
	@test -x $(BINARY) || { echo "$(BINARY) is missing: run make build" >&2; exit 1; }
	@test -r $(CA_BUNDLE) || { echo "$(CA_BUNDLE) is missing: install ca-certificates or set CA_BUNDLE" >&2; exit 1; }
	@$(or $(GO),go) version -m $(BINARY) | grep -q 'CGO_ENABLED=0' || \
		{ echo "$(BINARY) was not built with CGO_ENABLED=0: a FROM scratch image needs a static binary" >&2; exit 1; }
	rm -rf $(IMAGE_CONTEXT) && mkdir -p $(IMAGE_CONTEXT)/var/lib/otelcol
	cp $(BINARY) $(IMAGE_CONTEXT)/otelcol-nexovue
	cp $(CA_BUNDLE) $(IMAGE_CONTEXT)/ca-certificates.crt
	cp $(DIST_DIR_SRC)/otelcol-nexovue/agent.yaml $(IMAGE_CONTEXT)/config.yaml
	$(CONTAINER_ENGINE) build $(IMAGE_BUILD_FLAGS) \
		--build-arg VERSION=$(DIST_VERSION) --build-arg REVISION=$(DIST_REVISION) \
		--build-arg SOURCE=$(IMAGE_SOURCE) --build-arg LICENSE=$(IMAGE_LICENSE) \
		-f $(DIST_DIR_SRC)/Containerfile -t $(IMAGE):$(IMAGE_TAG) $(IMAGE_CONTEXT)
	@$(CONTAINER_ENGINE) image inspect --format '{{.Size}}' $(IMAGE):$(IMAGE_TAG) | \
		awk '{ printf "image $(IMAGE):$(IMAGE_TAG): %.1f MB\n", $$1 / 1e6 }'

# ---- macOS and Windows archives ----
DIST_TARGETS ?= darwin/amd64 darwin/arm64 windows/amd64
DIST_OUT ?= $(BUILD_DIR)/dist

.PHONY: dist dist-only
# TestDistArchives (tests/manifests/dist_test.go, build tag dist) packs the
# cross-built binaries again in a folder of its own and checks every archive;
# `make test` builds no darwin binary, so it only vets that test.
dist: crossbuild
	@$(MAKE) --no-print-directory dist-only
	$(or $(GO),go) test -tags dist -count=1 -run '^TestDistArchives$$' ./tests/manifests/

# Each archive holds one top-level folder otelcol-nexovue_<version>_<os>_<arch>
# with the binary, pprof.yaml and README.md: .tar.gz for macOS, .zip for Windows.
dist-only:
	@set -e; mkdir -p $(DIST_OUT); \
	for t in $(DIST_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		bin=$(BUILD_DIR)/$$os-$$arch/otelcol-nexovue$$ext; \
		test -x $$bin || { echo "$$bin is missing: run make crossbuild" >&2; exit 1; }; \
		name=otelcol-nexovue_$(DIST_VERSION)_$${os}_$$arch; stage=$(DIST_OUT)/$$name; \
		rm -rf $$stage && mkdir -p $$stage; \
		cp $$bin $$stage/; \
		cp $(DIST_DIR_SRC)/otelcol-nexovue/pprof.yaml $$stage/pprof.yaml; \
		cp $(DIST_DIR_SRC)/archive/README-$$os.md $$stage/README.md; \
		rm -f $(DIST_OUT)/$$name.tar.gz $(DIST_OUT)/$$name.zip; \
		if [ $$os = windows ]; then \
			(cd $(DIST_OUT) && zip -q -r -X $$name.zip $$name); out=$$name.zip; \
		else \
			tar -C $(DIST_OUT) --owner=0 --group=0 --numeric-owner -czf $(DIST_OUT)/$$name.tar.gz $$name; out=$$name.tar.gz; \
		fi; \
		rm -rf $$stage; \
		echo "dist $(DIST_OUT)/$$out"; \
	done
