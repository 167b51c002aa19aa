package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/internal/leader"
)

// TestManagerOptions: both processes' managers serve nothing themselves
// (the processes serve their endpoints from their start) and elect on the
// Lease they name.
func TestManagerOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Manager
	}{
		{"no election", Manager{LeaseName: "lease-a", ShutdownTimeout: 10 * time.Second}},
		{"election", Manager{LeaseName: "lease-b", ShutdownTimeout: 5 * time.Second, SkipNameValidation: true,
			LeaderElection: leader.Election{Enabled: true, Namespace: "ate-system"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.m.Options()
			require.Same(t, Scheme, o.Scheme)
			require.Equal(t, "0", o.Metrics.BindAddress, "the manager must not serve metrics")
			require.Equal(t, "0", o.HealthProbeBindAddress, "the manager must not serve probes")
			require.Equal(t, tc.m.ShutdownTimeout, *o.GracefulShutdownTimeout)
			require.Equal(t, tc.m.SkipNameValidation, *o.Controller.SkipNameValidation)
			require.Equal(t, tc.m.LeaderElection.Enabled, o.LeaderElection)
			require.Equal(t, tc.m.LeaseName, o.LeaderElectionID)
			require.Equal(t, tc.m.LeaderElection.Namespace, o.LeaderElectionNamespace)
			require.Equal(t, leader.DefaultLeaseDuration, *o.LeaseDuration)

			// The caches drop managedFields.
			require.NotNil(t, o.Cache.DefaultTransform)
			pool := &metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
			out, err := o.Cache.DefaultTransform(&metav1.PartialObjectMetadata{ObjectMeta: *pool})
			require.NoError(t, err)
			require.Empty(t, out.(*metav1.PartialObjectMetadata).ManagedFields)
		})
	}
}
