package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestApply(t *testing.T) {
	tests := []struct {
		name                string
		in                  Election
		lease, renew, retry time.Duration
		enabled             bool
		namespace           string
	}{
		{name: "set", in: Election{Enabled: true, Namespace: "ns", LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: time.Second},
			lease: 6 * time.Second, renew: 4 * time.Second, retry: time.Second, enabled: true, namespace: "ns"},
		// A Config built in code (the tests' in-process product) leaves
		// the timings zero: the defaults apply.
		{name: "zero", lease: DefaultLeaseDuration, renew: DefaultRenewDeadline, retry: DefaultRetryPeriod},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o ctrl.Options
			tt.in.Apply(&o, "ate-orchestrator-starter")
			require.Equal(t, tt.enabled, o.LeaderElection)
			require.Equal(t, "ate-orchestrator-starter", o.LeaderElectionID)
			require.Equal(t, tt.namespace, o.LeaderElectionNamespace)
			require.Equal(t, tt.lease, *o.LeaseDuration)
			require.Equal(t, tt.renew, *o.RenewDeadline)
			require.Equal(t, tt.retry, *o.RetryPeriod)
		})
	}
}
