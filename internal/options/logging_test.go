package options

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

// The flags' values reach the logger (internal/logging's tests cover the
// levels and formats), and a bad one is refused naming its flag, also
// where nothing validated the options first (teardown).
func TestLogger(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		want    string
		wantErr string
	}{
		{name: "debug in text", o: Options{LogLevel: "debug", LogFormat: "text"}, want: "level=DEBUG msg=d process=worker"},
		{name: "the defaults: info in JSON", want: `"msg":"i","process":"worker"`},
		{name: "an unknown level", o: Options{LogLevel: "trace"}, wantErr: `--log-level (LOG_LEVEL) "trace": want debug, info, warn or error`},
		{name: "an unknown format", o: Options{LogFormat: "logfmt"}, wantErr: `--log-format (LOG_FORMAT) "logfmt": want json or text`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := tt.o.Logger(&buf, "worker")
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			log.Debug("d")
			log.Info("i")
			require.Contains(t, buf.String(), tt.want)
		})
	}
}

// The flags and variables of logging, as a process binds them.
func TestLogFlags(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOG_FORMAT", "text")
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--log-level=debug"}))
	require.Equal(t, "debug", o.LogLevel)
	require.Equal(t, "text", o.LogFormat)
}
