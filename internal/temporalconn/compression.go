package temporalconn

import (
	"fmt"

	"go.temporal.io/sdk/client"
)

// ParseCompression is the SDK's setting for a GRPCCompression value.
// Without compression a request (and the answer, which follows the
// request's encoding) costs neither end a gzip pass: on the bench, where
// the processes and Temporal share the machine's CPU, that was about a
// tenth of Temporal's CPU per switch
// (docs/decisions/0016-temporal-transport.md). The error does not name the
// setting: the caller knows which flag it came from.
func ParseCompression(v string) (client.GrpcCompression, error) {
	switch v {
	case "", "none":
		return &client.GrpcCompressionNone{}, nil
	case "gzip":
		return &client.GrpcCompressionGzip{}, nil
	}
	return nil, fmt.Errorf("must be %q or %q, got %q", "none", "gzip", v)
}
