package main

import (
	"context"
	"errors"
	"sync/atomic"

	"go.temporal.io/sdk/client"

	"ate.dev/orchestrator/internal/probes"
)

// lazyClient answers readiness before and after the Temporal client exists.
type lazyClient struct{ c atomic.Pointer[client.Client] }

func (l *lazyClient) set(c client.Client) { l.c.Store(&c) }

func (l *lazyClient) ready(ctx context.Context) error {
	c := l.c.Load()
	if c == nil {
		return errors.New("not connected to Temporal yet")
	}
	return probes.TemporalReady(*c)(ctx)
}
