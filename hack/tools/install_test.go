// Package tools_test runs hack/tools/install.sh with a stand-in go command,
// in a copy of its directory with a cache of its own: the real tools are
// neither built nor touched.
package tools_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeGo answers `go list -m` with a version (FAKE_VERSION, default
// v1.2.3) and `go env GOVERSION` with the toolchain it was asked for, and
// makes `go build -o OUT` take a moment before it writes OUT; a FAIL file
// makes builds fail. With FAKE_LOG set, each build appends its directory
// and package to that file; with FAKE_ARGS_LOG, its arguments.
const fakeGo = `#!/usr/bin/env bash
case $1 in
list) echo "${FAKE_VERSION:-v1.2.3}" ;;
env) echo "$GOTOOLCHAIN" ;;
build)
	[[ -n ${FAKE_LOG:-} ]] && echo "$PWD ${*: -1}" >>"$FAKE_LOG"
	[[ -n ${FAKE_ARGS_LOG:-} ]] && echo "$*" >>"$FAKE_ARGS_LOG"
	sleep "$FAKE_BUILD_SECONDS"
	[[ -e "$FAKE_DIR/FAIL" ]] && { echo "compile error" >&2; exit 3; }
	while [[ $# -gt 0 && $1 != -o ]]; do shift; done
	printf '#!/bin/sh\n' >"$2" && chmod +x "$2" ;;
esac
`

type rig struct{ root, cache, dir string }

func newRig(t *testing.T) rig {
	t.Helper()
	r := rig{root: t.TempDir(), cache: t.TempDir(), dir: t.TempDir()}
	script, err := os.ReadFile("install.sh")
	require.NoError(t, err)
	tools := filepath.Join(r.root, "hack", "tools")
	for _, tool := range []string{"etcd", "kube-apiserver", "temporal", "golangci-lint"} {
		require.NoError(t, os.MkdirAll(filepath.Join(tools, tool), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(r.root, "go.mod"), []byte("module x\n\ngo 1.26\n\ntoolchain go9.1.0\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(tools, "install.sh"), script, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "go"), []byte(fakeGo), 0o755))
	return r
}

// install runs the copied install.sh with tools, returning its output.
func (r rig) install(t *testing.T, buildSeconds string, tools ...string) (string, error) {
	t.Helper()
	return r.installEnv(t, buildSeconds, nil, tools...)
}

// installEnv is install with extra environment variables.
func (r rig) installEnv(t *testing.T, buildSeconds string, env []string, tools ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(r.root, "hack", "tools", "install.sh"), tools...)
	cmd.Env = append(withoutGOTOOLCHAIN(os.Environ()),
		"PATH="+r.dir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ATE_TOOLS_CACHE="+r.cache, "ATE_TOOLS_PROGRESS_INTERVAL=1",
		"FAKE_BUILD_SECONDS="+buildSeconds, "FAKE_DIR="+r.dir)
	cmd.Env = append(cmd.Env, env...)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
		}
	}()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestInstallShowsProgress(t *testing.T) {
	r := newRig(t)
	out, err := r.install(t, "2.5", "etcd", "kube-apiserver")
	require.NoError(t, err, out)
	t.Logf("install.sh etcd kube-apiserver:\n%s", out)
	for _, want := range []string{
		"[1/2] building etcd v1.2.3 into " + filepath.Join(r.cache, "etcd", "v1.2.3", "etcd"),
		"[1/2] built etcd v1.2.3 in ",
		"[2/2] building kube-apiserver v1.2.3",
		"[2/2] built kube-apiserver v1.2.3 in ",
	} {
		require.Contains(t, out, want)
	}
	// Each 2.5 s build has a progress line a second, the time so far
	// growing; the last tool has none to go after it.
	for _, tt := range []struct{ line, tool string }{
		{`^\[1/2\] still building etcd v1\.2\.3: (\d+)s so far, 1 more to go after it$`, "etcd"},
		{`^\[2/2\] still building kube-apiserver v1\.2\.3: (\d+)s so far$`, "kube-apiserver"},
	} {
		ms := regexp.MustCompile("(?m)"+tt.line).FindAllStringSubmatch(out, -1)
		require.NotEmpty(t, ms, "no progress line of %s", tt.tool)
		last := 0
		for _, m := range ms {
			n, _ := strconv.Atoi(m[1])
			require.Greater(t, n, last, "progress of %s: %q", tt.tool, m[0])
			last = n
		}
	}
	for _, tool := range []string{"etcd", "kube-apiserver"} {
		link, err := os.Readlink(filepath.Join(r.root, "bin", tool))
		require.NoError(t, err, "bin/%s", tool)
		require.Equal(t, filepath.Join(r.cache, tool, "v1.2.3", tool), link)
	}
	_, err = os.Lstat(filepath.Join(r.root, "bin", "temporal"))
	require.True(t, os.IsNotExist(err), "bin/temporal was linked, though not asked for: %v", err)

	// Cached, as on CI's warm runs: nothing is built and nothing printed.
	out, err = r.install(t, "2.5", "etcd", "kube-apiserver")
	require.NoError(t, err, out)
	require.Empty(t, out)
}

// The controller manager, the scheduler and kubectl are built from
// kube-apiserver's module, so the four always run one Kubernetes version;
// kwok from its own.
func TestInstallBuildsTheClusterFromTheirModules(t *testing.T) {
	r := newRig(t)
	require.NoError(t, os.MkdirAll(filepath.Join(r.root, "hack", "tools", "kwok"), 0o755))
	log := filepath.Join(r.dir, "builds.log")
	out, err := r.installEnv(t, "0", []string{"FAKE_LOG=" + log}, "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
	require.NoError(t, err, out)
	b, err := os.ReadFile(log)
	require.NoError(t, err)
	tools := filepath.Join(r.root, "hack", "tools")
	require.Equal(t, []string{
		filepath.Join(tools, "kube-apiserver") + " k8s.io/kubernetes/cmd/kube-controller-manager",
		filepath.Join(tools, "kube-apiserver") + " k8s.io/kubernetes/cmd/kube-scheduler",
		filepath.Join(tools, "kube-apiserver") + " k8s.io/kubernetes/cmd/kubectl",
		filepath.Join(tools, "kwok") + " sigs.k8s.io/kwok/cmd/kwok",
	}, strings.Split(strings.TrimSpace(string(b)), "\n"))
	for _, tool := range []string{"kube-controller-manager", "kube-scheduler", "kubectl", "kwok"} {
		link, err := os.Readlink(filepath.Join(r.root, "bin", tool))
		require.NoError(t, err, "bin/%s", tool)
		require.Equal(t, filepath.Join(r.cache, tool, "v1.2.3", tool), link)
	}
}

// Prometheus is built from its module with the remove_all_sd tag (no cloud
// service discovery: the local stack needs file_sd only), and stamped with
// the release its module version stands for (v0.316.0 is Prometheus
// 3.16.0); the other tools get no tag.
func TestInstallBuildsPrometheusWithoutCloudDiscovery(t *testing.T) {
	r := newRig(t)
	require.NoError(t, os.MkdirAll(filepath.Join(r.root, "hack", "tools", "prometheus"), 0o755))
	args := filepath.Join(r.dir, "args.log")
	out, err := r.installEnv(t, "0", []string{"FAKE_ARGS_LOG=" + args, "FAKE_VERSION=v0.316.0"}, "prometheus", "etcd")
	require.NoError(t, err, out)
	b, err := os.ReadFile(args)
	require.NoError(t, err)
	builds := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, builds, 2)
	require.Contains(t, builds[0], "-tags remove_all_sd ")
	require.Contains(t, builds[0], "-X github.com/prometheus/common/version.Version=3.16.0")
	require.True(t, strings.HasSuffix(builds[0], " github.com/prometheus/prometheus/cmd/prometheus"), builds[0])
	require.NotContains(t, builds[1], "remove_all_sd", "etcd was built with prometheus' tag")
	link, err := os.Readlink(filepath.Join(r.root, "bin", "prometheus"))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(r.cache, "prometheus", "v0.316.0", "prometheus"), link)
}

// withoutGOTOOLCHAIN drops the toolchain make exports, so that install.sh
// takes go.mod's unless a test sets one.
func withoutGOTOOLCHAIN(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "GOTOOLCHAIN=") {
			out = append(out, e)
		}
	}
	return out
}

