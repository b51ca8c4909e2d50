# tagsync — build, generate, test.
#
# Two commands matter to a newcomer:
#   make demo   the main job on an embedded playground
#   make test   every check and test
# Both build what they need on a fresh machine with Go installed; make test
# also needs Python 3 with venv for moto_server (the AWS tests; see make moto).

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := $(ROOT)/bin
K8S_BIN := $(BIN)/k8s

# Pinned developer tools (go install'ed into bin/ under versioned names).
CONTROLLER_GEN_VERSION := v0.23.0
HELM_VERSION := v4.3.1
STATICCHECK_VERSION := v0.8.2
# promtool of Prometheus v3.16 (the Go module's v0.316 line): the alerts' unit tests.
# It is built without the service discoveries (-tags remove_all_sd): the
# cloud SDKs they pull in were half its cold build, and rule tests use none.
PROMTOOL_VERSION := v0.316.0
KUBERNETES_VERSION := v1.37.0

CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
HELM := $(BIN)/helm-$(HELM_VERSION)
STATICCHECK := $(BIN)/staticcheck-$(STATICCHECK_VERSION)
PROMTOOL := $(BIN)/promtool-$(PROMTOOL_VERSION)

KUBE_APISERVER := $(K8S_BIN)/kube-apiserver
ETCD := $(K8S_BIN)/etcd
KUBECTL := $(K8S_BIN)/kubectl

# Tests find the control plane here; a missing binary fails the test run.
export KUBEBUILDER_ASSETS := $(K8S_BIN)

