package servers

import (
	"fmt"
	"strings"
	"time"
)

// ClusterControllers are the controllers the local cluster's controller
// manager runs: those a Deployment, its pods and the nodes under them go
// through in a real cluster, and nothing the product does not meet (no
// volumes, jobs, endpoints or certificates).
var ClusterControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
}

// ControllerManagerConfig configures a kube-controller-manager.
type ControllerManagerConfig struct {
	// Binary is kube-controller-manager.
	Binary string
	// Dir holds its serving certificate; it must exist.
	Dir string
	// KubeconfigFile authenticates to the API server as an admin.
	KubeconfigFile string
	// ServiceAccountKeyFile is the API server's service account signing
	// key, with which the token controller signs legacy token Secrets.
	ServiceAccountKeyFile string
	// RootCAFile is the API server's serving CA, put into service account
	// token Secrets and the kube-root-ca.crt ConfigMaps.
	RootCAFile string
	// Controllers to run; default ClusterControllers.
	Controllers []string
	// NodeMonitorGracePeriod is how long a node may go without a heartbeat
	// (kwok renews the node's lease) before it is marked Unknown; default
	// 16s, a few of kwok's renewals (see KwokConfig.NodeLeaseDuration).
	NodeMonitorGracePeriod time.Duration
	// LogFile receives the output (appended); empty discards it.
	LogFile string
	// StartTimeout bounds the start; default 60s.
	StartTimeout time.Duration
}

// ControllerManager is a kube-controller-manager process.
type ControllerManager struct{ component }

// NewControllerManager validates cfg and picks a free secure port; Start
// starts the process.
func NewControllerManager(cfg ControllerManagerConfig) (*ControllerManager, error) {
	for what, v := range map[string]string{
		"binary": cfg.Binary, "directory": cfg.Dir, "kubeconfig": cfg.KubeconfigFile,
		"service account key": cfg.ServiceAccountKeyFile, "root CA": cfg.RootCAFile,
	} {
		if v == "" {
			return nil, fmt.Errorf("kube-controller-manager: no %s configured", what)
		}
	}
	if len(cfg.Controllers) == 0 {
		cfg.Controllers = ClusterControllers
	}
	if cfg.NodeMonitorGracePeriod == 0 {
		cfg.NodeMonitorGracePeriod = 16 * time.Second
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	healthURL, serving, err := kubeServing("kube-controller-manager", cfg.Dir)
	if err != nil {
		return nil, err
	}
	return &ControllerManager{component{
		name:   "kube-controller-manager",
		binary: cfg.Binary,
		args: append([]string{
			"--kubeconfig=" + cfg.KubeconfigFile,
			"--controllers=" + strings.Join(cfg.Controllers, ","),
			"--service-account-private-key-file=" + cfg.ServiceAccountKeyFile,
			"--root-ca-file=" + cfg.RootCAFile,
			// Every controller acts as the admin of the kubeconfig, rather
			// than as a service account of its own that RBAC would have to
			// grant: envtest's API server has no bootstrap for that.
			"--use-service-account-credentials=false",
			// A node's missed heartbeats are noticed within a second of the
			// grace period, so tests of node failure take seconds.
			"--node-monitor-period=1s",
			"--node-monitor-grace-period=" + cfg.NodeMonitorGracePeriod.String(),
		}, serving...),
		logFile:      cfg.LogFile,
		healthURL:    healthURL,
		startTimeout: cfg.StartTimeout,
	}}, nil
}
