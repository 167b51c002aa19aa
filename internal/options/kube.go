package options

import (
	"flag"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// RestConfig loads the Kubernetes client configuration: from the kubeconfig
// file(s) when set (a KUBECONFIG-style list is merged), otherwise with
// controller-runtime's loader (in-cluster, then ~/.kube/config).
// Client-side rate limiting is off, as with controller-runtime: the API
// server's priority and fairness protects it.
func (o *Options) RestConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch paths := filepath.SplitList(o.Kubeconfig); len(paths) {
	case 0:
		if cfg, err = config.GetConfig(); err != nil {
			return nil, fmt.Errorf("no --kubeconfig (KUBECONFIG) given and no in-cluster or ~/.kube/config configuration: %w", err)
		}
	case 1:
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: paths[0]}
		if cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig(); err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", paths[0], err)
		}
	default:
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: paths}
		if cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig(); err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", o.Kubeconfig, err)
		}
	}
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	return cfg, nil
}

// kubeFlags are the flags of the Kubernetes connection, and logging's.
var kubeFlags = []string{"kubeconfig", "log-level", "log-format"}

// BindKubeFlags defines only the Kubernetes connection's flags
// (--kubeconfig) and logging's (--log-level, --log-format), for a process
// that talks to nothing else (teardown). They are BindFlags' own, so they
// default and read the environment alike.
func (o *Options) BindKubeFlags(fs *flag.FlagSet) {
	all := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	o.BindFlags(all)
	for _, name := range kubeFlags {
		f := all.Lookup(name)
		fs.Var(f.Value, f.Name, f.Usage)
		fs.Lookup(f.Name).DefValue = f.DefValue
	}
}
