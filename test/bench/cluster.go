package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/deployment"
	"ate.dev/orchestrator/internal/poolstatus"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/test/bench/baseline"
)

const (
	namespaces = 10
	oldDefault = "gvisor-default"
	newDefault = "gvisor-default-v2"
)

func namespaceName(i int) string { return fmt.Sprintf("bench-%d", i%namespaces) }

func poolName(i int) string { return fmt.Sprintf("pool-%04d", i) }

func gvisorDefault(name string) *v1alpha1.SandboxConfig {
	return &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass:   v1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name: "v1", PauseImage: "registry.example/pause@sha256:" + strings.Repeat("a", 64),
				Assets: map[string]map[string]v1alpha1.SandboxAsset{
					"amd64": {"gvisor": {URL: "https://assets.example/gvisor.tar.zstd", SHA256: strings.Repeat("b", 64)}},
				},
			}},
		},
	}
}

func newPool(i int) *v1alpha1.WorkerPool {
	return &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespaceName(i), Name: poolName(i)},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       ptrTo[int32](0),
			WorkerImage:    "registry.example/ateworker-gvisor:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}}, // unpinned
		},
	}
}

// parallel runs f(0..n-1) on c goroutines and returns the first error.
func parallel(ctx context.Context, n, c int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(c, n)) {
		wg.Go(func() {
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// populate creates the namespaces, the old class default and n unpinned
// pools of its class.
func populate(ctx context.Context, c client.Client, n int) error {
	for i := range min(n, namespaces) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceName(i)}}
		if err := c.Create(ctx, ns); err != nil {
			return err
		}
	}
	if err := c.Create(ctx, gvisorDefault(oldDefault)); err != nil {
		return err
	}
	return parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		return c.Create(ctx, newPool(i))
	})
}

// apiFloor is the least the API server must do for a switch of n pools:
// one finalizer patch on the target config, then per pool a claim status
// write, a confirm status write and an event create, the claim and the
// confirm in sequence, pools on `concurrency` goroutines, with a plain
// client and no reads (the pools' resourceVersions come from one list made
// before the clock starts). It moves the pools onto the old default, which
// leaves them as the product's own first switch would: the product's
// start-up pass then has nothing to switch.
func apiFloor(ctx context.Context, c client.Client, concurrency int) (time.Duration, int, error) {
	var pools v1alpha1.WorkerPoolList
	if err := c.List(ctx, &pools); err != nil {
		return 0, 0, err
	}
	reason, message := v1alpha1.ReasonResolved, resolve.ResolvedMessage(oldDefault)
	var cfg v1alpha1.SandboxConfig
	if err := c.Get(ctx, client.ObjectKey{Name: oldDefault}, &cfg); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	base := cfg.DeepCopy()
	controllerutil.AddFinalizer(&cfg, v1alpha1.ProtectionFinalizer)
	if err := c.Patch(ctx, &cfg, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return 0, 0, fmt.Errorf("API floor: finalizer patch: %w", err)
	}
	err := parallel(ctx, len(pools.Items), concurrency, func(ctx context.Context, i int) error {
		pool := &pools.Items[i]
		poolstatus.EnsureClass(&pool.Status, v1alpha1.SandboxClassGVisor).PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: oldDefault}
		poolstatus.SetSummary(pool)
		if err := c.Status().Update(ctx, pool); err != nil {
			return fmt.Errorf("API floor: claim on %s/%s: %w", pool.Namespace, pool.Name, err)
		}
		entry := poolstatus.EnsureClass(&pool.Status, v1alpha1.SandboxClassGVisor)
		entry.ConfigRef, entry.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: oldDefault}, nil
		poolstatus.SetClassCondition(&pool.Status, v1alpha1.SandboxClassGVisor, poolstatus.ClassCondition(true, reason, message, pool.Generation))
		poolstatus.SetSummary(pool)
		if err := c.Status().Update(ctx, pool); err != nil {
			return fmt.Errorf("API floor: confirm on %s/%s: %w", pool.Namespace, pool.Name, err)
		}
		ev := baseline.SwitchEvent(pool, "bench/api-floor", "ate.dev/bench", "BenchAPIFloor",
			fmt.Sprintf("sandbox class %q uses SandboxConfig %q", v1alpha1.SandboxClassGVisor, oldDefault))
		if err := c.Create(ctx, ev); err != nil {
			return fmt.Errorf("API floor: event on %s/%s: %w", pool.Namespace, pool.Name, err)
		}
		return nil
	})
	return time.Since(start), 1 + 3*len(pools.Items), err
}

func ptrTo[T any](v T) *T { return &v }

// provision gives every pool what the product's first pass would: its worker
// Deployment, applied as the product applies it (deployment.Apply, the
// product's field manager), and the Deployment's fields and the observed
// generation in status. The product's start-up pass then finds nothing to
// write, so starting it costs a pool workflow start and a no-op pass, not a
// round of creates.
func provision(ctx context.Context, c client.Client, cs kubernetes.Interface) error {
	var pools v1alpha1.WorkerPoolList
	if err := c.List(ctx, &pools); err != nil {
		return err
	}
	return parallel(ctx, len(pools.Items), 16, func(ctx context.Context, i int) error {
		pool := &pools.Items[i]
		d, err := deployment.Apply(ctx, cs.AppsV1(), pool)
		if err != nil {
			return fmt.Errorf("applying the Deployment of %s/%s: %w", pool.Namespace, pool.Name, err)
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return err
		}
		pool.Status.ObservedGeneration = pool.Generation
		pool.Status.Replicas, pool.Status.ReadyReplicas, pool.Status.Selector = d.Status.Replicas, d.Status.ReadyReplicas, sel.String()
		poolstatus.SetSummary(pool)
		return c.Status().Update(ctx, pool)
	})
}