// A linter or generator type-checks the repository with the go/types it was
// built with, so its cache key names the Go that built it: a new toolchain
// builds it again, while a server such as etcd stays cached.
func TestInstallKeysSourceReadingToolsByGo(t *testing.T) {
	r := newRig(t)
	log := filepath.Join(r.dir, "builds.log")
	tests := []struct {
		name      string
		env       []string
		wantBuilt int
		wantLint  string
	}{
		{"go.mod's toolchain when none is set", nil, 2, filepath.Join(r.cache, "golangci-lint", "v1.2.3", "go9.1.0", "golangci-lint")},
		{"the same toolchain again builds nothing", []string{"GOTOOLCHAIN=go9.1.0"}, 2, filepath.Join(r.cache, "golangci-lint", "v1.2.3", "go9.1.0", "golangci-lint")},
		{"a new toolchain builds only the linter again", []string{"GOTOOLCHAIN=go9.2.0"}, 3, filepath.Join(r.cache, "golangci-lint", "v1.2.3", "go9.2.0", "golangci-lint")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.installEnv(t, "0", append([]string{"FAKE_LOG=" + log}, tt.env...), "golangci-lint", "etcd")
			require.NoError(t, err, out)
			b, err := os.ReadFile(log)
			require.NoError(t, err)
			require.Len(t, strings.Split(strings.TrimSpace(string(b)), "\n"), tt.wantBuilt, "builds so far:\n%s", b)
			link, err := os.Readlink(filepath.Join(r.root, "bin", "golangci-lint"))
			require.NoError(t, err)
			require.Equal(t, tt.wantLint, link)
			link, err = os.Readlink(filepath.Join(r.root, "bin", "etcd"))
			require.NoError(t, err)
			require.Equal(t, filepath.Join(r.cache, "etcd", "v1.2.3", "etcd"), link)
		})
	}
}

