// Command gen writes deploy/monitoring's dashboard.json and alerts.yaml from
// their sources (dashboard.json.tmpl, alerts.yaml.tmpl) for the default
// cluster label, and the Helm chart's copies with the placeholder its
// templates replace (deploy/chart/files/monitoring). `make monitoring` runs
// it from the repository's root; deploy/monitoring's tests fail while a
// written file differs from what it would write.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"ate.dev/orchestrator/deploy/monitoring"
)

func main() {
	if err := run("."); err != nil {
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
