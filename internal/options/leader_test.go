package options

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/internal/leader"
)

func TestLeaderElectionFlags(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    leader.Election
		wantErr string
	}{
		{
			name: "defaults: off, controller-runtime's timings",
			want: leader.Election{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second},
		},
		{
			name: "environment",
			env: map[string]string{"LEADER_ELECT": "true", "LEADER_ELECTION_NAMESPACE": "ate-system",
				"LEADER_ELECTION_LEASE_DURATION": "6s", "LEADER_ELECTION_RENEW_DEADLINE": "4s", "LEADER_ELECTION_RETRY_PERIOD": "500ms"},
			want: leader.Election{Enabled: true, Namespace: "ate-system", LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 500 * time.Millisecond},
		},
		{
			name: "a flag wins over the environment",
			env:  map[string]string{"LEADER_ELECTION_LEASE_DURATION": "6s"},
			args: []string{"--leader-elect", "--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s"},
			want: leader.Election{Enabled: true, LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 2 * time.Second},
		},
		{
			name:    "an environment variable that is not a duration",
			env:     map[string]string{"LEADER_ELECTION_RETRY_PERIOD": "2"},
			wantErr: `LEADER_ELECTION_RETRY_PERIOD="2" is not a duration`,
		},
		{
			name:    "the lease no longer than the renew deadline",
			args:    []string{"--leader-election-lease-duration=10s"},
			wantErr: "--leader-election-lease-duration (10s) must be longer than --leader-election-renew-deadline (10s)",
		},
		{
			name:    "the renew deadline within the retry period's jitter",
			args:    []string{"--leader-election-renew-deadline=2s"},
			wantErr: "--leader-election-renew-deadline (2s) must be longer than 1.2 times --leader-election-retry-period (2s)",
		},
		{
			name:    "a negative duration",
			args:    []string{"--leader-election-retry-period=-1s"},
			wantErr: "--leader-election-retry-period (LEADER_ELECTION_RETRY_PERIOD) must not be negative, got -1s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"LEADER_ELECT", "LEADER_ELECTION_NAMESPACE"} {
				t.Setenv(k, "")
			}
			for _, s := range leaderTimings {
				t.Setenv(s.env, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var l LeaderElection
			fs := flag.NewFlagSet("starter", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			l.BindFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			err := l.Validate()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, l.Election)
		})
	}
}
