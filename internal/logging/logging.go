// Package logging is how the product's processes log: slog lines, JSON or
// text, each naming its process, at one level that the libraries'
// lines (controller-runtime's, and client-go's through it) obey too. It
// defines no flag: internal/options parses --log-level and --log-format
// into what New takes.
package logging

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Format is how a log line is written.
type Format string

// The formats.
const (
	JSON Format = "json"
	Text Format = "text"
)

// Defaults of a process started without a level or a format.
const (
	DefaultLevel  = "info"
	DefaultFormat = string(JSON)
)

// ParseLevel parses a level, in any case; empty is DefaultLevel. The error
// does not name the setting: the caller knows which flag it came from.
func ParseLevel(v string) (slog.Level, error) {
	switch strings.ToLower(cmp.Or(v, DefaultLevel)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("%q: want debug, info, warn or error", v)
}

// ParseFormat parses a format, in any case; empty is DefaultFormat.
func ParseFormat(v string) (Format, error) {
	switch f := Format(strings.ToLower(cmp.Or(v, DefaultFormat))); f {
	case JSON, Text:
		return f, nil
	}
	return "", fmt.Errorf("%q: want json or text", v)
}

// New returns the logger of the process named process, writing to w at
// level in format, each line naming the process.
func New(w io.Writer, process string, level slog.Level, format Format) *slog.Logger {
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, ho)
	if format == Text {
		h = slog.NewTextHandler(w, ho)
	}
	return slog.New(h).With("process", process)
}

// Install makes log slog's default and controller-runtime's (and so
// client-go's through it) logger, so the libraries' lines look like the
// product's and obey the same level: controller-runtime's V(1) lines are
// slog's debug.
func Install(log *slog.Logger) {
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
}
