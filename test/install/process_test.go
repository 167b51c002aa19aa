package install

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/localstack/procs"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// process is the worker or the starter of an install run on this host as
// its pod would run it: the environment of its installed Deployment's
// container (its env values and the installed ConfigMap of its envFrom)
// and its ServiceAccount's rights. Only what a pod has and a host process
// lacks is replaced: the API server (a kubeconfig impersonating the
// ServiceAccount, for the in-cluster config), the Lease namespace (the
// pod's), Temporal's address and namespace (the test's server), and the
// listen addresses (free ports, as two processes share the host).
type process struct {
	role       string
	proc       *procs.Process
	log        string
	healthAddr string
	ready      string // the readiness probe's path
}

// startProcess starts role ("worker" or "starter") of the installed
// Deployment ate-orchestrator-<role>, from bin.
func startProcess(t testing.TB, role string, bins *binaries, objs []*unstructured.Unstructured) *process {
	t.Helper()
	env := testenv.Current()
	ctx := context.Background()
	name := "ate-orchestrator-" + role
	var d appsv1.Deployment
	require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: name}, &d), "the installed Deployment")
	// The rendered one is the installed one.
	var rendered appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "Deployment", name).Object, &rendered))
	require.Equal(t, rendered.Spec.Template.Spec.Containers[0].Env, d.Spec.Template.Spec.Containers[0].Env)
	pod := d.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	vars := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			var cm corev1.ConfigMap
			err := env.Kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: from.ConfigMapRef.Name}, &cm)
			if apierrors.IsNotFound(err) && from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
				continue
			}
			require.NoError(t, err, "the ConfigMap %s of %s's envFrom", from.ConfigMapRef.Name, name)
			for k, v := range cm.Data {
				vars[from.Prefix+k] = v
			}
		case from.SecretRef != nil:
			var s corev1.Secret
			err := env.Kube.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: from.SecretRef.Name}, &s)
			if apierrors.IsNotFound(err) && from.SecretRef.Optional != nil && *from.SecretRef.Optional {
				continue // no Temporal API key: the test's server wants none
			}
			require.NoError(t, err, "the Secret %s of %s's envFrom", from.SecretRef.Name, name)
			for k, v := range s.Data {
				vars[from.Prefix+k] = string(v)
			}
		}
	}
	for _, e := range c.Env {
		require.Nil(t, e.ValueFrom, "%s: env %s from a source this test does not resolve", name, e.Name)
		vars[e.Name] = e.Value
	}
	for _, k := range []string{"TEMPORAL_TASK_QUEUE", "ATE_CLUSTER_NAME"} {
		// Empty in the shipped configuration: the cluster is named by its
		// kube-system namespace's UID, and its task queue is its own.
		_, ok := vars[k]
		require.True(t, ok, "the installed configuration has %s for the operator to set", k)
	}

	p := &process{role: role}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil {
		p.ready = c.ReadinessProbe.HTTPGet.Path
	}
	require.NotEmpty(t, p.ready, "%s has an HTTP readiness probe", name)
	p.healthAddr = testenv.FreeAddr(t)
	vars["KUBECONFIG"] = impersonating(t, pod.ServiceAccountName)
	vars["LEADER_ELECTION_NAMESPACE"] = d.Namespace
	vars["TEMPORAL_ADDRESS"] = env.TemporalAddress
	vars["TEMPORAL_NAMESPACE"] = env.TemporalNamespace
	vars["HEALTH_PROBE_BIND_ADDRESS"] = p.healthAddr
	vars["METRICS_BIND_ADDRESS"] = testenv.FreeAddr(t)

	// The host's environment without anything that configures the
	// processes: only what the pod would have.
	var list []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "TEMPORAL_") || strings.HasPrefix(k, "ATE_") || strings.HasPrefix(k, "OTEL_") ||
			strings.HasPrefix(k, "LEADER_") || strings.HasPrefix(k, "METRICS_") || strings.HasPrefix(k, "LOG_") || k == "KUBECONFIG" ||
			k == "HEALTH_PROBE_BIND_ADDRESS" || k == "XDG_CONFIG_HOME" || k == "HOME" {
			continue
		}
		list = append(list, kv)
	}
	// No profile file of the host's temporal CLI: the pod has none.
	list = append(list, "HOME="+t.TempDir())
	for k, v := range vars {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)

	bin := map[string]string{"worker": bins.worker, "starter": bins.starter}[role]
	require.Equal(t, "/usr/local/bin/"+role, c.Command[0], "%s's command", name)
	dir := filepath.Join(env.Dir, "install", testenv.UniqueName(t))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	p.log = filepath.Join(dir, role+".log")
	f, err := os.Create(p.log)
	require.NoError(t, err)
	defer f.Close()
	cmd := exec.Command(bin, c.Args...)
	cmd.Env = list
	cmd.Stdout, cmd.Stderr = f, f
	p.proc, err = procs.Start(role, cmd)
	require.NoError(t, err)
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("%s log: %s", role, p.log)
		}
	})
	// Ready as the kubelet's readiness probe sees it: the process reaches
	// Temporal, whose namespace has the search attributes.
	producttest.Eventually(t, fmt.Sprintf("the %s's %s", role, p.ready), func() (bool, string) {
		if p.proc.Exited() {
			t.Fatalf("the %s exited: %v\n%s", role, p.proc.Err(), p.logTail())
		}
		code := p.probe()
		return code == http.StatusOK, fmt.Sprintf("HTTP %d", code)
	})
	return p
}

func (p *process) probe() int {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + p.healthAddr + p.ready)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stop stops the process as the kubelet does (SIGTERM), within the pods'
// grace period.
func (p *process) stop(t testing.TB) {
	if p.proc != nil && !p.proc.Exited() {
		if err := p.proc.Stop(30 * time.Second); err != nil {
			t.Logf("stopping the %s: %v", p.role, err)
		}
	}
}

func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// orchestrator is the worker and the starter of one install.
type orchestrator struct{ worker, starter *process }

func startOrchestrator(t testing.TB, bins *binaries, objs []*unstructured.Unstructured) *orchestrator {
	t.Helper()
	return &orchestrator{worker: startProcess(t, "worker", bins, objs), starter: startProcess(t, "starter", bins, objs)}
}

func (o *orchestrator) stop(t testing.TB) {
	o.starter.stop(t)
	o.worker.stop(t)
}
