# Entry points of the repository. `make help` lists them.
#
# Tools (temporal, kube-apiserver, etcd, controller-gen, workflowcheck,
# golangci-lint, govulncheck and its vulnerability database, the local
# cluster's kube-controller-manager, kube-scheduler and kwok, and prometheus) are
# built once per machine by hack/tools/install.sh into a version-keyed cache
# and linked into bin/; every target builds the ones it needs (TEST_TOOLS,
# VERIFY_TOOLS, DEV_TOOLS) when missing, so warm runs build nothing and a
# cold `make test` builds no linter.
#
# The repository holds four Go modules (docs/decisions/0026-modules.md): the
# product at the root, which requires only what the binaries and the
# product's own tests link, and the workshop's: hack (the release, the local
# stack's command, the tools' checks), deploy (the manifests' generators and
# checks) and test (end-to-end, crash, fleet, bench...). Each is vetted,
# linted, tidied and scanned on its own; `make test` runs them all in one
# `go test` through the workspace hack/workspace/go.work.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BIN := $(ROOT)/bin
OUT := $(ROOT)/_out/bin

# Every build, test, tool and release runs on go.mod's toolchain line
# (go1.27.3, docs/decisions/0018-go-toolchain.md), which the go command takes
# from the module proxy once per machine. The machine's own Go (1.26.8 here)
# ignores a toolchain line (its GOTOOLCHAIN is "local"), so it is exported
# for every command make runs, the tests' own `go build`s included.
GO_TOOLCHAIN := $(shell sed -n 's/^toolchain //p' $(ROOT)/go.mod)
export GOTOOLCHAIN := $(GO_TOOLCHAIN)

# The orchestrator's binaries.
PROGRAMS := worker starter teardown

# The Go modules, the product's first, and the workspace that joins them
# for one `go test` (test/arch keeps every module the product links at the
# product's own version in the others, so the workspace builds the product
# as its module does). The test runs in the workspace's directory, which
# names it, rather than with GOWORK set: the tests' own go commands (a
# binary built from the root, the previous release's tree) must not inherit it.
MODULES := . hack deploy test
WORKSPACE := $(ROOT)/hack/workspace/go.work

# The tools each command needs, so a cold machine builds only those:
#   etcd, kube-apiserver: every test on a real API server (internal/testenv);
#   temporal: every test on a Temporal dev server (internal/testenv);
#   temporal-server (with temporal-sql-tool): test-postgres, on PostgreSQL;
#   kube-controller-manager, kube-scheduler, kwok: the local cluster
#     (internal/localstack/cluster: test/install, test/fleet, test/e2e/cluster,
#     test/rbac's controller manager);
#   kubectl: deploy's kube-setup check and `kubectl ate` as a plugin;
#   prometheus: internal/localstack/servers' Prometheus (its test,
#     internal/promquery's, and the rollout analysis' on real metrics).
# `make verify` adds the generators and checkers; `make dev` runs a subset.
TEST_TOOLS := etcd kube-apiserver temporal temporal-server kube-controller-manager kube-scheduler kwok kubectl prometheus
VERIFY_TOOLS := controller-gen workflowcheck golangci-lint govulncheck vulndb

# The version every binary prints with --version, and the image tag: the
# nearest tag, commits since and the commit, "-dirty" with local changes
# (e.g. v0.1.0-3-g848c611-dirty); just the commit where there is no tag.
# `make build VERSION=v0.2.0` overrides it.
# Evaluated once per make run: a tree edited while `make test` runs must not
# name another release than the one it cut.
ifndef VERSION
VERSION := $(shell git -C $(ROOT) describe --tags --always --dirty 2>/dev/null || echo dev)
endif
LDFLAGS := -X ate.dev/orchestrator/internal/version.Version=$(VERSION)

# Flags of `make dev`, e.g. DEVSTACK_FLAGS="-apiserver-port 6443", or
# TEMPORAL=postgres for temporal-server on PostgreSQL instead of the dev server; see
# `go -C hack run ./devstack -h`.
DEVSTACK_FLAGS ?=

