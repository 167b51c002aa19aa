package kubectlate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kubectlate"
	"ate.dev/orchestrator/internal/syncbuf"
	"ate.dev/orchestrator/internal/testenv"
)

// TestStatus: what `rollout status` prints and exits with for each phase
// the rollout writes, and for configs no rollout wrote a status for.
func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		phase v1alpha1.RolloutPhase // "": no status.rollout
		steps bool                  // spec.rollout
		def   bool
		code  int
		want  []string
	}{
		{phase: "", steps: false, def: true, code: 0, want: []string{"rollout NoRollout", "no spec.rollout"}},
		{phase: "", steps: true, def: false, code: 0, want: []string{"rollout NotDefault", "step:      0 of 3"}},
		{phase: "", steps: true, def: true, code: 0, want: []string{"rollout Pending", "has not written its status yet"}},
		{phase: v1alpha1.RolloutProgressing, steps: true, def: true, code: 0, want: []string{"rollout Progressing"}},
		{phase: v1alpha1.RolloutBaking, steps: true, def: true, code: 0, want: []string{"next:      kubectl ate rollout promote NAME   (ends the bake early)"}},
		{phase: v1alpha1.RolloutAwaitingApproval, steps: true, def: true, code: 0, want: []string{"next:      kubectl ate rollout promote NAME\n"}},
		{phase: v1alpha1.RolloutPaused, steps: true, def: true, code: 0, want: []string{"next:      kubectl ate rollout resume NAME\n"}},
		{phase: v1alpha1.RolloutCompleted, steps: true, def: true, code: 0, want: []string{"rollout Completed"}},
		{phase: v1alpha1.RolloutHalted, steps: true, def: true, code: 1, want: []string{"next:      kubectl ate rollout retry NAME   (or move the admitted pools back: kubectl ate rollout abort NAME)"}},
		{phase: v1alpha1.RolloutAborted, steps: true, def: true, code: 1, want: []string{"next:      kubectl ate rollout retry NAME\n"}},
		{phase: v1alpha1.RolloutRolledBack, steps: true, def: true, code: 1, want: []string{"rollout RolledBack", "next:      kubectl ate rollout retry NAME\n"}},
		{phase: v1alpha1.RolloutStopped, steps: false, def: false, code: 1, want: []string{"rollout Stopped"}},
		{phase: v1alpha1.RolloutSuperseded, steps: true, def: true, code: 1, want: []string{"rollout Superseded"}},
	} {
		name := string(tc.phase)
		if name == "" {
			name = strings.TrimPrefix(tc.want[0], "rollout ")
		}
		t.Run(name, func(t *testing.T) {
			var steps []v1alpha1.RolloutStep
			if tc.steps {
				steps = []v1alpha1.RolloutStep{step(1), step(2), step(4)}
			}
			c := newConfig(t, tc.def, steps...)
			if tc.phase != "" {
				setRollout(t, c.Name, v1alpha1.RolloutStatus{
					Phase: tc.phase, Step: 2, MovedPools: 1, AdmittedPools: 2, TotalPools: 4,
					Message: "the message of " + string(tc.phase), WorkflowID: "cluster/sandboxconfig/" + c.Name + "/rollout",
				})
			}
			res := run(t, "rollout", "status", c.Name)
			require.Equal(t, tc.code, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			require.Contains(t, res.stdout, "SandboxConfig "+c.Name+" (gvisor)")
			for _, w := range tc.want {
				require.Contains(t, res.stdout, strings.ReplaceAll(w, "NAME", c.Name))
			}
			if tc.phase != "" {
				require.Contains(t, res.stdout, "step:      2")
				require.Contains(t, res.stdout, "pools:     1 moved, 2 admitted, 4 total")
				require.Contains(t, res.stdout, "message:   the message of "+string(tc.phase))
				require.Contains(t, res.stdout, "workflow:  cluster/sandboxconfig/"+c.Name+"/rollout")
			}
			if tc.code == 0 {
				require.Empty(t, res.stderr)
			}
		})
	}
}

