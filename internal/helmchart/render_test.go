package helmchart_test

import (
	"testing"

	"ate.dev/orchestrator/internal/helmchart"
)

func TestRenderDefaults(t *testing.T) {
	objs, err := helmchart.Render(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		t.Logf("%s %s/%s hook=%v", o.GetKind(), o.GetNamespace(), o.GetName(), helmchart.IsHook(o))
	}
}
