package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"ate.dev/orchestrator/test/localstack/procs"
)

// PostgresConfig configures a throwaway PostgreSQL server for the
// production-shaped Temporal server.
type PostgresConfig struct {
	// BinDir holds initdb and postgres; default: FindPostgresBin.
	BinDir string
	// IP is the address it binds; default 127.0.0.1. Port 0 picks a free one.
	IP   string
	Port int
	// User is the database superuser, trusted on loopback without password.
	// Default "temporal", as in docker-compose.yaml.
	User string
	// LogFile receives initdb's and the server's output (appended).
	LogFile string
	// StartTimeout bounds the start; default 60s.
	StartTimeout time.Duration
}

// Postgres is a PostgreSQL server in a temporary data directory, removed
// by Stop. PostgreSQL refuses to run as root: as root it runs as the
// `postgres` system user that Debian's package creates.
type Postgres struct {
	cfg  PostgresConfig
	dir  string
	proc *procs.Process
}

// postgresBinGlob is where Debian's postgresql package installs a major
// version's programs (they are not on PATH).
const postgresBinGlob = "/usr/lib/postgresql/*/bin"

// FindPostgresBin returns $ATE_POSTGRES_BIN, or the newest Debian
// PostgreSQL's bin directory.
func FindPostgresBin() (string, error) {
	if d := os.Getenv("ATE_POSTGRES_BIN"); d != "" {
		if st, err := os.Stat(filepath.Join(d, "postgres")); err != nil || st.Mode().Perm()&0o111 == 0 {
			return "", fmt.Errorf("%w: $ATE_POSTGRES_BIN=%s holds no executable postgres", ErrMissingBinary, d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob(postgresBinGlob)
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if st, err := os.Stat(filepath.Join(d, "postgres")); err == nil && st.Mode().Perm()&0o111 != 0 {
			return d, nil
		}
	}
	return "", fmt.Errorf("%w: no PostgreSQL in %s: install it with `apt-get install -y postgresql` (or set ATE_POSTGRES_BIN)",
		ErrMissingBinary, postgresBinGlob)
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// StartPostgres creates a data directory, runs initdb and starts the server,
// waiting until it accepts connections. On error nothing is left behind.
func StartPostgres(ctx context.Context, cfg PostgresConfig) (_ *Postgres, err error) {
	if cfg.BinDir == "" {
		if cfg.BinDir, err = FindPostgresBin(); err != nil {
			return nil, err
		}
	}
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	if cfg.User == "" {
		cfg.User = "temporal"
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 60 * time.Second
	}
	if cfg.Port == 0 {
		if cfg.Port, err = FreePort(cfg.IP); err != nil {
			return nil, err
		}
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	// Its own directory under the system temp dir (world-traversable), not
	// under the caller's private state dir, which the postgres user cannot
	// enter.
	dir, err := os.MkdirTemp("", "ate-postgres-")
	if err != nil {
		return nil, fmt.Errorf("postgres: creating the data directory: %w", err)
	}
	p := &Postgres{cfg: cfg, dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Stop())
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("postgres: handing %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	out := io.Discard
	if cfg.LogFile != "" {
		f, err := os.OpenFile(cfg.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("postgres: opening log file: %w", err)
		}
		defer f.Close() // the children hold their own descriptors
		out = f
	}

	initdb := exec.CommandContext(ctx, filepath.Join(cfg.BinDir, "initdb"),
		"--pgdata", p.dataDir(), "--username", cfg.User, "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Stdout, initdb.Stderr = out, out
	if err := initdb.Run(); err != nil {
		return nil, fmt.Errorf("postgres: initdb in %s: %w%s", p.dataDir(), err, logTail(cfg.LogFile, 20))
	}

	// fsync off: the data dies with the tests; what is measured and tested
	// is Temporal's SQL persistence, not the disk.
	cmd := exec.Command(filepath.Join(cfg.BinDir, "postgres"),
		"-D", p.dataDir(),
		"-c", "listen_addresses="+cfg.IP, "-c", "port="+strconv.Itoa(cfg.Port),
		"-c", "unix_socket_directories="+dir,
		"-c", "max_connections=200",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Stdout, cmd.Stderr = out, out
	if p.proc, err = procs.Start("postgres", cmd); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := p.waitReady(wctx); err != nil {
		return nil, fmt.Errorf("postgres on %s did not become ready: %w%s", p.Address(), err, logTail(cfg.LogFile, 20))
	}
	return p, nil
}

func (p *Postgres) dataDir() string { return filepath.Join(p.dir, "data") }

// waitReady waits until the postmaster answers a startup request, which
// it does only once it accepts connections (no libpq client needed).
func (p *Postgres) waitReady(ctx context.Context) error {
	return waitServing(ctx, p.proc, 100*time.Millisecond, func(ctx context.Context) error {
		return probePostgres(ctx, p.Address())
	})
}

// probePostgres sends an SSLRequest and expects PostgreSQL's one-byte
// answer: the postmaster answers it only once it accepts connections.
func probePostgres(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	// Length 8, request code 80877103.
	if _, err := c.Write([]byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}); err != nil {
		return err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		return fmt.Errorf("no answer to the SSL request: %w", err)
	}
	if b[0] != 'N' && b[0] != 'S' {
		return fmt.Errorf("unexpected answer %q to the SSL request", b[0])
	}
	return nil
}

// Address is the server's host:port.
func (p *Postgres) Address() string {
	return net.JoinHostPort(p.cfg.IP, strconv.Itoa(p.cfg.Port))
}

// IP and Port are the server's address parts, for configs that want them apart.
func (p *Postgres) IP() string { return p.cfg.IP }
func (p *Postgres) Port() int  { return p.cfg.Port }

// User is the trusted superuser.
func (p *Postgres) User() string { return p.cfg.User }

// Stop stops the server (a fast shutdown on SIGTERM) and removes its data
// directory. It is safe to call more than once.
func (p *Postgres) Stop() error {
	var errs []error
	if p.proc != nil {
		errs = append(errs, p.proc.Stop(15*time.Second))
		p.proc = nil
	}
	if p.dir != "" {
		errs = append(errs, os.RemoveAll(p.dir))
		p.dir = ""
	}
	return errors.Join(errs...)
}

// Kill kills the server at once, as a crash would, leaving its data.
func (p *Postgres) Kill() error {
	if p.proc == nil {
		return nil
	}
	return p.proc.Kill()
}

// postgresCredential is the user PostgreSQL runs as: nil (this process's
// user) unless this process is root, which PostgreSQL refuses; then the
// `postgres` system user (or $ATE_POSTGRES_USER).
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("ATE_POSTGRES_USER")
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("postgres: running as root, PostgreSQL needs another user: %w (Debian's postgresql package creates %q; or set ATE_POSTGRES_USER)", err, name)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres: uid of %s: %w", name, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres: gid of %s: %w", name, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}
