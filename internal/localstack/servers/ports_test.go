package servers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A stack picks all its ports before its servers bind them, so a port
// FreePort returned must not come back while it is still unbound: 500 picks
// from its 12,768 ports would repeat one almost surely if it did.
func TestFreePortNeverHandsOutAPortTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 500 {
		port, err := FreePort(loopback)
		require.NoError(t, err)
		require.False(t, seen[port], "port %d handed out twice", port)
		require.True(t, port >= 20000 && port < 32768, "port %d outside [20000, 32767]", port)
		seen[port] = true
	}
}
