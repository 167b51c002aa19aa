package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// cliDoc is the document whose CLI lines TestCLILines runs.
const cliDoc = "docs/operating-with-the-cli.md"

// cliLines reads the tctl and the temporal lines of cliDoc's code blocks,
// by tool, in the document's order.
func cliLines(t *testing.T) map[string][]string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	doc, err := os.ReadFile(filepath.Join(root, cliDoc))
	require.NoError(t, err)
	lines := map[string][]string{}
	blocks := strings.Split(string(doc), "```")
	for i := 1; i < len(blocks); i += 2 {
		for _, line := range strings.Split(blocks[i], "\n") {
			line = strings.TrimSpace(line)
			tool, _, _ := strings.Cut(line, " ")
			if tool == "tctl" || tool == "temporal" {
				lines[tool] = append(lines[tool], line)
			}
		}
	}
	require.NotEmpty(t, lines["tctl"], "%s has no tctl line", cliDoc)
	require.Equal(t, len(lines["tctl"]), len(lines["temporal"]), "%s: a temporal line beside each tctl line", cliDoc)
	return lines
}

// tctlBinary finds the tctl to run: ATE_TCTL, or the build CI keeps next
// to the repository. A user's clone has neither: the test is skipped, and
// says why; in CI its absence fails the test.
func tctlBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("ATE_TCTL")
	if path == "" {
		root, err := servers.RepoRoot()
		require.NoError(t, err)
		path = filepath.Join(root, "..", "shared", "tools", "tctl", "tctl")
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no tctl binary at %s (set ATE_TCTL): CI runs the tctl lines of %s", path, cliDoc)
		}
		t.Skipf("skipping the tctl lines of %s: no tctl binary at %s (set ATE_TCTL to a tctl build)", cliDoc, path)
	}
	return path
}

// cliShell runs a documented line as an operator types it, in sh, with
// tctl and temporal on PATH and the server in their environment variables.
type cliShell struct {
	p       *producttest.Product
	ns      string
	pathDir string
}

func newCLIShell(t *testing.T, p *producttest.Product, ns string) *cliShell {
	dir := t.TempDir()
	require.NoError(t, os.Symlink(p.Env.TemporalCLI, filepath.Join(dir, "temporal")))
	return &cliShell{p: p, ns: ns, pathDir: dir}
}

func (s *cliShell) addTctl(t *testing.T, bin string) {
	abs, err := filepath.Abs(bin)
	require.NoError(t, err)
	require.NoError(t, os.Symlink(abs, filepath.Join(s.pathDir, "tctl")))
}

// run runs line with the documented names replaced by the test's: the
// namespace ate-demo and the cluster's default task queue
// ate-orchestrator-$CLUSTER; $CLUSTER is the product's cluster, in the
// shell's environment as the document has the operator set it.
func (s *cliShell) run(t *testing.T, line string) string {
	t.Helper()
	line = strings.ReplaceAll(line, "ate-orchestrator-$CLUSTER", s.p.TaskQueue)
	line = strings.ReplaceAll(line, "ate-demo", s.ns)
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(os.Environ(), "CLUSTER="+string(s.p.Cluster()),
		"PATH="+s.pathDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TEMPORAL_CLI_ADDRESS="+s.p.Env.TemporalAddress, "TEMPORAL_CLI_NAMESPACE="+s.p.Env.TemporalNamespace,
		"TEMPORAL_ADDRESS="+s.p.Env.TemporalAddress, "TEMPORAL_NAMESPACE="+s.p.Env.TemporalNamespace,
	)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", line, out)
	t.Logf("ran %s", line)
	return string(out)
}

// The kinds of documented lines, in the order TestCLILines runs them: each
// starts from the state the one before left.
var cliKinds = []string{"pool", "namespace", "class", "direct", "switch query", "recheck", "operator query", "operator history", "pool history", "fleet",
	"rollout plan", "rollout resume", "rollout pause"}

