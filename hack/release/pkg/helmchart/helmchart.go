// Package helmchart renders, lints and packages the Helm chart in
// deploy/chart with the Helm Go SDK, with no helm binary and no cluster: the
// deploy tests compare its objects with `kustomize build deploy/`, install
// tests apply them, and the release program packages it with the image
// pinned by digest.
package helmchart

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ReleaseName is the release name Render renders with; the chart's object
// names do not depend on it (one release per cluster), only the label
// app.kubernetes.io/instance does.
const ReleaseName = "ate-orchestrator"

// Namespace is the release namespace Render renders in, as `helm template
// -n ate-system`: the chart puts its objects in the release's namespace.
const Namespace = "ate-system"

// ChartDir is deploy/chart in the source tree this package was built from.
func ChartDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("helmchart: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "deploy", "chart")
}

// Render renders deploy/chart (ChartDir) with values over its defaults, as
// `helm template --include-crds` does: every object of a release, the CRDs
// first in Helm's install order, then the hooks (annotated helm.sh/hook).
func Render(values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderChart(ChartDir(), values)
}

// RenderChart is Render of the chart at path: a directory or a packaged
// .tgz (Package's).
func RenderChart(path string, values map[string]any) ([]*unstructured.Unstructured, error) {
	return RenderChartIn(path, Namespace, values)
}

// RenderChartIn is RenderChart in the release namespace namespace: the
// output of `helm template --include-crds`, the release's manifest, then
// each hook.
func RenderChartIn(path, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	rel, err := render(path, namespace, values)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(rel.Manifest))
	b.WriteString("\n")
	for _, h := range rel.Hooks {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", h.Path, strings.TrimSpace(h.Manifest))
	}
	return Decode(b.String())
}

// Notes renders the chart's NOTES.txt, what `helm install` prints, in the
// release namespace namespace.
func Notes(path, namespace string, values map[string]any) (string, error) {
	rel, err := render(path, namespace, values)
	if err != nil {
		return "", err
	}
	return rel.Info.Notes, nil
}

// render is `helm template` of the chart at path: a client-only dry run of
// an install.
func render(path, namespace string, values map[string]any) (*releasev1.Release, error) {
	ch, err := loader.Load(path)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", path, err)
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(io.Discard, nil)))
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = ReleaseName
	install.Namespace = namespace
	install.Replace = true
	install.IncludeCRDs = true
	r, err := install.RunWithContext(context.Background(), ch, copyValues(values))
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", path, err)
	}
	rel, ok := r.(*releasev1.Release)
	if !ok {
		return nil, fmt.Errorf("install returned a %T, want a *v1.Release", r)
	}
	return rel, nil
}

// Decode splits a YAML stream into objects, skipping empty documents.
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		// Through JSON, for the numbers' types unstructured wants (int64,
		// as kustomize's objects have them).
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		objs = append(objs, u)
	}
}

// IsHook tells whether an object of Render is a Helm hook.
func IsHook(o *unstructured.Unstructured) bool {
	_, ok := o.GetAnnotations()["helm.sh/hook"]
	return ok
}

// Lint runs `helm lint --strict` on the chart at path with values: any
// warning or error is an error.
func Lint(path string, values map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	res := l.Run([]string{path}, copyValues(values))
	errs := res.Errors
	for _, m := range res.Messages {
		if m.Severity > support.InfoSev {
			errs = append(errs, errors.New(m.Error()))
		}
	}
	if action.HasWarningsOrErrors(res) || len(errs) > 0 {
		return fmt.Errorf("helm lint %s: %w", path, errors.Join(errs...))
	}
	return nil
}

// copyValues deep-copies values, as Helm may change the map it is given.
func copyValues(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(v))
	for k, x := range v {
		if m, ok := x.(map[string]any); ok {
			x = copyValues(m)
		}
		out[k] = x
	}
	return out
}
