package argocd_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/deploy/gitops/argocd"
)

// requestLayout is the format of a request annotation's value: UTC, fixed
// width, so that values sort in time order (api/v1alpha1/names.go).
const requestLayout = "2006-01-02T15:04:05.000000000Z"

// requestAnnotations are the API's request annotations, by action name.
var requestAnnotations = map[string]string{
	"pause":        v1alpha1.RolloutPauseAnnotation,
	"resume":       v1alpha1.RolloutResumeAnnotation,
	"promote":      v1alpha1.RolloutPromoteAnnotation,
	"promote-full": v1alpha1.RolloutPromoteFullAnnotation,
	"abort":        v1alpha1.RolloutAbortAnnotation,
	"retry":        v1alpha1.RolloutRetryAnnotation,
}

// actionScripts are argocd-cm.yaml's action.lua, by name.
func actionScripts(t *testing.T) (discovery string, scripts map[string]string) {
	t.Helper()
	_, actions := installed(t)
	scripts = map[string]string{}
	for _, a := range actions.Definitions {
		scripts[a.Name] = a.Lua
	}
	return actions.Discovery, scripts
}

// Each request annotation has its action, and each action.lua sets its
// own annotation with the code every other one has (Argo CD runs each
// alone, so the code is repeated: ./gen writes each from action.lua.tmpl).
func TestActionsAreTheRequests(t *testing.T) {
	_, scripts := actionScripts(t)
	require.ElementsMatch(t, slices.Collect(maps.Keys(requestAnnotations)), slices.Collect(maps.Keys(scripts)))
	annotationLine := regexp.MustCompile(`(?m)^local annotation = "([^"]+)"\n`)
	var shared string
	for name, script := range scripts {
		m := annotationLine.FindStringSubmatchIndex(script)
		require.NotNil(t, m, "%s: no `local annotation = ...` line", name)
		require.Equal(t, requestAnnotations[name], script[m[2]:m[3]], name)
		rest := script[m[1]:]
		if shared == "" {
			shared = rest
		}
		require.Equal(t, shared, rest, "%s's action.lua differs from the others after its annotation line", name)
	}
}

// discoveryTests is Argo CD's action_test.yaml, discovery part.
type discoveryTests struct {
	DiscoveryTests []struct {
		InputPath string `json:"inputPath"`
		Result    []struct {
			Name     string `json:"name"`
			Disabled bool   `json:"disabled"`
		} `json:"result"`
	} `json:"discoveryTests"`
}

// discovery.lua offers each fixture the actions action_test.yaml says,
// every one of them with a displayName; every health fixture is there.
func TestDiscovery(t *testing.T) {
	discovery, _ := actionScripts(t)
	b, err := os.ReadFile(filepath.Join(argocd.Dir, "actions", "action_test.yaml"))
	require.NoError(t, err)
	var tests discoveryTests
	require.NoError(t, yaml.Unmarshal(b, &tests))
	var inputs []string
	for _, tc := range tests.DiscoveryTests {
		inputs = append(inputs, tc.InputPath)
		t.Run(tc.InputPath, func(t *testing.T) {
			got, err := argoLua{now: time.Now}.run(t, discovery, fixture(t, filepath.Join(argocd.Dir, tc.InputPath)))
			require.NoError(t, err)
			offered, ok := got.(map[string]any)
			require.True(t, ok, "discovery.lua returned %v", got)
			want := map[string]bool{}
			for _, a := range tc.Result {
				want[a.Name] = a.Disabled
			}
			disabled := map[string]bool{}
			for name, a := range offered {
				action := a.(map[string]any)
				require.NotEmpty(t, action["displayName"], name)
				disabled[name] = action["disabled"].(bool)
			}
			require.Equal(t, want, disabled)
		})
	}
	var fixtures []string
	for _, tc := range readHealthTests(t).Tests {
		fixtures = append(fixtures, tc.InputPath)
	}
	require.ElementsMatch(t, fixtures, inputs, "action_test.yaml's fixtures are health_test.yaml's")
}

