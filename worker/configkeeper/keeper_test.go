package configkeeper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/cmd/wait"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/worker/configkeeper"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{NoTemporal: true})) }

// bound is how long a look of the keeper may take to show: far more than it
// takes on a loaded machine.
const bound = 30 * time.Second

// startKeeper runs the keeper in a manager of its own, with the worker's
// manager options (its cache transforms included), until the test ends.
func startKeeper(t *testing.T) {
	t.Helper()
	env := testenv.Current()
	mgr, err := ctrl.NewManager(env.RestConfig, kube.Manager{SkipNameValidation: true, ShutdownTimeout: 5 * time.Second}.Options())
	require.NoError(t, err)
	require.NoError(t, (&configkeeper.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, 2))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// classDefault is a gvisor class default; with steps, it rolls out.
func classDefault(name string, steps int) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass:   v1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: "registry.example/pause@" + digest,
				Assets: map[string]map[string]v1alpha1.SandboxAsset{
					"amd64": {"gvisor": {URL: "https://assets.example/gvisor.tar.zstd", SHA256: strings.Repeat("b", 64)}},
				},
			}},
		},
	}
	if steps > 0 {
		c.Spec.Rollout = &v1alpha1.SandboxConfigRollout{}
		for i := range steps {
			c.Spec.Rollout.Steps = append(c.Spec.Rollout.Steps, v1alpha1.RolloutStep{Percent: new(int32(100 * int32(i+1) / int32(steps)))})
		}
	}
	return c
}

// writeRollout merge-patches status.rollout through the status subresource,
// as the rollout workflow's SetRolloutStatus does (no resourceVersion: the
// workflow's write always lands, and the keeper's must not undo it).
func writeRollout(t *testing.T, name string, fields map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"status": map[string]any{"rollout": fields}})
	require.NoError(t, err)
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, testenv.Current().Kube.Status().Patch(context.Background(), c, ctrlclient.RawPatch(types.MergePatchType, body)),
		"writing status.rollout of SandboxConfig %q", name)
}

// patchConfig merge-patches the config itself (metadata or spec).
func patchConfig(t *testing.T, name, patch string) {
	t.Helper()
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, testenv.Current().Kube.Patch(context.Background(), c, ctrlclient.RawPatch(types.MergePatchType, []byte(patch))),
		"patching SandboxConfig %q with %s", name, patch)
}

// want is what a config should show: its conditions' statuses and reason,
// its observedGeneration, its rollout's phase as written (which the keeper
// must leave alone), and what kstatus computes.
type want struct {
	ready, progressing, stalled bool
	reason                      string
	observedGeneration          int64
	phase                       v1alpha1.RolloutPhase
	kstatus                     kstatus.Status
}

// eventually polls cond until it returns nil or bound passes.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", bound, what, err)
		}
		<-tick.C
	}
}

