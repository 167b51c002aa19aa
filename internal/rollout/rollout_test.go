package rollout

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

func pools(n int, on map[int]string, canary ...int) []Pool {
	out := make([]Pool, n)
	for i := range out {
		out[i] = Pool{Key: PoolKey{Namespace: "ns", Name: fmt.Sprintf("p%02d", i)}, Current: "old"}
		if c, ok := on[i]; ok {
			out[i].Current = c
		}
	}
	for _, c := range canary {
		out[c].Key.Canary = true
	}
	return out
}

func TestOrder(t *testing.T) {
	keys := []PoolKey{
		{Namespace: "a", Name: "x"},
		{Namespace: "a-b", Name: "y"},
		{Namespace: "z", Name: "c", Canary: true},
		{Namespace: "a", Name: "w"},
	}
	sorted := make([]Pool, len(keys))
	for i, k := range keys {
		sorted[i] = Pool{Key: k}
	}
	Sort(sorted)
	var got []string
	for _, p := range sorted {
		got = append(got, p.Key.String())
	}
	require.Equal(t, []string{"z/c", "a/w", "a/x", "a-b/y"}, got, "canary first, then namespace (as a part, not a joined string), then name")
}

func TestWant(t *testing.T) {
	for _, tc := range []struct {
		name  string
		step  v1alpha1.RolloutStep
		total int
		want  int
	}{
		{"absolute", v1alpha1.RolloutStep{Pools: ptr.To[int32](1)}, 20, 1},
		{"absolute beyond the class", v1alpha1.RolloutStep{Pools: ptr.To[int32](50)}, 20, 20},
		{"percent", v1alpha1.RolloutStep{Percent: ptr.To[int32](25)}, 20, 5},
		{"percent rounds up", v1alpha1.RolloutStep{Percent: ptr.To[int32](10)}, 3, 1},
		{"all", v1alpha1.RolloutStep{Percent: ptr.To[int32](100)}, 20, 20},
		{"empty class", v1alpha1.RolloutStep{Percent: ptr.To[int32](50)}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Want(tc.step, tc.total))
		})
	}
}

func TestAdvance(t *testing.T) {
	through := func(name string) *Admission { return &Admission{Through: &PoolKey{Namespace: "ns", Name: name}} }
	for _, tc := range []struct {
		name     string
		pools    []Pool
		want     int
		prev     *Admission
		next     *Admission
		admitted int
	}{
		{"the canary first, by name", pools(5, nil, 3), 1, nil, &Admission{Canaries: []string{"ns/p03"}}, 1},
		{"then by name", pools(5, nil, 3), 3, nil, &Admission{Canaries: []string{"ns/p03"}, Through: &PoolKey{Namespace: "ns", Name: "p01"}}, 3},
		{"pools on the config count", pools(5, map[int]string{4: "new"}), 2, nil, through("p00"), 2},
		{"enough on the config: none more", pools(5, map[int]string{4: "new", 3: "new"}), 2, nil, &Admission{}, 2},
		{"never before prev: a step run again after its pools moved", pools(5, map[int]string{0: "new", 1: "new"}), 2,
			through("p01"), through("p01"), 2},
		{"grows from prev", pools(5, map[int]string{0: "new"}), 3, through("p00"), through("p02"), 3},
		{"all", pools(5, nil), 5, nil, through("p04"), 5},
		{"a canary admitted stays admitted once its label is gone", pools(5, nil), 2,
			&Admission{Canaries: []string{"ns/p03"}}, &Admission{Canaries: []string{"ns/p03"}, Through: &PoolKey{Namespace: "ns", Name: "p00"}}, 2},
		{"a label added mid-rollout is taken first at the next step", pools(5, nil, 4), 3,
			&Admission{Canaries: []string{"ns/p03"}, Through: &PoolKey{Namespace: "ns", Name: "p00"}},
			&Admission{Canaries: []string{"ns/p03", "ns/p04"}, Through: &PoolKey{Namespace: "ns", Name: "p00"}}, 3},
		{"a v0.1.0 boundary among the canaries becomes names", pools(5, nil, 1, 3), 3,
			&Admission{Through: &PoolKey{Namespace: "ns", Name: "p01", Canary: true}},
			&Admission{Canaries: []string{"ns/p01", "ns/p03"}, Through: &PoolKey{Namespace: "ns", Name: "p00"}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sorted := append([]Pool(nil), tc.pools...)
			Sort(sorted)
			next, admitted := Advance(sorted, "new", tc.want, tc.prev)
			require.Equal(t, tc.next, next)
			require.Equal(t, tc.admitted, admitted)
			if tc.prev != nil {
				for _, p := range sorted {
					if tc.prev.Admits(p.Key, p.Current, "new") {
						require.True(t, next.Admits(p.Key, p.Current, "new"), "%s was admitted and is no longer", p.Key)
					}
				}
			}
		})
	}
}

