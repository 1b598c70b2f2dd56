# otelcol-nexovue: build, test and package the distribution.
SHELL := /bin/bash
GO ?= go
export GOFLAGS := -buildvcs=false
export CGO_ENABLED := 0

TOOLS_DIR := $(CURDIR)/.tools
MDATAGEN := $(TOOLS_DIR)/mdatagen

.PHONY: tools
tools: $(MDATAGEN)

# mdatagen is built from internal/tools/go.mod, which pins it at v0.161.0.
$(MDATAGEN): internal/tools/go.mod internal/tools/go.sum
	cd internal/tools && $(GO) build -o $(MDATAGEN) go.opentelemetry.io/collector/cmd/mdatagen

# generate re-runs mdatagen for every component's metadata.yaml.
.PHONY: generate
generate: $(MDATAGEN)
	@set -e; for m in $$(find receiver processor exporter -name metadata.yaml -not -path '*/testdata/*'); do \
		echo "mdatagen $$m"; (cd $$(dirname $$m) && $(MDATAGEN) metadata.yaml); done
