package probes

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/client"
	"k8s.io/client-go/rest"
)

// Process is the HTTP endpoints of the worker or the starter, served one
// way for both and up from the process's start, before it reaches
// Temporal, so that the liveness probe is answered while it waits (the
// controller-runtime managers serve nothing themselves, see
// kube.Manager; a manager's own servers would start only with the
// manager, and the starter builds its manager once connected).
type Process struct {
	ctx        context.Context
	connecting Connecting
	naming     Naming
	attrs      *SearchAttributes
}

// ServeProcess serves, until ctx is done, /healthz and /readyz on healthAddr
// (ready once Connected and the cluster named (NamingCluster), while
// Temporal answers and its namespace has the custom search attributes:
// every start would fail without them, and the log says how to register
// them), and /metrics as m says (ServeMetrics;
// cfg reaches the API server that reviews its requests). "0" or "" serves
// nothing.
func ServeProcess(ctx context.Context, healthAddr string, m Metrics, cfg *rest.Config, namespace string, log *slog.Logger) (*Process, error) {
	p := &Process{ctx: ctx, attrs: &SearchAttributes{Namespace: namespace, Log: log}}
	Serve(ctx, healthAddr, All(p.connecting.Ready, p.naming.Ready, p.attrs.Ready), log)
	if err := ServeMetrics(ctx, m, cfg, log); err != nil {
		return nil, err
	}
	return p, nil
}

// Connected records the Temporal client once the process has reached the
// server, and starts watching the namespace's search attributes.
func (p *Process) Connected(c client.Client) {
	p.connecting.Connected(c)
	go p.attrs.Watch(p.ctx, c)
}

// NamingCluster is told why naming the cluster waits (each failed look's
// error, kube.NamingWait.Report) and nil once it is named.
func (p *Process) NamingCluster(err error) { p.naming.Report(err) }
