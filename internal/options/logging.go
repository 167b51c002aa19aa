package options

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// logLevel parses --log-level (LOG_LEVEL); empty is the default, info.
func (o *Options) logLevel() (slog.Level, error) {
	switch strings.ToLower(cmp.Or(o.LogLevel, DefaultLogLevel)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--log-level (LOG_LEVEL) %q: want debug, info, warn or error", o.LogLevel)
}

// logFormat parses --log-format (LOG_FORMAT); empty is the default, json.
func (o *Options) logFormat() (string, error) {
	switch f := strings.ToLower(cmp.Or(o.LogFormat, DefaultLogFormat)); f {
	case "json", "text":
		return f, nil
	}
	return "", fmt.Errorf("--log-format (LOG_FORMAT) %q: want json or text", o.LogFormat)
}

// Logger returns the logger of the process named name, writing to w at
// --log-level in --log-format, each line naming the process.
func (o *Options) Logger(w io.Writer, name string) (*slog.Logger, error) {
	level, err := o.logLevel()
	if err != nil {
		return nil, err
	}
	format, err := o.logFormat()
	if err != nil {
		return nil, err
	}
	ho := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, ho)
	if format == "text" {
		h = slog.NewTextHandler(w, ho)
	}
	return slog.New(h).With("process", name), nil
}

// InstallLogger makes log slog's default and controller-runtime's (and so
// client-go's through it) logger, so the libraries' lines look like the
// product's and obey the same level: controller-runtime's V(1) lines are
// slog's debug.
func InstallLogger(log *slog.Logger) {
	slog.SetDefault(log)
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))
}
