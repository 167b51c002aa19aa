package wfapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseReresolve(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  OperatorRequest
		err   string
	}{
		{input: `"ate-demo/counter"`, want: OperatorRequest{Pool: "ate-demo/counter"}},
		{input: ` "ate-demo/*" `, want: OperatorRequest{Namespace: "ate-demo"}},
		{input: `{"pool": "ate-demo/counter", "by": "alice"}`, want: OperatorRequest{Pool: "ate-demo/counter", By: "alice"}},
		{input: `{"namespace": "ate-demo"}`, want: OperatorRequest{Namespace: "ate-demo"}},
		{input: `{"class": "gvisor"}`, want: OperatorRequest{Class: "gvisor"}},
		{input: `{"namespace": "ate-demo", "class": "microvm"}`, want: OperatorRequest{Namespace: "ate-demo", Class: "microvm"}},
		{input: ``, err: "no input"},
		{input: `   `, err: "no input"},
		{input: `42`, err: "neither a JSON string nor a JSON object"},
		{input: `[1]`, err: "neither a JSON string nor a JSON object"},
		{input: `"unterminated`, err: "not valid JSON"},
		{input: `"counter"`, err: `is not "namespace/name"`},
		{input: `"Ate_Demo/counter"`, err: "not a DNS label"},
		{input: `"ate-demo/Counter!"`, err: "not a DNS subdomain"},
		{input: `"/*"`, err: "name what to re-resolve"},
		{input: `{}`, err: "name what to re-resolve"},
		{input: `{"namspace": "ate-demo"}`, err: "unknown field"},
		{input: `{"class": "kata"}`, err: "unknown sandbox class"},
		{input: `{"pool": "ate-demo/counter", "class": "gvisor"}`, err: "takes no"},
		{input: `{"namespace": "ate-demo"} {"class": "gvisor"}`, err: "more than one"},
		{input: `{"namespace": 3}`, err: "not a request"},
	} {
		t.Run(tc.input, func(t *testing.T) {
			got, err := ParseReresolve([]byte(tc.input))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.want.Signal = SignalReresolve
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseRecheck(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  OperatorRequest
		err   string
	}{
		{input: `"gvisor-default"`, want: OperatorRequest{Config: "gvisor-default"}},
		{input: `{"config": "gvisor-default", "by": "bob"}`, want: OperatorRequest{Config: "gvisor-default", By: "bob"}},
		{input: ``, err: "no input"},
		{input: `"Not_A_Name"`, err: "not a DNS subdomain"},
		{input: `{"pool": "a/b"}`, err: "unknown field"},
		{input: `{}`, err: "name the SandboxConfig"},
		{input: `true`, err: "neither"},
	} {
		t.Run(tc.input, func(t *testing.T) {
			got, err := ParseRecheck([]byte(tc.input))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			tc.want.Signal = SignalRecheck
			require.Equal(t, tc.want, got)
		})
	}
}

func TestOperatorWorkflowID(t *testing.T) {
	require.Equal(t, "c1/operator", testCluster.OperatorWorkflowID())
}