func TestAdmits(t *testing.T) {
	through := &PoolKey{Namespace: "ns", Name: "p02"}
	for _, tc := range []struct {
		name    string
		a       *Admission
		pool    PoolKey
		current string
		want    bool
	}{
		{"no rollout admits all", nil, PoolKey{Namespace: "ns", Name: "p09"}, "old", true},
		{"not started admits none", &Admission{}, PoolKey{Namespace: "ns", Name: "p00"}, "old", false},
		{"a pool on the config stays", &Admission{}, PoolKey{Namespace: "ns", Name: "p09"}, "new", true},
		{"up to through", &Admission{Through: through}, PoolKey{Namespace: "ns", Name: "p02"}, "old", true},
		{"after through", &Admission{Through: through}, PoolKey{Namespace: "ns", Name: "p03"}, "old", false},
		{"a canary admitted by name", &Admission{Canaries: []string{"zz/z"}, Through: through}, PoolKey{Namespace: "zz", Name: "z", Canary: true}, "old", true},
		{"a canary admitted stays so without its label", &Admission{Canaries: []string{"zz/z"}}, PoolKey{Namespace: "zz", Name: "z"}, "old", true},
		{"a label added after its name was passed: still admitted", &Admission{Through: through}, PoolKey{Namespace: "ns", Name: "p01", Canary: true}, "old", true},
		{"a label added mid-rollout admits nothing at once", &Admission{Through: through}, PoolKey{Namespace: "zz", Name: "z", Canary: true}, "old", false},
		{"a v0.1.0 canary boundary admits canaries before it", &Admission{Through: &PoolKey{Namespace: "zz", Name: "z", Canary: true}}, PoolKey{Namespace: "a", Name: "a", Canary: true}, "old", true},
		{"a v0.1.0 canary boundary admits no other pool", &Admission{Through: &PoolKey{Namespace: "zz", Name: "z", Canary: true}}, PoolKey{Namespace: "a", Name: "a"}, "old", false},
		{"a new pool with no config after through waits", &Admission{Through: through}, PoolKey{Namespace: "ns", Name: "p05"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.a.Admits(tc.pool, tc.current, "new"))
		})
	}
}

func TestAdmissionOf(t *testing.T) {
	c := &v1alpha1.SandboxConfig{}
	require.Nil(t, AdmissionOf(c), "no spec.rollout: no staging")
	c.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: []v1alpha1.RolloutStep{{Percent: ptr.To[int32](100)}}}
	require.Equal(t, &Admission{}, AdmissionOf(c), "a rollout not started admits no pool")
	c.Status.Rollout = &v1alpha1.RolloutStatus{Phase: v1alpha1.RolloutBaking, Step: 2, AdmittedThrough: &v1alpha1.RolloutPoolRef{Namespace: "a", Name: "b"}}
	require.Equal(t, &Admission{Step: 2, Through: &PoolKey{Namespace: "a", Name: "b"}}, AdmissionOf(c))
	c.Status.Rollout.Phase = v1alpha1.RolloutCompleted
	require.Nil(t, AdmissionOf(c), "a completed rollout admits every pool")
}

func TestKeyOf(t *testing.T) {
	wp := &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: "p", Labels: map[string]string{v1alpha1.CanaryLabel: "true"}}}
	require.Equal(t, PoolKey{Namespace: "n", Name: "p", Canary: true}, KeyOf(wp))
	wp.Labels[v1alpha1.CanaryLabel] = "yes"
	require.False(t, KeyOf(wp).Canary, "only the exact value true counts")
}

// TestPlan is the three-step rollout of the issue over 20 pools with one
// canary: 1, then 25% (5), then all.
func TestPlan(t *testing.T) {
	steps := []v1alpha1.RolloutStep{{Pools: ptr.To[int32](1)}, {Percent: ptr.To[int32](25)}, {Percent: ptr.To[int32](100)}}
	ps := pools(20, nil, 7)
	already, plan := Plan(ps, "new", steps, 1, nil)
	require.Empty(t, already)
	require.Len(t, plan, 3)
	require.Equal(t, []string{"ns/p07"}, plan[0].Pools)
	require.Equal(t, []string{"ns/p00", "ns/p01", "ns/p02", "ns/p03"}, plan[1].Pools)
	require.Equal(t, 5, plan[1].Admitted)
	require.Len(t, plan[2].Pools, 15)
	require.Equal(t, 20, plan[2].Admitted)

	// From step 2, with the canary admitted and moved, and one other pool
	// already on the config: it counts toward the step.
	ps[7].Current, ps[19].Current = "new", "new"
	already, plan = Plan(ps, "new", steps, 2, &Admission{Canaries: []string{"ns/p07"}})
	require.Equal(t, []string{"ns/p07", "ns/p19"}, already)
	require.Equal(t, []string{"ns/p00", "ns/p01", "ns/p02"}, plan[0].Pools)
	require.Len(t, plan[1].Pools, 15)
}
