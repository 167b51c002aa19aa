//go:build linux

package procs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const helperEnv = "PROCS_TEST_HELPER_DIR"

// TestHelperParent is not a test: TestChildrenDieWithParent runs the test
// binary with only this function selected, as a parent that starts two
// sleeping children (one directly, one through a launcher, as envtest does)
// and prints their PIDs before it is killed.
func TestHelperParent(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestChildrenDieWithParent")
	}
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	direct, err := Start("sleep", exec.Command(sleep, "300"))
	require.NoError(t, err)
	launcher, err := WriteLauncher(dir, "sleeper", sleep)
	require.NoError(t, err)
	// Fork the launcher the way envtest does: plain exec.Command, own group.
	cmd := exec.Command(launcher, "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, OnSpawnerThread(cmd.Start))
	fmt.Printf("PIDS %d %d\n", direct.Pid(), cmd.Process.Pid)
	time.Sleep(5 * time.Minute)
}

func TestChildrenDieWithParent(t *testing.T) {
	dir := t.TempDir()
	parent := exec.Command(os.Args[0], "-test.run=^TestHelperParent$", "-test.v")
	parent.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()

	var pids []int
	scanner := bufio.NewScanner(out)
	for scanner.Scan() {
		if rest, ok := strings.CutPrefix(scanner.Text(), "PIDS "); ok {
			for _, f := range strings.Fields(rest) {
				pid, err := strconv.Atoi(f)
				require.NoError(t, err)
				pids = append(pids, pid)
			}
			break
		}
	}
	require.Len(t, pids, 2, "helper did not report its children")
	// The launched child becomes "sleep" once the launcher has exec'd it.
	require.Eventually(t, func() bool { return comm(pids[1]) == "sleep" }, 10*time.Second, 20*time.Millisecond)
	for _, pid := range pids {
		require.True(t, alive(pid), "child %d should run while its parent runs", pid)
	}

	require.NoError(t, parent.Process.Signal(syscall.SIGKILL))
	_ = parent.Wait()
	for _, pid := range pids {
		require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 20*time.Millisecond,
			"child %d outlived its killed parent", pid)
	}
}

func TestStopTerminatesGroup(t *testing.T) {
	p, err := Start("sh", exec.Command("sh", "-c", "sleep 300 & wait"))
	require.NoError(t, err)
	require.False(t, p.Exited())
	require.NoError(t, p.Stop(5*time.Second))
	require.True(t, p.Exited())
	require.NoError(t, p.Stop(time.Second), "stopping twice is a no-op")
}

func TestStartMissingBinary(t *testing.T) {
	_, err := Start("nothing", exec.Command("/nonexistent/binary"))
	require.Error(t, err)
	require.Contains(t, err.Error(), "starting nothing")
}

// alive reports whether pid runs; a zombie (exited, not yet reaped by a
// PID 1 that may never reap) counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
