package rollout

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/producttest"
)

// readmeRolloutHeading is the README section whose lines TestReadmeRollout
// runs.
const readmeRolloutHeading = "### Driving a staged rollout with `kubectl ate`"

// TestReadmeRollout (issue 46) runs the README's rollout section, line by
// line, against the real servers: the steps are the ones its text gives,
// each `kubectl ate` line runs the plugin, `kubectl apply -f` creates the
// file's config. After each line the rollout must be where the line's
// comment says, and kstatus (what Flux and helm --wait read) must agree.
// A line added to the section without an expectation here fails.
func TestReadmeRollout(t *testing.T) {
	lines, steps := readmeRollout(t)
	p := producttest.Run(t)
	kube := p.Env.Kube
	ns := p.Env.Namespace(t)
	ctx := context.Background()

	// The README's world: the gvisor default and four pools, counter the canary.
	require.NoError(t, kube.Create(ctx, producttest.GVisorConfig("gvisor-default", true)))
	for _, name := range []string{"counter", "p1", "p2", "p3"} {
		wp := producttest.Pool(ns, name, "")
		if name == "counter" {
			wp.Labels = map[string]string{v1alpha1.CanaryLabel: "true"}
		}
		require.NoError(t, kube.Create(ctx, wp))
	}
	for _, name := range []string{"counter", "p1", "p2", "p3"} {
		p.WaitForConfig(t, ns, name, "gvisor-default", "True")
		producttest.SetAvailable(t, kube, ns, name, true)
	}
	v2 := producttest.RolloutConfig("gvisor-default-v2", false, nil, steps...)
	file := filepath.Join(t.TempDir(), "gvisor-default-v2.yaml")
	v2.APIVersion, v2.Kind = v1alpha1.GroupVersion.String(), "SandboxConfig"
	b, err := yaml.Marshal(v2)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, b, 0o644))

	phase := func(what string, want v1alpha1.RolloutPhase, cond func(*v1alpha1.RolloutStatus) bool) {
		t.Helper()
		p.WaitForRollout(t, "gvisor-default-v2", what, func(s *v1alpha1.RolloutStatus) bool { return s.Phase == want && (cond == nil || cond(s)) })
		kstatusIs(t, p, "gvisor-default-v2", map[v1alpha1.RolloutPhase]kstatus.Status{
			v1alpha1.RolloutAwaitingApproval: kstatus.InProgressStatus, v1alpha1.RolloutBaking: kstatus.InProgressStatus,
			v1alpha1.RolloutAborted: kstatus.FailedStatus, v1alpha1.RolloutCompleted: kstatus.CurrentStatus,
		}[want])
	}
	onV2 := func(n int) {
		t.Helper()
		producttest.Eventually(t, fmt.Sprintf("%d pools on gvisor-default-v2", n), func() (bool, string) {
			on := producttest.OnConfig(t, kube, ns, "gvisor-default-v2")
			return len(on) == n, fmt.Sprint(on)
		})
	}
	for _, line := range lines {
		if line == "kubectl apply -f gvisor-default-v2.yaml" {
			p.CreateAfterOthers(t, v2.DeepCopy())
			phase("step 1 awaiting approval", v1alpha1.RolloutAwaitingApproval, nil)
			onV2(1)
			continue
		}
		args := strings.Fields(strings.TrimPrefix(line, "kubectl ate "))
		require.True(t, strings.HasPrefix(line, "kubectl ate "), "README line %q is neither kubectl apply nor kubectl ate", line)
		for i, a := range args {
			args[i] = strings.NewReplacer("gvisor-default-v2.yaml", file, "ate-demo/", ns+"/").Replace(a)
		}
		out, code := p.KubectlAte(t, args...)
		t.Logf("$ %s  (exit %d)\n%s", line, code, out)
		require.Zero(t, code, "%s: exit %d:\n%s", line, code, out)
		switch cmd := strings.Join(args[:2], " "); {
		case cmd == "rollout preview":
			require.Contains(t, out, ns+"/counter", "the plan names the canary")
		case cmd == "rollout status" && len(args) == 3:
			require.Contains(t, out, "AwaitingApproval")
			require.Contains(t, out, "kubectl ate rollout promote gvisor-default-v2", "it names the command that goes on")
		case cmd == "rollout promote" && args[2] == "--full":
		case cmd == "rollout promote":
			phase("step 2 baking", v1alpha1.RolloutBaking, func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 })
			onV2(2)
		case cmd == "rollout abort":
			phase("aborted", v1alpha1.RolloutAborted, nil)
			onV2(0)
		case cmd == "rollout retry":
			phase("step 2 baking again", v1alpha1.RolloutBaking, func(s *v1alpha1.RolloutStatus) bool { return s.Step == 2 && s.Abort == nil })
			onV2(2)
		case cmd == "rollout status":
			require.Contains(t, out, "Completed")
			phase("completed", v1alpha1.RolloutCompleted, nil)
			onV2(4)
		case cmd == "pool why":
			require.Contains(t, out, "gvisor-default-v2")
		default:
			t.Fatalf("README line %q has no expectation in TestReadmeRollout: add one", line)
		}
	}
}

// readmeRollout reads the README's rollout section: its command lines
// (comments dropped) and the steps its text gives the rollout.
func readmeRollout(t *testing.T) ([]string, []v1alpha1.RolloutStep) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	require.NoError(t, err)
	readme := string(b)
	at := strings.Index(readme, readmeRolloutHeading)
	require.NotEqual(t, -1, at, "README.md has no section %q", readmeRolloutHeading)
	section := readme[at:]
	section = section[:strings.Index(section[len(readmeRolloutHeading):], "\n### ")+len(readmeRolloutHeading)]
	m := regexp.MustCompile("`steps: (\\[.*?\\])`").FindStringSubmatch(section)
	require.NotNil(t, m, "the section gives no `steps: [...]`")
	var steps []v1alpha1.RolloutStep
	require.NoError(t, yaml.Unmarshal([]byte(m[1]), &steps))
	block := section[strings.Index(section, "```sh\n")+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	require.NotEmpty(t, lines)
	return lines, steps
}

// kstatusIs polls until kstatus computes want for the config, as Flux and
// helm --wait would (the config keeper writes the conditions after the
// rollout writes its phase).
func kstatusIs(t *testing.T, p *producttest.Product, config string, want kstatus.Status) {
	t.Helper()
	producttest.Eventually(t, fmt.Sprintf("kstatus %s for SandboxConfig %s", want, config), func() (bool, string) {
		var c v1alpha1.SandboxConfig
		if err := p.Env.Kube.Get(context.Background(), client.ObjectKey{Name: config}, &c); err != nil {
			return false, err.Error()
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		if err != nil {
			return false, err.Error()
		}
		res, err := kstatus.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			return false, err.Error()
		}
		return res.Status == want, fmt.Sprintf("%s: %s", res.Status, res.Message)
	})
}
