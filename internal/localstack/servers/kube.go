package servers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"ate.dev/orchestrator/internal/localstack/procs"
)

// KubeConfig configures a Kubernetes control plane.
type KubeConfig struct {
	// EtcdBinary and APIServerBinary are the real binaries.
	EtcdBinary, APIServerBinary string
	// Dir holds the launchers, the API server's certificates and, unless
	// EtcdDataDir says otherwise, etcd's data. It must exist.
	Dir string
	// EtcdDataDir is etcd's data directory; default Dir/etcd. Reusing one
	// across runs keeps the cluster's objects.
	EtcdDataDir string
	// DurableEtcd makes etcd fsync; off (as envtest does) is faster for tests.
	DurableEtcd bool
	// APIServerPort is the secure port on 127.0.0.1; 0 picks a free one.
	APIServerPort int
	// CRDDirs are directories of CRD manifests to install; each must exist.
	CRDDirs []string
	// Scheme converts the CRDs; default client-go's scheme.
	Scheme *runtime.Scheme
	// APIServerFlags are kube-apiserver flags (name without dashes: value)
	// set over envtest's defaults, e.g. the default toleration seconds of
	// the local cluster (see ClusterAPIServerFlags).
	APIServerFlags map[string]string
	// LogDir receives etcd.log and kube-apiserver.log (appended).
	LogDir string
}

// Kube is an etcd and a kube-apiserver run by controller-runtime's envtest.
type Kube struct {
	cfg         KubeConfig
	env         *envtest.Environment
	launcherDir string
	logs        []*os.File // etcd's, kube-apiserver's
	// RestConfig authenticates as an admin (system:masters).
	RestConfig *rest.Config
	// KubeConfig is RestConfig as a kubeconfig file's content.
	KubeConfig []byte
}

const (
	etcdName      = "etcd"
	apiServerName = "kube-apiserver"
)

// StartKube starts etcd and kube-apiserver, installs the CRDs and waits
// until they are established.
func StartKube(cfg KubeConfig) (*Kube, error) {
	if cfg.Dir == "" {
		return nil, errors.New("kube: no state directory configured")
	}
	if cfg.EtcdDataDir == "" {
		cfg.EtcdDataDir = filepath.Join(cfg.Dir, "etcd")
	}
	port, err := pickPort("kube-apiserver", cfg.APIServerPort)
	if err != nil {
		return nil, err
	}

	k := &Kube{cfg: cfg, launcherDir: filepath.Join(cfg.Dir, "launchers")}
	// The serving and client CAs live only in this process's memory, so
	// certificates from an earlier process are useless: start afresh. Within
	// this process the directory is kept, so a restarted API server keeps
	// its certificates and RestConfig stays valid.
	certDir := filepath.Join(cfg.Dir, "kube-apiserver-certs")
	if err := os.RemoveAll(certDir); err != nil {
		return nil, fmt.Errorf("kube: clearing old certificates: %w", err)
	}
	for _, d := range []string{k.launcherDir, certDir, cfg.EtcdDataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("kube: creating %s: %w", d, err)
		}
	}
	etcdPath, err := procs.WriteLauncher(k.launcherDir, etcdName, cfg.EtcdBinary)
	if err != nil {
		return nil, err
	}
	apiServerPath, err := procs.WriteLauncher(k.launcherDir, apiServerName, cfg.APIServerBinary)
	if err != nil {
		return nil, err
	}

	for _, name := range []string{etcdName, apiServerName} {
		f, err := os.OpenFile(filepath.Join(cfg.LogDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			k.closeLogs()
			return nil, fmt.Errorf("kube: creating the log of %s: %w", name, err)
		}
		k.logs = append(k.logs, f)
	}
	etcd := &envtest.Etcd{Path: etcdPath, DataDir: cfg.EtcdDataDir, Out: k.logs[0], Err: k.logs[0]}
	if cfg.DurableEtcd {
		etcd.Configure().Set("unsafe-no-fsync", "false")
	}
	apiServer := &envtest.APIServer{
		Path:    apiServerPath,
		CertDir: certDir,
		Out:     k.logs[1], Err: k.logs[1],
		SecureServing: envtest.SecureServing{
			ListenAddr: envtest.ListenAddr{Address: loopback, Port: strconv.Itoa(port)},
		},
	}
	for name, value := range cfg.APIServerFlags {
		apiServer.Configure().Set(name, value)
	}
	k.env = &envtest.Environment{
		ControlPlane:             envtest.ControlPlane{Etcd: etcd, APIServer: apiServer},
		Scheme:                   cfg.Scheme,
		CRDDirectoryPaths:        cfg.CRDDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 60 * time.Second,
		ControlPlaneStopTimeout:  20 * time.Second,
	}
	// envtest forks both processes inside Start.
	if err := procs.OnSpawnerThread(func() (err error) {
		k.RestConfig, err = k.env.Start()
		return err
	}); err != nil {
		_ = k.env.Stop()
		k.closeLogs()
		return nil, fmt.Errorf("kube: starting etcd and kube-apiserver (envtest): %w", err)
	}
	k.KubeConfig = k.env.KubeConfig
	return k, nil
}

// Stop stops kube-apiserver, then etcd.
func (k *Kube) Stop() error {
	defer k.closeLogs()
	if err := k.env.Stop(); err != nil {
		return fmt.Errorf("kube: stopping the control plane: %w", err)
	}
	return nil
}

func (k *Kube) closeLogs() {
	for _, f := range k.logs {
		_ = f.Close()
	}
	k.logs = nil
}

// StopAPIServer stops kube-apiserver gracefully; etcd keeps running.
func (k *Kube) StopAPIServer() error {
	if err := k.env.ControlPlane.APIServer.Stop(); err != nil {
		return fmt.Errorf("kube: stopping kube-apiserver: %w", err)
	}
	return nil
}

// KillAPIServer kills kube-apiserver at once, as a crash would.
func (k *Kube) KillAPIServer() error {
	if err := k.kill(apiServerName); err != nil {
		return err
	}
	return k.StopAPIServer() // lets envtest see the exit, so it can start again
}

// StartAPIServer starts a stopped kube-apiserver on the same address, with
// the same certificates, and waits until it is healthy.
func (k *Kube) StartAPIServer() error {
	if err := procs.OnSpawnerThread(k.env.ControlPlane.APIServer.Start); err != nil {
		return fmt.Errorf("kube: starting kube-apiserver: %w", err)
	}
	return nil
}

func (k *Kube) kill(name string) error {
	pid, err := procs.ReadPID(k.launcherDir, name)
	if err != nil {
		return fmt.Errorf("kube: killing %s: %w", name, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kube: killing %s (pid %d): %w", name, pid, err)
	}
	return nil
}
