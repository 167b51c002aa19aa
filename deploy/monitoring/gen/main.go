// Command gen writes deploy/monitoring's dashboard.json and alerts.yaml from
// their sources (dashboard.json.tmpl, alerts.yaml.tmpl) for the default
// cluster label, and the Helm chart's copies with the placeholder its
// templates replace (deploy/chart/files/monitoring), under the repository's
// root (the product's go.mod above the working directory: `make monitoring`
// runs it in the deploy module); deploy/monitoring's tests fail while a
// written file differs from what it would write.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"ate.dev/orchestrator/deploy/monitoring"
	"ate.dev/orchestrator/internal/localstack/servers"
)

func main() {
	root, err := servers.RepoRoot()
	if err == nil {
		err = run(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	files, err := monitoring.Files()
	if err != nil {
		return err
	}
	for path, b := range files {
		if err := os.WriteFile(filepath.Join(root, path), b, 0o644); err != nil { //nolint:gosec // committed files, readable by all
			return err
		}
	}
	return nil
}
