package helmchart

import (
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/stretchr/testify/require"
)

func TestChartVersion(t *testing.T) {
	for _, tt := range []struct{ version, want string }{
		{"v0.1.0", "0.1.0"},
		{"0.2.0-rc.1", "0.2.0-rc.1"},
		{"v0.1.0-3-g4c38746", "0.1.0-3-g4c38746"},
		{"4c38746-dirty", "0.0.0-4c38746-dirty"},
		{"dev", "0.0.0-dev"},
		{"v0.1.0-3-g4c38746.dirty+x", "0.1.0-3-g4c38746.dirty+x"},
		{"v1.2_rc", "0.0.0-v1-2-rc"},
		{"0160220", "0.0.0-g0160220"},
		{"1160220", "0.0.0-1160220"},
		{"0160220-dirty", "0.0.0-0160220-dirty"},
	} {
		t.Run(tt.version, func(t *testing.T) {
			got := ChartVersion(tt.version)
			require.Equal(t, tt.want, got)
			_, err := semver.StrictNewVersion(got)
			require.NoError(t, err, "Helm refuses a chart version that is not SemVer 2")
		})
	}
}