# Files `make generate` writes; `verify` fails when they are stale.
GENERATED := ':(glob)api/**/zz_generated.*.go' deploy/crds deploy/rbac deploy/chart/files deploy/gitops/argocd/argocd-cm.yaml deploy/monitoring/alerts.yaml deploy/monitoring/dashboard.json

# Packages whose +kubebuilder:rbac markers make each process's roles in
# deploy/rbac/PROCESS: a ClusterRole ate-orchestrator-PROCESS, and a Role of
# the same name for the markers with a namespace (leader election).
RBAC_WORKER_DIRS := activities worker
RBAC_STARTER_DIRS := starter

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## Build the missing tools into the cache and link them into bin/.
	hack/tools/install.sh

.PHONY: generate
generate: ## Regenerate deepcopy code, CRDs and RBAC from the Go markers, and Argo CD's argocd-cm keys from their Lua.
	hack/tools/install.sh controller-gen
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(BIN)/controller-gen crd paths=./api/... output:crd:artifacts:config=deploy/crds
	$(BIN)/controller-gen rbac:roleName=ate-orchestrator-worker $(foreach d,$(RBAC_WORKER_DIRS),paths=./$(d)/...) output:rbac:artifacts:config=deploy/rbac/worker
	$(BIN)/controller-gen rbac:roleName=ate-orchestrator-starter $(foreach d,$(RBAC_STARTER_DIRS),paths=./$(d)/...) output:rbac:artifacts:config=deploy/rbac/starter
	@# The Helm chart's copies of the CRDs, roles and admission policy (deploy/chart_test.go compares the chart with deploy/).
	rm -f deploy/chart/files/crds/*.yaml && cp deploy/crds/*.yaml deploy/chart/files/crds/
	cp deploy/rbac/worker/role.yaml deploy/chart/files/rbac/worker.yaml
	cp deploy/rbac/starter/role.yaml deploy/chart/files/rbac/starter.yaml
	cp deploy/rbac/users/roles.yaml deploy/chart/files/rbac/users.yaml
	cp deploy/policy/workerpool-policy.yaml deploy/chart/files/policy/workerpool-policy.yaml
	@# Argo CD's argocd-cm keys for SandboxConfigs, from their Lua (deploy/gitops/argocd's TestConfigMapIsGenerated checks it).
	go -C deploy run ./gitops/argocd/gen -out $(ROOT)/deploy/gitops/argocd/argocd-cm.yaml
	$(MAKE) --no-print-directory monitoring

.PHONY: monitoring
monitoring: ## Regenerate the dashboard and alerting rules (deploy/monitoring, the chart's copies) from their .tmpl sources.
	go -C deploy run ./monitoring/gen

.PHONY: verify
verify: ## Check formatting, vet, go.mod tidiness, generated files, workflow determinism, the linter and known vulnerabilities.
	@unformatted=$$(gofmt -l .); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt -l lists files to format (run gofmt -w):"; echo "$$unformatted"; exit 1; fi
	@for m in $(MODULES); do echo "go -C $$m vet ./..."; go -C $$m vet ./...; done
	@for m in $(MODULES); do go -C $$m mod tidy -diff || { echo "$$m/go.mod or go.sum is not tidy: run 'make tidy' and commit the result"; exit 1; }; done
	go vet -tags record,crashtest ./replay/... ./internal/crashhook/...
	$(MAKE) --no-print-directory generate
	@if ! git diff --exit-code -- $(GENERATED) || [[ -n "$$(git ls-files --others --exclude-standard -- $(GENERATED))" ]]; then \
		git status --short -- $(GENERATED); \
		echo "generated files are stale or uncommitted: run 'make generate' and commit the result"; exit 1; fi
	hack/tools/install.sh workflowcheck
	$(BIN)/workflowcheck ./workflows/...
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory vulncheck

.PHONY: test-tools
test-tools: ## Build the missing tools the tests run (TEST_TOOLS) into the cache and link them into bin/.
	hack/tools/install.sh $(TEST_TOOLS)

# `make print-MODULES` prints the module directories, the product's first
# (.ci/run downloads each one's requirements); any variable prints so.
print-%:
	@echo $($*)

.PHONY: tidy
tidy: ## Run go mod tidy in every module.
	@for m in $(MODULES); do echo "go -C $$m mod tidy"; go -C $$m mod tidy; done

.PHONY: lint
# .golangci.yml says which linters run and why, and with which build tags.
lint: ## Run golangci-lint (.golangci.yml) on every package of every module.
	hack/tools/install.sh golangci-lint
	@for m in $(MODULES); do echo "(cd $$m && golangci-lint run ./...)"; (cd $(ROOT)/$$m && $(BIN)/golangci-lint run --allow-serial-runners ./...); done

.PHONY: vulncheck
# Offline: the database is the snapshot of golang.org/x/vulndb pinned in
# hack/tools/vulndb (its date is the pseudo-version's), written by
# hack/tools/install.sh; bump the pin for newer advisories. Only
# vulnerabilities in code the binaries can reach fail it (hack/vulncheck
# reads govulncheck's findings), the standard library's included: a fixed
# one means moving go.mod's toolchain line (VULNCHECK_FLAGS=-stdlib=warn only
# warns about those while you do). `govulncheck -show traces` shows the calls.
# The product module is scanned from its binaries (./cmd/...): what ships;
# each workshop module from all its packages.
VULNCHECK_FLAGS ?=
vulncheck: ## Fail on a known vulnerability the code can reach: the binaries' and each workshop module's, the Go standard library's included (a pinned snapshot of the Go vulnerability database, offline).
	hack/tools/install.sh govulncheck vulndb
	@go -C hack build -o $(OUT)/vulncheck ./vulncheck
	@for m in $(MODULES); do pkgs=./...; [[ $$m != . ]] || pkgs=./cmd/...; \
		echo "govulncheck -C $$m $$pkgs"; \
		$(BIN)/govulncheck -C $(ROOT)/$$m -db file://$(BIN)/vulndb -format json $$pkgs | $(OUT)/vulncheck $(VULNCHECK_FLAGS); done

.PHONY: test
# Every package, the crash tests (test/crashtest: kills after every
# activity, restarts, outages, the 90 s chaos soak) included, and beside
# them test-postgres, whose output follows theirs.
#
# The suite waits more than it computes: alone, test/e2e uses 0.6 of a core
# and test/crashtest less, so TEST_PARALLEL packages run at once, two per
# core rather than the go command's one, and the longest (TEST_FIRST, which
# set the suite's length) start first. docs/decisions/0020-test-parallelism.md
# has the measurements. The staged rollouts' end-to-end tests are a package of
# their own (test/e2e/rollout, its own API server), so that they run beside
# the rest of test/e2e rather than after it: each package's tests run one
# after another (SandboxConfigs are cluster-scoped).
# test cuts the release first: test/image runs that image (ATE_RELEASE_IMAGE).
TEST_PARALLEL ?= $(shell echo $$(( 2 * $$(nproc) )))
TEST_FIRST := $(addprefix ate.dev/orchestrator/test/,e2e e2e/rollout crashtest install fleet)
test: test-tools postgresql chromium podman release ## Run every test of every module against real servers (the README's test command), crash tests and the short soak included.
	@mkdir -p $(ROOT)/_out && rm -f $(ROOT)/_out/soak-summary.txt $(ROOT)/_out/test-postgres.log
	@echo "make test-postgres > _out/test-postgres.log (beside the packages; printed after them)"
	@$(MAKE) --no-print-directory test-postgres >$(ROOT)/_out/test-postgres.log 2>&1 & postgres_pid=$$!; \
	echo "cd hack/workspace && go test -p $(TEST_PARALLEL) $(TEST_FIRST) ate.dev/orchestrator/... -count=1 -timeout 30m"; \
	packages_rc=0; postgres_rc=0; \
	(cd $(dir $(WORKSPACE)) && KUBEBUILDER_ASSETS=$(BIN) ATE_TEMPORAL_CLI=$(BIN)/temporal ATE_SOAK_SUMMARY=$(ROOT)/_out/soak-summary.txt \
		ATE_RELEASE_IMAGE=$(RELEASE_OUT)/ate-orchestrator-$(VERSION).oci.tar \
		go test -p $(TEST_PARALLEL) $(TEST_FIRST) ate.dev/orchestrator/... -count=1 -timeout 30m) || packages_rc=$$?; \
	wait $$postgres_pid || postgres_rc=$$?; \
	cat $(ROOT)/_out/soak-summary.txt || packages_rc=1; \
	echo "=== make test-postgres"; cat $(ROOT)/_out/test-postgres.log; \
	[[ $$packages_rc -eq 0 && $$postgres_rc -eq 0 ]] || { echo "make test: failed: go test (and the soak's summary) exit $$packages_rc, test-postgres exit $$postgres_rc"; exit 1; }

# The end-to-end subset that runs on the production-shaped server as well:
# the same tests, with testenv on ATE_TEMPORAL_STACK=postgres
# (temporal-server from hack/tools/temporal-server on Debian's PostgreSQL,
# SQL visibility, 4 history shards). The README's "Production Temporal"
# says what it covers.
POSTGRES_E2E := ^(TestWalk|TestClaimRace|TestSharedConfigIsReleasedByItsLastUser|TestOperatorSurface)$$
POSTGRES_CRASH := ^(TestKillWorkerAfterActivity|TestTemporalRestartMidSwitch)$$/^(switch|gone)$$/^Confirm$$

.PHONY: postgresql
# Debian's PostgreSQL, which the harness starts itself (no service runs);
# installed only when missing, with sudo when not root.
postgresql: ## Install Debian's PostgreSQL when missing (the PostgreSQL stack's tests need it).
	@compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || { \
		sudo=; [[ $$(id -u) -eq 0 ]] || sudo="sudo -n"; echo "installing postgresql (apt-get)"; \
		$$sudo apt-get update -q </dev/null && $$sudo apt-get install -y -q --no-install-recommends postgresql </dev/null; }

.PHONY: chromium
# Debian's Chromium, which test/ops drives headless through the Temporal Web
# UI; installed only when missing, with sudo when not root.
chromium: ## Install Debian's Chromium when missing (the Web UI browser test needs it).
	@command -v chromium >/dev/null || { \
		sudo=; [[ $$(id -u) -eq 0 ]] || sudo="sudo -n"; echo "installing chromium (apt-get)"; \
		$$sudo apt-get update -q </dev/null && $$sudo apt-get install -y -q --no-install-recommends chromium </dev/null; }

.PHONY: screenshots
# The README's pictures of a rollout (docs/images/rollout-webui.png, and
# rollout-metrics.png: the series behind the dashboard's rollout row), taken
# by test/ops TestWebUIShowsARollout on the real servers and written there
# through ATE_DOCS_IMAGES; the test keeps each under 200 KB.
screenshots: tools chromium ## Retake the README's rollout pictures (docs/images) with the browser test.
	KUBEBUILDER_ASSETS=$(BIN) ATE_TEMPORAL_CLI=$(BIN)/temporal ATE_DOCS_IMAGES=$(ROOT)/docs/images \
		go -C test test ./ops -run '^TestWebUIShowsARollout$$' -count=1 -v

.PHONY: podman
# Debian's podman with runc, which test/image runs the release image with
# (crun, podman's other runtime, refuses this machine's hybrid cgroup
# layout; test/image/README.md says why each podman flag is there);
# installed only when missing, with sudo when not root.
podman: ## Install Debian's podman and runc when missing (test/image runs the release image with them).
	@command -v podman >/dev/null && { command -v runc || [[ -x /usr/sbin/runc ]]; } >/dev/null || { \
		sudo=; [[ $$(id -u) -eq 0 ]] || sudo="sudo -n"; echo "installing podman and runc (apt-get)"; \
		$$sudo apt-get update -q </dev/null && $$sudo apt-get install -y -q --no-install-recommends podman runc </dev/null; }

.PHONY: test-postgres
test-postgres: postgresql ## Run the end-to-end subset on temporal-server + PostgreSQL.
	hack/tools/install.sh etcd kube-apiserver temporal temporal-server
	KUBEBUILDER_ASSETS=$(BIN) ATE_TEMPORAL_CLI=$(BIN)/temporal ATE_TEMPORAL_STACK=postgres go -C test test ./e2e -run '$(POSTGRES_E2E)' -count=1 -timeout 20m
	KUBEBUILDER_ASSETS=$(BIN) ATE_TEMPORAL_CLI=$(BIN)/temporal ATE_TEMPORAL_STACK=postgres go -C test test ./crashtest -run '$(POSTGRES_CRASH)' -count=1 -timeout 20m

.PHONY: test-crash
# SOAK=10m runs a longer soak; SEED=n replays one.
test-crash: ## Run only the crash tests, verbosely (SOAK=10m for a longer soak, SEED=n to replay one).
	hack/tools/install.sh etcd kube-apiserver temporal
	KUBEBUILDER_ASSETS=$(BIN) ATE_TEMPORAL_CLI=$(BIN)/temporal go -C test test ./crashtest -count=1 -timeout 60m -v $(if $(SOAK),-soak=$(SOAK)) $(if $(SEED),-seed=$(SEED))

.PHONY: record-histories
record-histories: ## Record the missing replay fixtures of replay.Version (SCENARIO=walk: one); never overwrites.
	hack/tools/install.sh etcd kube-apiserver temporal
	KUBEBUILDER_ASSETS=$(BIN) ATE_TEMPORAL_CLI=$(BIN)/temporal go test -tags record ./replay -run 'TestRecord/$(SCENARIO)' -count=1 -v -timeout 20m

.PHONY: build
build: plugin ## Compile every module and build the worker, starter, teardown and the kubectl plugin, versioned from git describe, into _out/bin/.
	@for m in $(MODULES); do echo "go -C $$m build ./..."; go -C $$m build ./...; done
	@mkdir -p $(OUT)
	@for p in $(PROGRAMS); do echo "go build -ldflags '$(LDFLAGS)' -o $(OUT)/$$p ./cmd/$$p"; go build -ldflags '$(LDFLAGS)' -o $(OUT)/$$p ./cmd/$$p; done

# The kubectl plugin: with _out/bin on PATH, kubectl runs it as `kubectl ate`
# (docs/operating-with-the-cli.md); `make release` builds it for linux and
# darwin with a krew manifest.
PLUGIN := kubectl-ate

.PHONY: plugin
plugin: ## Build the kubectl plugin kubectl-ate (`kubectl ate`), versioned from git describe, into _out/bin/.
	@mkdir -p $(OUT)
	go build -ldflags '$(LDFLAGS)' -o $(OUT)/$(PLUGIN) ./cmd/$(PLUGIN)

.PHONY: version
version: ## Print the version make builds (git describe).
	@echo $(VERSION)

# The image and the manifests carry the same version as the binaries.
IMAGE ?= ate-orchestrator
KUSTOMIZATION ?= $(ROOT)/deploy/kustomization.yaml

.PHONY: image
image: ## Build the production image IMAGE:VERSION with docker (the binaries print VERSION).
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) $(ROOT)

.PHONY: compose
compose: ## docker compose up --build, the orchestrator's image built and tagged with VERSION.
	ATE_VERSION=$(VERSION) docker compose -f $(ROOT)/docker-compose.yaml up --build

.PHONY: set-image
set-image: ## Point deploy/kustomization.yaml's image at IMAGE:VERSION (what `kustomize edit set image` does).
	@sed -i -E '/^  - name: ate-orchestrator$$/,/^  - /{s|^(    newName:).*|\1 $(IMAGE)|;s|^(    newTag:).*|\1 $(VERSION)|}' $(KUSTOMIZATION)
	@grep -A2 '^  - name: ate-orchestrator$$' $(KUSTOMIZATION)

# `make release`: the image repository the release is published to (no tag:
# the release tags it VERSION and install.yaml pins IMAGE@sha256:<index
# digest>). IMAGE on the command line or in the environment overrides it;
# the `image` target's local default (ate-orchestrator) does not apply.
RELEASE_IMAGE := $(if $(filter-out file default undefined,$(origin IMAGE)),$(IMAGE),ghcr.io/ate-dev/ate-orchestrator)
RELEASE_OUT := $(ROOT)/_out/release

.PHONY: release
release: ## Cut release VERSION (default: `make version`) offline into _out/release/: the OCI archive of the image (linux/amd64+arm64), its SBOM, install.yaml (IMAGE@digest; IMAGE defaults to ghcr.io/ate-dev/ate-orchestrator), monitoring.yaml, the kubectl plugin's archives (linux and darwin, amd64 and arm64) and krew manifest, SHA256SUMS.
	@rm -rf $(RELEASE_OUT)
	go -C hack run ./release -version '$(VERSION)' -image '$(RELEASE_IMAGE)' -out $(RELEASE_OUT) -root $(ROOT)

# The tools `make dev` runs; on a cold machine it builds only these.
DEV_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kwok temporal prometheus

.PHONY: dev
dev: ## Run the local stack: Temporal + UI, kube-apiserver, etcd, controller manager, scheduler, kwok's nodes, Prometheus, CRDs, samples, worker, starter.
	hack/tools/install.sh $(DEV_TOOLS)
	@mkdir -p $(OUT)
	go -C hack build -ldflags '$(LDFLAGS)' -o $(OUT)/devstack ./devstack
	$(OUT)/devstack $(if $(TEMPORAL),-temporal $(TEMPORAL)) $(DEVSTACK_FLAGS)

# Flags of `make dev-cluster-2`, e.g. DEV2_FLAGS=-cluster=false for the bare
# API server (no controller manager, scheduler or kwok: less CPU).
DEV2_FLAGS ?=

.PHONY: dev-cluster-2
dev-cluster-2: ## Run a second local cluster (API server, etcd, CRDs, samples, worker, starter; cluster local-2, state in .state/cluster-2) against the running `make dev` stack's Temporal and Prometheus.
	hack/tools/install.sh $(filter-out temporal prometheus,$(DEV_TOOLS))
	@mkdir -p $(OUT)
	go -C hack build -ldflags '$(LDFLAGS)' -o $(OUT)/devstack ./devstack
	$(OUT)/devstack -temporal-address 127.0.0.1:7233 -prometheus-url http://127.0.0.1:9098 -prometheus-targets .state/prometheus/targets \
		-state .state/cluster-2 -cluster-name local-2 -program-ports 9094 $(DEV2_FLAGS)

# Flags of `make bench`, e.g. BENCH_FLAGS="-sizes 10,100"; see
# `go -C test run ./bench -h`. By default the runs are added to BENCHMARKS.md.
# TEMPORAL=postgres runs them on temporal-server + PostgreSQL instead of the
# dev server (rows noted as such).
BENCH_FLAGS ?= -record BENCHMARKS.md

.PHONY: bench
bench: ## Benchmark how fast pools follow a new class default (N=10,100,1000) against the API server's and Temporal's floors; results in test/bench/results/latest.json.
	$(MAKE) --no-print-directory test-tools
	@mkdir -p $(OUT)
	go -C test build -o $(OUT)/bench ./bench
	$(OUT)/bench $(if $(TEMPORAL),-temporal $(TEMPORAL)) $(BENCH_FLAGS)

.PHONY: bench-large
bench-large: ## Benchmark N=1000 then N=10000 in one run (about 60 minutes on 2 cores, staged rollouts included): how the cost per switch and the memory per pool grow with the fleet.
	$(MAKE) --no-print-directory test-tools
	@mkdir -p $(OUT)
	go -C test build -o $(OUT)/bench ./bench
	$(OUT)/bench $(if $(TEMPORAL),-temporal $(TEMPORAL)) -sizes 1000,10000 -floor-tries 1 -out test/bench/results/large.json $(BENCH_FLAGS)

.PHONY: bench-pods
bench-pods: ## Benchmark N=1000 on the local cluster with two workers per pool: pods coming up, then a wave with them present.
	$(MAKE) --no-print-directory test-tools
	@mkdir -p $(OUT)
	go -C test build -o $(OUT)/bench ./bench
	$(OUT)/bench $(if $(TEMPORAL),-temporal $(TEMPORAL)) -sizes 1000 -cluster -pod-replicas 2 -floor-tries 1 -out test/bench/results/pods.json $(BENCH_FLAGS)
