# Stagehand. `make help` lists the targets.
SHELL := /usr/bin/env bash
export GOTOOLCHAIN := local

BIN        := $(CURDIR)/bin
TESTBIN    := $(BIN)/k8s
HELM_VERSION ?= v3.22.0
export KUBEBUILDER_ASSETS := $(TESTBIN)

GO_TEST_FLAGS ?= -timeout 25m
BENCH ?= .
FUZZTIME ?= 1m
FUZZ_SHORT_TIME ?= 3s
# Every fuzz target, as package:Target. Their seed corpora (f.Add and
# testdata/fuzz/<Target>) also run as plain tests in `go test`.
FUZZ_TARGETS := ./pkg/manifest:FuzzResolve ./pkg/manifest:FuzzEdit ./pkg/manifest:FuzzPosition \
	./pkg/promote:FuzzParse ./internal/webhook:FuzzShape ./internal/webhook:FuzzReceiver ./internal/api:FuzzDecisionBody \
	./internal/api:FuzzRollbackBody ./pkg/gitsource:FuzzCoAuthors ./internal/keyless:FuzzBumpBody ./internal/keyless:FuzzBumpRepository ./internal/auth/oidc:FuzzVerify ./internal/ui:FuzzForm ./internal/policy:FuzzEvaluate ./internal/policy:FuzzParseVersion
IMAGE ?=
PLATFORMS ?= linux/$(shell go env GOARCH)
IMAGE_FLAGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# What `version`, GET /version and stagehand_build_info say: VERSION defaults to
# `git describe` (v0.0.0-dev outside a checkout), COMMIT and DATE to the commit's.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE    ?= $(shell git show -s --format=%cI HEAD 2>/dev/null)
VERSION_PKG := github.com/stagehand-gitops/stagehand/internal/version
LDFLAGS ?= -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT) -X $(VERSION_PKG).date=$(DATE)

.PHONY: build
build: ## Build bin/reconciler and bin/prbot, stamped with VERSION, COMMIT and DATE.
	go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/reconciler ./cmd/prbot

.PHONY: release
release: helm ## Build a release into dist/: make release VERSION=vX.Y.Z [KEY=signing.key] [PUSH=1 REGISTRY=ghcr.io/acme] (see docs/release.md).
	PATH="$(BIN):$$PATH" go run ./hack/release --version "$(VERSION)" --dist dist $(if $(KEY),--key "$(KEY)") \
		$(if $(PUSH),--push --registry "$(REGISTRY)") $(RELEASE_FLAGS)

.PHONY: testbin
testbin: ## Build the test control plane (kube-apiserver, etcd, controller-manager, scheduler, kwok) into bin/k8s.
	@bash hack/testbin/build.sh $(TESTBIN)

.PHONY: flagger
flagger: ## Build Flagger (github.com/fluxcd/flagger, pinned by hack/flagger/go.mod) and its CRDs into bin/flagger.
	@bash hack/flagger/build.sh $(BIN)/flagger

.PHONY: rollouts
rollouts: ## Build the Argo Rollouts controller and its CRDs (github.com/argoproj/argo-rollouts, pinned) into bin/rollouts.
	@bash hack/rollouts/build.sh $(BIN)/rollouts

.PHONY: helm
helm: $(BIN)/helm ## Build helm (pinned) into bin/ for the chart tests.
$(BIN)/helm:
	GOBIN=$(BIN) go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

.PHONY: image
image: ## Build the image without Docker and push it: make image IMAGE=registry/repo:tag [PLATFORMS=linux/amd64,linux/arm64].
	@test -n "$(IMAGE)" || { echo "set IMAGE, e.g. make image IMAGE=ghcr.io/acme/stagehand:0.1.0"; exit 1; }
	go run ./hack/image --ref "$(IMAGE)" --platform "$(PLATFORMS)" --revision "$$(git rev-parse HEAD 2>/dev/null)" $(IMAGE_FLAGS)

.PHONY: test
test: large-files testbin flagger rollouts helm prometheus chromium shell-tools fuzz-short ## Run every test against the real test control plane, and each fuzz target briefly.
	PATH="$(BIN):$$PATH" go test $(GO_TEST_FLAGS) ./...

.PHONY: faults
faults: testbin ## Run the fault suite on real processes with the issue's long outages; the fault table goes to bin/faults.md.
	STAGEHAND_FAULTS=long PATH="$(BIN):$$PATH" go test $(GO_TEST_FLAGS) -count=1 -v ./internal/faults

.PHONY: prometheus
prometheus: ## Install Debian's prometheus package when prometheus or promtool is not on PATH (the verification tests run a real one; the chart's alert tests run promtool).
	@{ command -v prometheus && command -v promtool; } >/dev/null 2>&1 || { \
		echo "prometheus or promtool not found: installing Debian's prometheus package"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends prometheus; }
	@prometheus --version 2>&1 | head -1
	@promtool --version 2>&1 | head -1

.PHONY: chromium
chromium: ## Install Debian's chromium package when no Chromium is found (the web page's tests drive a real one).
	@if [ -n "$$STAGEHAND_CHROMIUM" ] || [ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1; then :; else \
		echo "chromium not found: installing Debian's chromium package"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends chromium; fi
	@$${STAGEHAND_CHROMIUM:-$$(command -v chromium || echo /usr/bin/chromium)} --version 2>/dev/null | head -1

.PHONY: shell-tools
shell-tools: ## Install Debian's kubectl, openssl and curl when missing (the documentation's runnable blocks use them).
	@missing=; for t in kubectl openssl curl; do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "not found:$$missing: installing Debian's packages"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; fi

.PHONY: fuzz-short
fuzz-short: ## Run each fuzz target for FUZZ_SHORT_TIME (3s); part of make test.
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZ_SHORT_TIME)

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 1m): make fuzz FUZZTIME=10m.
	@FUZZTIME=$(FUZZTIME) bash hack/fuzz/run.sh $(FUZZ_TARGETS)

.PHONY: bench
bench: testbin ## Run the benchmarks (BENCH=regexp to choose).
	PATH="$(BIN):$$PATH" go test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 60m ./...

.PHONY: large-files
large-files: ## Fail if git tracks a file over 1 MiB that hack/verify/large-files.sh does not allow (a built executable, a dump).
	@bash hack/verify/large-files.sh

.PHONY: verify
verify: large-files ## Fail if gofmt, go vet or go mod tidy would change anything, or a large file is tracked.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	go vet ./...
	go mod tidy
	@git diff --exit-code -- go.mod go.sum || { echo "go mod tidy changed go.mod/go.sum"; exit 1; }

.PHONY: docs
docs: ## Build the documentation site from docs/ into bin/site with mkdocs --strict (installs Debian's mkdocs when missing).
	@command -v mkdocs >/dev/null 2>&1 || { \
		echo "mkdocs not found: installing Debian's mkdocs package"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends mkdocs; }
	mkdocs build --strict --clean --site-dir $(BIN)/site
	@echo "site: $(BIN)/site/index.html"

.PHONY: docs-gen
docs-gen: ## Write the generated reference pages (docs/reference/commands.md, metrics.md) from the code.
	go run ./hack/docsgen

.PHONY: demo
demo: testbin build ## Run Stagehand end to end on a local embedded cluster and git server.
	go run -trimpath ./hack/demo

.PHONY: clean
clean: ## Remove bin/.
	rm -rf $(BIN)
