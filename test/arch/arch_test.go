// Package arch pins the direction of the module's imports: every import
// points down the layers of the design, from the commands to the API
// types, so the folders show the architecture:
//
//	cmd (and the harnesses: replay, test, hack, bench, deploy)
//	→ worker, starter (each process's wiring; neither imports the other)
//	→ workflows → activities → internal → api
package arch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, violations(tc.graph), tc.want, "%v", violations(tc.graph))
		})
	}
}

// TestImportsPointDown checks the module's own imports, with and without
// the build tags of its test and bench builds, test files included.
func TestImportsPointDown(t *testing.T) {
	for _, tags := range []string{"", "benchtune,crashtest,record"} {
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