# The race detector needs cgo (a C compiler); without one the tests run
# without it, and make test says so.
RACE := $(shell [ "$$(go env CGO_ENABLED)" = 1 ] && echo -race)
# Tests, vet and lint compile without DWARF debug information (a sixth
# less compile time; stack traces and race reports do not use it).
GO_BUILD_FLAGS := $(RACE) -gcflags=all=-dwarf=false
GO_TEST_FLAGS ?= $(GO_BUILD_FLAGS) -timeout 30m
# vet and lint build the packages as the tests do, so make test compiles
# each package once for the three of them, not once more for vet.
GO_CHECK_FLAGS := $(GO_BUILD_FLAGS)
# The tools in bin/ (the control plane, controller-gen, helm, staticcheck,
# promtool) are built without DWARF and stripped: nobody debugs them.
TOOL_BUILD_FLAGS := -trimpath -gcflags=all=-dwarf=false
# Every tagsync binary (make build, make demo, the tests' and the
# benchmarks' builds: internal/testenv.TagsyncBuildFlags) is built as the
# release image is: static and without file system paths. One
# configuration, so its packages are compiled once.
TAGSYNC_BUILD := CGO_ENABLED=0 go build -trimpath
K8S_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(KUBERNETES_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk -F':.*?## ' '{printf "  %-18s %s\n", $$1, $$2}'

##@ Main

DEMO_FLAGS ?=

.PHONY: demo
demo: demo-tools ## Run the playground: real kube-apiserver + simulated Azure + the controller, scripted (DEMO_FLAGS=--keep to poke around).
	@echo ">> building bin/tagsync (a couple of minutes on a first run, seconds after)"
	@$(call with-progress,building bin/tagsync,$(TAGSYNC_BUILD) -o $(BIN)/tagsync ./cmd/tagsync)
	@$(BIN)/tagsync demo $(DEMO_FLAGS)

.PHONY: demo-tools
demo-tools: ## Build only what the demo needs (kube-apiserver, etcd, kubectl into bin/k8s), with progress.
	@if ! $(MAKE) --no-print-directory -q $(KUBE_APISERVER) $(ETCD); then \
		echo ">> first run: building the Kubernetes control plane from Go modules into bin/k8s (about 5 minutes on 2 cores; later runs reuse it)"; \
	fi
	@$(call with-progress,building the control plane,$(MAKE) -s --no-print-directory $(KUBE_APISERVER) $(ETCD) $(KUBECTL))

# make test plays the demo once: TestDemo (internal/cli) builds ./cmd/tagsync
# and runs `tagsync demo` from the repository root, as make demo does, and
# fails the test run when a step does not hold.
#
# On a cold clone most of the time is compiling (docs/testing.md, "How long
# make test takes"): vet compiles every package as the tests do, and build
# compiles bin/tagsync as every test that runs the binary builds it, once,
# before several such tests start at the same moment and compile it side by
# side. go test then starts the longest packages first (TEST_FIRST), so that
# they do not run alone at the end.
TEST_FIRST := ./internal/cli ./test/e2e ./internal/controller/metadata ./internal/controller/labelsync ./internal/controller/nodetags
.PHONY: test
test: tools verify-generated vet lint helm-check build ## Build tools if missing, check generated code, vet, lint, check the chart, run all tests (the demo among them, once) with the race detector.
	@if [ -z "$(RACE)" ]; then echo ">> no C compiler (cgo off): tests run without the race detector; install gcc to enable it"; fi
	@echo ">> go test ./... (TestDemo plays make demo, the newcomer's command)"
	go test $(GO_TEST_FLAGS) $(TEST_FIRST) ./...

# The version of a build: VERSION=vX.Y.Z on the command line (make release
# VERSION=v0.2.0), else the nearest v* tag (v0.2.0, or v0.2.0-3-g<sha> past
# it, -dirty with uncommitted changes), else a Go-style pseudo-version from
# the commit time and hash. The leading v is dropped where SemVer wants none
# (image tag, chart version and appVersion, the binary's version); the krew
# manifest and the release URLs keep it. image, release and release-plan
# refuse a VERSION that is not SemVer with a leading v (check-version).
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
# Every timestamp of a build is the commit's: two builds of one commit are
# byte-identical.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	echo "v0.0.0-$$(TZ=UTC git log -1 --date=format-local:%Y%m%d%H%M%S --format=%cd)-$$(git rev-parse --short=12 HEAD)")
BUILD_DATE := $(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VERSION_PKG := github.com/tagsync/tagsync/internal/version
VERSION_LDFLAGS := -X $(VERSION_PKG).Version=$(VERSION:v%=%) -X $(VERSION_PKG).Commit=$(GIT_COMMIT) -X $(VERSION_PKG).Date=$(BUILD_DATE)

.PHONY: build
build: ## Build bin/tagsync, stamped with its version, commit and commit time (tagsync version).
	$(TAGSYNC_BUILD) -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/tagsync ./cmd/tagsync

##@ Benchmarks

# More flags for a bench-* target, e.g. BENCH_FLAGS="-scenarios cold -out ''".
BENCH_FLAGS ?=

.PHONY: bench-nodetags bench-metadata bench-labelsync bench-events bench-sizing bench-workloadtags
bench-nodetags: $(KUBE_APISERVER) $(ETCD) moto build ## Benchmark the node sync (~6 min): a table on stdout, bench/results/nodetags.json (BENCH_FLAGS: more flags; moto for -scenarios aws,aws-fanout,aws-memory).
	go run ./bench/nodetags -tagsync $(BIN)/tagsync $(BENCH_FLAGS)

bench-workloadtags: $(KUBE_APISERVER) $(ETCD) ## Benchmark the workload tags controller on Azure (~3 min at 500 disks; BENCH_FLAGS="-namespaces 200 -volumes 50 -services 500" for the goal's scale): a table on stdout, bench/results/workloadtags.json.
	go run ./bench/workloadtags $(BENCH_FLAGS)

bench-metadata: $(KUBE_APISERVER) $(ETCD) moto build ## Benchmark the metadata controller (~6 min): a table on stdout, bench/results/metadata.json.
	go run ./bench/metadata -tagsync $(BIN)/tagsync $(BENCH_FLAGS)

bench-labelsync: $(KUBE_APISERVER) $(ETCD) build ## Benchmark label sync (~4 min): a table on stdout, bench/results/labelsync.json.
	go run ./bench/labelsync -tagsync $(BIN)/tagsync $(BENCH_FLAGS)

bench-events: $(KUBE_APISERVER) $(ETCD) build ## Benchmark cloud change events (~13 min, most of it a 5-minute load; two replicas behind one address last): a table on stdout, bench/results/events.json.
	go run ./bench/events -tagsync $(BIN)/tagsync $(BENCH_FLAGS)

bench-sizing: $(KUBE_APISERVER) $(ETCD) build ## Benchmark one tagsync run serving every controller with events on (~5 min at 10,000 Nodes, 20,000 resources, 1,000 hosts in 10 clusters): a table on stdout, bench/results/sizing.json.
	go run ./bench/sizing -tagsync $(BIN)/tagsync $(BENCH_FLAGS)

##@ Release

DIST := $(ROOT)/dist
RELEASE_TOOL := $(DIST)/.tools/release
RELEASE_FLAGS = -root $(ROOT) -version $(VERSION) -commit $(GIT_COMMIT) -source-date-epoch $(SOURCE_DATE_EPOCH)

# SemVer 2.0.0 with a leading v, no build metadata (an image tag cannot
# carry a +): v0.2.0, v0.3.0-rc.1, v0.2.0-3-g<sha>-dirty. The release tool
# checks the same; this refuses before anything is built.
SEMVER_RE := ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$$

.PHONY: check-version
check-version:
	@if ! [[ "$(VERSION)" =~ $(SEMVER_RE) ]]; then \
		echo "VERSION=$(VERSION) is not SemVer with a leading v: want vMAJOR.MINOR.PATCH, optionally -PRERELEASE (make release VERSION=v0.2.0)" >&2; exit 1; \
	fi

# The release tool (hack/tools/release, its own module: the image building
# and the SBOM library stay out of the main module, whose tests use only
# go-containerregistry's in-process registry).
.PHONY: release-tool
release-tool: check-version
	@mkdir -p $(dir $(RELEASE_TOOL))
	go build -C hack/tools/release -o $(RELEASE_TOOL) .

.PHONY: release-plan
release-plan: release-tool ## Print, as JSON, the version every artifact of `make release` would carry (binary, image tag, chart, krew) and their names, building nothing.
	@$(RELEASE_TOOL) plan $(RELEASE_FLAGS)

.PHONY: image
image: release-tool ## Build the OCI image index (linux/amd64, linux/arm64) into dist/image: OCI layout dist/image/oci, docker-load tarballs, its digest.
	$(RELEASE_TOOL) image $(RELEASE_FLAGS) -out $(DIST)/image
	@echo ">> dist/image/oci is the image index $$(cat $(DIST)/image/digest) (push: crane push dist/image/oci <repo>:$(VERSION:v%=%); load one platform: docker load -i dist/image/tagsync_linux_amd64.docker.tar)"

# Extra flags of the dist step, e.g. "-platforms linux/amd64 -allow-partial"
# for a quick local snapshot without the darwin builds.
RELEASE_DIST_FLAGS ?=

# The OCI registry (and path) the release pushes the packaged chart to, e.g.
# ghcr.io/tagsync/charts (then: helm install tagsync
# oci://ghcr.io/tagsync/charts/tagsync --version <version>). Empty (the
# default): nothing is pushed. helm push uses helm's registry login
# (helm registry login <host>); CHART_PUSH_FLAGS adds flags, e.g.
# --plain-http for a registry without TLS.
CHART_REGISTRY ?=
CHART_PUSH_FLAGS ?=
CHART_PACKAGE ?= $(DIST)/tagsync-$(VERSION:v%=%).tgz

.PHONY: release
release: check-version $(HELM) image ## Build a release into dist/ (VERSION=vX.Y.Z, default from git describe): archives, checksums.txt, SBOMs, the krew manifest, the chart pinned to the image digest (pushed to CHART_REGISTRY when set) and the OLM bundle naming it (dist/bundle).
	$(RELEASE_TOOL) dist $(RELEASE_FLAGS) -image $(DIST)/image -helm bin/helm -out $(DIST) $(RELEASE_DIST_FLAGS)
	go run ./hack/bundle -helm $(HELM) -image $(IMAGE_REPO) -digest "$$(cat $(DIST)/image/digest)" -version $(VERSION) -out $(DIST)/bundle
	@echo ">> dist/ holds release $(VERSION:v%=%):"; cd $(DIST) && ls -1 *.tar.gz *.tgz *.cdx.json tagsync.krew.yaml checksums.txt && echo "bundle/ (OLM, $(IMAGE_REPO)@$$(cat image/digest))"
	@if [ -n "$(CHART_REGISTRY)" ]; then $(MAKE) --no-print-directory chart-push; fi

.PHONY: chart-push
chart-push: $(HELM) ## Push the packaged chart (CHART_PACKAGE, default dist/tagsync-<version>.tgz) to oci://CHART_REGISTRY (make release does it when CHART_REGISTRY is set).
	@if [ -z "$(CHART_REGISTRY)" ]; then echo "make chart-push: set CHART_REGISTRY (e.g. ghcr.io/tagsync/charts)" >&2; exit 1; fi
	@if [ ! -f "$(CHART_PACKAGE)" ]; then echo "make chart-push: no $(CHART_PACKAGE): run make release (or set CHART_PACKAGE)" >&2; exit 1; fi
	$(HELM) push $(CHART_PACKAGE) oci://$(CHART_REGISTRY:oci://%=%) $(CHART_PUSH_FLAGS)

# Where install-plugin puts tagsync and the kubectl plugin; must be on PATH.
PLUGIN_DIR ?= $(shell go env GOPATH)/bin

.PHONY: install-plugin
install-plugin: ## Install tagsync and the kubectl plugin (kubectl-tagsync, kubectl_complete-tagsync) into PLUGIN_DIR (default $(go env GOPATH)/bin).
	@mkdir -p $(PLUGIN_DIR)
	go build -o $(PLUGIN_DIR)/tagsync ./cmd/tagsync
	ln -sf tagsync $(PLUGIN_DIR)/kubectl-tagsync
	@# kubectl (1.26+) completes a plugin's arguments through kubectl_complete-<plugin>.
	@printf '%s\n' '#!/bin/sh' '# shell completion of `kubectl tagsync` (kubectl 1.26+ runs it)' \
		'exec kubectl-tagsync __complete "$$@"' > $(PLUGIN_DIR)/kubectl_complete-tagsync
	@chmod +x $(PLUGIN_DIR)/kubectl_complete-tagsync
	@echo ">> installed $(PLUGIN_DIR)/tagsync, kubectl-tagsync (a symlink to it) and kubectl_complete-tagsync"
	@case ":$$PATH:" in *":$(PLUGIN_DIR):"*) echo ">> try: kubectl tagsync status -A";; \
		*) echo ">> $(PLUGIN_DIR) is not on PATH: add it, or run make install-plugin PLUGIN_DIR=<a directory on PATH>";; esac