// expect waits until the config shows w, as read by the API server, and
// checks kubectl wait --for=condition=Ready on it.
func expect(t *testing.T, name string, w want) {
	t.Helper()
	env := testenv.Current()
	eventually(t, fmt.Sprintf("SandboxConfig %q to show %+v", name, w), func() error {
		var c v1alpha1.SandboxConfig
		if err := env.Kube.Get(context.Background(), ctrlclient.ObjectKey{Name: name}, &c); err != nil {
			return err
		}
		if w.observedGeneration == 0 {
			w.observedGeneration = c.Generation
		}
		if got := c.Status.ObservedGeneration; got != w.observedGeneration {
			return fmt.Errorf("status.observedGeneration %d, want %d (generation %d)", got, w.observedGeneration, c.Generation)
		}
		var phase v1alpha1.RolloutPhase
		if c.Status.Rollout != nil {
			phase = c.Status.Rollout.Phase
		}
		if phase != w.phase {
			return fmt.Errorf("status.rollout.phase %q, want %q as written", phase, w.phase)
		}
		for _, wc := range []struct {
			typ string
			set bool
		}{{v1alpha1.ConditionReady, w.ready}, {v1alpha1.ConditionProgressing, w.progressing}, {v1alpha1.ConditionStalled, w.stalled}} {
			status := metav1.ConditionFalse
			if wc.set {
				status = metav1.ConditionTrue
			}
			got := meta.FindStatusCondition(c.Status.Conditions, wc.typ)
			switch {
			case got == nil:
				return fmt.Errorf("no %s condition in %+v", wc.typ, c.Status.Conditions)
			case got.Status != status || got.Reason != w.reason || got.ObservedGeneration != w.observedGeneration:
				return fmt.Errorf("%s %s (%s) at generation %d, want %s (%s) at %d", wc.typ, got.Status, got.Reason, got.ObservedGeneration, status, w.reason, w.observedGeneration)
			}
		}
		return nil
	})

	// kstatus itself, on the object as the API server serves it.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("SandboxConfig"))
	require.NoError(t, env.Kube.Get(context.Background(), ctrlclient.ObjectKey{Name: name}, u))
	res, err := kstatus.Compute(u)
	require.NoError(t, err)
	require.Equal(t, w.kstatus, res.Status, "kstatus of SandboxConfig %q: %s", name, res.Message)

	// kubectl's own wait command: it returns at once when Ready holds, and
	// times out when it does not.
	if w.ready {
		require.NoError(t, kubectlWait(t, name, "30s"), "kubectl wait --for=condition=Ready sandboxconfig/%s", name)
	} else {
		err := kubectlWait(t, name, "1s")
		require.ErrorContains(t, err, "timed out waiting for the condition", "kubectl wait --for=condition=Ready sandboxconfig/%s", name)
	}
}

// fatalExit is kubectl's exit, made a panic so the test process survives it.
type fatalExit struct {
	msg  string
	code int
}

// kubectlWait runs `kubectl wait --for=condition=Ready sandboxconfig/NAME
// --timeout=T` in-process against the test's API server: kubectl's own
// command, flag parsing and discovery included. Its failure, which kubectl
// reports with an exit, is returned as an error.
func kubectlWait(t *testing.T, name, timeout string) (err error) {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	kubeconfig, cacheDir := testenv.Current().KubeconfigPath, t.TempDir()
	flags.KubeConfig, flags.CacheDir = &kubeconfig, &cacheDir
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	cmd := wait.NewCmdWait(flags, streams)
	cmd.SetArgs([]string{"sandboxconfig/" + name, "--for=condition=Ready", "--timeout=" + timeout})
	cmdutil.BehaviorOnFatal(func(msg string, code int) { panic(fatalExit{msg, code}) })
	defer cmdutil.DefaultBehaviorOnFatal()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalExit)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("kubectl wait exited %d: %s (stderr %q)", f.code, f.msg, errOut.String())
		}
	}()
	if err := cmd.Execute(); err != nil {
		return err
	}
	if !strings.Contains(out.String(), "condition met") {
		return errors.New("kubectl wait said " + out.String())
	}
	return nil
}

