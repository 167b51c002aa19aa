package probes

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// Before its first check the namespace's search attributes are unknown:
// not ready. The real checks, against a dev server namespace created
// without them, are test/e2e TestMissingSearchAttributesKeepAProcessNotReady.
func TestSearchAttributesAreNotReadyBeforeTheFirstCheck(t *testing.T) {
	var s SearchAttributes
	require.ErrorContains(t, s.Ready(context.Background()), "have not been checked yet")
}

func TestAllSaysWhyTheFirstFailingCheckFails(t *testing.T) {
	ok := func(context.Context) error { return nil }
	tests := []struct {
		name   string
		checks []func(context.Context) error
		want   string
	}{
		{name: "none", checks: nil},
		{name: "all ready", checks: []func(context.Context) error{ok, ok}},
		{name: "one not", checks: []func(context.Context) error{ok, func(context.Context) error { return errors.New("b") }}, want: "b"},
		{name: "the first that is not", checks: []func(context.Context) error{
			func(context.Context) error { return errors.New("a") }, func(context.Context) error { return errors.New("b") }}, want: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := All(tt.checks...)(context.Background())
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.want)
		})
	}
}