// TestStatusShowsPendingRequests: a request the rollout has not recorded
// yet is shown; once status.rollout records it, it is not.
func TestStatusShowsPendingRequests(t *testing.T) {
	c := newConfig(t, true, step(1))
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1})
	require.Equal(t, 0, run(t, "rollout", "pause", c.Name).code)
	value := get(t, c.Name).Annotations[v1alpha1.RolloutPauseAnnotation]

	res := run(t, "rollout", "status", c.Name)
	require.Contains(t, res.stdout, "requested: pause ("+v1alpha1.RolloutPauseAnnotation+"="+value+"), not acted on yet")

	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutPaused, Step: 1, PauseRequest: value})
	res = run(t, "rollout", "status", c.Name)
	require.NotContains(t, res.stdout, "requested:")
	require.Contains(t, res.stdout, "rollout Paused")
}

// TestStatusShowsTheAnalysis: the last measurement of each metric, with
// why one failed or was inconclusive.
func TestStatusShowsTheAnalysis(t *testing.T) {
	c := newConfig(t, true, step(1))
	at := metav1.NewTime(time.Date(2026, 12, 7, 10, 2, 0, 0, time.UTC))
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 1, Analysis: []v1alpha1.RolloutMeasurement{
		{Metric: "errors", Step: 1, Phase: v1alpha1.MeasurementFailed, Value: "0.3", Failures: 1, Message: "metric errors is 0.3, above its max 0.1", MeasuredAt: at},
		{Metric: "latency", Step: 1, Phase: v1alpha1.MeasurementSuccessful, Value: "0.12", MeasuredAt: at},
	}})
	res := run(t, "rollout", "status", c.Name)
	require.Equal(t, 0, res.code, res.stderr)
	require.Contains(t, res.stdout, "analysis:  errors: Failed 0.3 (step 1, 1 out of bounds, at 2026-12-07T10:02:00Z): metric errors is 0.3, above its max 0.1\n")
	require.Contains(t, res.stdout, "analysis:  latency: Successful 0.12 (step 1, 0 out of bounds, at 2026-12-07T10:02:00Z)\n")
}

// TestStatusShowsTheClustersAwaited: a rollout whose first step waits for
// other clusters (spec.rollout.after) lists each, with its rollout's phase
// there and why, exits 0 (in progress), and says nothing here moves it.
func TestStatusShowsTheClustersAwaited(t *testing.T) {
	c := configObject(testenv.UniqueName(t), true, step(1), step(4))
	c.Spec.Rollout.After = &v1alpha1.RolloutAfter{Clusters: []string{"staging-eu-1", "canary", "dev"}}
	create(t, c)
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingClusters,
		Message: "waiting before step 1 for the rollout of SandboxConfig " + c.Name + " to complete in 2 of the 3 clusters of spec.rollout.after",
		AwaitingClusters: []v1alpha1.RolloutAwaitedCluster{
			{Cluster: "staging-eu-1", Phase: "Halted", Message: "the rollout in cluster \"staging-eu-1\" is Halted at step 1: gate failed"},
			{Cluster: "canary", Message: "no rollout in cluster \"canary\" yet"},
		}})
	res := run(t, "rollout", "status", c.Name)
	require.Equal(t, 0, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	for _, want := range []string{
		"rollout AwaitingClusters",
		"  waits for: 2 of the 3 clusters of spec.rollout.after\n",
		"    CLUSTER       PHASE THERE       WHY\n",
		"    staging-eu-1  Halted            the rollout in cluster \"staging-eu-1\" is Halted at step 1: gate failed\n",
		"    canary        -                 no rollout in cluster \"canary\" yet\n",
		"next:      nothing here: it goes on once the clusters above complete their rollouts of " + c.Name,
	} {
		require.Contains(t, res.stdout, want)
	}

	// Once it goes on, the list is gone with the phase.
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1})
	res = run(t, "rollout", "status", c.Name)
	require.NotContains(t, res.stdout, "waits for:")
}

