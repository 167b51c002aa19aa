package monitoring

import (
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/stretchr/testify/require"
)

// TestDashboardIsAGrafanaDashboard decodes dashboard.json strictly into the
// dashboard schema of Grafana's foundation SDK (generated from Grafana's own
// schemas, panel and query types registered): no unknown field, no field of
// the wrong type, no required one missing.
func TestDashboardIsAGrafanaDashboard(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	var d dashboard.Dashboard //nolint:staticcheck // SA1019: dashboard.json is a v1 dashboard, which dashboardv2 does not read
	err := d.UnmarshalJSONStrict(Dashboard)
	// It returns its error list typed, empty or not.
	if errs, ok := err.(cog.BuildErrors); ok && len(errs) == 0 { //nolint:errorlint // the function's own type, never wrapped
		err = nil
	}
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	require.Equal(t, "ATE orchestrator", *d.Title)
}
