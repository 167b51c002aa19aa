package probes

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A process that cannot read kube-system yet (kube.Scope's wait) is not
// ready, and its readiness says why; once the cluster is named it is.
func TestNamingSaysWhyItIsNotReady(t *testing.T) {
	forbidden := errors.New(`reading namespace kube-system, whose UID names the cluster when --cluster-name is not set: namespaces "kube-system" is forbidden`)
	tests := []struct {
		name    string
		reports []error
		want    string // "" : ready
	}{
		{name: "before the first look", want: "the cluster has not been named yet"},
		{name: "a look refused", reports: []error{forbidden}, want: `waiting to name the cluster: reading namespace kube-system, whose UID names the cluster when --cluster-name is not set: namespaces "kube-system" is forbidden`},
		{name: "the last look's reason", reports: []error{forbidden, errors.New("connection refused")}, want: "waiting to name the cluster: connection refused"},
		{name: "named after a wait", reports: []error{forbidden, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n Naming
			for _, r := range tt.reports {
				n.Report(r)
			}
			// As ServeProcess composes it: behind the connection's check.
			err := All(func(context.Context) error { return nil }, n.Ready)(context.Background())
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}
