#!/usr/bin/env bash
# Builds the tools this project runs (Temporal CLI, kube-apiserver, etcd,
# controller-gen, workflowcheck, golangci-lint, govulncheck and the Go
# vulnerability database it reads, the Temporal server with its SQL schema
# tool for the PostgreSQL stack, the local cluster's kube-controller-manager,
# kube-scheduler and kwok, kubectl for deploy's kube-setup test, and
# Prometheus for the local stack's metrics) from their Go modules, each
# pinned in its own module under hack/tools/<tool>/, into a cache keyed by
# tool and version:
#
#   ${ATE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ate-orchestrator/tools}/<tool>/<version>/<tool>
#
# Tools that type-check this repository's Go source (controller-gen,
# workflowcheck, golangci-lint, govulncheck) must be built by the Go that
# builds it, so their key also names that Go:
#
#   .../<tool>/<version>/<go version>/<tool>
#
# The cache lives outside the clone, so a fresh clone on the same machine (as
# CI uses) reuses it. Only missing tools are built. Each tool is then linked
# into bin/ at the repository root, where the Makefile, the tests and the local
# stack look for it.
#
# Usage: hack/tools/install.sh [tool ...]   (default: all)
# temporal-server also builds temporal-sql-tool from the same pinned module;
# vulndb builds golang.org/x/vulndb's indexdb and with it writes the pinned
# module's OSV files as a govulncheck database, linked as bin/vulndb;
# kube-controller-manager, kube-scheduler and kubectl are built from
# kube-apiserver's module, so the four always share one Kubernetes version;
# prometheus is built with the build tag remove_all_sd, which leaves out the
# cloud service discoveries (only static, file and HTTP discovery remain: the
# local stack uses file_sd) and their SDKs: about half the CPU time of a
# build without it (256 CPU-seconds against 557 on the 2-core machine).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${ATE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ate-orchestrator/tools}
bin="$root/bin"
mkdir -p "$bin"

# The Makefile exports go.mod's toolchain line as GOTOOLCHAIN; run by hand,
# this script does the same (decision 0018).
if [[ -z ${GOTOOLCHAIN:-} ]]; then
	GOTOOLCHAIN=$(sed -n 's/^toolchain //p' "$root/go.mod")
	export GOTOOLCHAIN
fi

