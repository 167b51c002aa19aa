package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/cluster"
)

// podsDefault is the class default the wave with pods present moves to.
const podsDefault = "gvisor-default-pods"

// podsRun is what -pod-replicas measures on the local cluster, the product
// running: every pool scaled from 0 to Replicas at once, until every pool's
// status says so; then a wave to a new class default with the pods present,
// beside the pod-less wave of the same run.
type podsRun struct {
	Replicas int `json:"replicas"`
	Nodes    int `json:"gvisor_nodes"`
	// ReadySeconds: from the scale-up until every pool's status shows
	// Replicas ready at its generation and every pod is Ready.
	ReadySeconds float64 `json:"ready_seconds"`
	PodsReady    int     `json:"pods_ready"`
	// StatusWritesPerPool: the product's writes of workerpools/status from
	// the scale-up until quiet, per pool (the keeper coalescing the
	// Deployment's status churn: at most 3 is the target);
	// DeploymentWritesPerPool the product's Deployment applies.
	StatusWritesPerPool     float64            `json:"status_writes_per_pool"`
	DeploymentWritesPerPool float64            `json:"deployment_writes_per_pool"`
	ScaleRequests           map[string]float64 `json:"scale_requests"`
	// KubeCPUMsPerPool: CPU of every Kubernetes-side process (API server,
	// etcd, the worker, the starter, the controller manager, the scheduler,
	// kwok) from the scale-up until quiet, per pool.
	KubeCPUMsPerPool float64            `json:"kube_cpu_ms_per_pool"`
	ScaleCPUSeconds  map[string]float64 `json:"scale_cpu_seconds"`

	// The wave with the pods present, and its ratios to the pod-less wave
	// of the same run (targets: within 1.1x, a switch touches no pod).
	WaveSeconds                float64 `json:"wave_seconds"`
	WaveKubeCPUMsPerSwitch     float64 `json:"wave_kube_cpu_ms_per_switch"`
	WaveTemporalCPUMsPerSwitch float64 `json:"wave_temporal_cpu_ms_per_switch"`
	WaveWritesPerSwitch        float64 `json:"wave_writes_per_switch"`
	WaveRatioSeconds           float64 `json:"wave_ratio_seconds_to_podless"`
	WaveRatioCPU               float64 `json:"wave_ratio_cpu_to_podless"`
	// PodsReplaced counts pods whose UID changed across the wave (0: a
	// switch restarts no worker).
	PodsReplaced int `json:"pods_replaced_by_wave"`
}

// benchFleet is the simulated nodes for n pools of replicas pods: enough
// gVisor nodes of a kubelet's 110 pods for every pod with room to spare,
// and the default fleet's other nodes.
func benchFleet(n, replicas int) ([]cluster.NodeGroup, int) {
	gvisor := max(3, (n*replicas+99)/100)
	fleet := []cluster.NodeGroup{{Class: v1alpha1.SandboxClassGVisor, Count: gvisor}}
	for _, g := range cluster.DefaultFleet {
		if g.Class != v1alpha1.SandboxClassGVisor {
			fleet = append(fleet, g)
		}
	}
	return fleet, gvisor
}