##@ OLM

# The operator image the bundle's CSV names, by digest: set IMAGE_DIGEST to
# the released image's (cat dist/image/digest after make image). Unset: a
# placeholder digest of zeros, which no registry serves (the committed
# bundle uses it; replace it before publishing).
IMAGE_REPO ?= ghcr.io/tagsync/tagsync
IMAGE_DIGEST ?=
# The committed bundle's version is the chart's appVersion; VERSION given on
# the command line (make bundle VERSION=v0.2.0) overrides it (not the
# git-describe default, which would name a development build).
BUNDLE_VERSION := $(if $(filter command line,$(origin VERSION)),$(VERSION))

.PHONY: bundle
bundle: $(HELM) ## Generate the OLM bundle into bundle/ (CSV from the chart's rendering, the CRDs, metadata/annotations.yaml, bundle.Dockerfile); IMAGE_DIGEST=sha256:... names the image, VERSION=vX.Y.Z on the command line the bundle's version (default: the chart's appVersion).
	go run ./hack/bundle -helm $(HELM) -image $(IMAGE_REPO) -digest "$(IMAGE_DIGEST)" -version "$(BUNDLE_VERSION)" -out bundle

##@ Code generation and checks

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy, CRDs and RBAC with controller-gen.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=tagsync-manager paths=./internal/... output:rbac:artifacts:config=config/rbac
	@# The chart ships the same CRDs as files its templates/crds.yaml renders
	@# (crds.enabled), so helm upgrade upgrades them; a crds/ folder would be
	@# installed once and never upgraded.
	@mkdir -p $(CHART)/files/crds
	rm -f $(CHART)/files/crds/*.yaml
	cp config/crd/bases/*.yaml $(CHART)/files/crds/

GENERATED = api/v1alpha1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml $(CHART)/files/crds

.PHONY: verify-generated
verify-generated: ## Fail when generated files are stale (and regenerate them).
	@sums() { for p in $(GENERATED); do if [ -e "$$p" ]; then find "$$p" -type f; fi; done | sort | xargs -r sha256sum; }; \
	before=$$(sums); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	after=$$(sums); \
	if [ "$$before" != "$$after" ]; then \
		echo "generated files were stale: 'make generate' has updated them; review and commit:"; \
		diff <(echo "$$before") <(echo "$$after") || true; \
		exit 1; \
	fi; echo ">> generated files are current"

CHART := charts/tagsync
# One values file per auth mode (workload identity, managed identity, service principal).
CHART_VALUES := $(sort $(wildcard $(CHART)/ci/*-values.yaml))

.PHONY: helm-check
helm-check: $(HELM) ## Lint the Helm chart and render it with each auth mode's values.
	$(HELM) lint --strict $(CHART)
	@for v in $(CHART_VALUES); do \
		echo ">> helm lint + template with $$v"; \
		$(HELM) lint --strict $(CHART) --values $$v >/dev/null || { $(HELM) lint --strict $(CHART) --values $$v; exit 1; }; \
		$(HELM) template tagsync $(CHART) --namespace tagsync-system --values $$v >/dev/null; \
	done
	@echo ">> the chart lints and renders for: $(notdir $(CHART_VALUES))"

.PHONY: vet
vet: ## go vet every package.
	go vet $(GO_CHECK_FLAGS) ./...

.PHONY: lint
lint: $(STATICCHECK) ## Run staticcheck.
	GOFLAGS="$(GO_CHECK_FLAGS)" $(STATICCHECK) ./...

##@ Tools

.PHONY: tools
tools: $(KUBE_APISERVER) $(ETCD) $(KUBECTL) $(CONTROLLER_GEN) $(HELM) $(STATICCHECK) $(PROMTOOL) moto ## Build the control plane and developer tools into bin/ (once).
	@echo ">> tools are in bin/ (kube-apiserver, etcd and kubectl in bin/k8s, moto_server in bin/moto)"

# moto_server, a local fake of the AWS APIs, for the AWS tests
# (internal/testenv.StartMoto runs bin/moto/bin/moto_server). `make moto`
# installs the pinned moto[server] into a virtualenv at bin/moto:
#   python3 -m venv --system-site-packages bin/moto
#   bin/moto/bin/pip install 'moto[server]==$(MOTO_VERSION)'
# It needs Python 3 with its venv module (Debian and Ubuntu ship that apart:
# apt-get install python3-venv) and pip access to PyPI, or a Python 3 whose
# site-packages already hold moto[server]==$(MOTO_VERSION): the venv sees them,
# so pip downloads nothing and a small bin/moto/bin/moto_server script runs
# that moto with the venv's python. It does nothing when bin/moto holds this
# version; a version bump here reinstalls.
MOTO_VERSION := 5.2.1
MOTO_DIR := $(BIN)/moto
MOTO_SERVER := $(MOTO_DIR)/bin/moto_server
MOTO_STAMP := $(MOTO_DIR)/.installed-moto-$(MOTO_VERSION)

.PHONY: moto
moto: ## Install moto_server (pinned moto[server]) for the AWS tests into a virtualenv at bin/moto (once).
	@if [ -x $(MOTO_SERVER) ] && [ -e $(MOTO_STAMP) ]; then exit 0; fi; \
	if ! command -v python3 >/dev/null 2>&1; then \
		echo "make moto: python3 is missing: install Python 3 with venv and pip (Debian: apt-get install python3 python3-venv)" >&2; exit 1; \
	fi; \
	if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then \
		echo "make moto: $$(command -v python3) cannot make a virtualenv (no venv/ensurepip module): apt-get install python3-venv" >&2; exit 1; \
	fi; \
	echo ">> installing moto[server]==$(MOTO_VERSION) into a virtualenv at bin/moto (first run only)"; \
	rm -rf $(MOTO_DIR); \
	echo "   python3 -m venv --system-site-packages bin/moto   ($$(python3 --version))"; \
	python3 -m venv --system-site-packages $(MOTO_DIR); \
	echo "   bin/moto/bin/pip install 'moto[server]==$(MOTO_VERSION)'"; \
	if ! $(MOTO_DIR)/bin/pip install --quiet 'moto[server]==$(MOTO_VERSION)'; then \
		rm -rf $(MOTO_DIR); \
		echo "make moto: pip could not install moto[server]==$(MOTO_VERSION): it needs PyPI (or an index or --find-links that pip is configured with), or a python3 that already has it" >&2; exit 1; \
	fi; \
	if [ ! -e $(MOTO_SERVER) ]; then \
		echo "   moto came from python3's own site-packages: writing bin/moto/bin/moto_server to run it with the venv's python"; \
		printf '%s\n' '#!/bin/sh' '# moto[server]==$(MOTO_VERSION) from the base Python (the venv sees its site-packages); see make moto.' \
			'exec "$$(dirname "$$0")/python" -m moto.server "$$@"' > $(MOTO_SERVER); \
		chmod +x $(MOTO_SERVER); \
	fi; \
	got=$$($(MOTO_DIR)/bin/python -c 'import importlib.metadata as m; print(m.version("moto"))'); \
	if [ "$$got" != "$(MOTO_VERSION)" ]; then \
		rm -rf $(MOTO_DIR); echo "make moto: bin/moto has moto $$got, want $(MOTO_VERSION)" >&2; exit 1; \
	fi; \
	touch $(MOTO_STAMP); \
	echo ">> moto_server $(MOTO_VERSION) is bin/moto/bin/moto_server"

$(KUBE_APISERVER): hack/tools/kube-apiserver/go.mod hack/tools/kube-apiserver/go.sum hack/tools/kube-apiserver/main.go
	@echo ">> building kube-apiserver $(KUBERNETES_VERSION) from Go modules (first run only: about 5 minutes on 2 cores)"
	@mkdir -p $(K8S_BIN)
	go build -C hack/tools/kube-apiserver $(TOOL_BUILD_FLAGS) -ldflags "$(K8S_LDFLAGS)" -o $@.tmp .
	@mv $@.tmp $@

$(ETCD): hack/tools/etcd/go.mod hack/tools/etcd/go.sum hack/tools/etcd/main.go
	@echo ">> building etcd from Go modules (first run only: under a minute)"
	@mkdir -p $(K8S_BIN)
	go build -C hack/tools/etcd $(TOOL_BUILD_FLAGS) -ldflags "-s -w" -o $@.tmp .
	@mv $@.tmp $@

$(KUBECTL): hack/tools/kubectl/go.mod hack/tools/kubectl/go.sum hack/tools/kubectl/main.go
	@mkdir -p $(K8S_BIN)
	@if command -v kubectl >/dev/null 2>&1; then \
		echo ">> using the machine's kubectl ($$(command -v kubectl))"; \
		printf '#!/bin/sh\nexec %s "$$@"\n' "$$(command -v kubectl)" > $@ && chmod +x $@; \
	else \
		echo ">> building kubectl from Go modules (first run only: about 2 minutes)"; \
		go build -C hack/tools/kubectl $(TOOL_BUILD_FLAGS) -ldflags "$(K8S_LDFLAGS)" -o $@.tmp . && mv $@.tmp $@; \
	fi

# with-progress runs $(2) and, while it runs, prints a line every minute
# saying $(1) is still working, so a long first build does not look stuck.
define with-progress
( trap 'kill $$! 2>/dev/null; exit 0' TERM; m=0; while :; do sleep 60 & wait $$!; m=$$((m+1)); \
	echo "   ... $(1): still working ($${m} min)"; done ) & hb=$$!; \
trap 'kill $$hb 2>/dev/null' EXIT; \
$(2)
endef

# go-install-tool installs $(2)@$(3) as $(1) (a versioned file name), so a
# version bump rebuilds it and an unchanged version is never rebuilt; $(4)
# are more go install flags.
define go-install-tool
@echo ">> installing $(2)@$(3) (first run only)"
@mkdir -p $(BIN)/.install
GOBIN=$(BIN)/.install go install $(TOOL_BUILD_FLAGS) -ldflags "-s -w" $(4) $(2)@$(3)
@mv $(BIN)/.install/$$(basename $(2)) $(1)
@ln -sf $$(basename $(1)) $(BIN)/$$(basename $(2))
endef

$(CONTROLLER_GEN):
	$(call go-install-tool,$@,sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_GEN_VERSION))

$(HELM):
	$(call go-install-tool,$@,helm.sh/helm/v4/cmd/helm,$(HELM_VERSION))

$(STATICCHECK):
	$(call go-install-tool,$@,honnef.co/go/tools/cmd/staticcheck,$(STATICCHECK_VERSION))

$(PROMTOOL):
	$(call go-install-tool,$@,github.com/prometheus/prometheus/cmd/promtool,$(PROMTOOL_VERSION),-tags remove_all_sd)

.PHONY: clean
clean: ## Remove build outputs (bin/, dist/).
	rm -rf $(BIN) $(DIST)
