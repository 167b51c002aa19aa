package options

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/temporalconn"
)

// quiet is a logger for tests that do not read the log.
var quiet = slog.New(slog.DiscardHandler)

// TestTemporalClientOptionsValidatesTheOptions: the options are validated
// as a whole before the connection is resolved (temporalconn's tests cover
// the resolution), and the flags' settings reach the client.
func TestTemporalClientOptionsValidatesTheOptions(t *testing.T) {
	clearEnv(t)
	tests := []struct {
		name    string
		o       Options
		wantErr string
	}{
		{name: "valid", o: Options{Temporal: temporalconn.Settings{Address: "temporal:7233", Namespace: "ns", GRPCCompression: "gzip"}}},
		{name: "a cluster name that is no DNS label", o: Options{Temporal: temporalconn.Settings{Address: "temporal:7233"}, ClusterName: "Prod"},
			wantErr: "invalid Temporal options: --cluster-name"},
		{name: "an unknown compression", o: Options{Temporal: temporalconn.Settings{Address: "temporal:7233", GRPCCompression: "zstd"}},
			wantErr: `invalid Temporal options: --temporal-grpc-compression (ATE_TEMPORAL_GRPC_COMPRESSION) must be "none" or "gzip", got "zstd"`},
		{name: "an unknown log level", o: Options{Temporal: temporalconn.Settings{Address: "temporal:7233"}, LogLevel: "trace"},
			wantErr: `invalid Temporal options: --log-level (LOG_LEVEL) "trace"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.o.TemporalClientOptions(quiet)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, "temporal:7233", opts.HostPort)
			require.Equal(t, "ns", opts.Namespace)
			require.NotNil(t, opts.ConnectionOptions.GrpcCompression)
		})
	}
}
