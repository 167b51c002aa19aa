package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStackOf(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		opts      Options
		want      string
		wantErr   string
	}{
		{name: "default", want: StackDev},
		{name: "from the environment", env: StackPostgres, want: StackPostgres},
		{name: "the option wins", env: StackPostgres, opts: Options{TemporalStack: StackDev}, want: StackDev},
		{name: "unknown", opts: Options{TemporalStack: "cassandra"}, wantErr: `unknown Temporal server "cassandra"`},
		{name: "no Web UI on postgres", opts: Options{TemporalStack: StackPostgres, TemporalUI: true}, wantErr: "no Web UI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ATE_TEMPORAL_STACK", tc.env)
			got, err := stackOf(tc.opts)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
