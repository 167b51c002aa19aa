package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"ate.dev/orchestrator/internal/localstack/procs"
	"ate.dev/orchestrator/internal/version"
)

// program is one of the orchestrator's own binaries (worker, starter).
type program struct {
	name string // its command is ./cmd/<name>
	env  []string
	// metrics and probes are the addresses it serves them on.
	metrics, probes string
	proc            *procs.Process
	logFile         *os.File
}

// pkg is the program's command package.
func (p *program) pkg() string { return "./cmd/" + p.name }

// build compiles the program into outDir with the go command.
func (p *program) build(ctx context.Context, root, outDir string) (string, error) {
	out := filepath.Join(outDir, p.name)
	args := []string{"build", "-o", out}
	if version.Version != "" {
		// The version make stamped on devstack (git describe), so the
		// worker and starter it runs print the same.
		args = append(args, "-ldflags", "-X ate.dev/orchestrator/internal/version.Version="+version.Version)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, p.pkg())...)
	cmd.Dir = root
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", p.pkg(), err, buf.String())
	}
	return out, nil
}

// start runs the program with its output prefixed on console and
// appended to logDir/<name>.log.
func (p *program) start(bin, logDir string, console io.Writer) error {
	f, err := os.OpenFile(filepath.Join(logDir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("opening the log of %s: %w", p.name, err)
	}
	p.logFile = f
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), p.env...)
	out := &prefixWriter{prefix: fmt.Sprintf("[%s] ", p.name), w: io.MultiWriter(console, f)}
	cmd.Stdout, cmd.Stderr = out, out
	p.proc, err = procs.Start(p.name, cmd)
	return err
}

// watch logs the program's exit if it exits before stop is closed.
func (p *program) watch(log *slog.Logger, stop <-chan struct{}) {
	select {
	case <-p.proc.Done():
		log.Error(p.name+" exited; the rest of the stack keeps running (fix it and restart `make dev`)", "error", p.proc.Err())
	case <-stop:
	}
}

func (p *program) stop() error {
	if p.proc == nil {
		return nil
	}
	err := p.proc.Stop(15 * time.Second)
	_ = p.logFile.Close()
	return err
}

// prefixWriter writes each line with a prefix. One exec.Cmd writes
// stdout and stderr through it from two goroutines.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := append([]byte(p.prefix), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
}
