package crashtest

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// waitProbes polls until both probes of a process answer as wanted.
func waitProbes(t *testing.T, p *process, healthz, readyz int) {
	t.Helper()
	eventually(t, stepBound, fmt.Sprintf("%s /healthz %d and /readyz %d", p.role, healthz, readyz), func() (bool, string) {
		if p.proc.Exited() {
			t.Fatalf("the %s exited: %v\n%s", p.role, p.proc.Err(), Tail(p.LogText(), 20))
		}
		h, r := p.probe("/healthz"), p.probe("/readyz")
		return h == healthz && r == readyz, fmt.Sprintf("/healthz %d, /readyz %d", h, r)
	})
}

// TestTemporalUnreachable: the worker and the starter start while the
// Temporal server is down: they keep running, say they are alive but not
// ready, and wait; once it is up they are ready and catch up with what
// changed meanwhile. Later the server goes away again: both turn not
// ready, stay alive, and catch up with the changes made while it was gone
// once it is back.
func TestTemporalUnreachable(t *testing.T) {
	isolate(t)
	env := testenv.Current()
	ctx := context.Background()
	kube := env.Kube
	chk := startChecker(t)
	ns := env.Namespace(t)
	prefix := "tu" + shortID()
	tq := testenv.TaskQueue(t)
	scope := Scope{Namespaces: []string{ns}, Configs: prefixed(prefix), TaskQueues: []string{tq}}
	t.Cleanup(func() { require.NoError(t, env.StartTemporal(context.Background())) }) // a no-op once it runs

	require.NoError(t, env.StopTemporal())
	w := newProcess(t, "worker", tq, testenv.FreeAddr(t))
	s := newProcess(t, "starter", tq, testenv.FreeAddr(t))
	w.Start()
	s.Start()
	waitProbes(t, w, http.StatusOK, http.StatusServiceUnavailable)
	waitProbes(t, s, http.StatusOK, http.StatusServiceUnavailable)
	require.NoError(t, kube.Create(ctx, gvisorConfig(prefix+"-d1", true)))
	require.NoError(t, kube.Create(ctx, microvmConfig(prefix+"-m1", true)))
	require.NoError(t, kube.Create(ctx, newPool(ns, "a", v1alpha1.SandboxClassGVisor, "")))
	require.NoError(t, kube.Create(ctx, newPool(ns, "b", v1alpha1.SandboxClassMicroVM, "")))

	require.NoError(t, env.StartTemporal(ctx))
	waitProbes(t, w, http.StatusOK, http.StatusOK)
	waitProbes(t, s, http.StatusOK, http.StatusOK)
	settle(t, chk, scope)

	// Lost later.
	require.NoError(t, env.StopTemporal())
	waitProbes(t, w, http.StatusOK, http.StatusServiceUnavailable)
	waitProbes(t, s, http.StatusOK, http.StatusServiceUnavailable)
	createAfterOthers(t, kube, gvisorConfig(prefix+"-d2", true))
	require.NoError(t, kube.Create(ctx, newPool(ns, "c", v1alpha1.SandboxClassGVisor, "")))
	require.NoError(t, kube.Delete(ctx, microvmConfig(prefix+"-m1", true)))
	require.NoError(t, env.StartTemporal(ctx))
	waitProbes(t, w, http.StatusOK, http.StatusOK)
	waitProbes(t, s, http.StatusOK, http.StatusOK)
	settle(t, chk, scope)
	require.Equal(t, 2, onConfig(t, ns, prefix+"-d2"))
	// Alive throughout: waitProbes fails on an exit at every poll, and
	// both still run after catching up.
	require.True(t, w.Running(), "the worker keeps running")
	require.True(t, s.Running(), "the starter keeps running")
	requireSound(t, chk, scope)
}
