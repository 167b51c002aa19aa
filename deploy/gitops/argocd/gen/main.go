// Command gen writes deploy/gitops/argocd/argocd-cm.yaml from the Lua of
// the SandboxConfig customization (`make generate` runs it;
// TestConfigMapIsGenerated fails when the file is stale).
package main

import (
	"flag"
	"fmt"
	"os"

	"ate.dev/orchestrator/deploy/gitops/argocd"
)

func main() {
	out := flag.String("out", "deploy/gitops/argocd/argocd-cm.yaml", "file to write")
	flag.Parse()
	b, err := argocd.ConfigMap()
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
