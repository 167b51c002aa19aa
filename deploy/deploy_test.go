// Package deploy_test checks the ways of running the orchestrator that live
// outside the Go code: the kustomization in deploy/ (built with kustomize's
// own library and applied, server-side dry run, to a real kube-apiserver),
// docker-compose.yaml (loaded with the Compose specification's reference
// loader) and the Dockerfile. They must agree with the binaries: every
// environment variable they set is one the binaries read, every command one
// the image contains.
package deploy_test

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/internal/testenv"
)

// The API server serves the kustomize tests; Temporal is not needed.
func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{NoTemporal: true})) }

// repoRoot is the repository's root; tests run in deploy/.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var envInUsage = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)\)`)

// optionEnvNames lists the environment variables of internal/options, which
// both binaries read: BindFlags names each in its flag's usage.
func optionEnvNames(t testing.TB) []string {
	t.Helper()
	var o options.Options
	names := envNamesIn(o.BindFlags)
	if !slices.Contains(names, "TEMPORAL_ADDRESS") || !slices.Contains(names, "KUBECONFIG") {
		t.Fatalf("found %v in the usage of internal/options' flags; the \"(env NAME)\" convention changed?", names)
	}
	return names
}

// mainEnvNames lists the environment variables a command's main.go reads
// itself: the string literals passed to os.Getenv, os.LookupEnv or a local
// helper named env* (the starter's envBool).
func mainEnvNames(t testing.TB, command string) []string {
	t.Helper()
	path := filepath.Join(repoRoot(t), "cmd", command, "main.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		var fn string
		switch fun := call.Fun.(type) {
		case *ast.SelectorExpr:
			if pkg, ok := fun.X.(*ast.Ident); ok && pkg.Name == "os" {
				fn = fun.Sel.Name
			}
		case *ast.Ident:
			if strings.HasPrefix(fun.Name, "env") {
				fn = fun.Name
			}
		}
		if fn != "Getenv" && fn != "LookupEnv" && !strings.HasPrefix(fn, "env") {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				names = append(names, s)
			}
		}
		return true
	})
	return names
}

// envNames lists every environment variable a command (worker, starter)
// reads.
func envNames(t testing.TB, command string) []string {
	t.Helper()
	names := append(optionEnvNames(t), mainEnvNames(t, command)...)
	var leader options.LeaderElection
	names = append(names, envNamesIn(leader.BindFlags)...)
	switch command {
	case "worker":
		names = append(names, workerOptionEnvNames()...)
	case "starter":
		var o options.StarterOptions
		names = append(names, envNamesIn(o.BindFlags)...)
	}
	return names
}

// workerOptionEnvNames lists the environment variables of the worker's
// Temporal worker settings (options.WorkerOptions).
func workerOptionEnvNames() []string {
	var o options.WorkerOptions
	return envNamesIn(o.BindFlags)
}

// envNamesIn lists the environment variables named, "(env NAME)", in the
// usage of the flags bind defines.
func envNamesIn(bind func(*flag.FlagSet)) []string {
	fs := flag.NewFlagSet("env", flag.ContinueOnError)
	bind(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if m := envInUsage.FindStringSubmatch(f.Usage); m != nil {
			names = append(names, m[1])
		}
	})
	return names
}

func TestEnvNames(t *testing.T) {
	starter := envNames(t, "starter")
	for _, want := range []string{"KUBECONFIG", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_TASK_QUEUE",
		"METRICS_BIND_ADDRESS", "HEALTH_PROBE_BIND_ADDRESS", "LEADER_ELECT", "LEADER_ELECTION_NAMESPACE"} {
		if !slices.Contains(starter, want) {
			t.Errorf("the starter's environment variables %v lack %s", starter, want)
		}
	}
	worker := envNames(t, "worker")
	for _, want := range []string{"TEMPORAL_ADDRESS", "ATE_WORKFLOW_TASK_POLLERS", "ATE_ACTIVITY_TASK_POLLERS", "ATE_MAX_CONCURRENT_ACTIVITIES"} {
		if !slices.Contains(worker, want) {
			t.Errorf("the worker's environment variables %v lack %s", worker, want)
		}
	}
	if slices.Contains(starter, "ATE_WORKFLOW_TASK_POLLERS") {
		t.Error("the starter runs no Temporal worker")
	}
	if !slices.Contains(starter, "ATE_START_CONCURRENCY") || slices.Contains(worker, "ATE_START_CONCURRENCY") {
		t.Error("ATE_START_CONCURRENCY is the starter's setting, and only the starter's")
	}
}

// port returns the port of a bind address such as ":8081".
func port(t testing.TB, addr string) int {
	t.Helper()
	i := strings.LastIndex(addr, ":")
	p, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil {
		t.Fatalf("no port in bind address %q", addr)
	}
	return p
}
