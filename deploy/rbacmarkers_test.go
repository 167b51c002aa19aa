package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var rbacDirsLine = regexp.MustCompile(`(?m)^RBAC_(WORKER|STARTER)_DIRS := (.*)$`)

// Every +kubebuilder:rbac marker is in a package `make generate` reads for
// one process's roles (the Makefile's RBAC_WORKER_DIRS, RBAC_STARTER_DIRS):
// controller-gen ignores a marker elsewhere, and the right it asks for
// would silently be missing from deploy/rbac.
func TestRBACMarkersAreGenerated(t *testing.T) {
	root := repoRoot(t)
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range rbacDirsLine.FindAllStringSubmatch(string(makefile), -1) {
		dirs = append(dirs, strings.Fields(m[2])...)
	}
	if len(dirs) == 0 {
		t.Fatal("the Makefile sets no RBAC_WORKER_DIRS or RBAC_STARTER_DIRS")
	}
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "_out") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "+kubebuilder:rbac:") {
			return nil
		}
		found++
		rel, _ := filepath.Rel(root, path)
		for _, d := range dirs {
			if strings.HasPrefix(rel, d+string(filepath.Separator)) {
				return nil
			}
		}
		t.Errorf("%s has +kubebuilder:rbac markers outside the Makefile's RBAC_WORKER_DIRS and RBAC_STARTER_DIRS %v: make generate ignores them", rel, dirs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no +kubebuilder:rbac markers found")
	}
}
