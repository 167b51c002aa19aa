// Package arch pins the direction of the repository's imports: every
// import points down the layers of the design, from the commands to the
// API types, so the folders show the architecture:
//
//	cmd (and the harnesses: replay, test, hack, deploy, and the test
//	harness of internal/: testenv, localstack, producttest, secrettest,
//	syncbuf)
//	→ worker, starter (each process's wiring; neither imports the other)
//	→ workflows → activities → internal → api
//
// that internal/ is the product: every package under it but the test
// harness is linked into one of the binaries (commands), and no binary
// links the harness or tooling (test/, hack/, deploy/); and, in
// modules_test.go, where the Go modules draw the line between the product
// and the workshop.
package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/localstack/servers"
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
	{name: "commands and harnesses", roots: append([]string{"cmd", "replay", "test", "hack", "deploy"}, harness...)},
	{name: "processes", roots: []string{"worker", "starter"}, exclusive: true},
	{name: "workflows", roots: []string{"workflows"}},
	{name: "activities", roots: []string{"activities"}},
	{name: "internal", roots: []string{"internal"}},
	{name: "api", roots: []string{"api"}},
}

// product are the roots of the product's packages, what the binaries are
// built from; harness are the product module's test harness (real servers
// for the product's own integration tests, and the local stack `make dev`
// runs), under internal/ but linked by no binary; tooling are the roots of
// the workshop's modules (the tests, the release, the manifests' checks).
// No product package imports tooling or the harness, not even a command,
// though the commands share their layer; a product package's tests may
// use the harness.
var (
	product = []string{"cmd", "worker", "starter", "workflows", "activities", "internal", "api"}
	harness = []string{"internal/testenv", "internal/localstack", "internal/producttest", "internal/secrettest", "internal/syncbuf"}
	tooling = []string{"test", "hack", "deploy"}
)

// isProduct reports whether a module-relative package path is the product's
// own code: under a product root and not the harness.
func isProduct(rel string) bool { return under(rel, product) && !under(rel, harness) }

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
			case isProduct(rel) && under(irel, tooling):
				out = append(out, fmt.Sprintf("%s imports %s: the product imports no tooling (test/, hack/, deploy/)", rel, irel))
			case isProduct(rel) && under(irel, harness):
				out = append(out, fmt.Sprintf("%s imports %s: only tests use the test harness", rel, irel))
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
			pkg("worker/poolkeeper"): {pkg("internal/events"), "k8s.io/api/core/v1"},
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
		{"internal imports the local stack", map[string][]string{pkg("internal/kube"): {pkg("internal/localstack/servers")}}, 1},
		{"the worker imports the release", map[string][]string{pkg("worker"): {pkg("hack/release/pkg/release")}}, 1},
		{"a command imports a test harness", map[string][]string{pkg("cmd/starter"): {pkg("internal/testenv")}}, 1},
		{"tooling imports the product", map[string][]string{pkg("hack/devstack"): {pkg("internal/localstack"), pkg("internal/version")}, pkg("internal/localstack"): {pkg("internal/searchattr")}}, 0},
		{"the harness imports the processes", map[string][]string{pkg("internal/producttest"): {pkg("worker"), pkg("starter")}}, 0},
		{"a deploy check imports the harness", map[string][]string{pkg("deploy"): {pkg("internal/testenv"), pkg("hack/release/pkg/helmchart")}}, 0},
		{"the worker imports a deploy generator", map[string][]string{pkg("worker"): {pkg("deploy/monitoring")}}, 1},
		{"activities import the product harness", map[string][]string{pkg("activities"): {pkg("internal/producttest")}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, violations(tc.graph), tc.want, "%v", violations(tc.graph))
		})
	}
}

// TestImportsPointDown checks the imports of every module's packages, with
// and without the build tags of the test builds, test files included.
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

// imports runs go list over every module and returns each package's
// imports, its tests' included. A test may also use the shared test harness
// (internal/testenv, internal/secrettest: real servers, the secrets check),
// as the API types' and the activities' integration tests do, so its
// imports of the harness are left out.
func imports(tags string) (map[string][]string, error) {
	root, err := servers.RepoRoot()
	if err != nil {
		return nil, fmt.Errorf("finding the repository's root: %w", err)
	}
	graph := map[string][]string{}
	for _, m := range modules {
		if err := addImports(graph, filepath.Join(root, m.dir), tags); err != nil {
			return nil, fmt.Errorf("module %s: %w", m.path, err)
		}
	}
	return graph, nil
}

// addImports adds the imports of the packages of the module in dir.
func addImports(graph map[string][]string, dir, tags string) error {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports", "-tags="+tags, "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading go list's output: %w", err)
		}
		graph[p.ImportPath] = p.Imports
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if rel, ok := strings.CutPrefix(imp, module+"/"); !ok || !under(rel, harness) {
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
			out = append(out, fmt.Sprintf("%s is linked by no binary (%s): internal/ holds the product and its test harness; move tooling to hack/ or test/", rel, strings.Join(binaries, ", ")))
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
		{"a tool in internal/", []string{"internal/kube", "internal/releasetool", "internal/releasetool/chart"}, 2},
		{"a parent linked, its child not", []string{"internal/kube", "internal/kube/tool"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, unlinked(tc.internal, linked), tc.want, "%v", unlinked(tc.internal, linked))
		})
	}
}

// TestInternalIsLinked checks that every package under internal/ but the
// test harness is in the dependency closure of at least one binary (go list
// -deps), and that the closure holds no harness: internal/ is the product.
func TestInternalIsLinked(t *testing.T) {
	root := moduleRoot(t)
	internal := goList(t, root, "./internal/...")
	require.NotEmpty(t, internal, "go list found no package under internal/")
	var rels []string
	for _, p := range internal {
		rel, ok := strings.CutPrefix(p, module+"/")
		require.True(t, ok, "%s is outside the module", p)
		if !under(rel, harness) {
			rels = append(rels, rel)
		}
	}
	deps := goList(t, root, append([]string{"-deps"}, prefixed("./", binaries)...)...)
	linked := map[string]bool{}
	for _, d := range deps {
		linked[d] = true
		if rel, ok := strings.CutPrefix(d, module+"/"); ok && !isProduct(rel) {
			t.Errorf("a binary links %s: the product links no harness or tooling", rel)
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

// moduleRoot is the directory of the product module's go.mod, the
// repository's root.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err, "finding the repository's root")
	return root
}

// goList runs go list in dir, as its own module, and returns the import
// paths it prints.
func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %v: %s", args, stderr.String())
	return strings.Fields(string(out))
}
