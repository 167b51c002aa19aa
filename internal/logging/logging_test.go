package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestNewLevelAndFormat(t *testing.T) {
	tests := []struct {
		level, format string
		// want are the messages written, of debug, info, warn, error.
		want []string
	}{
		{level: "debug", format: "json", want: []string{"d", "i", "w", "e"}},
		{level: "info", format: "json", want: []string{"i", "w", "e"}},
		{level: "warn", format: "text", want: []string{"w", "e"}},
		{level: "ERROR", format: "TEXT", want: []string{"e"}},
		{level: "", format: "", want: []string{"i", "w", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.level+" "+tt.format, func(t *testing.T) {
			level, err := ParseLevel(tt.level)
			require.NoError(t, err)
			format, err := ParseFormat(tt.format)
			require.NoError(t, err)
			var buf bytes.Buffer
			log := New(&buf, "worker", level, format)
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			log.Error("e")
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
				if format == JSON {
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

func TestParseRefusesUnknownSettings(t *testing.T) {
	tests := []struct {
		name    string
		parse   func() error
		wantErr string
	}{
		{name: "level", parse: func() error { _, err := ParseLevel("trace"); return err },
			wantErr: `"trace": want debug, info, warn or error`},
		{name: "format", parse: func() error { _, err := ParseFormat("logfmt"); return err },
			wantErr: `"logfmt": want json or text`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.EqualError(t, tt.parse(), tt.wantErr)
		})
	}
}

// controller-runtime's (and client-go's) lines go through the installed
// logger and obey its level: its V(1) lines are debug. (controller-runtime
// takes its logger once per process: one installation here.)
func TestInstallRoutesControllerRuntime(t *testing.T) {
	var buf bytes.Buffer
	Install(New(&buf, "starter", slog.LevelDebug, JSON))
	ctrl.Log.WithName("test").Info("controller-runtime info")
	ctrl.Log.WithName("test").V(1).Info("controller-runtime debug")
	require.Contains(t, buf.String(), "controller-runtime info")
	require.Contains(t, buf.String(), "controller-runtime debug")
	require.Contains(t, buf.String(), `"process":"starter"`)

	// At info, the same logr V(1) line is dropped.
	buf.Reset()
	lr := logr.FromSlogHandler(New(&buf, "starter", slog.LevelInfo, JSON).Handler())
	lr.V(1).Info("dropped")
	lr.Info("kept")
	require.NotContains(t, buf.String(), "dropped")
	require.Contains(t, buf.String(), "kept")
}