// TestKeeperFollowsTheRollout walks configs of one class through every
// phase their rollout workflow writes, and through the changes of other
// configs of the class that end a rollout (a newer default, an annotation
// removed), on a real API server: the conditions, what kstatus makes of
// them, and kubectl wait.
func TestKeeperFollowsTheRollout(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	startKeeper(t)

	// Names sort newest first: configs created within one second are
	// ordered by name (resolve.NewestDefault), so the later default is the
	// newer one whatever the clock.
	base := testenv.UniqueName(t)
	oldName, rolling, newer := "c-"+base, "b-"+base, "a-"+base
	create := func(c *v1alpha1.SandboxConfig) {
		require.NoError(t, env.Kube.Create(ctx, c), "creating SandboxConfig %q", c.Name)
		t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), c) })
	}

	// A class default without a rollout: Ready.
	create(classDefault(oldName, 0))
	expect(t, oldName, want{ready: true, reason: v1alpha1.ReasonNoRollout, kstatus: kstatus.CurrentStatus})

	// A spec edit of a config without a live rollout: observedGeneration
	// follows the generation at once.
	patchConfig(t, oldName, `{"spec":{"versions":[{"name":"v1","pauseImage":"registry.example/pause2@`+digest+`","assets":{"amd64":{"gvisor":{"url":"https://assets.example/g2.tar.zstd","sha256":"`+strings.Repeat("c", 64)+`"}}}}]}}`)
	expect(t, oldName, want{ready: true, reason: v1alpha1.ReasonNoRollout, observedGeneration: 2, kstatus: kstatus.CurrentStatus})

	// A new default with a rollout its workflow has not started: pending.
	create(classDefault(rolling, 3))
	expect(t, rolling, want{progressing: true, reason: v1alpha1.ReasonRolloutPending, kstatus: kstatus.InProgressStatus})
	expect(t, oldName, want{ready: true, reason: v1alpha1.ReasonNoRollout, observedGeneration: 2, kstatus: kstatus.CurrentStatus})

	// Every phase the workflow writes while the rollout is live.
	for _, tt := range []struct {
		phase   v1alpha1.RolloutPhase
		want    want
		message string
	}{
		{v1alpha1.RolloutProgressing, want{progressing: true, kstatus: kstatus.InProgressStatus}, "moving pools"},
		{v1alpha1.RolloutBaking, want{progressing: true, kstatus: kstatus.InProgressStatus}, "baking for 10m"},
		{v1alpha1.RolloutPaused, want{kstatus: kstatus.InProgressStatus}, "paused"},
		{v1alpha1.RolloutAwaitingApproval, want{kstatus: kstatus.InProgressStatus}, "waiting for a promote"},
		{v1alpha1.RolloutAwaitingClusters, want{progressing: true, kstatus: kstatus.InProgressStatus}, "waiting for cluster staging"},
		{v1alpha1.RolloutHalted, want{stalled: true, kstatus: kstatus.FailedStatus}, "gate failed"},
		{v1alpha1.RolloutAborted, want{stalled: true, kstatus: kstatus.FailedStatus}, "aborted"},
	} {
		writeRollout(t, rolling, map[string]any{"phase": tt.phase, "message": tt.message, "step": 2, "observedGeneration": 1})
		tt.want.reason, tt.want.phase = v1alpha1.RolloutReason(tt.phase), tt.phase
		expect(t, rolling, tt.want)
		var c v1alpha1.SandboxConfig
		require.NoError(t, env.Kube.Get(ctx, ctrlclient.ObjectKey{Name: rolling}, &c))
		require.Equal(t, "step 2 of 3: "+tt.message, meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady).Message)
		require.Equal(t, tt.message, c.Status.Rollout.Message, "status.rollout as the workflow wrote it")
	}

	// A spec edit mid-rollout: observedGeneration stays at the generation
	// the rollout has taken in, so kstatus waits, until the workflow
	// writes the new one.
	writeRollout(t, rolling, map[string]any{"phase": v1alpha1.RolloutProgressing, "message": "moving pools", "observedGeneration": 1})
	patchConfig(t, rolling, `{"spec":{"rollout":{"paused":true}}}`)
	expect(t, rolling, want{progressing: true, reason: "RolloutProgressing", phase: v1alpha1.RolloutProgressing, observedGeneration: 1, kstatus: kstatus.InProgressStatus})
	writeRollout(t, rolling, map[string]any{"phase": v1alpha1.RolloutPaused, "message": "paused", "observedGeneration": 2})
	expect(t, rolling, want{reason: "RolloutPaused", phase: v1alpha1.RolloutPaused, observedGeneration: 2, kstatus: kstatus.InProgressStatus})

	// Completed: Ready.
	writeRollout(t, rolling, map[string]any{"phase": v1alpha1.RolloutCompleted, "message": "all 3 steps done", "step": 3, "observedGeneration": 2})
	expect(t, rolling, want{ready: true, reason: "RolloutCompleted", phase: v1alpha1.RolloutCompleted, kstatus: kstatus.CurrentStatus})

	// A newer default supersedes a live rollout: the event of another
	// config changes this one's conditions, before and after the workflow
	// writes Superseded.
	writeRollout(t, rolling, map[string]any{"phase": v1alpha1.RolloutProgressing, "message": "moving pools"})
	expect(t, rolling, want{progressing: true, reason: "RolloutProgressing", phase: v1alpha1.RolloutProgressing, kstatus: kstatus.InProgressStatus})
	create(classDefault(newer, 2))
	expect(t, rolling, want{ready: true, reason: "RolloutSuperseded", phase: v1alpha1.RolloutProgressing, kstatus: kstatus.CurrentStatus})
	writeRollout(t, rolling, map[string]any{"phase": v1alpha1.RolloutSuperseded, "message": "superseded"})
	expect(t, rolling, want{ready: true, reason: "RolloutSuperseded", phase: v1alpha1.RolloutSuperseded, kstatus: kstatus.CurrentStatus})
	expect(t, newer, want{progressing: true, reason: v1alpha1.ReasonRolloutPending, kstatus: kstatus.InProgressStatus})

	// The newer one halts, then stops being a default: Stopped, Ready; the
	// superseded one is the class's rolling default again, its run not
	// started yet.
	writeRollout(t, newer, map[string]any{"phase": v1alpha1.RolloutHalted, "message": "gate failed", "step": 1, "observedGeneration": 1})
	expect(t, newer, want{stalled: true, reason: "RolloutHalted", phase: v1alpha1.RolloutHalted, kstatus: kstatus.FailedStatus})
	patchConfig(t, newer, `{"metadata":{"annotations":{"`+v1alpha1.ClassDefaultAnnotation+`":null}}}`)
	expect(t, newer, want{ready: true, reason: "RolloutStopped", phase: v1alpha1.RolloutHalted, kstatus: kstatus.CurrentStatus})
	expect(t, rolling, want{progressing: true, reason: v1alpha1.ReasonRolloutPending, phase: v1alpha1.RolloutSuperseded, kstatus: kstatus.InProgressStatus})
	writeRollout(t, newer, map[string]any{"phase": v1alpha1.RolloutStopped, "message": "stopped"})
	expect(t, newer, want{ready: true, reason: "RolloutStopped", phase: v1alpha1.RolloutStopped, kstatus: kstatus.CurrentStatus})
}

