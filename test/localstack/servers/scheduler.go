package servers

import (
	"fmt"
	"time"
)

// SchedulerConfig configures a kube-scheduler.
type SchedulerConfig struct {
	// Binary is kube-scheduler.
	Binary string
	// Dir holds its serving certificate; it must exist.
	Dir string
	// KubeconfigFile authenticates to the API server as an admin.
	KubeconfigFile string
	// LogFile receives the output (appended); empty discards it.
	LogFile string
	// StartTimeout bounds the start; default 60s.
	StartTimeout time.Duration
}

// Scheduler is a kube-scheduler process with the default profile: it honours
// taints and tolerations, node selectors and affinity, and extended
// resources such as ate.dev/kvm as a real cluster's does.
type Scheduler struct{ component }

// NewScheduler validates cfg and picks a free secure port; Start starts the
// process.
func NewScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	for what, v := range map[string]string{"binary": cfg.Binary, "directory": cfg.Dir, "kubeconfig": cfg.KubeconfigFile} {
		if v == "" {
			return nil, fmt.Errorf("kube-scheduler: no %s configured", what)
		}
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	healthURL, serving, err := kubeServing("kube-scheduler", cfg.Dir)
	if err != nil {
		return nil, err
	}
	return &Scheduler{component{
		name:         "kube-scheduler",
		binary:       cfg.Binary,
		args:         append([]string{"--kubeconfig=" + cfg.KubeconfigFile}, serving...),
		logFile:      cfg.LogFile,
		healthURL:    healthURL,
		startTimeout: cfg.StartTimeout,
	}}, nil
}
