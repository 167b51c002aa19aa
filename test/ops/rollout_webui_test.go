package ops

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/deploy/monitoring"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
	"ate.dev/orchestrator/internal/wfapi"
)

// docsImagesEnv names the directory (docs/images with `make screenshots`)
// the rollout test also writes the README's pictures into; unset, they stay
// in _out/webui only.
const docsImagesEnv = "ATE_DOCS_IMAGES"

// maxDocsImage bounds a picture the repository keeps.
const maxDocsImage = 200 << 10

// rolloutSeries are the starter's series the dashboard's "Staged rollouts"
// row reads (its panels "Rollout progress" and "Rollout phase and step").
var rolloutSeries = []string{"ate_rollout_phase", "ate_rollout_step", "ate_rollout_moved_pools", "ate_rollout_total_pools"}

// TestWebUIShowsARollout runs a small staged rollout (four pools: a canary
// step awaiting approval, then 50%, then all, no bakes) on the real
// servers, driven as an operator does (spec.rollout.paused, then the
// promote annotation), and:
//   - opens its workflow, the cluster's RolloutWorkflowID, in the Web UI,
//     which shows its type, that it completed, and the rollout's activities
//     in its history;
//   - scrapes the starter's /metrics at each stop of the rollout, and shows
//     the series the dashboard's "Staged rollouts" row reads as a table in
//     the same browser (Grafana itself is not run here: the table is what
//     the row's queries read, not the row).
//
// Its pages are kept in _out/webui/TestWebUIShowsARollout; with
// ATE_DOCS_IMAGES set (`make screenshots`), the README's pictures are
// written there too.
func TestWebUIShowsARollout(t *testing.T) {
	browser := chromium(t)
	out := screenshots(t)
	env := testenv.Current()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	// The starter in this process serves controller-runtime's registry,
	// which its rollout collector is registered in, as starter.Main does.
	metricsAddr := testenv.FreeAddr(t)
	p := (&producttest.Product{Env: env, TaskQueue: testenv.TaskQueue(t), Clientset: cs, StarterMetricsAddr: metricsAddr}).Run(t)
	kube := env.Kube
	ns := env.Namespace(t)

	// The fleet: four pools on "gvisor-v1", p00 the canary. envtest runs
	// no Deployment controller: each pool's Deployment is made Available
	// by hand, as a rollout admits a step only once its pools are.
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-v1", true)))
	pools := []string{"p00", "p01", "p02", "p03"}
	for i, name := range pools {
		wp := producttest.Pool(ns, name, "")
		if i == 0 {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	for _, name := range pools {
		p.WaitForConfig(t, ns, name, "gvisor-v1", metav1.ConditionTrue)
		producttest.SetAvailable(t, kube, ns, name, true)
	}

	// The rollout of "gvisor-v2": the canary, which waits for approval (a
	// stop the test controls, where the metrics can be read without a
	// bake), then 50%, then all. Created paused: another stop.
	const config = "gvisor-v2"
	canary := producttest.Step(1, false, 0)
	canary.Approval = true
	p.CreateAfterOthers(t, producttest.RolloutConfig(config, true, nil, canary, producttest.Step(50, true, 0), producttest.Step(100, true, 0)))

	var samples []rolloutSample
	// sample waits until the starter's /metrics says what status.rollout
	// says (the starter reads it from its cache at scrape time), and keeps
	// that scrape.
	sample := func(want rolloutSample) {
		t.Helper()
		var got rolloutSample
		producttest.Eventually(t, "the starter's /metrics at "+want.Moment, func() (bool, string) {
			fams, err := scrape(metricsAddr)
			if err != nil {
				return false, err.Error()
			}
			got = rolloutSample{Moment: want.Moment, Step: gauge(fams, "ate_rollout_step", config),
				Moved: gauge(fams, "ate_rollout_moved_pools", config), Total: gauge(fams, "ate_rollout_total_pools", config)}
			// Every phase whose series is 1: exactly one, or the
			// comparison fails.
			var phases []string
			for _, m := range fams["ate_rollout_phase"].GetMetric() {
				if labelValue(m, "sandbox_config") == config && m.GetGauge().GetValue() == 1 {
					phases = append(phases, labelValue(m, "phase"))
				}
			}
			got.Phase = strings.Join(phases, ",")
			return got == want, fmt.Sprintf("%+v", got)
		})
		samples = append(samples, got)
	}

	p.WaitForRollout(t, config, "paused before step 1", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutPaused && s.Step == 0
	})
	sample(rolloutSample{Moment: "created paused", Phase: "Paused", Step: 0, Moved: 0, Total: 4})

	producttest.SetPaused(t, kube, config, false)
	p.WaitForRollout(t, config, "step 1 awaits approval", func(s *v1alpha1.RolloutStatus) bool {
		return s.Phase == v1alpha1.RolloutAwaitingApproval && s.Step == 1
	})
	require.Equal(t, []string{ns + "/p00"}, producttest.OnConfig(t, kube, ns, config), "the canary alone moved")
	sample(rolloutSample{Moment: "resumed: the canary moved, step 1 awaits approval", Phase: "AwaitingApproval", Step: 1, Moved: 1, Total: 4})

	producttest.Request(t, kube, config, v1alpha1.RolloutPromoteAnnotation, "2026-12-07T10:00:00.000000000Z")
	st := p.WaitForRollout(t, config, "completed", func(s *v1alpha1.RolloutStatus) bool { return s.Phase == v1alpha1.RolloutCompleted })
	require.Equal(t, []int32{3, 4, 4}, []int32{st.Step, st.MovedPools, st.TotalPools})
	sample(rolloutSample{Moment: "promoted: steps 2 and 3 taken, completed", Phase: "Completed", Step: 3, Moved: 4, Total: 4})

	// The rollout's workflow: the ID the status names is the cluster's.
	id := p.Cluster().RolloutWorkflowID(config)
	require.Equal(t, id, st.WorkflowID)
	desc, err := p.TemporalClient().DescribeWorkflowExecution(ctx, id, "")
	require.NoError(t, err)
	info := desc.GetWorkflowExecutionInfo()
	require.Equal(t, wfapi.RolloutWorkflow, info.GetType().GetName())
	runID := info.GetExecution().GetRunId()

	// What the page must show, from the server's history: the activities
	// of a rollout (it looks at the fleet, admits each step's pools, waits
	// for them, records its status and an event for each change), each as
	// many times as it was scheduled: the Web UI's timeline draws one label
	// per activity.
	scheduled := scheduledActivities(t, p, id, runID)
	require.Equal(t, 3, scheduled["AdmitRolloutStep"], "one admission per step: %v", scheduled)
	activities := []string{"LookAtRollout", "AdmitRolloutStep", "WaitRolloutStep", "RecordRolloutEvent", "SetRolloutStatus"}
	for _, a := range activities {
		require.Positive(t, scheduled[a], "%s in the rollout's history: %v", a, scheduled)
	}
	t.Logf("activities scheduled by the rollout: %v", scheduled)

	b := openBrowser(t, browser, out)
	runPage := fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", env.TemporalUIAddress,
		url.PathEscape(env.TemporalNamespace), url.PathEscape(id), runID)
	actions := []chromedp.Action[chromedp.Void]{
		chromedp.Navigate(runPage),
		// Its type in the summary, and its status badge.
		chromedp.WaitVisible(fmt.Sprintf(`//*[normalize-space(.)=%q]`, wfapi.RolloutWorkflow)),
		chromedp.WaitVisible(`//*[normalize-space(.)="Completed"]`),
	}
	b.step("1-rollout-history", actions...)
	// The timeline's labels are SVG text elements; the page keeps loading
	// the history after the first ones show, hence a poll.
	labels := `(() => { const n = {}; for (const e of document.querySelectorAll("svg text")) { const k = e.textContent.trim(); n[k] = (n[k] || 0) + 1 } return n })()`
	producttest.EventuallyWithin(t, pageBound, "the timeline's activity labels", func() (bool, string) {
		ectx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		shown, err := chromedp.Run(ectx, chromedp.Evaluate[map[string]int](labels))
		if err != nil {
			return false, err.Error()
		}
		for _, a := range activities {
			if shown[a] != scheduled[a] {
				return false, fmt.Sprintf("shown %v, scheduled %v", shown, scheduled)
			}
		}
		return true, ""
	})
	b.shot("1-rollout-history")
	body, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	for _, want := range []string{id, runID, `"phase": "Completed"`, "all 3 steps done"} {
		require.Contains(t, body, want, "the rollout's page")
	}

	// The series behind the dashboard's "Staged rollouts" row: the
	// dashboard's queries of rollout series, read from deploy/monitoring,
	// must read the series the table shows, each one of them, so that the
	// picture keeps saying what the row shows (a panel added on another
	// rollout series fails here until the table shows it too).
	queries, err := monitoring.DashboardQueries()
	require.NoError(t, err)
	var rowQueries []monitoring.Query
	read := map[string]bool{}
	for _, q := range queries {
		if !strings.Contains(q.Expr, "ate_rollout_") {
			continue
		}
		rowQueries = append(rowQueries, q)
		var named []string
		for _, s := range rolloutSeries {
			if strings.Contains(q.Expr, s+"{") {
				named = append(named, s)
				read[s] = true
			}
		}
		require.Len(t, named, 1, "%s: %s reads one of the table's series %v", q.Source, q.Expr, rolloutSeries)
	}
	require.Len(t, read, len(rolloutSeries), "the row reads every series of the table: %v", read)
	page := metricsPage(t, config, samples, rowQueries)
	b.step("2-rollout-metrics",
		chromedp.Navigate("data:text/html;base64,"+base64.StdEncoding.EncodeToString(page)),
		chromedp.WaitVisible(`//td[normalize-space(text())="AwaitingApproval"]`),
		chromedp.WaitVisible(`//td[normalize-space(text())="Completed"]`),
	)
	b.element("rollout-metrics", "#series")

	publish(t, out, map[string]string{
		"1-rollout-history.png": "rollout-webui.png",
		"rollout-metrics.png":   "rollout-metrics.png",
	})
}

