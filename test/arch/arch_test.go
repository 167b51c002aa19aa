// Package arch pins the direction of the module's imports: every import
// points down the layers of the design, from the commands to the API
// types, so the folders show the architecture:
//
//	cmd (and the harnesses: replay, test, hack, bench, deploy)
//	→ worker, starter (each process's wiring; neither imports the other)
//	→ workflows → activities → internal → api
//
// and that internal/ is the product: every package under it is linked into
// one of the binaries (commands), so tooling (the local stack, the release)
// lives in test/ and hack/, which no product package imports.
package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "ate.dev/orchestrator"

// layer is one level of the design. A package may import packages of its
// own layer or below, except that the packages of an exclusive layer's
// different roots do not import each other.
type layer struct {
	name string
	// roots are module-relative package paths; a root covers the
	// packages under it.
	roots     []string
	exclusive bool
}

// layers, top first.
var layers = []layer{
	{name: "commands and harnesses", roots: []string{"cmd", "replay", "test", "hack", "bench", "deploy"}},
	{name: "processes", roots: []string{"worker", "starter"}, exclusive: true},
	{name: "workflows", roots: []string{"workflows"}},
	{name: "activities", roots: []string{"activities"}},
	{name: "internal", roots: []string{"internal"}},
	{name: "api", roots: []string{"api"}},
}

// product are the roots of the product's packages, what the binaries are
// built from; tooling are the roots of the repository's tools and rigs
// (the local stack, the release). No product package imports tooling, not
// even a command, though the commands share its layer.
var (
	product = []string{"cmd", "worker", "starter", "workflows", "activities", "internal", "api"}
	tooling = []string{"test", "hack"}
)

// under reports whether the module-relative package path rel is one of
// roots or below one.
func under(rel string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return rel == r || strings.HasPrefix(rel, r+"/") })
}

// place returns the layer index and root of a module-relative package
// path; -1 when no layer holds it.
func place(rel string) (int, string) {
	for i, l := range layers {
		for _, r := range l.roots {
			if rel == r || strings.HasPrefix(rel, r+"/") {
				return i, r
			}
		}
	}
	return -1, ""
}

// violations lists the imports of graph (importer → imports, full import
// paths) that point up the layers or across an exclusive layer, and the
// module packages no layer holds.
func violations(graph map[string][]string) []string {
	var out []string
	for pkg, imports := range graph {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue
		}
		from, fromRoot := place(rel)
		if from < 0 {
			out = append(out, fmt.Sprintf("%s is in no layer: add its folder to test/arch's layers", rel))
			continue
		}
		for _, imp := range imports {
			irel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			to, toRoot := place(irel)
			switch {
			case under(rel, product) && under(irel, tooling):
				out = append(out, fmt.Sprintf("%s imports %s: the product imports no tooling (test/, hack/)", rel, irel))
			case to < 0:
				out = append(out, fmt.Sprintf("%s imports %s, which is in no layer", rel, irel))
			case to < from:
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s): an import up the layers", rel, layers[from].name, irel, layers[to].name))
			case to == from && layers[from].exclusive && toRoot != fromRoot:
				out = append(out, fmt.Sprintf("%s imports %s: the %s do not import each other", rel, irel, layers[from].name))
			}
		}
	}
	return out
}

func TestViolations(t *testing.T) {
	pkg := func(rel string) string { return module + "/" + rel }
	for _, tc := range []struct {
		name  string
		graph map[string][]string
		want  int
	}{
		{"down the layers", map[string][]string{
			pkg("cmd/worker"):        {pkg("worker"), pkg("internal/options")},
			pkg("worker"):            {pkg("worker/poolkeeper"), pkg("workflows"), pkg("activities"), pkg("internal/kube")},
			pkg("worker/poolkeeper"): {pkg("internal/poolevents"), "k8s.io/api/core/v1"},
			pkg("workflows"):         {pkg("activities"), pkg("internal/wfapi")},
			pkg("internal/wfapi"):    {pkg("internal/resolve"), pkg("api/v1alpha1")},
			pkg("replay"):            {pkg("worker"), pkg("workflows")},
		}, 0},
		{"internal up to activities", map[string][]string{pkg("internal/poolkeeper"): {pkg("activities")}}, 1},
		{"internal up to workflows", map[string][]string{pkg("internal/x"): {pkg("workflows")}}, 1},
		{"api up to internal", map[string][]string{pkg("api/v1alpha1"): {pkg("internal/kube")}}, 1},
		{"activities up to workflows", map[string][]string{pkg("activities"): {pkg("workflows")}}, 1},
		{"workflows up to the worker", map[string][]string{pkg("workflows"): {pkg("worker")}}, 1},
		{"the worker up to a command", map[string][]string{pkg("worker/poolkeeper"): {pkg("cmd/worker")}}, 1},
		{"the starter across to the worker", map[string][]string{pkg("starter"): {pkg("worker/poolkeeper")}}, 1},
		{"a package in no layer", map[string][]string{pkg("misc"): {pkg("api/v1alpha1")}}, 1},
		{"internal imports the local stack", map[string][]string{pkg("internal/kube"): {pkg("test/localstack/servers")}}, 1},
		{"the worker imports the release", map[string][]string{pkg("worker"): {pkg("hack/release/pkg/release")}}, 1},
		{"a command imports a test harness", map[string][]string{pkg("cmd/starter"): {pkg("test/testenv")}}, 1},
		{"tooling imports the product", map[string][]string{pkg("hack/devstack"): {pkg("test/localstack"), pkg("internal/version")}, pkg("test/localstack"): {pkg("internal/searchattr")}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, violations(tc.graph), tc.want, "%v", violations(tc.graph))
		})
	}
}

