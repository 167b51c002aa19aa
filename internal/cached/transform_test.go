package cached

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"ate.dev/orchestrator/api/v1alpha1"
)

// representativePool is a pool as a GitOps tool leaves it: applied with
// kubectl (the last-applied annotation), a full worker pod template, a
// status a switch and the keeper wrote.
func representativePool(t *testing.T) *v1alpha1.WorkerPool {
	t.Helper()
	now := metav1.NewTime(time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC))
	pool := &v1alpha1.WorkerPool{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "WorkerPool"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "counter-0042", Namespace: "tenant-a", UID: "6f1f3c2e-9a4b-4b7e-8d3f-0c2a1b9e7d55",
			ResourceVersion: "48213", Generation: 3, CreationTimestamp: now,
			Labels:      map[string]string{v1alpha1.CanaryLabel: "true", "team": "infra"},
			Annotations: map[string]string{"example.com/owner": "infra"},
			Finalizers:  []string{"example.com/keep"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "ate.dev/v1alpha1", Time: &now, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:replicas":{},"f:sandboxClasses":{},"f:template":{".":{},"f:nodeSelector":{},"f:resources":{},"f:tolerations":{}},"f:workerImage":{}}}`)}},
				{Manager: "ate-orchestrator", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "ate.dev/v1alpha1", Time: &now, FieldsType: "FieldsV1", Subresource: "status",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:conditions":{},"f:observedGeneration":{},"f:readyReplicas":{},"f:replicas":{},"f:sandboxClasses":{},"f:selector":{}}}`)}},
			},
		},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:    ptr.To[int32](3),
			WorkerImage: "registry.example/ateworker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{
				{Name: v1alpha1.SandboxClassGVisor},
			},
			Template: &v1alpha1.WorkerPoolPodTemplate{
				Labels:       map[string]v1alpha1.LabelValue{"team": "infra", "tier": "gpu"},
				Annotations:  map[string]string{"example.com/owner": "infra"},
				NodeSelector: map[string]v1alpha1.LabelValue{"example.com/pool": "workers", "disk": "ssd"},
				Tolerations: []corev1.Toleration{
					{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ate", Effect: corev1.TaintEffectNoSchedule},
				},
				PriorityClassName: "ate-workers",
				Resources: &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
				},
				ServiceAccountName: "custom-worker",
			},
		},
		Status: v1alpha1.WorkerPoolStatus{
			Replicas: 3, ReadyReplicas: 3, Selector: "ate.dev/worker-pool=counter-0042", ObservedGeneration: 3,
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
				Name:       v1alpha1.SandboxClassGVisor,
				ConfigRef:  &v1alpha1.SandboxConfigReference{Name: "gvisor-2026-12"},
				LastSwitch: &v1alpha1.SwitchRunReference{WorkflowID: "c/workerpool/tenant-a/counter-0042/switch", RunID: "0193a4b2-7c1d-7e3f-9a8b-1c2d3e4f5a6b"},
				Conditions: []metav1.Condition{{Type: v1alpha1.ConditionResolved, Status: metav1.ConditionTrue, Reason: "Resolved", Message: `class gvisor resolved to SandboxConfig "gvisor-2026-12"`, LastTransitionTime: now, ObservedGeneration: 3}},
			}},
			Conditions: []metav1.Condition{
				{Type: v1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "3 of 3 workers ready", LastTransitionTime: now, ObservedGeneration: 3},
			},
		},
	}
	// kubectl apply's copy of the manifest: the spec again.
	manifest, err := json.Marshal(struct {
		APIVersion string                  `json:"apiVersion"`
		Kind       string                  `json:"kind"`
		Metadata   map[string]string       `json:"metadata"`
		Spec       v1alpha1.WorkerPoolSpec `json:"spec"`
	}{pool.APIVersion, pool.Kind, map[string]string{"name": pool.Name, "namespace": pool.Namespace}, pool.Spec})
	require.NoError(t, err)
	pool.Annotations[LastAppliedAnnotation] = string(manifest)
	return pool
}

type poolField struct {
	name string
	get  func(*v1alpha1.WorkerPool) any
}

// Fields both processes read of a cached pool: the keys and incarnation,
// the deletion mark, the canary label (rollout order), the classes' spec,
// the whole status (the starter plans from it and mirrors none of it; the
// worker's status writes start from it).
var readByBoth = []poolField{
	{"metadata.name", func(p *v1alpha1.WorkerPool) any { return p.Name }},
	{"metadata.namespace", func(p *v1alpha1.WorkerPool) any { return p.Namespace }},
	{"metadata.uid", func(p *v1alpha1.WorkerPool) any { return p.UID }},
	{"metadata.resourceVersion", func(p *v1alpha1.WorkerPool) any { return p.ResourceVersion }},
	{"metadata.generation", func(p *v1alpha1.WorkerPool) any { return p.Generation }},
	{"metadata.deletionTimestamp", func(p *v1alpha1.WorkerPool) any { return p.DeletionTimestamp }},
	{"the canary label", func(p *v1alpha1.WorkerPool) any { return p.Labels[v1alpha1.CanaryLabel] }},
	{"spec.sandboxClasses", func(p *v1alpha1.WorkerPool) any { return p.Spec.SandboxClasses }},
	{"status", func(p *v1alpha1.WorkerPool) any { return p.Status }},
}

