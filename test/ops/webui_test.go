package ops

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/localstack/servers"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// pageBound bounds each wait for a page to show what it should.
const pageBound = 60 * time.Second

// chromium finds Debian's chromium. CI installs it (.ci/run), so there
// its absence fails the test; elsewhere the test is skipped, saying why.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: .ci/run installs Debian's chromium package")
	}
	t.Skip("skipping the Web UI test: chromium is not installed (apt-get install chromium)")
	return ""
}

// readmeQuery is the list query of the README's "Trace a pool in the Web
// UI": the first code block of that section naming the pool ate-demo/counter.
func readmeQuery(t *testing.T) string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	// The section is "### Trace a pool in the Web UI" under "## Operating it";
	// it ends at the next heading of its level or above.
	_, section, ok := strings.Cut(string(readme), "\n### Trace a pool in the Web UI\n")
	require.True(t, ok, "README.md has no section Trace a pool in the Web UI")
	section, _, _ = strings.Cut(section, "\n## ")
	section, _, _ = strings.Cut(section, "\n### ")
	blocks := strings.Split(section, "```")
	for i := 1; i < len(blocks); i += 2 {
		if q := strings.TrimSpace(blocks[i]); strings.Contains(q, `WorkerPool = "ate-demo/counter"`) {
			return q
		}
	}
	t.Fatalf("no query naming ate-demo/counter in the README's Trace a pool in the Web UI:\n%s", section)
	return ""
}

// screenshots is where a test's pages are kept: _out/ is what CI keeps,
// one directory per test under _out/webui, so that one test's clearing
// does not take the pages of another test of the same run.
func screenshots(t *testing.T) string {
	t.Helper()
	root, err := servers.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "_out", "webui", t.Name())
	// Only this run's pages: a failed page of an earlier run would mislead.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// TestWebUIShowsASwitch follows the README's "Trace a pool in the Web UI"
// in a real browser: after a pool's first switch, the workflow list with the
// README's query lists it; its page shows its summary, and Claim and
// Confirm in its history.
func TestWebUIShowsASwitch(t *testing.T) {
	browser := chromium(t)
	out := screenshots(t)
	p := producttest.Run(t)
	ctx := context.Background()
	ns := p.Env.Namespace(t)
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	require.NoError(t, p.Env.Kube.Create(ctx, producttest.Pool(ns, "counter", "")))
	p.WaitForConfig(t, ns, "counter", "gvisor-default", metav1.ConditionTrue)

	// The README's query, for this test's pool.
	query := strings.ReplaceAll(readmeQuery(t), `"ate-demo/counter"`, fmt.Sprintf("%q", ns+"/counter"))
	require.Contains(t, query, `KubernetesCluster = "local"`, "the README's query names the cluster")
	query = strings.ReplaceAll(query, `KubernetesCluster = "local"`, fmt.Sprintf("KubernetesCluster = %q", testenv.Current().ClusterName))
	id := testenv.Current().ClusterName.SwitchWorkflowID(ns, "counter")
	// Visibility is eventually consistent: wait until the server lists the
	// switch, so that the page is loaded once it can show it.
	producttest.Eventually(t, "the switch listed by the README's query", func() (bool, string) {
		resp, err := p.TemporalClient().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: p.Env.TemporalNamespace, Query: query})
		if err != nil {
			return false, err.Error()
		}
		return len(resp.Executions) == 1, fmt.Sprintf("%d executions", len(resp.Executions))
	})

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1600, 1200))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The browser starts with the first action, and ends with the context
	// of that action: start it on the browser's own context, so that the
	// bounded contexts of the steps below do not take it down.
	require.NoError(t, chromedp.Do(bctx), "starting %s", browser)
	shot := func(name string) {
		sctx, cancel := context.WithTimeout(bctx, 20*time.Second)
		defer cancel()
		png, err := chromedp.Run(sctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Logf("screenshot %s: %v", name, err)
			return
		}
		require.NoError(t, os.WriteFile(filepath.Join(out, name+".png"), png, 0o644))
	}
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(bctx, pageBound)
		defer cancel()
		if err := chromedp.Do(sctx, actions...); err != nil {
			shot(name + "-failed")
			t.Fatalf("%s: %v (screenshot in %s)", name, err, out)
		}
		shot(name)
	}

	list := fmt.Sprintf("%s/namespaces/%s/workflows?query=%s", p.Env.TemporalUIAddress, url.PathEscape(p.Env.TemporalNamespace), url.QueryEscape(query))
	link := fmt.Sprintf(`//a[contains(normalize-space(.), %q)]`, id)
	step("1-workflow-list",
		chromedp.Navigate(list),
		chromedp.WaitVisible(link),
	)
	step("2-switch-history",
		chromedp.Click(link),
		chromedp.WaitVisible(`//*[normalize-space(text())="Claim"]`),
		chromedp.WaitVisible(`//*[normalize-space(text())="Confirm"]`),
	)
	body, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.True(t, strings.Contains(body, "Claim") && strings.Contains(body, "Confirm"), "the switch's page:\n%s", body)

	// Its user metadata: the one-line summary it was started with, which
	// the UI renders (as Markdown, in a frame of its own, with typographic
	// quotes) under Summary.
	summary := fmt.Sprintf(`[%s] %s/counter: gvisor → "gvisor-default"`, p.Cluster(), ns)
	step("3-switch-user-metadata",
		chromedp.Click(`//*[normalize-space(text())="User Metadata"]`),
		chromedp.WaitVisible(`//h3[normalize-space(text())="Summary"]`),
		chromedp.WaitVisible(`//iframe[starts-with(@src, "/render?content=")]`),
	)
	hctx, cancel := context.WithTimeout(bctx, pageBound)
	defer cancel()
	page, err := chromedp.Run(hctx, chromedp.OuterHTML(chromedp.CSS("html")))
	require.NoError(t, err)
	require.Contains(t, rendered(t, page), summary, "the Markdown the User Metadata tab renders")

	// From the pool to its history: the README's link, built from the
	// run the class's status names.
	var wp v1alpha1.WorkerPool
	require.NoError(t, p.Env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "counter"}, &wp))
	last := wp.Status.SandboxClasses[0].LastSwitch
	require.NotNil(t, last, "the class names the switch run that moved it")
	require.Equal(t, id, last.WorkflowID)
	runPage := fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s", p.Env.TemporalUIAddress,
		url.PathEscape(p.Env.TemporalNamespace), url.PathEscape(last.WorkflowID), last.RunID)
	step("4-last-switch-from-the-pool",
		chromedp.Navigate(runPage),
		chromedp.WaitVisible(`//*[normalize-space(text())="Claim"]`),
		chromedp.WaitVisible(`//*[normalize-space(text())="Confirm"]`),
	)
	body, err = chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
	require.NoError(t, err)
	require.Contains(t, body, last.RunID, "the page of the run the pool names")
}

// rendered returns the contents the page's Markdown frames render
// (<iframe src="/render?content=...">).
func rendered(t *testing.T, page string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`src="/render\?content=([^&"]*)`).FindAllStringSubmatch(page, -1) {
		content, err := url.QueryUnescape(m[1])
		require.NoError(t, err)
		out = append(out, content)
	}
	return out
}
