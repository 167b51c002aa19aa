package activities

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// The claim's verdicts, each judged on one pool as an attempt read it.

var (
	claimRun   = &v1alpha1.SwitchRunReference{WorkflowID: "c1/workerpool/ns/pool/switch", RunID: "run-1"}
	anotherRun = &v1alpha1.SwitchRunReference{WorkflowID: "c1/workerpool/ns/pool/switch", RunID: "run-0"}
)

// classPool is a pool whose gvisor class's spec pins spec ("" follows the
// default) and whose status is st (nil: none yet).
func classPool(spec string, st *v1alpha1.WorkerPoolSandboxClassStatus) *v1alpha1.WorkerPool {
	pool := &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool"},
		Spec: v1alpha1.WorkerPoolSpec{SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: gvisor}}}}
	if spec != "" {
		pool.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: spec}
	}
	if st != nil {
		st.Name = gvisor
		pool.Status.SandboxClasses = []v1alpha1.WorkerPoolSandboxClassStatus{*st}
	}
	return pool
}

func ref(name string) *v1alpha1.SandboxConfigReference {
	if name == "" {
		return nil
	}
	return &v1alpha1.SandboxConfigReference{Name: name}
}

// classStatus is a class on config with a claim on pending ("" for none),
// last written by run, its Resolved condition resolved (nil: none).
func classStatus(config, pending string, run *v1alpha1.SwitchRunReference, resolved *metav1.Condition) *v1alpha1.WorkerPoolSandboxClassStatus {
	st := &v1alpha1.WorkerPoolSandboxClassStatus{ConfigRef: ref(config), PendingConfigRef: ref(pending), LastSwitch: run.DeepCopy()}
	if resolved != nil {
		resolved.Type = v1alpha1.ConditionResolved
		st.Conditions = []metav1.Condition{*resolved}
	}
	return st
}

func TestClaimOurs(t *testing.T) {
	since := metav1.Unix(1700000000, 0)
	failing := &metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "deleting", LastTransitionTime: since}
	tests := []struct {
		name string
		run  *v1alpha1.SwitchRunReference
		st   *v1alpha1.WorkerPoolSandboxClassStatus
		want *verdict
	}{
		{name: "no status yet", run: claimRun},
		{name: "the class as planned, written by another run", run: claimRun, st: classStatus("old", "", anotherRun, nil)},
		{name: "another run's claim on the config", run: claimRun, st: classStatus("old", "new", anotherRun, nil)},
		{name: "this run's claim standing", run: claimRun, st: classStatus("old", "new", claimRun, nil),
			want: &verdict{Outcome: Written}},
		{name: "this run's confirm", run: claimRun, st: classStatus("new", "", claimRun, nil),
			want: &verdict{Outcome: Landed}},
		{name: "this run's roll back, its failure still shown", run: claimRun, st: classStatus("old", "", claimRun, failing),
			want: &verdict{Outcome: RolledBack, Earlier: &EarlierRollBack{Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: "deleting", FailingSince: &since}}},
		{name: "this run's roll back, resolved since: no Warning due", run: claimRun,
			st:   classStatus("old", "", claimRun, &metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonResolved}),
			want: &verdict{Outcome: RolledBack, Earlier: &EarlierRollBack{}}},
		{name: "this run's stamp on a claim of another config", run: claimRun, st: classStatus("old", "other", claimRun, nil)},
		{name: "outside a switch run, a status with no stamp", st: classStatus("new", "", nil, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claim{in: ClaimInput{Class: gvisor, From: "old", Config: "new"}, run: tt.run}
			require.Equal(t, tt.want, c.ours(classPool("", tt.st)))
		})
	}
}

func TestClaimOnlyLooksAndPlanned(t *testing.T) {
	tests := []struct {
		name string
		in   ClaimInput
		spec string // the class's spec.configRef now
		want *verdict
	}{
		{name: "a claim that writes", in: ClaimInput{}},
		{name: "a claim that only looks", in: ClaimInput{OnlyOwn: true}, want: &verdict{Outcome: Unclaimed}},
		{name: "planned on the default, still on it", in: ClaimInput{ExpectSpec: true}},
		{name: "planned on a pin, still pinned there", in: ClaimInput{ExpectSpec: true, SpecConfigRef: "new"}, spec: "new"},
		{name: "planned on a pin, re-pinned since", in: ClaimInput{ExpectSpec: true, SpecConfigRef: "new"}, spec: "old",
			want: &verdict{Outcome: Superseded}},
		{name: "planned on the default, pinned since", in: ClaimInput{ExpectSpec: true}, spec: "other",
			want: &verdict{Outcome: Superseded}},
		{name: "no spec recorded in the input", in: ClaimInput{}, spec: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Class, tt.in.Config = gvisor, "new"
			c := claim{in: tt.in, run: claimRun}
			pool := classPool(tt.spec, classStatus("old", "", nil, nil))
			got := c.onlyLooks(pool)
			if got == nil {
				got = c.planned(pool)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestClaimWrite(t *testing.T) {
	tests := []struct {
		name          string
		in            ClaimInput
		st            *v1alpha1.WorkerPoolSandboxClassStatus
		want          verdict
		wantPending   string // after the write; "" when it changes nothing
		wantUnchanged bool
	}{
		{name: "the class on From", in: ClaimInput{ExpectFrom: true, From: "old"}, st: classStatus("old", "", nil, nil),
			wantPending: "new"},
		{name: "the class moved off From since", in: ClaimInput{ExpectFrom: true, From: "older"}, st: classStatus("old", "", nil, nil),
			want: verdict{Outcome: Superseded}, wantUnchanged: true},
		{name: "a first resolution, the class still unresolved", in: ClaimInput{ExpectFrom: true}, wantPending: "new"},
		{name: "a first resolution, resolved since", in: ClaimInput{ExpectFrom: true}, st: classStatus("old", "", nil, nil),
			want: verdict{Outcome: Superseded}, wantUnchanged: true},
		{name: "last written by the planned run", in: ClaimInput{ExpectRun: true, FromRun: "run-0"}, st: classStatus("old", "", anotherRun, nil),
			wantPending: "new"},
		{name: "written by another run since the plan", in: ClaimInput{ExpectRun: true, FromRun: "run-0"}, st: classStatus("old", "", nil, nil),
			want: verdict{Outcome: Superseded}, wantUnchanged: true},
		{name: "a claim on another config displaced", st: classStatus("old", "other", anotherRun, nil),
			want: verdict{Displaced: "other"}, wantPending: "new"},
		{name: "a claim on the class's own config is no claim to displace", st: classStatus("old", "old", anotherRun, nil),
			wantPending: "new"},
		{name: "the same claim again", st: classStatus("old", "new", claimRun, nil), wantPending: "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Pool, tt.in.Class, tt.in.Config = wfapi.PoolRef{Namespace: "ns", Name: "pool"}, gvisor, "new"
			pool := classPool("", tt.st)
			before := pool.DeepCopy()
			require.Equal(t, tt.want, claim{in: tt.in, run: claimRun}.write(pool))
			if tt.wantUnchanged {
				require.Equal(t, before, pool, "a superseded claim changes nothing")
				return
			}
			st := pool.Status.ClassStatus(gvisor)
			require.Equal(t, tt.wantPending, st.PendingConfigRef.NameOf())
			require.Equal(t, claimRun, st.LastSwitch, "stamped with the run")
		})
	}
}
