package servers

import (
	"strings"
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
	// LogFile receives the output (appended); empty discards it.
	LogFile string
}

// NewControllerManager picks a free secure port for a
// kube-controller-manager; Start starts it.
func NewControllerManager(cfg ControllerManagerConfig) (*Component, error) {
	if len(cfg.Controllers) == 0 {
		cfg.Controllers = ClusterControllers
	}
	return newKubeComponent("kube-controller-manager", cfg.Binary, cfg.Dir, cfg.KubeconfigFile, cfg.LogFile,
		"--controllers="+strings.Join(cfg.Controllers, ","),
		"--service-account-private-key-file="+cfg.ServiceAccountKeyFile,
		"--root-ca-file="+cfg.RootCAFile,
		// Every controller acts as the admin of the kubeconfig, rather
		// than as a service account of its own that RBAC would have to
		// grant: envtest's API server has no bootstrap for that.
		"--use-service-account-credentials=false",
		// A node's missed heartbeats are noticed within a second of the
		// grace period, so tests of node failure take seconds. The grace
		// period is a few of kwok's lease renewals (see NewKwok).
		"--node-monitor-period=1s",
		"--node-monitor-grace-period=16s",
	)
}
