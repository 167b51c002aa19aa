// Package commands_test builds every binary of the repository as the
// Makefile does, version stamped with -ldflags -X, and runs it: --version
// prints the stamped version, and -h offers exactly the flags the process
// reads.
package commands_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/options"
)

// stamped is the version the test links in; nothing else sets it.
const stamped = "v0.0.0-commands-test"

// commands maps each binary's name to its package. They are built by
// import path from this module, which requires the product's and the
// hack module's (devstack is in the latter).
var commands = map[string]string{
	"worker":   "ate.dev/orchestrator/cmd/worker",
	"starter":  "ate.dev/orchestrator/cmd/starter",
	"teardown": "ate.dev/orchestrator/cmd/teardown",
	"devstack": "ate.dev/orchestrator/hack/devstack",
}

var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ate-commands-")
	if err != nil {
		panic(err)
	}
	bin = dir
	code := func() int {
		defer os.RemoveAll(dir)
		args := []string{"build", "-ldflags", "-X ate.dev/orchestrator/internal/version.Version=" + stamped, "-o", dir + "/"}
		for _, pkg := range commands {
			args = append(args, pkg)
		}
		cmd := exec.Command("go", args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			os.Stderr.WriteString("go build of the commands: " + err.Error() + "\n")
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// run runs a built command with args and an environment without the
// variables the flags default from, returning its combined output.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "%s %v: %s", name, args, out.String())
	return out.String()
}

func TestVersion(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, name+" "+stamped+"\n", run(t, name, "--version"))
		})
	}
}

var usageFlag = regexp.MustCompile(`(?m)^  -([\w-]+)`)

// flagsOf lists the flags bind defines.
func flagsOf(binds ...func(*flag.FlagSet)) []string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	for _, b := range binds {
		b(fs)
	}
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// Each -h lists the flags of what the process reads and --version, and no
// other: none that a shared option set or a library's init would leak.
func TestHelpFlags(t *testing.T) {
	var opts options.Options
	var leader options.LeaderElection
	var wopts options.WorkerOptions
	var sopts options.StarterOptions
	tests := []struct {
		name string
		want []string
		// never are flags that once leaked into this -h.
		never []string
	}{
		{name: "worker", want: flagsOf(opts.BindFlags, leader.BindFlags, wopts.BindFlags)},
		{name: "starter", want: flagsOf(opts.BindFlags, leader.BindFlags, sopts.BindFlags),
			never: []string{"workflow-task-pollers"}},
		{name: "teardown", want: []string{"kubeconfig", "log-format", "log-level"},
			never: []string{"temporal-address", "temporal-api-key", "task-queue", "metrics-bind-address", "health-probe-bind-address"}},
		{name: "devstack", want: []string{"apiserver-port", "cluster", "cluster-name", "crds", "program-ports", "prometheus-port", "prometheus-targets", "prometheus-url", "samples", "state", "task-queue", "temporal", "temporal-address", "temporal-namespace", "temporal-port", "ui-port"},
			never: []string{"kubeconfig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := run(t, tt.name, "-h")
			var got []string
			for _, m := range usageFlag.FindAllStringSubmatch(out, -1) {
				got = append(got, m[1])
			}
			want := append(slices.Clone(tt.want), "version")
			slices.Sort(want)
			slices.Sort(got)
			require.Equal(t, want, got, "%s -h:\n%s", tt.name, out)
			for _, f := range tt.never {
				require.NotContains(t, got, f, "%s -h offers -%s, which it does not read", tt.name, f)
			}
			require.True(t, strings.HasPrefix(out, "Usage of "+tt.name), "%s -h starts %q", tt.name, out[:min(len(out), 40)])
		})
	}
}
