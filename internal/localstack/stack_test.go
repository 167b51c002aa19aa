package localstack

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// fake is a component that logs what the stack asks of it.
func fake(log *[]string, name string, independent bool, launchErr, readyErr error) *component {
	return &component{
		name:        name,
		independent: independent,
		launch: func(context.Context) error {
			*log = append(*log, "launch "+name)
			return launchErr
		},
		ready: func(context.Context) error {
			*log = append(*log, "ready "+name)
			return readyErr
		},
		stop: func() error {
			*log = append(*log, "stop "+name)
			return nil
		},
	}
}

func TestComponentsStartInOrderAndStopInReverse(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		fail    string // the component whose launch fails
		want    []string
		wantErr bool
	}{
		{
			name: "all start",
			// The independent one is waited for once the others are up.
			want: []string{"launch temporal", "launch kube", "ready kube", "launch scheduler", "ready scheduler", "ready temporal",
				"stop scheduler", "stop kube", "stop temporal"},
		},
		{
			name: "a launch fails", fail: "scheduler", wantErr: true,
			// What was started stops, the failed one included (it may be
			// half up); the independent one is not waited for.
			want: []string{"launch temporal", "launch kube", "ready kube", "launch scheduler",
				"stop scheduler", "stop kube", "stop temporal"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			errOf := func(name string) error {
				if name == tc.fail {
					return boom
				}
				return nil
			}
			s := &Stack{}
			err := s.start(context.Background(), []*component{
				fake(&log, "temporal", true, errOf("temporal"), nil),
				fake(&log, "kube", false, errOf("kube"), nil),
				fake(&log, "scheduler", false, errOf("scheduler"), nil),
			})
			if tc.wantErr {
				require.ErrorIs(t, err, boom)
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, s.Stop())
			require.Equal(t, tc.want, log)
			require.NoError(t, s.Stop(), "a second Stop stops nothing")
			require.Equal(t, tc.want, log)
		})
	}
}

func TestStartWithoutBinariesSaysHowToBuildThem(t *testing.T) {
	for _, opts := range []Options{
		{NoKube: true},
		{NoTemporal: true},
		{NoKube: true, Temporal: TemporalPostgres},
	} {
		opts.Dir, opts.Root = t.TempDir(), t.TempDir()
		_, err := Start(context.Background(), opts)
		require.ErrorIs(t, err, servers.ErrMissingBinary)
		require.ErrorContains(t, err, "make tools")
	}
}

func TestParseFlavour(t *testing.T) {
	for in, want := range map[string]Flavour{"": TemporalDev, "dev": TemporalDev, "postgres": TemporalPostgres} {
		got, err := ParseFlavour(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseFlavour("cassandra")
	require.ErrorContains(t, err, `unknown Temporal server "cassandra"`)
}