# The version of a tool is the version of its module in hack/tools/<tool>/go.mod.
module_version() { # dir module
	(cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# While a tool builds (kube-apiserver takes about 10 minutes on 2 cores), a
# line every ATE_TOOLS_PROGRESS_INTERVAL seconds (15) says which tool, the
# time so far and how many tools are left, so a cold `make dev` is not a
# silent terminal. A cached tool prints nothing.
progress_interval=${ATE_TOOLS_PROGRESS_INTERVAL:-15}
tool_index=0 tool_count=0 # set by the loop at the end: which requested tool this is

# progress prints the running build's line every progress_interval seconds
# until killed. sleep gets no stdout or stderr, so that an orphaned sleep
# holds no pipe of the caller open.
progress() { # tool version started
	local left=$((tool_count - tool_index)) after=""
	if ((left > 0)); then after=", $left more to go after it"; fi
	while sleep "$progress_interval" </dev/null >/dev/null 2>&1; do
		echo "[$tool_index/$tool_count] still building $1 $2: $(($(date +%s) - $3))s so far$after" >&2
	done
}

# The tools that load and type-check Go packages with the go/types they were
# built with: one built by another Go misreads that Go's standard library.
reads_go_source=" controller-gen workflowcheck golangci-lint govulncheck "

build() { # tool module package [ldflags [module-dir [tags]]]
	local tool=$1 module=$2 pkg=$3 ldflags=${4:-} tags=${6:-}
	local dir="$root/hack/tools/${5:-$tool}"
	local version key
	version=$(module_version "$dir" "$module")
	key=$version
	if [[ $reads_go_source == *" $tool "* ]]; then
		local go_version
		go_version=$(go env GOVERSION)
		key="$version/$go_version"
		version="$version ($go_version)"
	fi
	local out="$cache/$tool/$key/$tool"
	if [[ ! -x "$out" ]]; then
		echo "[$tool_index/$tool_count] building $tool $version into $out (only once per machine)" >&2
		local started
		started=$(date +%s)
		mkdir -p "$(dirname "$out")"
		progress "$tool" "$version" "$started" &
		local ticker=$! status=0
		(cd "$dir" && CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg") || status=$?
		kill "$ticker" 2>/dev/null || true
		wait "$ticker" 2>/dev/null || true
		if ((status != 0)); then
			echo "[$tool_index/$tool_count] building $tool $version failed after $(($(date +%s) - started))s" >&2
			exit "$status"
		fi
		mv "$out.tmp" "$out"
		echo "[$tool_index/$tool_count] built $tool $version in $(($(date +%s) - started))s" >&2
	fi
	ln -sfn "$out" "$bin/$tool"
}

kube_ldflags() {
	local v
	v=$(module_version "$root/hack/tools/kube-apiserver" k8s.io/kubernetes)
	local major minor
	major=$(echo "${v#v}" | cut -d. -f1)
	minor=$(echo "${v#v}" | cut -d. -f2)
	local p=k8s.io/component-base/version
	echo "-X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
}

# Prometheus 3.x publishes its Go module as v0.3MM.P for release 3.MM.P; the
# release goes into the version Prometheus prints and exports as
# prometheus_build_info (any other form of version goes in as it is).
prometheus_ldflags() {
	local v release
	v=$(module_version "$root/hack/tools/prometheus" github.com/prometheus/prometheus)
	release=${v#v}
	if [[ $v =~ ^v0\.([1-9])([0-9]{2})\.([0-9]+)$ ]]; then
		release="${BASH_REMATCH[1]}.$((10#${BASH_REMATCH[2]})).${BASH_REMATCH[3]}"
	fi
	echo "-X github.com/prometheus/common/version.Version=$release"
}

# vulndb is the Go vulnerability database of hack/tools/vulndb's pinned
# golang.org/x/vulndb, in the layout `govulncheck -db file://...` reads: a
# snapshot, from the module proxy like every tool, so vulncheck runs offline.
vulndb() {
	build vulndb-indexdb golang.org/x/vulndb golang.org/x/vulndb/cmd/indexdb "" vulndb
	local dir="$root/hack/tools/vulndb" version src db
	version=$(module_version "$dir" golang.org/x/vulndb)
	db="$cache/vulndb/$version/db"
	if [[ ! -e "$db/index/db.json" ]]; then
		src=$(cd "$dir" && go mod download golang.org/x/vulndb && go list -m -f '{{.Dir}}' golang.org/x/vulndb)
		rm -rf "$db.tmp"
		"$bin/vulndb-indexdb" -vulns "$src/data/osv" -out "$db.tmp"
		mv "$db.tmp" "$db"
		echo "[$tool_index/$tool_count] wrote the Go vulnerability database $version into $db" >&2
	fi
	ln -sfn "$db" "$bin/vulndb"
}

install_tool() {
	case $1 in
	temporal) build temporal github.com/temporalio/cli github.com/temporalio/cli/cmd/temporal ;;
	kube-apiserver | kube-controller-manager | kube-scheduler | kubectl)
		build "$1" k8s.io/kubernetes "k8s.io/kubernetes/cmd/$1" "$(kube_ldflags)" kube-apiserver
		;;
	kwok) build kwok sigs.k8s.io/kwok sigs.k8s.io/kwok/cmd/kwok ;;
	etcd) build etcd go.etcd.io/etcd/server/v3 . ;;
	controller-gen) build controller-gen sigs.k8s.io/controller-tools sigs.k8s.io/controller-tools/cmd/controller-gen ;;
	temporal-server)
		build temporal-server go.temporal.io/server go.temporal.io/server/cmd/server "" temporal-server
		build temporal-sql-tool go.temporal.io/server go.temporal.io/server/cmd/tools/sql "" temporal-server
		;;
	workflowcheck) build workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck ;;
	golangci-lint) build golangci-lint github.com/golangci/golangci-lint/v2 github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
	govulncheck) build govulncheck golang.org/x/vuln golang.org/x/vuln/cmd/govulncheck ;;
	vulndb) vulndb ;;
	prometheus)
		build prometheus github.com/prometheus/prometheus github.com/prometheus/prometheus/cmd/prometheus \
			"$(prometheus_ldflags)" prometheus remove_all_sd
		;;
	*) echo "unknown tool $1" >&2; exit 2 ;;
	esac
}

if [[ $# -eq 0 ]]; then
	set -- controller-gen workflowcheck golangci-lint govulncheck vulndb etcd kube-apiserver temporal temporal-server \
		kube-controller-manager kube-scheduler kwok kubectl prometheus
fi
tool_count=$#
for t in "$@"; do
	tool_index=$((tool_index + 1))
	install_tool "$t"
done
