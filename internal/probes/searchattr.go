package probes

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"ate.dev/orchestrator/internal/searchattr"
)

// SearchAttributes is the readiness of a process whose workflows need the
// product's custom search attributes in their Temporal namespace: without
// them every switch and release start fails, so a process that would be
// Ready then is not. It stays not ready, and logs the command that
// registers each missing one, until a check finds them all; it keeps
// checking after that, less often, so one removed later shows too.
type SearchAttributes struct {
	Namespace string
	Log       *slog.Logger
	// Every is the pause between checks while something is missing (or the
	// check failed); default 10 s. Once all are there, 6 times longer.
	Every time.Duration

	mu       sync.Mutex
	problems []searchattr.Problem
	checked  bool
	logged   string
}

// Ready is the readiness check to Serve.
func (s *SearchAttributes) Ready(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.checked:
		return errors.New("the Temporal namespace's search attributes have not been checked yet")
	case len(s.problems) > 0:
		return errors.New(searchattr.Describe(s.problems))
	}
	return nil
}

// Watch checks the namespace until ctx is done. Start it once the client
// has reached Temporal.
func (s *SearchAttributes) Watch(ctx context.Context, c client.Client) {
	every := s.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	for {
		wait := every
		switch all, err := s.check(ctx, c); {
		case err != nil:
			// Temporal is not answering (its own readiness says so): look
			// again soon, so the process is ready soon after it answers.
			wait = min(every, time.Second)
		case all:
			wait = 6 * every
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// check takes one look and reports whether everything is there. A failed
// look (Temporal unreachable, which the connection's readiness reports)
// keeps what the last one found.
func (s *SearchAttributes) check(ctx context.Context, c client.Client) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	problems, err := searchattr.Check(cctx, c, s.Namespace)
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if errors.As(err, &denied) || errors.As(err, &unimplemented) {
		// A server or credentials that do not let the process list them
		// (an API key without operator rights): it cannot tell, and a
		// check that can never pass must not keep it out of rotation.
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.checked {
			s.logger().Warn("cannot check the Temporal namespace's search attributes; assuming they are registered",
				"namespace", s.Namespace, "error", err)
		}
		s.checked, s.problems = true, nil
		return true, nil
	}
	if err != nil {
		s.logger().Debug("could not check the Temporal namespace's search attributes", "namespace", s.Namespace, "error", err)
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked, s.problems = true, problems
	// Said once per state, not on every check.
	if msg := searchattr.Describe(problems); msg != s.logged {
		s.logged = msg
		if len(problems) == 0 {
			s.logger().Info("every custom search attribute is registered", "namespace", s.Namespace)
		}
		for _, p := range problems {
			s.logger().Error("a custom search attribute the product needs is missing: not ready until it exists",
				"namespace", s.Namespace, "searchAttribute", p.Name, "type", p.Type.String(), "have", p.Have, "command", p.Fix())
		}
	}
	return len(problems) == 0, nil
}

func (s *SearchAttributes) logger() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// All is ready when every check is, and otherwise says why the first that
// is not is not.
func All(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, check := range checks {
			if err := check(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}