func cliKind(t *testing.T, line string) string {
	t.Helper()
	switch {
	case strings.Contains(line, "/rollout") && strings.Contains(line, " query "):
		return "rollout plan"
	case strings.Contains(line, "/rollout") && strings.Contains(line, "--name resume"):
		return "rollout resume"
	case strings.Contains(line, "/rollout") && strings.Contains(line, "--name pause"):
		return "rollout pause"
	case strings.Contains(line, " list ") && strings.Contains(line, "ToConfig"):
		return "fleet"
	case strings.Contains(line, " list ") && strings.Contains(line, "WorkerPool"):
		return "pool history"
	case strings.Contains(line, "/operator") && strings.Contains(line, "reresolve"):
		switch {
		case strings.Contains(line, `"class"`):
			return "class"
		case strings.Contains(line, "/*"):
			return "namespace"
		default:
			return "pool"
		}
	case strings.Contains(line, "/operator") && strings.Contains(line, "recheck"):
		return "recheck"
	case strings.Contains(line, "/operator") && strings.Contains(line, " query "):
		return "operator query"
	case strings.Contains(line, "/operator") && strings.Contains(line, " show "):
		return "operator history"
	case strings.Contains(line, "/switch") && strings.Contains(line, " query "):
		return "switch query"
	case strings.Contains(line, "/switch") && (strings.Contains(line, "workflow start ") || strings.Contains(line, "signal-with-start")):
		return "direct"
	}
	t.Fatalf("%s: no check for the line %q: teach TestCLILines what it does", cliDoc, line)
	return ""
}