func TestInstallReportsAFailedBuild(t *testing.T) {
	r := newRig(t)
	require.NoError(t, os.WriteFile(filepath.Join(r.dir, "FAIL"), nil, 0o644))
	out, err := r.install(t, "1.5", "temporal", "etcd")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, out)
	require.Equal(t, 3, exit.ExitCode(), out)
	require.Contains(t, out, "compile error")
	require.Contains(t, out, "[1/2] building temporal v1.2.3 failed after ")
	require.NotContains(t, out, "etcd", "install.sh went on after a failed build")
	require.NoFileExists(t, filepath.Join(r.cache, "temporal", "v1.2.3", "temporal"))
	require.False(t, strings.Contains(out, "built temporal"), out)
}

// `make dev` builds the tools the local stack runs, not the generators
// and checkers only `make generate` and `make verify` need.
func TestMakeDevBuildsOnlyItsTools(t *testing.T) {
	cmd := exec.Command("make", "-n", "dev")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make -n dev: %s", out)
	var installs []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "install.sh") {
			installs = append(installs, strings.TrimSpace(l))
		}
	}
	require.Equal(t, []string{"hack/tools/install.sh etcd kube-apiserver kube-controller-manager kube-scheduler kwok temporal prometheus"}, installs, "make -n dev:\n%s", out)
}

// makeVar is a variable of the Makefile, as make expands it.
func makeVar(t *testing.T, name string) []string {
	t.Helper()
	cmd := exec.Command("make", "--no-print-directory", "-s", "print-"+name)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make print-%s: %s", name, out)
	return strings.Fields(string(out))
}

// A cold `make test` builds the servers and clients the tests run (the
// Makefile's TEST_TOOLS says which test needs which), not the generators,
// the linter or the vulnerability scanner only `make verify` needs: on a
// fresh 2-core machine those are about a third of the tools' build time.
// (`make -n test` itself would run its recursive make of test-postgres.)
func TestMakeTestBuildsOnlyItsTools(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "-n", "test-tools")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make -n test-tools: %s", out)
	require.Equal(t, "hack/tools/install.sh etcd kube-apiserver temporal temporal-server kube-controller-manager kube-scheduler kwok kubectl prometheus", strings.TrimSpace(string(out)))
	require.Equal(t, strings.Fields("etcd kube-apiserver temporal temporal-server kube-controller-manager kube-scheduler kwok kubectl prometheus"), makeVar(t, "TEST_TOOLS"))

	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	require.Regexp(t, `(?m)^test: test-tools `, string(makefile), "make test builds its tools first")
}

// Every tool install.sh builds by default is installed by some target of
// the Makefile, and every tool a target installs is one install.sh builds.
func TestEveryToolHasItsCommand(t *testing.T) {
	script, err := os.ReadFile("install.sh")
	require.NoError(t, err)
	m := regexp.MustCompile(`set -- ((?:[^\n]*\\\n)*[^\n]*)`).FindSubmatch(script)
	require.NotNil(t, m, "install.sh's default tool list")
	all := strings.Fields(strings.ReplaceAll(string(m[1]), "\\", ""))
	require.Len(t, all, 14)

	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	var needed []string
	for _, l := range regexp.MustCompile(`(?m)^\thack/tools/install\.sh ([^\n]+)$`).FindAllStringSubmatch(string(makefile), -1) {
		for _, f := range strings.Fields(l[1]) {
			switch v := regexp.MustCompile(`^\$\(([A-Z_]+)\)$`).FindStringSubmatch(f); {
			case v != nil:
				needed = append(needed, makeVar(t, v[1])...)
			case strings.ContainsAny(f, "$()"):
				// $(filter-out temporal prometheus,$(DEV_TOOLS)): a subset of a list above
			default:
				needed = append(needed, f)
			}
		}
	}
	slices.Sort(needed)
	require.ElementsMatch(t, all, slices.Compact(needed))
}