func TestStatusOfAMissingConfig(t *testing.T) {
	res := run(t, "rollout", "status", "no-such-config")
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, `SandboxConfig "no-such-config" not found`)
}

// watching is `rollout status NAME -w` running in the background.
type watching struct {
	out  *syncbuf.Buffer
	done chan int
}

func startWatch(t *testing.T, name string, extra ...string) *watching {
	t.Helper()
	w := &watching{out: &syncbuf.Buffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	args := append([]string{"rollout", "status", name, "-w", "--kubeconfig", testenv.Current().KubeconfigPath}, extra...)
	go func() { w.done <- kubectlate.Run(ctx, args, w.out, w.out) }()
	return w
}

// waitLines waits until the watch printed n lines.
func (w *watching) waitLines(t *testing.T, n int) []string {
	t.Helper()
	var lines []string
	eventually(t, "the watch prints its lines", func() bool {
		lines = strings.Split(strings.TrimSuffix(w.out.String(), "\n"), "\n")
		return len(lines) >= n && w.out.String() != ""
	})
	return lines
}

func (w *watching) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case code := <-w.done:
		return code
	case <-time.After(30 * time.Second):
		t.Fatalf("the watch did not end; it printed:\n%s", w.out.String())
		return -1
	}
}

// TestStatusWatch: -w prints a line per change of the rollout, and ends
// with the exit code of the phase that ends it.
func TestStatusWatch(t *testing.T) {
	for _, tc := range []struct {
		end  v1alpha1.RolloutPhase
		code int
	}{
		{v1alpha1.RolloutCompleted, 0},
		{v1alpha1.RolloutHalted, 1},
		{v1alpha1.RolloutAborted, 1},
		{v1alpha1.RolloutSuperseded, 1},
	} {
		t.Run(string(tc.end), func(t *testing.T) {
			c := newConfig(t, true, step(1), step(3))
			setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1, TotalPools: 3, Message: "moving step 1"})
			w := startWatch(t, c.Name)
			lines := w.waitLines(t, 1)
			require.Contains(t, lines[0], "Progressing: step 1 of 2, 0 moved, 0 admitted of 3 pools: moving step 1")

			setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 1, MovedPools: 1, AdmittedPools: 1, TotalPools: 3, Message: "baking"})
			lines = w.waitLines(t, 2)
			require.Contains(t, lines[1], "Baking: step 1 of 2, 1 moved, 1 admitted of 3 pools: baking")

			setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: tc.end, Step: 2, MovedPools: 3, AdmittedPools: 3, TotalPools: 3, Message: "the end"})
			require.Equal(t, tc.code, w.exitCode(t), w.out.String())
			lines = w.waitLines(t, 3)
			require.Contains(t, lines[2], string(tc.end)+": step 2 of 2, 3 moved, 3 admitted of 3 pools: the end")
		})
	}
}

// TestStatusWatchAlreadyEnded: a rollout that has ended is printed once,
// and the watch exits at once.
func TestStatusWatchAlreadyEnded(t *testing.T) {
	c := newConfig(t, true, step(1))
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutCompleted, Step: 1})
	w := startWatch(t, c.Name)
	require.Equal(t, 0, w.exitCode(t))
	require.Len(t, w.waitLines(t, 1), 1)
}

// TestStatusWatchTimeout: -w --timeout exits 2 when the rollout has not
// ended by then.
func TestStatusWatchTimeout(t *testing.T) {
	c := newConfig(t, true, step(1))
	setRollout(t, c.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingApproval, Step: 1})
	start := time.Now()
	w := startWatch(t, c.Name, "--timeout", "1s")
	require.Equal(t, 2, w.exitCode(t), w.out.String())
	require.GreaterOrEqual(t, time.Since(start), time.Second)
	require.Contains(t, w.out.String(), "AwaitingApproval: step 1 of 1")
	require.Contains(t, w.out.String(), "timed out after 1s")
}