// TestImportsPointDown checks the module's own imports, with and without
// the build tags of its test and bench builds, test files included.
func TestImportsPointDown(t *testing.T) {
	for _, tags := range []string{"", "crashtest,record"} {
		t.Run("tags="+tags, func(t *testing.T) {
			graph, err := imports(tags)
			require.NoError(t, err)
			require.NotEmpty(t, graph[module+"/worker"], "go list found no imports of the worker")
			require.Empty(t, violations(graph))
		})
	}
}

// imports runs go list over the module and returns each package's imports,
// its tests' included. A test may also use the shared test harnesses
// (test/testenv, test/secrettest: real servers, the secrets check), as the
// API types' and the teardown's integration tests do, so its imports of
// test/ are left out.
func imports(tags string) (map[string][]string, error) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return nil, fmt.Errorf("finding the module's root: %w", err)
	}
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", "-tags="+tags, "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return graph, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		graph[p.ImportPath] = p.Imports
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if !strings.HasPrefix(imp, module+"/test/") {
				graph[p.ImportPath] = append(graph[p.ImportPath], imp)
			}
		}
	}
}

// unlinked lists the packages of internal (module-relative paths under
// internal/) that are not in linked, the import paths the binaries are
// built from.
func unlinked(internal []string, linked map[string]bool) []string {
	var out []string
	for _, rel := range internal {
		if !linked[module+"/"+rel] {
			out = append(out, fmt.Sprintf("%s is linked by no binary (%s): internal/ holds the product; move tooling to hack/ or test/", rel, strings.Join(binaries, ", ")))
		}
	}
	return out
}

// binaries are the product's commands: the processes and the kubectl
// plugin.
var binaries = []string{"cmd/worker", "cmd/starter", "cmd/teardown", "cmd/kubectl-ate"}

func TestUnlinked(t *testing.T) {
	linked := map[string]bool{
		module + "/cmd/worker":        true,
		module + "/internal/kube":     true,
		module + "/internal/kube/sub": true,
	}
	for _, tc := range []struct {
		name     string
		internal []string
		want     int
	}{
		{"every package linked", []string{"internal/kube", "internal/kube/sub"}, 0},
		{"the local stack in internal/", []string{"internal/kube", "internal/localstack", "internal/localstack/servers"}, 2},
		{"a parent linked, its child not", []string{"internal/kube", "internal/kube/tool"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, unlinked(tc.internal, linked), tc.want, "%v", unlinked(tc.internal, linked))
		})
	}
}

// TestInternalIsLinked checks that every package under internal/ is in the
// dependency closure of at least one binary (go list -deps), and that the
// closure holds no tooling: internal/ is the product.
func TestInternalIsLinked(t *testing.T) {
	root := moduleRoot(t)
	internal := goList(t, root, "./internal/...")
	require.NotEmpty(t, internal, "go list found no package under internal/")
	var rels []string
	for _, p := range internal {
		rel, ok := strings.CutPrefix(p, module+"/")
		require.True(t, ok, "%s is outside the module", p)
		rels = append(rels, rel)
	}
	deps := goList(t, root, append([]string{"-deps"}, prefixed("./", binaries)...)...)
	linked := map[string]bool{}
	for _, d := range deps {
		linked[d] = true
		if rel, ok := strings.CutPrefix(d, module+"/"); ok && under(rel, tooling) {
			t.Errorf("a binary links %s: the product links no tooling (test/, hack/)", rel)
		}
	}
	require.True(t, linked[module+"/internal/version"], "go list -deps of the binaries misses internal/version")
	require.Empty(t, unlinked(rels, linked))
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	require.NoError(t, err, "finding the module's root")
	return strings.TrimSpace(string(out))
}

// goList runs go list in dir and returns the import paths it prints.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v: %s", args, stderr.String())
	return strings.Fields(string(out))
}