// withAnnotations is the awaiting_approval fixture with these request
// annotations besides the class-default one.
func withAnnotations(t *testing.T, annotations map[string]string) map[string]any {
	t.Helper()
	obj := fixture(t, filepath.Join(argocd.Dir, "testdata", "awaiting_approval.yaml"))
	md := obj["metadata"].(map[string]any)
	if annotations == nil {
		delete(md, "annotations")
		return obj
	}
	all := md["annotations"].(map[string]any)
	for k, v := range annotations {
		all[k] = v
	}
	return obj
}

// Each action sets its annotation, and nothing else, to the first value of
// the current second (clock in UTC, whatever the server's zone) that sorts
// after every request on the config; a request stamped after the clock's
// second fails the action rather than lose to it.
func TestActions(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 800_000_000, time.FixedZone("CET", 3600))
	tests := []struct {
		name        string
		annotations map[string]string // nil: no annotations at all
		want        string
		wantErr     string
	}{
		{name: "no annotations", want: "2026-03-04T04:06:07.000000000Z"},
		{name: "earlier requests", annotations: map[string]string{
			v1alpha1.RolloutPauseAnnotation:  "2026-03-04T04:06:06.999999999Z",
			v1alpha1.RolloutResumeAnnotation: "1772597166", // $(date +%s), as the runbooks write it
		}, want: "2026-03-04T04:06:07.000000000Z"},
		{name: "requests of this second (the CLI's, a click before)", annotations: map[string]string{
			v1alpha1.RolloutPauseAnnotation:   "2026-03-04T04:06:07.000000000Z",
			v1alpha1.RolloutPromoteAnnotation: "2026-03-04T04:06:07.500000001Z",
		}, want: "2026-03-04T04:06:07.500000002Z"},
		{name: "a request stamped later than the clock", annotations: map[string]string{
			v1alpha1.RolloutAbortAnnotation: "2026-03-04T04:06:08.000000000Z",
		}, wantErr: "sandboxconfig.ate.dev/rollout-abort is 2026-03-04T04:06:08.000000000Z, later than Argo CD's clock (2026-03-04T04:06:07.000000000Z)"},
	}
	_, scripts := actionScripts(t)
	for name, script := range scripts {
		for _, tc := range tests {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				in := withAnnotations(t, tc.annotations)
				got, err := argoLua{now: func() time.Time { return now }}.run(t, script, withAnnotations(t, tc.annotations))
				if tc.wantErr != "" {
					require.ErrorContains(t, err, tc.wantErr)
					return
				}
				require.NoError(t, err)
				want := map[string]any{}
				if tc.annotations != nil {
					maps.Copy(want, in["metadata"].(map[string]any)["annotations"].(map[string]any))
				}
				want[requestAnnotations[name]] = tc.want
				out := got.(map[string]any)
				require.Equal(t, want, out["metadata"].(map[string]any)["annotations"])
				// Nothing else changes: Argo CD patches the difference.
				delete(out["metadata"].(map[string]any), "annotations")
				delete(in["metadata"].(map[string]any), "annotations")
				require.Equal(t, in, out)
			})
		}
	}
}

// On the real clock, each action's value has the request format, lies
// within the run's second, and sorts after the one before it, also when
// the actions follow each other within one second.
func TestActionsOnTheClock(t *testing.T) {
	_, scripts := actionScripts(t)
	obj := withAnnotations(t, nil)
	var last string
	for range 3 {
		for _, name := range []string{"pause", "resume", "promote", "promote-full", "abort", "retry"} {
			before := time.Now().UTC().Truncate(time.Second)
			got, err := argoLua{now: time.Now}.run(t, scripts[name], obj)
			require.NoError(t, err, name)
			obj = got.(map[string]any)
			v := obj["metadata"].(map[string]any)["annotations"].(map[string]any)[requestAnnotations[name]].(string)
			at, err := time.Parse(requestLayout, v)
			require.NoError(t, err, "%s wrote %q", name, v)
			require.Equal(t, at.UTC().Format(requestLayout), v, "%s: not the fixed-width UTC form", name)
			require.False(t, at.Before(before), "%s wrote %s, before the run began (%s)", name, v, before)
			require.False(t, at.After(time.Now()), "%s wrote %s, after the run", name, v)
			require.Greater(t, v, last, name)
			last = v
		}
	}
}
