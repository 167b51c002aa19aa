// Command gen writes each action.lua of the SandboxConfig customization
// from action.lua.tmpl, then deploy/gitops/argocd/argocd-cm.yaml from its
// Lua (`make generate` runs it; TestActionsAreGenerated and
// TestConfigMapIsGenerated fail when a file is stale).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"ate.dev/orchestrator/deploy/gitops/argocd"
)

func main() {
	out := flag.String("out", "deploy/gitops/argocd/argocd-cm.yaml", "file to write")
	flag.Parse()
	err := writeActions(filepath.Join(filepath.Dir(*out), argocd.Dir, "actions"))
	if err == nil {
		var b []byte
		if b, err = argocd.ConfigMap(); err == nil {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// writeActions writes dir/NAME/action.lua of every request action.
func writeActions(dir string) error {
	for _, r := range argocd.Requests {
		lua, err := argocd.ActionLua(r)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, r.Name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, r.Name, "action.lua"), []byte(lua), 0o644); err != nil {
			return err
		}
	}
	return nil
}
