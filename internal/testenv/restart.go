package testenv

import (
	"context"
	"errors"

	"ate.dev/orchestrator/internal/localstack"
	"ate.dev/orchestrator/internal/localstack/servers"
)

// Crash and restart controls. Each server comes back on the same address
// with the same credentials, so Env's clients (and clients made from
// RestConfig or TemporalClientOptions) reconnect by themselves. Without
// Options.PersistTemporal the Temporal server's state is gone after it stops.

func (e *Env) onTemporal(f func(localstack.TemporalServer) error) error {
	if e.stack == nil || e.stack.Temporal == nil {
		return errors.New("testenv: started without Temporal")
	}
	return f(e.stack.Temporal)
}

func (e *Env) onKube(f func(*servers.Kube) error) error {
	if e.stack == nil || e.stack.Kube == nil {
		return errors.New("testenv: started without Kubernetes")
	}
	return f(e.stack.Kube)
}

// StopTemporal stops the Temporal server gracefully.
func (e *Env) StopTemporal() error { return e.onTemporal(localstack.TemporalServer.Stop) }

// KillTemporal kills the Temporal server at once (SIGKILL), as a crash would.
func (e *Env) KillTemporal() error { return e.onTemporal(localstack.TemporalServer.Kill) }

// StartTemporal starts a stopped or killed Temporal server and waits until
// it serves.
func (e *Env) StartTemporal(ctx context.Context) error {
	return e.onTemporal(func(t localstack.TemporalServer) error {
		if err := t.Launch(); err != nil {
			return err
		}
		return t.WaitReady(ctx)
	})
}

// RestartTemporal stops and starts the Temporal server.
func (e *Env) RestartTemporal(ctx context.Context) error {
	if err := e.StopTemporal(); err != nil {
		return err
	}
	return e.StartTemporal(ctx)
}

// StopKubeAPIServer stops the kube-apiserver gracefully; etcd keeps its data.
func (e *Env) StopKubeAPIServer() error { return e.onKube((*servers.Kube).StopAPIServer) }

// KillKubeAPIServer kills the kube-apiserver at once, as a crash would.
func (e *Env) KillKubeAPIServer() error { return e.onKube((*servers.Kube).KillAPIServer) }

// StartKubeAPIServer starts a stopped or killed kube-apiserver and waits
// until it is healthy.
func (e *Env) StartKubeAPIServer() error { return e.onKube((*servers.Kube).StartAPIServer) }

// RestartKubeAPIServer stops and starts the kube-apiserver.
func (e *Env) RestartKubeAPIServer() error {
	if err := e.StopKubeAPIServer(); err != nil {
		return err
	}
	return e.StartKubeAPIServer()
}
