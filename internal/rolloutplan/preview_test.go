package rolloutplan

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/rollout"
)

func config(name string, created int64, def bool, steps ...v1alpha1.RolloutStep) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(created, 0)}}
	if def {
		c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
	}
	if len(steps) > 0 {
		c.Spec.Rollout = &v1alpha1.SandboxConfigRollout{Steps: steps}
	}
	return c
}

func pools(current string, names ...string) []rollout.Pool {
	var out []rollout.Pool
	for _, n := range names {
		out = append(out, rollout.Pool{Key: rollout.PoolKey{Namespace: "ns", Name: n}, Current: current})
	}
	return out
}

// TestPreviewOf: the config previewed stands in for the cluster's entry of
// its name (a file not applied), and decides whether it is the newest
// default; the pools on it would move to the default without it.
func TestPreviewOf(t *testing.T) {
	two := int32(2)
	for _, tc := range []struct {
		name        string
		c           *v1alpha1.SandboxConfig
		configs     []*v1alpha1.SandboxConfig
		pools       []rollout.Pool
		wantDefault bool
		wantBackTo  string
		wantBack    []string
		wantSteps   int
	}{
		{
			name:    "a new default with steps, from a file",
			c:       config("new", 200, true, v1alpha1.RolloutStep{Pools: &two, Approval: true, Pause: &metav1.Duration{Duration: time.Minute}}, v1alpha1.RolloutStep{}),
			configs: []*v1alpha1.SandboxConfig{config("old", 100, true)},
			pools:   pools("old", "a", "b", "c"), wantDefault: true, wantBackTo: "old", wantBack: []string{}, wantSteps: 2,
		},
		{
			name:    "the file takes the annotation off the cluster's config of its name",
			c:       config("old", 100, false),
			configs: []*v1alpha1.SandboxConfig{config("old", 100, true), config("older", 50, true)},
			pools:   pools("old", "a"), wantDefault: false, wantBackTo: "older", wantBack: []string{"ns/a"}, wantSteps: 1,
		},
		{
			name:    "an older default is not the newest",
			c:       config("older", 50, true),
			configs: []*v1alpha1.SandboxConfig{config("old", 100, true)},
			pools:   pools("old", "a"), wantDefault: false, wantBackTo: "old", wantBack: []string{}, wantSteps: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var configs []resolve.Config
			for _, c := range tc.configs {
				configs = append(configs, resolve.ConfigFrom(c))
			}
			p := PreviewOf(tc.c, configs, tc.pools)
			require.Equal(t, tc.wantDefault, p.Default)
			require.Equal(t, tc.wantBackTo, p.BackTo)
			require.Equal(t, tc.wantBack, p.Back)
			require.Len(t, p.Plan.Steps, tc.wantSteps)
			var b bytes.Buffer
			p.Print(&b)
			require.NotEmpty(t, b.String())
		})
	}
}

func TestPrintNamesStepsApprovalAndBake(t *testing.T) {
	two := int32(2)
	c := config("new", 200, true, v1alpha1.RolloutStep{Pools: &two, Approval: true, Pause: &metav1.Duration{Duration: time.Minute}}, v1alpha1.RolloutStep{})
	p := PreviewOf(c, nil, pools("old", "a", "b", "c"))
	p.Source = "pr.yaml"
	var b bytes.Buffer
	p.Print(&b)
	require.Equal(t, `SandboxConfig new (from pr.yaml, as if applied) is the gvisor default; its rollout (not started, step 0) from here, over 3 unpinned pools:
  admitted already (0): 
  step 1: 2 on it once done, then wait for approval, then bake 1m0s; moves 2: ns/a ns/b
  step 2: 3 on it once done; moves 1: ns/c
If it lost the annotation: no other gvisor default; its pools would stay.
`, b.String())
}
