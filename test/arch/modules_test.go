package arch

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goModule is one of the repository's Go modules: its directory under the
// root and its path.
type goModule struct{ dir, path string }

// modules are the repository's Go modules, the product's first: the
// product at the root requires what its binaries and its own tests link;
// the workshop's (the release and local-stack tooling, the manifests'
// generators and checks, the tests and the bench) require the rest, and
// the product, through replace directives.
var modules = []goModule{
	{".", module},
	{"hack", module + "/hack"},
	{"deploy", module + "/deploy"},
	{"test", module + "/test"},
}

// workshopOnly are the modules the workshop needs and the product must
// not: a scanner of the product module, or a project importing the API,
// would otherwise carry them and their advisories.
var workshopOnly = []string{
	"helm.sh/helm",
	"github.com/prometheus/prometheus",
	"github.com/chromedp/",
	"github.com/compose-spec/compose-go",
	"github.com/grafana/grafana-foundation-sdk",
	"github.com/google/go-containerregistry",
	"github.com/CycloneDX/cyclonedx-go",
}

// workshopIn lists the module paths of list (go list -m output lines) that
// belong only to the workshop.
func workshopIn(list []string) []string {
	var out []string
	for _, l := range list {
		path, _, _ := strings.Cut(l, " ")
		if slices.ContainsFunc(workshopOnly, func(p string) bool { return strings.HasPrefix(path, p) }) ||
			(strings.HasPrefix(path, module+"/") && path != module+"/api") {
			out = append(out, path)
		}
	}
	return out
}

func TestWorkshopIn(t *testing.T) {
	for _, tc := range []struct {
		name string
		list []string
		want []string
	}{
		{"the product's", []string{"go.temporal.io/sdk v1.51.0", "k8s.io/client-go v0.37.2"}, nil},
		{"helm", []string{"helm.sh/helm/v4 v4.3.2"}, []string{"helm.sh/helm/v4"}},
		{"prometheus's server, not its client", []string{"github.com/prometheus/prometheus v0.316.0", "github.com/prometheus/client_golang v1.25.0"}, []string{"github.com/prometheus/prometheus"}},
		{"a workshop module", []string{module + "/test v0.0.0"}, []string{module + "/test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, workshopIn(tc.list))
		})
	}
}

// goOutput runs the go command in dir as that directory's own module (no
// workspace) and returns its output's lines.
func goOutput(t *testing.T, dir string, env []string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go %v in %s: %s", args, dir, stderr.String())
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestModulesAreTheRepository: every go.mod of the repository (but the
// tools' pins under hack/tools/, each its own module to build one tool)
// is one of modules, and the workspace `make test` runs in uses them all.
func TestModulesAreTheRepository(t *testing.T) {
	root := moduleRoot(t)
	var found []goModule
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "_out" || d.Name() == "bin" || rel == filepath.Join("hack", "tools")) {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(b)
		require.NotNil(t, m, "%s has no module line", path)
		found = append(found, goModule{filepath.Dir(rel), string(m[1])})
		return nil
	})
	require.NoError(t, err)
	require.ElementsMatch(t, modules, found, "a new module joins test/arch's modules, the Makefile's MODULES and hack/workspace/go.work")

	work, err := os.ReadFile(filepath.Join(root, "hack", "workspace", "go.work"))
	require.NoError(t, err)
	for _, m := range modules {
		use := filepath.Clean(filepath.Join("..", "..", m.dir))
		require.Regexp(t, `(?m)^\s+`+regexp.QuoteMeta(filepath.ToSlash(use))+`\s*$`, string(work), "hack/workspace/go.work uses module %s", m.path)
	}
}

// TestProductModuleHasNoWorkshop: the product module's graph (go list -m
// all) holds none of the workshop's modules.
func TestProductModuleHasNoWorkshop(t *testing.T) {
	list := goOutput(t, moduleRoot(t), nil, "list", "-m", "all")
	require.Greater(t, len(list), 10, "go list -m all printed %v", list)
	require.Empty(t, workshopIn(list[1:]), "the product module's graph carries the workshop's modules; require them in the module (hack, deploy, test) whose package needs them")
}

