package probes

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A process waiting for Temporal is alive but not ready; what makes it ready
// once connected is covered against a real server by the crash tests
// (TestTemporalUnreachable).
func TestConnectingIsNotReadyBeforeItConnects(t *testing.T) {
	var r Connecting
	require.ErrorContains(t, r.Ready(context.Background()), "not connected to Temporal yet")
}
