package options

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestLoggerLevelAndFormat(t *testing.T) {
	tests := []struct {
		level, format string
		// want are the messages written, of debug, info, warn, error.
		want []string
	}{
		{level: "debug", format: "json", want: []string{"d", "i", "w", "e"}},
		{level: "info", format: "json", want: []string{"i", "w", "e"}},
		{level: "warn", format: "text", want: []string{"w", "e"}},
		{level: "ERROR", format: "TEXT", want: []string{"e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level+" "+tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			o := Options{LogLevel: tt.level, LogFormat: tt.format}
			log, err := o.Logger(&buf, "worker")
			require.NoError(t, err)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if strings.EqualFold(tt.format, "json") {
					var rec map[string]any
					require.NoError(t, json.Unmarshal([]byte(line), &rec), "a JSON line: %s", line)
					require.Equal(t, "worker", rec["process"])
					got = append(got, rec["msg"].(string))
				} else {
					require.Contains(t, line, "process=worker")
					require.NotContains(t, line, "{")
					got = append(got, strings.TrimPrefix(strings.Fields(line)[2], "msg="))
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestLoggerRefusesUnknownSettings(t *testing.T) {
	_, err := (&Options{LogLevel: "trace"}).Logger(&bytes.Buffer{}, "worker")
	require.ErrorContains(t, err, "--log-level (LOG_LEVEL)")
	_, err = (&Options{LogFormat: "logfmt"}).Logger(&bytes.Buffer{}, "worker")
	require.ErrorContains(t, err, "--log-format (LOG_FORMAT)")
}

// controller-runtime's (and client-go's) lines go through the installed
// logger and obey its level: its V(1) lines are debug. (controller-runtime
// takes its logger once per process: one installation here.)
func TestInstallLoggerRoutesControllerRuntime(t *testing.T) {
	var buf bytes.Buffer
	log, err := (&Options{LogLevel: "debug"}).Logger(&buf, "starter")
	require.NoError(t, err)
	InstallLogger(log)
	ctrl.Log.WithName("test").Info("controller-runtime info")
	ctrl.Log.WithName("test").V(1).Info("controller-runtime debug")
	require.Contains(t, buf.String(), "controller-runtime info")
	require.Contains(t, buf.String(), "controller-runtime debug")
	require.Contains(t, buf.String(), `"process":"starter"`)

	// At info, the same logr V(1) line is dropped.
	buf.Reset()
	log, err = (&Options{LogLevel: "info"}).Logger(&buf, "starter")
	require.NoError(t, err)
	lr := logr.FromSlogHandler(log.Handler())
	lr.V(1).Info("dropped")
	lr.Info("kept")
	require.NotContains(t, buf.String(), "dropped")
	require.Contains(t, buf.String(), "kept")
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
