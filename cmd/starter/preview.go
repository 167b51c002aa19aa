package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/options"
	"ate.dev/orchestrator/starter"
)

// preview is `starter preview --config NAME`: it reads the cluster and
// prints the pools each step of the config's rollout would move, and those
// that would move off it if it lost the annotation. It writes nothing and
// needs no Temporal, only the rights to list SandboxConfigs and WorkerPools.
func preview(args []string) error {
	var opts options.Options
	fs := flag.NewFlagSet("starter preview", flag.ExitOnError)
	opts.BindKubeFlags(fs)
	config := fs.String("config", "", "the SandboxConfig to preview (required)")
	asJSON := fs.Bool("json", false, "print the preview as JSON")
	_ = fs.Parse(args)
	if *config == "" {
		return errors.New("preview needs --config NAME")
	}
	rest, err := opts.RestConfig()
	if err != nil {
		return err
	}
	c, err := ctrlclient.New(rest, ctrlclient.Options{Scheme: kube.Scheme})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", rest.Host, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := starter.Preview(ctx, c, *config)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	res.Print(os.Stdout)
	return nil
}
