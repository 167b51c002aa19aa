package ops

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

const runbooks = "../../docs/runbooks.md"

var inlineCommand = regexp.MustCompile("`(temporal [^`]*)`")

// runbookCLILines are the temporal commands of docs/runbooks.md: the lines
// of its code blocks and its code spans that start with "temporal ".
func runbookCLILines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(runbooks)
	require.NoError(t, err)
	var lines []string
	fenced := false
	for _, l := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(l)
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			if strings.HasPrefix(line, "temporal ") {
				lines = append(lines, line)
			}
			continue
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
			lines = append(lines, m[1])
		}
	}
	return lines
}

// TestRunbookCLILinesRun runs every temporal command of docs/runbooks.md,
// as an operator types it, against the product with a pool that switched
// and a config whose release waits for it: each is accepted by the real
// CLI (its flags exist) and by the server (the IDs, queries, query and
// signal names are the product's).
func TestRunbookCLILinesRun(t *testing.T) {
	lines := runbookCLILines(t)
	require.GreaterOrEqual(t, len(lines), 10, "docs/runbooks.md has few temporal lines: %q", lines)

	env := testenv.Current()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs}).Run(t)
	ns := env.Namespace(t)
	held := producttest.GVisorConfig("runbook-held", true)
	require.NoError(t, env.Kube.Create(ctx, held))
	require.NoError(t, env.Kube.Create(ctx, producttest.Pool(ns, "pool", "")))
	p.WaitForConfig(t, ns, "pool", held.Name, metav1.ConditionTrue)
	require.NoError(t, env.Kube.Delete(ctx, held))
	p.WaitForRelease(t, held.Name, wfapi.OutcomeWaiting)
	// A rollout of it, for the rollout's lines: one of a config in
	// deletion ends at once (Stopped), and a query of an ended workflow
	// still answers.
	require.NoError(t, wfapi.StartRollout(ctx, p.TemporalClient(), p.Scope(), held.Name))

	dir := t.TempDir()
	require.NoError(t, os.Symlink(env.TemporalCLI, filepath.Join(dir, "temporal")))
	// The runbooks' placeholders and shipped names, replaced by the test's.
	// $CLUSTER is the product's cluster, in the shell's environment as the
	// runbooks have the operator set it.
	names := strings.NewReplacer("NS/NAME", ns+"/pool", "CONFIG", held.Name, "ate-orchestrator-$CLUSTER", p.TaskQueue)
	for _, line := range lines {
		cmd := exec.Command("sh", "-c", names.Replace(line))
		cmd.Env = append(os.Environ(),
			"PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "CLUSTER="+string(p.Cluster()),
			"TEMPORAL_ADDRESS="+env.TemporalAddress, "TEMPORAL_NAMESPACE="+env.TemporalNamespace)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "docs/runbooks.md: %s\n%s", line, out)
		t.Logf("ran %s", line)
	}
}
