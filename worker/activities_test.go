package worker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/activities"
	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/promquery"
)

// recordingManager is a manager whose cache's informers record the event
// handlers registered on them, by the kind of object they inform about.
type recordingManager struct {
	ctrl.Manager
	cache *recordingCache
}

func (m recordingManager) GetCache() cache.Cache { return m.cache }

type recordingCache struct {
	cache.Cache
	handlers map[string][]toolscache.ResourceEventHandler
}

func (c *recordingCache) GetInformer(_ context.Context, obj ctrlclient.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	kind := "other"
	if _, ok := obj.(*v1alpha1.WorkerPool); ok {
		kind = "WorkerPool"
	}
	return recordingInformer{c: c, kind: kind}, nil
}

type recordingInformer struct {
	cache.Informer
	c    *recordingCache
	kind string
}

func (i recordingInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	i.c.handlers[i.kind] = append(i.c.handlers[i.kind], h)
	return nil, nil
}

// TestTheWorkerWakesTheRolloutOnPoolEvents: the worker's activities get the
// pool events their rollout step's wait looks on, from a handler on the
// manager cache's WorkerPool informer: a change of a gvisor pool wakes a
// wait for gvisor. (The wait's behaviour on events, with a real informer, is
// activities' TestAStepsWaitWakesOnItsPools.)
func TestTheWorkerWakesTheRolloutOnPoolEvents(t *testing.T) {
	c := &recordingCache{handlers: map[string][]toolscache.ResourceEventHandler{}}
	acts, err := newActivities(Config{Rest: &rest.Config{Host: "https://127.0.0.1:1"}}, recordingManager{cache: c})
	require.NoError(t, err)
	require.NotNil(t, acts.PoolEvents, "the worker wires the rollout's pool events")
	require.Len(t, c.handlers["WorkerPool"], 1, "one handler, on the WorkerPool informer")

	woken := acts.PoolEvents.Changed(string(v1alpha1.SandboxClassGVisor))
	pool := &v1alpha1.WorkerPool{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: v1alpha1.WorkerPoolSpec{SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}}}}
	c.handlers["WorkerPool"][0].OnUpdate(pool, pool.DeepCopy())
	select {
	case <-woken:
	default:
		t.Fatal("a gvisor pool's event did not wake a wait for gvisor")
	}
}

// The worker hands its Prometheus (--prometheus-url) to the activities,
// where the rollout analysis queries it; none without (a nil Querier, not
// a Querier of a nil client, so that an analysis says the worker has none).
func TestTheWorkerGivesTheActivitiesItsPrometheus(t *testing.T) {
	prom, err := promquery.New(promquery.Config{URL: "http://127.0.0.1:9098"})
	require.NoError(t, err)
	for _, tt := range []struct {
		name string
		prom *promquery.Client
	}{{"with --prometheus-url", prom}, {"without", nil}} {
		t.Run(tt.name, func(t *testing.T) {
			c := &recordingCache{handlers: map[string][]toolscache.ResourceEventHandler{}}
			acts, err := newActivities(Config{Rest: &rest.Config{Host: "https://127.0.0.1:1"}, Metrics: activities.PrometheusQuerier(tt.prom)}, recordingManager{cache: c})
			require.NoError(t, err)
			if tt.prom == nil {
				require.Nil(t, acts.Metrics)
				return
			}
			require.Equal(t, activities.PrometheusQuerier(tt.prom), acts.Metrics)
		})
	}
}