// measurePods scales every pool to replicas and measures its pods coming
// up, then a wave with them present. r holds the pod-less wave.
func measurePods(ctx context.Context, cfg config, s *stack, w *watcher, wp, sp *process, n int, r *result, log *slog.Logger) (*podsRun, error) {
	run := &podsRun{Replicas: cfg.podReplicas}
	_, run.Nodes = benchFleet(n, cfg.podReplicas)
	var pools v1alpha1.WorkerPoolList
	if err := s.kc.List(ctx, &pools); err != nil {
		return nil, err
	}
	before, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	replicas := int32(cfg.podReplicas)
	if err := parallel(ctx, len(pools.Items), 16, func(ctx context.Context, i int) error {
		p := &pools.Items[i]
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.Replicas = &replicas
		if err := s.kc.Patch(ctx, p, patch); err != nil {
			return fmt.Errorf("scaling %s/%s to %d: %w", p.Namespace, p.Name, replicas, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if err := untilEvery(ctx, time.Second, 15*time.Minute, fmt.Sprintf("every pool's status to show %d ready replicas", replicas), func() (bool, string) {
		ready := w.readyCount(replicas)
		return ready == n, fmt.Sprintf("%d of %d pools", ready, n)
	}); err != nil {
		return nil, err
	}
	run.ReadySeconds = secs(time.Since(start))
	uids, readyPods, err := workerPods(ctx, s.kc)
	if err != nil {
		return nil, err
	}
	run.PodsReady = readyPods
	if readyPods != n*cfg.podReplicas {
		return nil, fmt.Errorf("every pool shows %d ready replicas, but %d worker pods are Ready, not %d", replicas, readyPods, n*cfg.podReplicas)
	}
	if _, err := quiesce(ctx, s, start, wp); err != nil {
		return nil, err
	}
	scaled, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	reqs := productRequests(scaled, before)
	run.ScaleRequests = summarize(reqs).ByVerbResource
	for k, v := range reqs {
		if !isWrite(k.Verb) {
			continue
		}
		switch k.Resource {
		case "workerpools.ate.dev/status":
			run.StatusWritesPerPool += v
		case "deployments.apps":
			run.DeploymentWritesPerPool += v
		}
	}
	run.StatusWritesPerPool = round(run.StatusWritesPerPool/float64(n), 2)
	run.DeploymentWritesPerPool = round(run.DeploymentWritesPerPool/float64(n), 2)
	run.ScaleCPUSeconds = scaled.cpu.since(before.cpu)
	run.KubeCPUMsPerPool = round(1000*kubeSideCPU(run.ScaleCPUSeconds)/float64(n), 1)
	log.Info("pods ready", "replicas", replicas, "seconds", run.ReadySeconds, "statusWritesPerPool", run.StatusWritesPerPool,
		"kubeCPUMsPerPool", run.KubeCPUMsPerPool, "cpu", formatCPU(run.ScaleCPUSeconds))

	// The wave with the pods present.
	waveStart := time.Now()
	if err := s.kc.Create(ctx, gvisorDefault(podsDefault)); err != nil {
		return nil, fmt.Errorf("creating class default %s: %w", podsDefault, err)
	}
	times, err := w.awaitWave(ctx, podsDefault, n, waveStart, timeoutFor(15*time.Minute, n))
	if err != nil {
		return nil, err
	}
	if _, err := quiesce(ctx, s, waveStart, wp); err != nil {
		return nil, err
	}
	after, err := snapshot(ctx, s, wp, sp)
	if err != nil {
		return nil, err
	}
	run.WaveSeconds = times.Seconds
	c := after.cpu.since(scaled.cpu)
	run.WaveKubeCPUMsPerSwitch = round(1000*(c["kube-apiserver"]+c["etcd"]+c["worker"]+c["starter"])/float64(n), 1)
	run.WaveTemporalCPUMsPerSwitch = round(1000*c["temporal"]/float64(n), 1)
	run.WaveWritesPerSwitch = round(summarize(productRequests(after, scaled)).Writes/float64(n), 2)
	if r.Seconds > 0 {
		run.WaveRatioSeconds = round(run.WaveSeconds/r.Seconds, 2)
	}
	if podless := r.KubeCPUMsPerSwitch + r.TemporalCPUMsPerSwitch; podless > 0 {
		run.WaveRatioCPU = round((run.WaveKubeCPUMsPerSwitch+run.WaveTemporalCPUMsPerSwitch)/podless, 2)
	}
	uidsAfter, _, err := workerPods(ctx, s.kc)
	if err != nil {
		return nil, err
	}
	for uid := range uids {
		if !uidsAfter[uid] {
			run.PodsReplaced++
		}
	}
	log.Info("wave with pods", "seconds", run.WaveSeconds, "ratioToPodless", run.WaveRatioSeconds, "cpuRatioToPodless", run.WaveRatioCPU,
		"writesPerSwitch", run.WaveWritesPerSwitch, "podsReplaced", run.PodsReplaced)
	return run, nil
}

// kubeSideCPU sums the CPU seconds of every process but Temporal's and the
// bench's own.
func kubeSideCPU(c map[string]float64) float64 {
	var sum float64
	for name, v := range c {
		if name != "temporal" && name != "bench" {
			sum += v
		}
	}
	return sum
}

// workerPods lists the pools' pods: their UIDs, and how many are Ready.
func workerPods(ctx context.Context, c client.Client) (map[string]bool, int, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.HasLabels{v1alpha1.WorkerPoolLabel}); err != nil {
		return nil, 0, fmt.Errorf("listing the worker pods: %w", err)
	}
	uids, ready := map[string]bool{}, 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		uids[string(p.UID)] = true
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return uids, ready, nil
}
