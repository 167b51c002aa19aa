package kubectlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// TestPoolWhy: for each kind of wait, `pool why` names the config the class
// is on and resolves to, what it waits for, its Resolved condition and its
// last switch.
func TestPoolWhy(t *testing.T) {
	ns := testenv.Current().Namespace(t)
	old := newConfigNamed(t, "z-"+testenv.UniqueName(t), true)
	// The new default's rollout has admitted nothing yet: the pools stay.
	rolling := newConfigNamed(t, "a-"+testenv.UniqueName(t), true, step(1), step(2))
	setRollout(t, rolling.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutAwaitingApproval, Step: 1, TotalPools: 3})

	waiting := newPool(t, ns, "waiting", old.Name, false)
	setClassStatus(t, waiting, func(st *v1alpha1.WorkerPoolSandboxClassStatus) {
		st.LastSwitch = &v1alpha1.SwitchRunReference{WorkflowID: "c/workerpool/" + ns + "/waiting/switch", RunID: "run-1"}
		st.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionResolved, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonResolved,
			Message: "resolved to " + old.Name, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Hour))}}
	})

	blocked := newPool(t, ns, "blocked", old.Name, true) // canary: the rollout admits it
	setRollout(t, rolling.Name, v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutProgressing, Step: 1, TotalPools: 3,
		AdmittedCanaries: []string{ns + "/blocked"}})
	setClassStatus(t, blocked, func(st *v1alpha1.WorkerPoolSandboxClassStatus) {
		st.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: rolling.Name}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionSwitchStepFailing, Status: metav1.ConditionTrue,
			Reason: "Protect", Message: "Protect: admission webhook denied the request"})
	})

	missing := newPool(t, ns, "missing", "", false)
	missing.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: "no-such-config"}
	require.NoError(t, kube().Update(t.Context(), missing))

	for _, tc := range []struct {
		pool string
		args []string
		want []string
	}{
		{"waiting", []string{ns + "/waiting"}, []string{
			"class gvisor: follows the class default (no configRef)",
			"  on:           " + old.Name + "\n",
			`  resolves to:  ` + old.Name + ` (Resolved, Resolved: resolved to SandboxConfig "` + old.Name + `")` + "\n",
			"  waits for:    the rollout of SandboxConfig " + rolling.Name + " to admit it (Progressing, step 1 of 2): kubectl ate rollout status " + rolling.Name + "\n",
			"  Resolved:     True (Resolved): resolved to " + old.Name + ", since ",
			"(60m ago)",
			"  last switch:  workflow c/workerpool/" + ns + "/waiting/switch, run run-1\n",
			"  its history:  temporal workflow show --workflow-id 'c/workerpool/" + ns + "/waiting/switch' --run-id run-1",
		}},
		{"blocked", []string{"blocked", "-n", ns}, []string{
			"  claimed:      " + rolling.Name + " (pendingConfigRef",
			"  resolves to:  " + rolling.Name + " (Resolved, Resolved: resolved to SandboxConfig",
			"  waits for:    a blocked switch to " + rolling.Name + ": step Protect keeps failing (SwitchStepFailing): Protect: admission webhook denied the request\n",
			"  Resolved:     no condition yet",
			"  last switch:  none",
		}},
		{"missing", []string{ns + "/missing"}, []string{
			"class gvisor: pinned to SandboxConfig no-such-config (spec configRef)",
			"  on:           -\n",
			`  resolves to:  - (not resolved, SandboxConfigNotFound: SandboxConfig "no-such-config" not found)`,
			`  waits for:    a SandboxConfig it can use (SandboxConfigNotFound): SandboxConfig "no-such-config" not found` + "\n",
		}},
	} {
		t.Run(tc.pool, func(t *testing.T) {
			res := run(t, append([]string{"pool", "why"}, tc.args...)...)
			require.Equal(t, 0, res.code, res.stderr)
			require.True(t, strings.HasPrefix(res.stdout, "WorkerPool "+ns+"/"+tc.pool+"\n"), res.stdout)
			for _, w := range tc.want {
				require.Contains(t, res.stdout, w)
			}
		})
	}

	res := run(t, "pool", "why", ns+"/no-such-pool")
	require.Equal(t, 1, res.code)
	require.Contains(t, res.stderr, "WorkerPool "+ns+"/no-such-pool not found")
}

// setClassStatus changes the gvisor class's status of a pool, as the
// worker writes it.
func setClassStatus(t *testing.T, p *v1alpha1.WorkerPool, change func(*v1alpha1.WorkerPoolSandboxClassStatus)) {
	t.Helper()
	got := getPool(t, p.Namespace, p.Name)
	change(got.Status.ClassStatus(v1alpha1.SandboxClassGVisor))
	require.NoError(t, kube().Status().Update(t.Context(), got))
}