// TestCLILines runs every tctl and temporal line of
// docs/operating-with-the-cli.md against the stack with the starter stopped,
// so that nothing but the line re-resolves an idle pool, and checks what each
// did: one pool, a namespace's pools and a class's pools re-resolved through
// the operator workflow, a switch started directly, a release that looked
// again, the queries' answers, the operator workflow's history. Then bad
// inputs: recorded, ignored, the operator workflow still running.
func TestCLILines(t *testing.T) {
	lines := cliLines(t)
	p := producttest.Run(t)
	ctx := context.Background()
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	tc := p.TemporalClient()
	operatorID := p.Cluster().OperatorWorkflowID()

	// Two pools following the gvisor default; a third holds a config in
	// deletion, whose release waits.
	const a, b, held = "gvisor-default", "gvisor-next", "gvisor-default-v2"
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(a, true)))
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig(held, false)))
	p.CreateAfterOthers(t, producttest.GVisorConfig(b, false))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "counter", "")))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "other", "")))
	require.NoError(t, kube.Create(ctx, producttest.Pool(ns, "holder", held)))
	p.WaitForConfig(t, ns, "counter", a, metav1.ConditionTrue)
	p.WaitForConfig(t, ns, "other", a, metav1.ConditionTrue)
	p.WaitForConfig(t, ns, "holder", held, metav1.ConditionTrue)
	require.NoError(t, kube.Delete(ctx, producttest.GVisorConfig(held, false)))
	p.WaitForRelease(t, held, wfapi.OutcomeWaiting)

	// The leading starter started the operator workflow; it keeps running
	// once the starter is stopped.
	operatorRunning := func() (bool, string) {
		d, err := tc.DescribeWorkflowExecution(ctx, operatorID, "")
		if err != nil {
			return false, err.Error()
		}
		st := d.WorkflowExecutionInfo.Status
		return st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
	}
	producttest.Eventually(t, "the operator workflow to run", operatorRunning)
	p.Stop(t)
	p.NoStarter = true
	p.Start(t)
	t.Cleanup(func() {
		// The starter back before the cluster is emptied: it wakes the
		// release of the config in deletion once its holder is gone.
		p.Stop(t)
		p.NoStarter = false
		p.Start(t)
	})

	// Each change of the class default is seen by nobody until a line
	// re-resolves a pool.
	target, previous := a, b
	flip := func() {
		target, previous = previous, target
		producttest.SetDefault(t, kube, b, target == b)
	}
	switchesClosed := func(names ...string) {
		for _, name := range names {
			producttest.Eventually(t, "the switch of "+name+" to end", func() (bool, string) {
				d, err := tc.DescribeWorkflowExecution(ctx, testenv.Current().ClusterName.SwitchWorkflowID(ns, name), "")
				if err != nil {
					return false, err.Error()
				}
				st := d.WorkflowExecutionInfo.Status
				return st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, st.String()
			})
		}
	}
	operatorState := func() wfapi.OperatorState {
		v, err := tc.QueryWorkflow(ctx, operatorID, "", wfapi.QueryState)
		require.NoError(t, err)
		var s wfapi.OperatorState
		require.NoError(t, v.Get(&s))
		return s
	}
	const rolling = "gvisor-default-v3"
	rolloutPlan := func() wfapi.RolloutPlan {
		v, err := tc.QueryWorkflow(ctx, p.Cluster().RolloutWorkflowID(rolling), "", wfapi.QueryPlan)
		require.NoError(t, err)
		var plan wfapi.RolloutPlan
		require.NoError(t, v.Get(&plan))
		return plan
	}
	releaseChecks := func() int {
		v, err := tc.QueryWorkflow(ctx, testenv.Current().ClusterName.ReleaseWorkflowID(held), "", wfapi.QueryState)
		require.NoError(t, err)
		var s wfapi.ReleaseState
		require.NoError(t, v.Get(&s))
		return s.Checks
	}

	check := map[string]func(t *testing.T, sh *cliShell, line string){
		"pool": func(t *testing.T, sh *cliShell, line string) {
			flip()
			sh.run(t, line)
			p.WaitForConfig(t, ns, "counter", target, metav1.ConditionTrue)
			require.Equal(t, previous, producttest.RefName(p.Get(t, ns, "other").Status.SandboxClasses[0].ConfigRef),
				"one pool's request re-resolves that pool only")
		},
		"namespace": func(t *testing.T, sh *cliShell, line string) {
			sh.run(t, line)
			p.WaitForConfig(t, ns, "other", target, metav1.ConditionTrue)
		},
		"class": func(t *testing.T, sh *cliShell, line string) {
			flip()
			sh.run(t, line)
			p.WaitForConfig(t, ns, "counter", target, metav1.ConditionTrue)
			p.WaitForConfig(t, ns, "other", target, metav1.ConditionTrue)
		},
		"direct": func(t *testing.T, sh *cliShell, line string) {
			flip()
			sh.run(t, line)
			p.WaitForConfig(t, ns, "counter", target, metav1.ConditionTrue)
			// Not a documented line: bring the other pool along, so the
			// next tool starts from every pool on one config.
			require.NoError(t, wfapi.Reresolve(ctx, tc, wfapi.ScopeOf(testenv.Current().ClusterName, p.TaskQueue), ns, "other", nil))
			p.WaitForConfig(t, ns, "other", target, metav1.ConditionTrue)
		},
		"switch query": func(t *testing.T, sh *cliShell, line string) {
			out := sh.run(t, line)
			require.Contains(t, out, fmt.Sprintf("%q", target), out)
			require.Contains(t, out, wfapi.OutcomeConfirmed, out)
		},
		"recheck": func(t *testing.T, sh *cliShell, line string) {
			before := releaseChecks()
			sh.run(t, line)
			producttest.Eventually(t, "the release to look again", func() (bool, string) {
				n := releaseChecks()
				return n > before, fmt.Sprintf("checks %d, was %d", n, before)
			})
		},
		"operator query": func(t *testing.T, sh *cliShell, line string) {
			out := sh.run(t, line)
			require.Contains(t, out, ns+"/counter", out)
			require.Contains(t, out, `"signalled"`, out)
		},
		"pool history": func(t *testing.T, sh *cliShell, line string) {
			// Visibility is eventually consistent: look until the pool's
			// switches are listed.
			counterID, otherID := p.Cluster().SwitchWorkflowID(ns, "counter"), p.Cluster().SwitchWorkflowID(ns, "other")
			producttest.Eventually(t, "the pool's switches listed", func() (bool, string) {
				out := sh.run(t, line)
				return strings.Contains(out, counterID) && !strings.Contains(out, otherID), out
			})
		},
		"fleet": func(t *testing.T, sh *cliShell, line string) {
			holderID := p.Cluster().SwitchWorkflowID(ns, "holder")
			producttest.Eventually(t, "the switches to "+held+" listed", func() (bool, string) {
				out := sh.run(t, line)
				return strings.Contains(out, holderID) && !strings.Contains(out, p.Cluster().SwitchWorkflowID(ns, "counter")), out
			})
		},
		"rollout plan": func(t *testing.T, sh *cliShell, line string) {
			// The rollout of a new default, created paused: the starter is
			// stopped, so the test starts its workflow as the starter would.
			// Each tool's lines begin from a new one: it is deleted after
			// the last rollout line.
			p.CreateAfterOthers(t, producttest.RolloutConfig(rolling, true, nil, producttest.Step(1, false, 0), producttest.Step(100, true, 0)))
			require.NoError(t, wfapi.StartRollout(ctx, tc, p.Scope(), rolling))
			p.WaitForRollout(t, rolling, "paused", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutPaused })
			out := sh.run(t, line)
			require.Contains(t, out, ns+"/counter", out)
			require.Contains(t, out, `"paused"`, out)
		},
		"rollout resume": func(t *testing.T, sh *cliShell, line string) {
			sh.run(t, line)
			producttest.Eventually(t, "the rollout to resume", func() (bool, string) {
				plan := rolloutPlan()
				return !plan.Paused && plan.Step == 1, fmt.Sprintf("%+v", plan)
			})
		},
		"rollout pause": func(t *testing.T, sh *cliShell, line string) {
			sh.run(t, line)
			producttest.Eventually(t, "the rollout to pause", func() (bool, string) {
				plan := rolloutPlan()
				return plan.Paused, fmt.Sprintf("%+v", plan)
			})
			// Done with this tool's rollout: the class default is b or a
			// again for the next tool's lines.
			require.NoError(t, tc.TerminateWorkflow(ctx, p.Cluster().RolloutWorkflowID(rolling), "", "the CLI lines are done"))
			require.NoError(t, kube.Delete(ctx, producttest.GVisorConfig(rolling, true)))
			p.WaitGone(t, producttest.GVisorConfig(rolling, true))
		},
		"operator history": func(t *testing.T, sh *cliShell, line string) {
			out := sh.run(t, line)
			for _, want := range []string{"reresolve", "recheck", "OperatorReresolve", "OperatorRecheck", ns + "/counter"} {
				require.Contains(t, out, want, "the history records each request")
			}
		},
	}
	runLines := func(t *testing.T, sh *cliShell, lines []string) {
		byKind := map[string][]string{}
		for _, line := range lines {
			kind := cliKind(t, line)
			byKind[kind] = append(byKind[kind], line)
		}
		for _, kind := range cliKinds {
			require.NotEmpty(t, byKind[kind], "%s has no line of kind %q", cliDoc, kind)
			for _, line := range byKind[kind] {
				switchesClosed("counter", "other")
				check[kind](t, sh, line)
			}
		}
	}

	sh := newCLIShell(t, p, ns)
	t.Run("temporal", func(t *testing.T) { runLines(t, sh, lines["temporal"]) })
	t.Run("tctl", func(t *testing.T) {
		sh.addTctl(t, tctlBinary(t))
		runLines(t, sh, lines["tctl"])
	})

	// Bad inputs, from the CLI: recorded and ignored; an unknown pool is
	// recorded as such; the workflow keeps running and takes the next one.
	t.Run("bad input", func(t *testing.T) {
		before := operatorState().Received
		signal := fmt.Sprintf("temporal workflow signal --workflow-id %s --name ", operatorID)
		for _, bad := range []string{
			"reresolve",
			"reresolve --input 42",
			`reresolve --input '{"namspace": "ate-demo"}'`,
			`reresolve --input '{"class": "kata"}'`,
			`recheck --input '"Not_A_Config"'`,
			`reresolve --input '"ate-demo/no-such-pool"'`,
		} {
			sh.run(t, signal+bad)
		}
		var s wfapi.OperatorState
		producttest.Eventually(t, "the bad inputs recorded", func() (bool, string) {
			s = operatorState()
			return s.Received == before+6 && len(s.Pending) == 0, fmt.Sprintf("%+v", s)
		})
		recent := s.Recent[len(s.Recent)-6:]
		for _, r := range recent[:5] {
			require.NotEmpty(t, r.Rejected, "%+v", r)
		}
		require.Equal(t, "no WorkerPool "+ns+"/no-such-pool", recent[5].Result.Unknown)
		ok, status := operatorRunning()
		require.True(t, ok, status)
		switchesClosed("counter", "other")
		flip()
		sh.run(t, signal+`reresolve --input '"ate-demo/*"'`)
		p.WaitForConfig(t, ns, "counter", target, metav1.ConditionTrue)
		p.WaitForConfig(t, ns, "other", target, metav1.ConditionTrue)
	})
}
