package options

import (
	"fmt"
	"io"
	"log/slog"

	"ate.dev/orchestrator/internal/logging"
)

// logLevel parses --log-level (LOG_LEVEL); empty is the default, info.
func (o *Options) logLevel() (slog.Level, error) {
	level, err := logging.ParseLevel(o.LogLevel)
	if err != nil {
		return 0, fmt.Errorf("--log-level (LOG_LEVEL) %w", err)
	}
	return level, nil
}

// logFormat parses --log-format (LOG_FORMAT); empty is the default, json.
func (o *Options) logFormat() (logging.Format, error) {
	format, err := logging.ParseFormat(o.LogFormat)
	if err != nil {
		return "", fmt.Errorf("--log-format (LOG_FORMAT) %w", err)
	}
	return format, nil
}

// Logger returns the logger of the process named name, writing to w at
// --log-level in --log-format, each line naming the process. Its errors
// name the flag: teardown calls it without Validate.
func (o *Options) Logger(w io.Writer, name string) (*slog.Logger, error) {
	level, err := o.logLevel()
	if err != nil {
		return nil, err
	}
	format, err := o.logFormat()
	if err != nil {
		return nil, err
	}
	return logging.New(w, name, level, format), nil
}
