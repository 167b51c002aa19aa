package options

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStarterOptions(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		want    StarterOptions
		wantErr string
	}{
		{name: "built-in default", want: StarterOptions{StartConcurrency: 8}},
		{name: "from the environment", env: map[string]string{"ATE_START_CONCURRENCY": "32"}, want: StarterOptions{StartConcurrency: 32}},
		{name: "the flag overrides the environment", env: map[string]string{"ATE_START_CONCURRENCY": "32"},
			args: []string{"--start-concurrency=4"}, want: StarterOptions{StartConcurrency: 4}},
		{name: "an empty environment variable keeps the default", env: map[string]string{"ATE_START_CONCURRENCY": ""}, want: StarterOptions{StartConcurrency: 8}},
		{name: "zero", args: []string{"--start-concurrency=0"},
			wantErr: "--start-concurrency (ATE_START_CONCURRENCY) must be at least 1, got 0"},
		{name: "negative", env: map[string]string{"ATE_START_CONCURRENCY": "-1"},
			wantErr: "--start-concurrency (ATE_START_CONCURRENCY) must be at least 1, got -1"},
		{name: "not a number", env: map[string]string{"ATE_START_CONCURRENCY": "eight"},
			wantErr: `ATE_START_CONCURRENCY="eight" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			clearStarterEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			// Bound next to the shared options, as the starter binds them.
			var o Options
			var s StarterOptions
			fs := flag.NewFlagSet("starter", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.BindFlags(fs)
			s.BindFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			err := s.Validate()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			s.envErr = nil
			require.Equal(t, tt.want, s)
		})
	}
}

// TestStarterFlagIsRejectedAsGarbage: a flag value that is not a number is
// the flag package's error, naming the flag.
func TestStarterFlagIsRejectedAsGarbage(t *testing.T) {
	clearStarterEnv(t)
	var s StarterOptions
	fs := flag.NewFlagSet("starter", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s.BindFlags(fs)
	require.ErrorContains(t, fs.Parse([]string{"--start-concurrency=lots"}), "start-concurrency")
}

func TestDefaultStarterOptionsAreTheFlagDefaults(t *testing.T) {
	clearStarterEnv(t)
	var s StarterOptions
	s.BindFlags(flag.NewFlagSet("starter", flag.ContinueOnError))
	require.Equal(t, DefaultStarterOptions(), s)
	require.Equal(t, DefaultStartConcurrency, s.StartConcurrency)
}

func clearStarterEnv(t *testing.T) {
	t.Helper()
	for _, s := range starterSettings {
		t.Setenv(s.env, "") // restored after the test
	}
}
