// Command kubectl-ate is the kubectl plugin `kubectl ate`: on PATH, kubectl
// runs it for `kubectl ate ...` (internal/kubectlate has the verbs).
package main

import (
	"context"
	"os"
	"os/signal"

	"ate.dev/orchestrator/internal/kubectlate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := kubectlate.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
