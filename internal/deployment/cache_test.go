package deployment

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// representativeDeployment is a pool's Deployment as the API server holds
// it after the product applied it and the Deployment controller reported
// on it: a full template, the controller's managedFields entry and
// annotation, a status with conditions.
func representativeDeployment(t *testing.T) (*appsv1.Deployment, *v1alpha1.WorkerPool) {
	t.Helper()
	ctx := context.Background()
	apps, _ := newFakeApps(t)
	pool := newPool(v1alpha1.SandboxClassMicroVM, fullTemplate())
	d, err := Apply(ctx, apps, pool)
	require.NoError(t, err)
	d.Annotations["deployment.kubernetes.io/revision"] = "1"
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: "False", Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: "True", Reason: "NewReplicaSetAvailable", Message: `ReplicaSet "counter-5d8f7c9b6" has successfully progressed.`},
		}}
	_, err = apps.Deployments(poolNS).UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	require.NoError(t, err)
	d, err = apps.Deployments(poolNS).Get(ctx, poolName, metav1.GetOptions{})
	require.NoError(t, err)
	// What the fake tracker does not set and the API server does.
	d.UID, d.ResourceVersion, d.Generation = "0b0c4a7e-2f5d-4c1a-9e3b-7d6f8a9b0c1d", "48213", 1
	return d, pool
}

// TestForCacheKeepsWhatTheKeeperReads: every field the keeper reads of a
// cached Deployment survives the transform, and the bulk it does not read
// (the pod template, managedFields, annotations) is gone.
func TestForCacheKeepsWhatTheKeeperReads(t *testing.T) {
	full, pool := representativeDeployment(t)
	out, err := ForCache(full.DeepCopy())
	require.NoError(t, err)
	cached := out.(*appsv1.Deployment)

	for _, tc := range []struct {
		field string
		get   func(*appsv1.Deployment) any
	}{
		{"metadata.name", func(d *appsv1.Deployment) any { return d.Name }},
		{"metadata.namespace", func(d *appsv1.Deployment) any { return d.Namespace }},
		{"metadata.uid", func(d *appsv1.Deployment) any { return d.UID }},
		{"metadata.resourceVersion (the up-to-date memo)", func(d *appsv1.Deployment) any { return d.ResourceVersion }},
		{"metadata.generation", func(d *appsv1.Deployment) any { return d.Generation }},
		{"metadata.ownerReferences (controller, Owns)", func(d *appsv1.Deployment) any { return d.OwnerReferences }},
		{"the pool label (the cache's selector)", func(d *appsv1.Deployment) any { return d.Labels[v1alpha1.WorkerPoolLabel] }},
		{"spec.selector (status.selector)", func(d *appsv1.Deployment) any { return d.Spec.Selector }},
		{"spec.replicas", func(d *appsv1.Deployment) any { return d.Spec.Replicas }},
		{"status (replicas, readyReplicas, Available)", func(d *appsv1.Deployment) any { return d.Status }},
	} {
		t.Run("keeps "+tc.field, func(t *testing.T) {
			require.NotEmpty(t, tc.get(full), "the representative Deployment should set it")
			require.Equal(t, tc.get(full), tc.get(cached))
		})
	}
	for _, tc := range []struct {
		field string
		get   func(*appsv1.Deployment) any
	}{
		{"spec.template", func(d *appsv1.Deployment) any { return d.Spec.Template.Spec.Containers }},
		{"metadata.managedFields", func(d *appsv1.Deployment) any { return d.ManagedFields }},
		{"the template's labels", func(d *appsv1.Deployment) any { return d.Labels["team"] }},
		{"other annotations", func(d *appsv1.Deployment) any { return d.Annotations["deployment.kubernetes.io/revision"] }},
	} {
		t.Run("drops "+tc.field, func(t *testing.T) {
			require.NotEmpty(t, tc.get(full), "the representative Deployment should set it")
			require.Empty(t, tc.get(cached))
		})
	}

	// What it reads through the digest: up to date as the full copy is.
	upToDate, err := CachedUpToDate(cached, pool)
	require.NoError(t, err)
	require.True(t, upToDate)

	// The cache kept, before ForCache, the whole Deployment with the
	// product's own managedFields entry.
	ownOnly := full.DeepCopy()
	ownOnly.ManagedFields = nil
	for _, e := range full.ManagedFields {
		if e.Manager == FieldManager {
			ownOnly.ManagedFields = append(ownOnly.ManagedFields, e)
		}
	}
	before, after := jsonSize(t, ownOnly), jsonSize(t, cached)
	t.Logf("a pool's Deployment: %d bytes of JSON as served, %d with only the product's managedFields (the cache before), %d as cached",
		jsonSize(t, full), before, after)
	require.Less(t, after, before/2, "the cached copy should be a fraction of the full one")
}

// TestCachedUpToDateWithoutADigest: a Deployment the transform could not
// digest (or one that never went through it) is never taken as up to
// date, so the keeper applies rather than misses an apply.
func TestCachedUpToDateWithoutADigest(t *testing.T) {
	full, pool := representativeDeployment(t)
	got, err := CachedUpToDate(full, pool)
	require.NoError(t, err)
	require.False(t, got)

	never := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: poolName, Namespace: poolNS}}
	out, err := ForCache(never)
	require.NoError(t, err)
	got, err = CachedUpToDate(out.(*appsv1.Deployment), pool)
	require.NoError(t, err)
	require.False(t, got, "a Deployment the product never applied")
}

// TestForCacheIsIdempotent: the worker's informer ran the transform again
// on a Deployment it already held (the bench saw it at every start), and
// the second pass, with the managedFields gone, digested nothing: every
// Deployment then looked out of date, and a worker's start re-applied
// every pool's Deployment (10,000 applies at N=10,000). Transformed twice,
// a Deployment keeps the digest of its first pass.
func TestForCacheIsIdempotent(t *testing.T) {
	full, pool := representativeDeployment(t)
	once, err := ForCache(full.DeepCopy())
	require.NoError(t, err)
	twice, err := ForCache(once.(*appsv1.Deployment).DeepCopy())
	require.NoError(t, err)
	require.Equal(t, once, twice)
	got, err := CachedUpToDate(twice.(*appsv1.Deployment), pool)
	require.NoError(t, err)
	require.True(t, got, "an up-to-date Deployment transformed twice is still up to date")
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return len(b)
}

// BenchmarkCachedDeploymentHeap reports the heap a pool's cached
// Deployment takes, as the cache kept it before ForCache (only the
// product's managedFields entry) and after (go test -bench
// CachedDeploymentHeap -benchtime 1x -run '^$' ./internal/deployment).
// Each is decoded from JSON, as an informer decodes it.
func BenchmarkCachedDeploymentHeap(b *testing.B) {
	full, _ := representativeDeployment(&testing.T{})
	raw, err := json.Marshal(full)
	require.NoError(b, err)
	for _, tc := range []struct {
		name      string
		transform func(*appsv1.Deployment)
	}{
		{"ownManagedFields", func(d *appsv1.Deployment) {
			own := d.ManagedFields[:0]
			for _, e := range d.ManagedFields {
				if e.Manager == FieldManager {
					own = append(own, e)
				}
			}
			d.ManagedFields = own
		}},
		{"forCache", func(d *appsv1.Deployment) { _, _ = ForCache(d) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			kept := make([]*appsv1.Deployment, 1000)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for i := range kept {
				var d appsv1.Deployment
				require.NoError(b, json.Unmarshal(raw, &d))
				tc.transform(&d)
				kept[i] = &d
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(kept)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(len(kept)), "heap-bytes/deployment")
		})
	}
}
