package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/poolwatch"
	"ate.dev/orchestrator/internal/wfapi"
)

// poolOn is a pool whose gvisor class's status names config.
func poolOn(name, config string) *v1alpha1.WorkerPool {
	return &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
			Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: config},
		}}},
	}
}

// WakeReleases wakes a config's release only from its last user, and once
// per worker however many last switches run at once.
func TestWakeReleasesWakesFromTheLastUser(t *testing.T) {
	own := wfapi.PoolRef{Namespace: "ns", Name: "own"}
	const wakeUp = "c1/sandboxconfig/old/release recheck SandboxConfigRelease on tq"
	tests := []struct {
		name    string
		config  *v1alpha1.SandboxConfig
		configs []string               // the configs named, "old" when none
		cached  []*v1alpha1.WorkerPool // what the worker's cache shows
		calls   int                    // WakeReleases calls, one after the other
		want    []string
		// wantWait: the cache never shows the own write, so the wake-up
		// comes at the wait's bound.
		wantWait bool
	}{
		{name: "another pool still uses it: no wake-up", config: sandboxConfig("old", gvisor, true, true),
			cached: []*v1alpha1.WorkerPool{poolOn("other", "old")}, calls: 1},
		{name: "another pool and the own one, not yet moved in the cache: no wake-up", config: sandboxConfig("old", gvisor, true, true),
			cached: []*v1alpha1.WorkerPool{poolOn("own", "old"), poolOn("other", "old")}, calls: 1},
		{name: "the last user moved: a wake-up", config: sandboxConfig("old", gvisor, true, true),
			cached: []*v1alpha1.WorkerPool{poolOn("own", "new"), poolOn("other", "new")}, calls: 1, want: []string{wakeUp}},
		{name: "the own write not yet in the cache, no other user: a wake-up at the bound", config: sandboxConfig("old", gvisor, true, true),
			cached: []*v1alpha1.WorkerPool{poolOn("own", "old")}, calls: 1, want: []string{wakeUp}, wantWait: true},
		{name: "last switches at once: one wake-up", config: sandboxConfig("old", gvisor, true, true),
			calls: 3, want: []string{wakeUp}},
		{name: "two configs, one still used elsewhere: the other woken", config: sandboxConfig("old", gvisor, true, true),
			configs: []string{"displaced", "old"}, cached: []*v1alpha1.WorkerPool{poolOn("other", "displaced")}, calls: 1, want: []string{wakeUp}},
		{name: "not in deletion: no wake-up", config: sandboxConfig("old", gvisor, true, false), calls: 1},
		{name: "no longer protected: no wake-up", config: sandboxConfig("old", gvisor, false, true), calls: 1},
		{name: "gone: no wake-up", calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var live []ctrlclient.Object
			if tt.config != nil {
				live = append(live, tt.config)
			}
			cache := fake.NewClientBuilder().WithScheme(kube.Scheme).
				WithIndex(&v1alpha1.WorkerPool{}, poolwatch.StatusConfigIndex, func(o ctrlclient.Object) []string {
					return o.(*v1alpha1.WorkerPool).Status.ConfigNames()
				})
			for _, p := range tt.cached {
				cache = cache.WithObjects(p)
			}
			tc := &recordingTemporal{}
			a := &Activities{
				Live:     fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(live...).Build(),
				Cache:    cache.Build(),
				Temporal: tc,
				Scope:    wfapi.Scope{Cluster: "c1", TaskQueue: "tq"},
			}
			configs := tt.configs
			if configs == nil {
				configs = []string{"old"}
			}
			start := time.Now()
			for range tt.calls {
				require.NoError(t, a.WakeReleases(context.Background(), WakeInput{Pool: own, Configs: configs}))
			}
			require.Equal(t, tt.want, tc.sent)
			if tt.wantWait {
				require.GreaterOrEqual(t, time.Since(start), ownWriteWait, "it waited for the own write first")
			}
		})
	}
}
