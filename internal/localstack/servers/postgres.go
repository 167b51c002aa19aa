package servers

import (
	"bytes"
	"context"
	"encoding/binary"
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
)

// Postgres is a throwaway PostgreSQL server for the production-shaped
// Temporal server, in a temporary data directory that Stop removes. Its
// superuser postgresUser is trusted on loopback without password.
// PostgreSQL refuses to run as root: as root it runs as the `postgres`
// system user that Debian's package creates.
type Postgres struct {
	process
	port int
	dir  string
}

// postgresUser is the superuser, as in docker-compose.yaml.
const postgresUser = "temporal"

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
// waiting until it accepts connections; initdb's and the server's output
// is appended to logFile. On error nothing is left behind.
func StartPostgres(ctx context.Context, logFile string) (_ *Postgres, err error) {
	binDir, err := FindPostgresBin()
	if err != nil {
		return nil, err
	}
	p := &Postgres{process: process{name: "postgres", logFile: logFile, stopTimeout: 15 * time.Second}}
	if p.port, err = FreePort(loopback); err != nil {
		return nil, err
	}
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	// Its own directory under the system temp dir (world-traversable), not
	// under the caller's private state dir, which the postgres user cannot
	// enter.
	if p.dir, err = os.MkdirTemp("", "ate-postgres-"); err != nil {
		return nil, fmt.Errorf("postgres: creating the data directory: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Stop())
		}
	}()
	if cred != nil {
		if err := os.Chown(p.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("postgres: handing %s to uid %d: %w", p.dir, cred.Uid, err)
		}
	}
	data := filepath.Join(p.dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"--pgdata", data, "--username", postgresUser, "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("postgres: initdb in %s: %w\n%s", data, err, out)
	}
	// fsync off: the data dies with the tests; what is measured and tested
	// is Temporal's SQL persistence, not the disk.
	cmd := exec.Command(filepath.Join(binDir, "postgres"), "-D", data,
		"-c", "listen_addresses="+loopback, "-c", "port="+strconv.Itoa(p.port),
		"-c", "unix_socket_directories="+p.dir,
		"-c", "max_connections=200",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if err := p.launch(cmd); err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx, 60*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		return probePostgres(ctx, p.Address())
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// probePostgres opens a session as postgresUser on the database
// "postgres" (trust authentication, so no password) and expects
// AuthenticationOk: the postmaster answers a startup message with "the
// database system is starting up" until it accepts sessions, which the
// SSL request it used to send did not tell (it is answered before that,
// and temporal-sql-tool's first connection then failed). No libpq client
// needed.
func probePostgres(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: 2 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	params := "user\x00" + postgresUser + "\x00database\x00postgres\x00\x00"
	msg := binary.BigEndian.AppendUint32(nil, uint32(8+len(params)))
	msg = binary.BigEndian.AppendUint32(msg, 3<<16) // protocol 3.0
	msg = append(msg, params...)
	if _, err := c.Write(msg); err != nil {
		return err
	}
	head := make([]byte, 5) // type, then length including itself
	if _, err := io.ReadFull(c, head); err != nil {
		return fmt.Errorf("no answer to the startup message: %w", err)
	}
	body := make([]byte, max(0, min(int(binary.BigEndian.Uint32(head[1:]))-4, 4096)))
	if _, err := io.ReadFull(c, body); err != nil {
		return fmt.Errorf("a short answer to the startup message: %w", err)
	}
	switch {
	case head[0] == 'R' && len(body) >= 4 && binary.BigEndian.Uint32(body) == 0:
		_, _ = c.Write([]byte{'X', 0, 0, 0, 4}) // Terminate
		return nil
	case head[0] == 'E':
		return fmt.Errorf("not accepting sessions yet: %s", errorMessage(body))
	default:
		return fmt.Errorf("unexpected answer %q to the startup message", head[0])
	}
}

// errorMessage is the message field ('M') of an ErrorResponse's body.
func errorMessage(body []byte) string {
	for f := range bytes.SplitSeq(body, []byte{0}) {
		if len(f) > 1 && f[0] == 'M' {
			return string(f[1:])
		}
	}
	return fmt.Sprintf("%q", body)
}

// Address is the server's host:port.
func (p *Postgres) Address() string { return net.JoinHostPort(loopback, strconv.Itoa(p.port)) }

// Stop stops the server (a fast shutdown on SIGTERM) and removes its data
// directory. It is safe to call more than once.
func (p *Postgres) Stop() error {
	errs := []error{p.process.Stop()}
	p.proc = nil
	if p.dir != "" {
		errs = append(errs, os.RemoveAll(p.dir))
		p.dir = ""
	}
	return errors.Join(errs...)
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