// TestKeeperLeavesADeletingConfigAlone: the deletion mark bumps the
// generation, yet the keeper writes nothing to a config in deletion (its
// release removes the finalizer under the resourceVersion it read; a write
// here would refuse that), while the same look at a live config with stale
// conditions writes them. Reconcile is called directly, on a live client, so
// that what it did not write is known rather than waited for.
func TestKeeperLeavesADeletingConfigAlone(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	keeper := &configkeeper.Reconciler{Client: env.Kube}
	look := func(name string) {
		t.Helper()
		_, err := keeper.Reconcile(ctx, ctrl.Request{NamespacedName: ctrlclient.ObjectKey{Name: name}})
		require.NoError(t, err, "the keeper's look at SandboxConfig %q", name)
	}
	get := func(name string) v1alpha1.SandboxConfig {
		t.Helper()
		var c v1alpha1.SandboxConfig
		require.NoError(t, env.Kube.Get(ctx, ctrlclient.ObjectKey{Name: name}, &c))
		return c
	}

	base := testenv.UniqueName(t)
	live, deleting := "live-"+base, "deleting-"+base
	for _, name := range []string{live, deleting} {
		c := classDefault(name, 0)
		c.Finalizers = []string{v1alpha1.ProtectionFinalizer}
		require.NoError(t, env.Kube.Create(ctx, c), "creating SandboxConfig %q", name)
		t.Cleanup(func() {
			patchConfig(t, name, `{"metadata":{"finalizers":null}}`)
			_ = env.Kube.Delete(context.Background(), c)
		})
	}

	for _, name := range []string{live, deleting} {
		look(name)
		require.NotEmpty(t, get(name).Status.Conditions, "the control: a live config's conditions are written")
	}

	require.NoError(t, env.Kube.Delete(ctx, &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: deleting}}))
	before := get(deleting)
	require.NotNil(t, before.DeletionTimestamp)
	require.Greater(t, before.Generation, before.Status.ObservedGeneration, "the deletion mark bumped the generation")
	look(deleting)
	after := get(deleting)
	require.Equal(t, before.ResourceVersion, after.ResourceVersion, "nothing written to a config in deletion")
	require.Equal(t, before.Status, after.Status)
}
