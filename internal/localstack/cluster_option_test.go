package localstack

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestClusterIsAComponentOfTheStack: with Options.Cluster the stack runs
// the controller manager, the scheduler and kwok's Ready fleet around its
// API server, writes the kubeconfig, and Stop leaves none of the cluster's
// processes running.
func TestClusterIsAComponentOfTheStack(t *testing.T) {
	s, err := Start(context.Background(), Options{
		Dir: t.TempDir(), NoTemporal: true, Cluster: true,
		KubeBinDir: os.Getenv("KUBEBUILDER_ASSETS"),
	})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			require.NoError(t, s.Stop())
		}
	})
	require.NotNil(t, s.Cluster)
	require.Same(t, s.Cluster.Kube, s.Kube)
	require.FileExists(t, s.KubeconfigPath)
	require.Len(t, s.Cluster.Nodes, 6, "the default fleet")
	pids := s.Cluster.Pids()
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		require.NotZero(t, pids[name], "%s runs", name)
	}

	require.NoError(t, s.Stop())
	stopped = true
	for name, pid := range pids {
		// Stop waits for each process, so none is left, not even a zombie.
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "%s (pid %d) is gone", name, pid)
	}
}
