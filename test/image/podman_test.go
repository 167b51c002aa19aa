package image

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// missingRuntime says what the image tests lack to run on this machine, ""
// when nothing: podman and runc (Debian's, `make podman`), as root.
func missingRuntime() string {
	var missing []string
	for _, cmd := range []string{"podman", "runc"} {
		if _, err := exec.LookPath(cmd); err != nil {
			// Debian's runc is /usr/sbin/runc, which a user's PATH may
			// lack; podman finds it there all the same.
			if _, serr := os.Stat(filepath.Join("/usr/sbin", cmd)); serr != nil {
				missing = append(missing, cmd)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("%s not found: `make podman` installs Debian's podman and runc (apt-get install --no-install-recommends podman runc)", strings.Join(missing, " and "))
	}
	if os.Geteuid() != 0 {
		return "not root: the image tests run podman as root, as CI does (rootless podman needs subordinate uid and gid ranges that this test does not set up)"
	}
	return ""
}

// requireRuntime fails the test under CI=true when podman cannot run the
// image here, and skips it elsewhere, saying what is missing.
func requireRuntime(t testing.TB) {
	t.Helper()
	missing := missingRuntime()
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the image tests need podman with runc (CI=true, so this fails rather than skips): %s", missing)
	}
	t.Skipf("skipping the image tests: %s", missing)
}

// containersConf is the only containers.conf podman reads
// ($CONTAINERS_CONF): README.md says why each setting is there.
const containersConf = `[containers]
default_ulimits = []
log_driver = "k8s-file"

[engine]
events_logger = "file"
`

// podman runs podman on a private store under dir, configured by files in
// dir alone, so the tests never read nor write a user's podman
// configuration, images or containers.
type podman struct {
	dir string
	env []string
}

// pkgDir is the package's state directory (TestMain's); its podman store
// is in pkgDir/podman.
var pkgDir string

// thePodman is the package's podman, its store made on first use.
func thePodman(t testing.TB) *podman {
	t.Helper()
	requireRuntime(t)
	p, err := newPodman(filepath.Join(pkgDir, "podman"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newPodman(dir string) (*podman, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "containers.conf")
	if err := os.WriteFile(conf, []byte(containersConf), 0o644); err != nil {
		return nil, err
	}
	// The only storage.conf podman reads ($CONTAINERS_STORAGE_CONF): the
	// store in dir, and nothing of a user's /etc/containers/storage.conf
	// (additional image stores, driver options).
	storage := filepath.Join(dir, "storage.conf")
	storageConf := fmt.Sprintf("[storage]\ndriver = %q\ngraphroot = %q\nrunroot = %q\n",
		"vfs", filepath.Join(dir, "root"), filepath.Join(dir, "runroot"))
	if err := os.WriteFile(storage, []byte(storageConf), 0o644); err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONTAINERS_") && !strings.HasPrefix(kv, "CONTAINER_HOST=") {
			env = append(env, kv)
		}
	}
	env = append(env, "CONTAINERS_CONF="+conf, "CONTAINERS_STORAGE_CONF="+storage)
	return &podman{dir: dir, env: env}, nil
}

// args are podman's global flags, then args.
func (p *podman) args(args ...string) []string {
	return append([]string{
		"--tmpdir", filepath.Join(p.dir, "tmp"),
		"--runtime", "runc",
		"--cgroup-manager", "cgroupfs",
	}, args...)
}

// output runs podman with args and returns its standard output; its error
// carries the standard error.
func (p *podman) output(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", p.args(args...)...)
	cmd.Env = p.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("podman %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// containerLimit bounds how long a container runs: it dies by itself
// (podman run --timeout) should the test binary be killed before its
// cleanup removes it.
const containerLimit = 15 * time.Minute

// runFlags are the flags of every container the tests run: a read-only
// root with no writable tmpfs podman would add, no capabilities, no
// privilege escalation, and the image as it is (never pulled).
func runFlags() []string {
	return []string{
		"--read-only", "--read-only-tmpfs=false",
		"--cap-drop", "all", "--security-opt", "no-new-privileges",
		"--pull", "never",
		"--timeout", strconv.Itoa(int(containerLimit.Seconds())),
	}
}

// container is a container run detached; the test's cleanup removes it.
type container struct {
	t    testing.TB
	p    *podman
	name string
}

// start runs a detached container named name with the run flags, then
// args (podman run's own flags, the image and the command's arguments).
// The test's cleanup removes it (podman rm -f), also when the test fails,
// logging the tail of its output on failure.
func (p *podman) start(t testing.TB, name string, args ...string) *container {
	t.Helper()
	c := &container{t: t, p: p, name: name}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last lines of %s:\n%s", name, tail(c.logs(), 40))
		}
		if _, err := p.output("rm", "--force", "--time", "10", name); err != nil {
			t.Errorf("removing container %s: %v", name, err)
		}
	})
	run := append(append([]string{"run", "--detach", "--name", name}, runFlags()...), args...)
	if _, err := p.output(run...); err != nil {
		t.Fatal(err)
	}
	return c
}

// state is the container's state ("running", "exited", ...).
func (c *container) state() string {
	out, err := c.p.output("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", c.name)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(out)
}

// logs is what the container wrote to stdout and stderr.
func (c *container) logs() string {
	cmd := exec.Command("podman", c.p.args("logs", c.name)...)
	cmd.Env = c.p.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Sprintf("podman logs %s: %v\n%s", c.name, err, out)
	}
	return string(out)
}

// removeAll removes every container of the store, for the package's end.
func (p *podman) removeAll() error {
	_, err := p.output("rm", "--all", "--force", "--time", "5")
	return err
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
