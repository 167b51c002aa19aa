package producttest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"ate.dev/orchestrator/internal/kubectlate"
)

// KubectlAte runs `kubectl ate args...` in-process against the API server
// of kubeconfig (as --kubeconfig) and returns its standard output and exit
// code; its standard error goes to the test's log. An end-to-end test
// drives a rollout with it as an operator would:
//
//	out, code := producttest.KubectlAte(t, env.KubeconfigPath, "rollout", "promote", "gvisor-v2")
func KubectlAte(t testing.TB, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	// A watch without --timeout would wait for as long as the rollout
	// does: DefaultBound bounds it as every wait of the tests is bounded.
	ctx, cancel := context.WithTimeout(context.Background(), DefaultBound)
	defer cancel()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := kubectlate.Run(ctx, append(append([]string{}, args...), "--kubeconfig", kubeconfig), &out, &errOut)
	t.Logf("kubectl ate %v: exit %d after %s%s", args, code, time.Since(start).Round(time.Millisecond), stderrNote(errOut.String()))
	return out.String(), code
}

// KubectlAte runs `kubectl ate args...` against the product's API server.
func (p *Product) KubectlAte(t testing.TB, args ...string) (string, int) {
	t.Helper()
	return KubectlAte(t, p.Env.KubeconfigPath, args...)
}

func stderrNote(s string) string {
	if s == "" {
		return ""
	}
	return "; stderr:\n" + s
}
