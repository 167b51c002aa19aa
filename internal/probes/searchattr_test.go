package probes

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
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

// deniedTemporal is a Temporal client whose credentials may not list the
// namespace's search attributes.
type deniedTemporal struct {
	client.Client
	err error
}

func (d deniedTemporal) OperatorService() operatorservice.OperatorServiceClient {
	return deniedOperator{err: d.err}
}

type deniedOperator struct {
	operatorservice.OperatorServiceClient
	err error
}

func (d deniedOperator) ListSearchAttributes(context.Context, *operatorservice.ListSearchAttributesRequest, ...grpc.CallOption) (*operatorservice.ListSearchAttributesResponse, error) {
	return nil, d.err
}

// A process that may not list the search attributes cannot tell, and is
// not kept out of rotation by a check that could never pass; one whose
// check fails for another reason (Temporal not answering) stays unchecked.
func TestSearchAttributesThatCannotBeListed(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantReady bool
	}{
		{name: "permission denied", err: serviceerror.NewPermissionDenied("no operator rights", ""), wantReady: true},
		{name: "unimplemented", err: serviceerror.NewUnimplemented("no operator service"), wantReady: true},
		{name: "unavailable", err: serviceerror.NewUnavailable("down")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &SearchAttributes{Namespace: "ns"}
			_, _ = s.check(context.Background(), deniedTemporal{err: tt.err})
			err := s.Ready(context.Background())
			if tt.wantReady {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "have not been checked yet")
		})
	}
}
