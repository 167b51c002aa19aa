package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/wfapi"
	"ate.dev/orchestrator/test/crashtest"
)

// settleBound is how long a fleet's change may take to settle, a worker's
// crash included: a step whose worker died is retried after its 10s
// start-to-close timeout.
const settleBound = 120 * time.Second

func shortID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func poolName(i int) string { return fmt.Sprintf("pool-%02d", i) }

// fixture is the objects every cluster of a test gets: a namespace, the
// class default old, a config pin (not a default), unpinned pools and one
// pool pinned to pin.
type fixture struct {
	ns, old, pin, pinned string
	unpinned             int
}

func newFixture(prefix string, unpinned int) fixture {
	return fixture{ns: prefix + "-ns", old: prefix + "-old", pin: prefix + "-pin", pinned: "pinned", unpinned: unpinned}
}

func (f fixture) pools() []string {
	names := []string{f.pinned}
	for i := range f.unpinned {
		names = append(names, poolName(i))
	}
	return names
}

// create makes the fixture's objects in a cluster.
func (f fixture) create(t testing.TB, c *cluster) {
	t.Helper()
	ctx := context.Background()
	kube := c.env.Kube
	require.NoError(t, kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}), "%s", c)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(f.old, true)), "%s", c)
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(f.pin, false)), "%s", c)
	require.NoError(t, kube.Create(ctx, producttest.Pool(f.ns, f.pinned, f.pin)), "%s", c)
	for i := range f.unpinned {
		require.NoError(t, kube.Create(ctx, producttest.Pool(f.ns, poolName(i), "")), "%s", c)
	}
}

// initial is where the fixture's pools are once resolved.
func (f fixture) initial() map[string]string {
	want := map[string]string{f.pinned: f.pin}
	for i := range f.unpinned {
		want[poolName(i)] = f.old
	}
	return want
}

// goneConfig marks a pool that must not exist, in a map of pool to config.
const goneConfig = "<gone>"

// poolState says whether a pool is settled on want: configRef want, no
// claim, Resolved True at its generation; or, for goneConfig, absent.
func poolState(ctx context.Context, c *cluster, ns, name, want string) (bool, string) {
	var wp v1alpha1.WorkerPool
	err := c.env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &wp)
	if want == goneConfig {
		return apierrors.IsNotFound(err), fmt.Sprintf("present (err %v)", err)
	}
	if err != nil {
		return false, err.Error()
	}
	st := wp.Status.ClassStatus(v1alpha1.SandboxClassGVisor)
	if st == nil {
		return false, "no class status"
	}
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionResolved)
	ok := st.ConfigRef.NameOf() == want && st.PendingConfigRef == nil && cond != nil &&
		cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == wp.Generation
	return ok, fmt.Sprintf("configRef=%q pending=%q resolved=%v", st.ConfigRef.NameOf(), st.PendingConfigRef.NameOf(), cond)
}

// waitSettled polls every cluster's pools until each is where want says,
// and returns, per cluster and pool, how long after since it was first
// seen there.
func waitSettled(t testing.TB, since time.Time, want map[*cluster]map[string]string, ns string) map[*cluster]map[string]time.Duration {
	t.Helper()
	ctx := context.Background()
	took := map[*cluster]map[string]time.Duration{}
	for c := range want {
		took[c] = map[string]time.Duration{}
	}
	producttest.EventuallyWithin(t, settleBound, "every pool of every cluster on its config", func() (bool, string) {
		var pending []string
		for c, pools := range want {
			for name, cfg := range pools {
				if _, done := took[c][name]; done {
					continue
				}
				ok, state := poolState(ctx, c, ns, name, cfg)
				if ok {
					took[c][name] = time.Since(since)
					continue
				}
				pending = append(pending, fmt.Sprintf("%s %s/%s (want %s): %s", c.label, ns, name, cfg, state))
			}
		}
		sort.Strings(pending)
		return len(pending) == 0, fmt.Sprintf("%d pending: %s", len(pending), strings.Join(pending, "; "))
	})
	return took
}

// slowest is the pool that took longest.
func slowest(took map[string]time.Duration) (string, time.Duration) {
	var name string
	var d time.Duration
	for n, t := range took {
		if t > d || (t == d && n < name) {
			name, d = n, t
		}
	}
	return name, d
}

// The notes of a pool's SandboxConfigSwitched events.
func usesNote(config string) string {
	return fmt.Sprintf("Normal SandboxConfigSwitched: sandbox class \"gvisor\" uses SandboxConfig %q", config)
}

func switchedNote(from, to string) string {
	return fmt.Sprintf("Normal SandboxConfigSwitched: sandbox class \"gvisor\" switched from SandboxConfig %q to %q", from, to)
}

// switchedEvents are a pool's SandboxConfigSwitched events, oldest first.
func switchedEvents(t testing.TB, c *cluster, ns, name string) []string {
	t.Helper()
	var out []string
	for _, ev := range producttest.PoolEvents(t, c.cs, ns, name) {
		if strings.HasPrefix(ev, "Normal "+v1alpha1.EventReasonSandboxConfigSwitched+":") {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvents polls until the pool's SandboxConfigSwitched events are
// exactly want: one per move, each once (an event is recorded just after
// the status write it reports).
func waitEvents(t testing.TB, c *cluster, ns, name string, want []string) {
	t.Helper()
	var got []string
	producttest.Eventually(t, fmt.Sprintf("the events of %s/%s in %s", ns, name, c), func() (bool, string) {
		got = switchedEvents(t, c, ns, name)
		return slices.Equal(got, want), fmt.Sprintf("%q", got)
	})
}

// switchRuns lists a cluster's switch runs (of every namespace), by the
// search attribute its workflows carry.
func switchRuns(t testing.TB, c *cluster, extra string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	query := fmt.Sprintf("%s = %q AND WorkflowType = %q", searchattr.KubernetesCluster, c.id(), wfapi.SwitchWorkflow)
	if extra != "" {
		query += " AND " + extra
	}
	execs, err := crashtest.Executions(context.Background(), c.env.Temporal, query)
	require.NoError(t, err)
	return execs
}

// keyword is a keyword search attribute of an execution.
func keyword(e *workflowpb.WorkflowExecutionInfo, name string) string {
	return keywordOf(e.GetSearchAttributes(), name)
}

func keywordOf(attrs *commonpb.SearchAttributes, name string) string {
	var s string
	if p := attrs.GetIndexedFields()[name]; p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &s)
	}
	return s
}

// outcomes counts runs by their Outcome, or their status for a run with
// none (one that continued as new), as "confirmed=40 pool gone=1".
func outcomes(execs []*workflowpb.WorkflowExecutionInfo) string {
	counts := map[string]int{}
	for _, e := range execs {
		o := keyword(e, searchattr.Outcome)
		if o == "" {
			o = "(" + strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")) + ")"
		}
		counts[o]++
	}
	var parts []string
	for o, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", o, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// inNamespace keeps the runs of pools of one namespace.
func inNamespace(execs []*workflowpb.WorkflowExecutionInfo, ns string) []*workflowpb.WorkflowExecutionInfo {
	var out []*workflowpb.WorkflowExecutionInfo
	for _, e := range execs {
		if strings.HasPrefix(keyword(e, searchattr.WorkerPool), ns+"/") {
			out = append(out, e)
		}
	}
	return out
}

func prefixed(prefix string) func(string) bool {
	return func(name string) bool { return strings.HasPrefix(name, prefix) }
}
