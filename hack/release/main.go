// Command release cuts a release of the orchestrator into a directory,
// offline (`make release VERSION=v0.1.0`; hack/release/pkg/release says what it
// writes):
//
//	go -C hack run ./release -version v0.1.0 -image ghcr.io/ate-dev/ate-orchestrator
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"ate.dev/orchestrator/hack/release/pkg/helmchart"
	"ate.dev/orchestrator/hack/release/pkg/release"
	"ate.dev/orchestrator/internal/localstack/servers"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		version = flag.String("version", "", "the release's version: what the binaries print with --version and the image's tag (required)")
		image   = flag.String("image", "ghcr.io/ate-dev/ate-orchestrator", "the image repository, without a tag; install.yaml pins IMAGE@sha256:<index digest>")
		source  = flag.String("source", "https://github.com/ate-dev/ate-orchestrator", "the source repository's URL, for the image's org.opencontainers.image.source")
		out     = flag.String("out", "", "the directory the artifacts go into (default ROOT/_out/release)")
		root    = flag.String("root", "", "the repository's root (default: the directory of the product's go.mod at or above the working directory)")
	)
	flag.Parse()
	if *version == "" {
		return fmt.Errorf("-version is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	// The program runs in the hack module (`go -C hack run ./release`), so
	// the repository's root is found, not assumed to be the working directory.
	if *root == "" {
		found, err := servers.RepoRoot()
		if err != nil {
			return fmt.Errorf("repository root: %w (or give -root)", err)
		}
		*root = found
	}
	rootDir, err := filepath.Abs(*root)
	if err != nil {
		return fmt.Errorf("repository root: %w", err)
	}
	if *out == "" {
		*out = filepath.Join(rootDir, "_out", "release")
	}
	git, err := release.ReadGit(ctx, rootDir)
	if err != nil {
		return fmt.Errorf("reading the commit to release: %w", err)
	}
	if git.Dirty {
		fmt.Fprintf(os.Stderr, "release: warning: the work tree has uncommitted changes; the image's revision is %s\n", git.Revision())
	}
	created, err := release.SourceDate(os.Getenv("SOURCE_DATE_EPOCH"), git.CommitTime)
	if err != nil {
		return err
	}
	res, err := release.Run(ctx, release.Config{
		Root:     rootDir,
		OutDir:   *out,
		Version:  *version,
		Image:    *image,
		Metadata: release.Metadata{Revision: git.Revision(), Source: *source, Created: created},
		Chart: func(outDir, version, image string) (string, error) {
			return helmchart.Package(filepath.Join(rootDir, "deploy", "chart"), outDir, version, image)
		},
		Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	fmt.Printf("release %s of %s (%s), image %s\n", *version, git.Revision(), created.Format("2006-01-02T15:04:05Z"), res.PinnedImage)
	for _, a := range res.Artifacts {
		fmt.Println(filepath.Join(*out, a))
	}
	return nil
}