// rolloutSample is one scrape of the starter's rollout series for a
// config: the phase whose ate_rollout_phase is 1, and the other gauges.
type rolloutSample struct {
	Moment             string
	Phase              string
	Step, Moved, Total float64
}

// metricsPage is an HTML table of the samples, captioned with what it is
// and the row's queries it stands for.
func metricsPage(t *testing.T, config string, samples []rolloutSample, queries []monitoring.Query) []byte {
	t.Helper()
	sort.SliceStable(queries, func(i, j int) bool { return queries[i].Source < queries[j].Source })
	var buf bytes.Buffer
	require.NoError(t, metricsTemplate.Execute(&buf, map[string]any{
		"Config": config, "Samples": samples, "Queries": queries,
	}))
	return buf.Bytes()
}

var metricsTemplate = template.Must(template.New("metrics").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>ate_rollout_* series</title>
<style>
body { font: 14px/1.4 sans-serif; margin: 16px; color: #1f2933; background: #fff; }
#series { display: inline-block; padding: 12px 16px; border: 1px solid #cbd2d9; }
h1 { font-size: 16px; margin: 0 0 4px; }
p { margin: 0 0 8px; max-width: 900px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #cbd2d9; padding: 4px 10px; text-align: left; }
th { background: #f0f4f8; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 12px; }
ul { margin: 4px 0 0; padding-left: 18px; }
</style></head>
<body><div id="series">
<h1>The series behind the dashboard's "Staged rollouts" row, during one rollout</h1>
<p>Scraped from the starter's <code>/metrics</code> (sandbox_config="{{.Config}}") at each stop of the rollout
TestWebUIShowsARollout runs; not a Grafana rendering: Grafana plots these series over time with the queries below.</p>
<table>
<tr><th>moment</th><th>ate_rollout_phase = 1</th><th>ate_rollout_step</th><th>ate_rollout_moved_pools</th><th>ate_rollout_total_pools</th></tr>
{{range .Samples}}<tr><td>{{.Moment}}</td><td>{{.Phase}}</td><td class="n">{{.Step}}</td><td class="n">{{.Moved}}</td><td class="n">{{.Total}}</td></tr>
{{end}}</table>
<p>The row's queries (deploy/monitoring/dashboard.json):</p>
<ul>{{range .Queries}}<li>{{.Source}}: <code>{{.Expr}}</code></li>{{end}}</ul>
</div></body></html>
`))

// browserSession is a headless Chromium a test drives, keeping a
// screenshot of each step in out.
type browserSession struct {
	t   *testing.T
	ctx context.Context
	out string
}

// openBrowser starts Chromium until the test ends, its window the size of
// the pictures the README keeps (1280x800, small PNGs), with nothing of its
// own going to the network: no component updates, no sync, no background
// requests.
func openBrowser(t *testing.T, browser, out string) *browserSession {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(cancelBrowser)
	// The browser starts with the first action, and ends with the context
	// of that action: start it on the browser's own context, so that the
	// bounded contexts of the steps do not take it down.
	require.NoError(t, chromedp.Do(bctx), "starting %s", browser)
	// The window's size is not the page's (the browser's own frame takes
	// some): the viewport is set, so that every picture is 1280x800.
	require.NoError(t, chromedp.Do(bctx, chromedp.EmulateViewport(1280, 800)))
	return &browserSession{t: t, ctx: bctx, out: out}
}

// shot keeps the viewport as out/name.png.
func (b *browserSession) shot(name string) {
	sctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	require.NoError(b.t, os.WriteFile(filepath.Join(b.out, name+".png"), png, 0o644))
}

// element keeps the element sel matches as out/name.png.
func (b *browserSession) element(name, sel string) {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, pageBound)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.Screenshot(chromedp.CSS(sel)))
	require.NoError(b.t, err, "screenshot of %s", sel)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.out, name+".png"), png, 0o644))
}

// step runs actions within pageBound and keeps the page as it is then
// (name-failed.png when they fail).
func (b *browserSession) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	sctx, cancel := context.WithTimeout(b.ctx, pageBound)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		b.shot(name + "-failed")
		b.t.Fatalf("%s: %v (screenshot in %s)", name, err, b.out)
	}
	b.shot(name)
}

// publish copies the pictures the README shows (out's file to its name in
// docs/images) when ATE_DOCS_IMAGES names that directory, each bounded in
// size: the repository keeps them.
func publish(t *testing.T, out string, pictures map[string]string) {
	t.Helper()
	dir := os.Getenv(docsImagesEnv)
	if dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	for src, dst := range pictures {
		png, err := os.ReadFile(filepath.Join(out, src))
		require.NoError(t, err)
		require.Less(t, len(png), maxDocsImage, "%s: a picture the README shows stays small", src)
		if dir != "" {
			require.NoError(t, os.WriteFile(filepath.Join(dir, dst), png, 0o644))
			t.Logf("wrote %s (%d bytes)", filepath.Join(dir, dst), len(png))
		}
	}
}

// scheduledActivities counts the activity tasks of a workflow run's
// history by activity type.
func scheduledActivities(t *testing.T, p *producttest.Product, id, runID string) map[string]int {
	t.Helper()
	out := map[string]int{}
	it := p.TemporalClient().GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			out[a.GetActivityType().GetName()]++
		}
	}
	return out
}
