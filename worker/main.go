// Command worker is the Temporal worker: it hosts the pool, switch and
// release workflows and the activities that act on the API server.
package main

import (
	"fmt"
	"os"

	"ate.dev/orchestrator/internal/workerapp"
)

func main() {
	if err := workerapp.Main(os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}
