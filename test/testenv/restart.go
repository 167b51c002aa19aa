package testenv

import (
	"context"
	"errors"
)

// Crash and restart controls. Each server comes back on the same address
// with the same credentials, so Env's clients (and clients made from
// RestConfig or TemporalClientOptions) reconnect by themselves. Without
// Options.PersistTemporal the Temporal server's state is gone after it stops.

var errNoTemporal = errors.New("testenv: started without Temporal")
var errNoKube = errors.New("testenv: started without Kubernetes")

// StopTemporal stops the Temporal server gracefully.
func (e *Env) StopTemporal() error {
	if e.stack == nil || e.stack.Temporal == nil {
		return errNoTemporal
	}
	return e.stack.Temporal.Stop()
}

// KillTemporal kills the Temporal server at once (SIGKILL), as a crash would.
func (e *Env) KillTemporal() error {
	if e.stack == nil || e.stack.Temporal == nil {
		return errNoTemporal
	}
	return e.stack.Temporal.Kill()
}

// StartTemporal starts a stopped or killed Temporal server and waits until
// it serves.
func (e *Env) StartTemporal(ctx context.Context) error {
	if e.stack == nil || e.stack.Temporal == nil {
		return errNoTemporal
	}
	return e.stack.Temporal.Start(ctx)
}

// RestartTemporal stops and starts the Temporal server.
func (e *Env) RestartTemporal(ctx context.Context) error {
	if err := e.StopTemporal(); err != nil {
		return err
	}
	return e.StartTemporal(ctx)
}

// StopKubeAPIServer stops the kube-apiserver gracefully; etcd keeps its data.
func (e *Env) StopKubeAPIServer() error {
	if e.stack == nil || e.stack.Kube == nil {
		return errNoKube
	}
	return e.stack.Kube.StopAPIServer()
}

// KillKubeAPIServer kills the kube-apiserver at once, as a crash would.
func (e *Env) KillKubeAPIServer() error {
	if e.stack == nil || e.stack.Kube == nil {
		return errNoKube
	}
	return e.stack.Kube.KillAPIServer()
}

// StartKubeAPIServer starts a stopped or killed kube-apiserver and waits
// until it is healthy.
func (e *Env) StartKubeAPIServer() error {
	if e.stack == nil || e.stack.Kube == nil {
		return errNoKube
	}
	return e.stack.Kube.StartAPIServer()
}

// RestartKubeAPIServer stops and starts the kube-apiserver.
func (e *Env) RestartKubeAPIServer() error {
	if err := e.StopKubeAPIServer(); err != nil {
		return err
	}
	return e.StartKubeAPIServer()
}
