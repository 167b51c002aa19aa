package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Only findings whose trace reaches a function count, each vulnerability
// once; imported or required ones do not.
func TestReachable(t *testing.T) {
	in := `{"config":{"scanner_name":"govulncheck"}}
{"finding":{"osv":"GO-2026-0002","fixed_version":"v0.30.0","trace":[{"module":"github.com/google/cel-go","version":"v0.29.2"}]}}
{"finding":{"osv":"GO-2026-0003","fixed_version":"v0.30.0","trace":[{"module":"github.com/google/cel-go","version":"v0.29.2","package":"github.com/google/cel-go/ext"}]}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Serve"},{"module":"ate.dev/orchestrator","function":"main"}]}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"ListenAndServe"}]}}
{"finding":{"osv":"GO-2026-0004","fixed_version":"v0.60.0","trace":[{"module":"golang.org/x/net","version":"v0.59.0","package":"golang.org/x/net/html","function":"Parse"}]}}
`
	got, err := reachable(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, []vuln{
		{id: "GO-2026-0001", module: "stdlib", version: "v1.26.8", fixed: "v1.26.9"},
		{id: "GO-2026-0004", module: "golang.org/x/net", version: "v0.59.0", fixed: "v0.60.0"},
	}, got)

	_, err = reachable(strings.NewReader("{not json"))
	require.Error(t, err)
}