// Fields only the worker reads: its keeper builds the Deployment from them.
var readByWorkerOnly = []poolField{
	{"spec.replicas", func(p *v1alpha1.WorkerPool) any { return p.Spec.Replicas }},
	{"spec.workerImage", func(p *v1alpha1.WorkerPool) any { return p.Spec.WorkerImage }},
	{"spec.template", func(p *v1alpha1.WorkerPool) any { return p.Spec.Template }},
}

// Fields nobody reads.
var readByNobody = []poolField{
	{"metadata.managedFields", func(p *v1alpha1.WorkerPool) any { return p.ManagedFields }},
	{"metadata.annotations (kubectl's last-applied among them)", func(p *v1alpha1.WorkerPool) any { return p.Annotations }},
}

func TestPoolTransformsKeepWhatIsRead(t *testing.T) {
	for _, tc := range []struct {
		process   string
		transform func(any) (any, error)
		keep      []poolField
		drop      []poolField
	}{
		{"worker", WorkerPool, append(append([]poolField{}, readByBoth...), readByWorkerOnly...), readByNobody},
		{"starter", StarterWorkerPool, readByBoth, append(append([]poolField{}, readByNobody...), readByWorkerOnly[1:]...)},
	} {
		t.Run(tc.process, func(t *testing.T) {
			full := representativePool(t)
			full.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)))
			out, err := tc.transform(full.DeepCopy())
			require.NoError(t, err)
			pool := out.(*v1alpha1.WorkerPool)
			for _, f := range tc.keep {
				require.NotEmpty(t, f.get(full), "the representative pool should set %s", f.name)
				require.Equal(t, f.get(full), f.get(pool), "the %s's cache must keep %s", tc.process, f.name)
			}
			for _, f := range tc.drop {
				require.NotEmpty(t, f.get(full), "the representative pool should set %s", f.name)
				require.Empty(t, f.get(pool), "the %s's cache should drop %s", tc.process, f.name)
			}
			before := full.DeepCopy()
			before.ManagedFields = nil // what the cache held before: managedFields stripped
			t.Logf("%s: a pool is %d bytes of JSON as served, %d without managedFields (the cache before), %d as cached",
				tc.process, jsonSize(t, full), jsonSize(t, before), jsonSize(t, pool))
		})
	}
}

// TestStripUnread: the default transform (SandboxConfigs, and anything
// without a transform of its own) drops managedFields and kubectl's
// last-applied annotation, and keeps the annotation and finalizer
// resolution reads.
func TestStripUnread(t *testing.T) {
	c := &v1alpha1.SandboxConfig{ObjectMeta: metav1.ObjectMeta{
		Name: "gvisor-2026-12",
		Annotations: map[string]string{
			v1alpha1.ClassDefaultAnnotation: "true",
			LastAppliedAnnotation:           `{"apiVersion":"ate.dev/v1alpha1","kind":"SandboxConfig"}`,
		},
		Finalizers:    []string{v1alpha1.ProtectionFinalizer},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	out, err := StripUnread(c)
	require.NoError(t, err)
	got := out.(*v1alpha1.SandboxConfig)
	require.Empty(t, got.ManagedFields)
	require.Equal(t, map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}, got.Annotations)
	require.True(t, got.IsClassDefault())
	require.True(t, got.IsProtected())

	// The pool transforms pass anything but a pool to it.
	for _, transform := range []func(any) (any, error){WorkerPool, StarterWorkerPool} {
		out, err := transform(c.DeepCopy())
		require.NoError(t, err)
		require.True(t, out.(*v1alpha1.SandboxConfig).IsClassDefault())
	}
}

func jsonSize(t *testing.T, v any) int {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return len(b)
}

// BenchmarkCachedPoolHeap reports the heap a cached pool takes, as served
// and after each process's transform (go test -bench CachedPoolHeap
// -benchtime 1x -run '^$' ./internal/cached). Each pool is decoded from
// JSON, as an informer decodes it, so no two share their strings.
func BenchmarkCachedPoolHeap(b *testing.B) {
	raw, err := json.Marshal(representativePool(&testing.T{}))
	require.NoError(b, err)
	for _, tc := range []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"served", func(o any) (any, error) { return o, nil }},
		{"managedFieldsStripped", func(o any) (any, error) {
			o.(*v1alpha1.WorkerPool).ManagedFields = nil
			return o, nil
		}},
		{"worker", WorkerPool},
		{"starter", StarterWorkerPool},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportMetric(heapPerObject(b, 2000, func() any {
				var pool v1alpha1.WorkerPool
				require.NoError(b, json.Unmarshal(raw, &pool))
				out, err := tc.transform(&pool)
				require.NoError(b, err)
				return out
			}), "heap-bytes/pool")
		})
	}
}

// heapPerObject is the live heap, in bytes, each of n objects newObject
// makes takes.
func heapPerObject(b *testing.B, n int, newObject func() any) float64 {
	b.Helper()
	kept := make([]any, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range kept {
		kept[i] = newObject()
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}