// TestWorkshopBuildsTheProductsVersions: each module whose packages the
// product links (its tests' included) is selected at the same version in
// every workshop module, so the tests and the workspace of `make test`
// build the product as the product module does. A workshop dependency that
// needs a newer version of one moves the product's requirement first.
func TestWorkshopBuildsTheProductsVersions(t *testing.T) {
	root := moduleRoot(t)
	linked := map[string]string{}
	for _, l := range goOutput(t, root, nil, "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...") {
		if path, version, ok := strings.Cut(l, " "); ok && path != module {
			linked[path] = version
		}
	}
	require.Contains(t, linked, "go.temporal.io/sdk", "go list -deps of the product found no Temporal SDK")
	for _, m := range modules[1:] {
		t.Run(m.dir, func(t *testing.T) {
			for _, l := range goOutput(t, filepath.Join(root, m.dir), nil, "list", "-m", "all") {
				f := strings.Fields(l)
				if want, ok := linked[f[0]]; ok && len(f) > 1 {
					require.Equal(t, want, f[1], "module %s selects %s at another version than the product's", m.path, f[0])
				}
			}
		})
	}
}

// TestAPIImportsOnlyTheAPIMachinery: a project importing
// ate.dev/orchestrator/api/v1alpha1, as a client of the CRDs does, links
// nothing of the product's but the API and nothing outside the Kubernetes
// API machinery (k8s.io/apimachinery and k8s.io/api and what they link),
// and its module graph holds none of the workshop's modules.
func TestAPIImportsOnlyTheAPIMachinery(t *testing.T) {
	root := moduleRoot(t)
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	goMod := goOutput(t, root, nil, "mod", "edit", "-print")
	toolchain := ""
	for _, l := range goMod {
		if strings.HasPrefix(l, "go ") || strings.HasPrefix(l, "toolchain ") {
			toolchain += l + "\n"
		}
	}
	write("go.mod", "module example.com/client\n\n"+toolchain+"\nrequire "+module+" v0.0.0-00010101000000-000000000000\n\nreplace "+module+" => "+root+"\n")
	write("main.go", `package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"ate.dev/orchestrator/api/v1alpha1"
)

func main() {
	s := runtime.NewScheme()
	fmt.Println(v1alpha1.AddToScheme(s), s.Recognizes(v1alpha1.GroupVersion.WithKind("WorkerPool")))
}
`)
	// The product's go.sum holds the sums of every package the client
	// builds; the module proxy serves the go.mod files the graph adds.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	write("go.sum", string(sums))
	client := []string{"GOFLAGS=-mod=mod"}
	goOutput(t, dir, client, "mod", "tidy")

	require.Empty(t, workshopIn(goOutput(t, dir, client, "list", "-m", "all")[1:]), "the API's importers get the workshop's modules")

	machinery := map[string]bool{}
	for _, l := range goOutput(t, dir, client, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}",
		"k8s.io/apimachinery/pkg/runtime", "k8s.io/apimachinery/pkg/apis/meta/v1", "k8s.io/api/core/v1") {
		machinery[l] = true
	}
	require.True(t, machinery["k8s.io/apimachinery"])
	for _, l := range goOutput(t, dir, client, "list", "-deps", "-f", "{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}", ".") {
		pkg, mod, _ := strings.Cut(l, " ")
		switch {
		case mod == "" || mod == "example.com/client":
		case mod == module:
			require.True(t, strings.HasPrefix(pkg, module+"/api/"), "the API links %s", pkg)
		default:
			require.True(t, machinery[mod], "the API links %s (module %s), beyond the API machinery", pkg, mod)
		}
	}
	out := goOutput(t, dir, client, "run", ".")
	require.Equal(t, []string{"<nil> true"}, out, "the API registers its kinds with apimachinery's scheme")
}
