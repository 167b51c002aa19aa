package version

import (
	"bytes"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlag(t *testing.T) {
	tests := []struct {
		name    string
		stamped string
		args    []string
		want    string // printed; empty: --version not given
	}{
		{name: "stamped", stamped: "v1.2.3-4-gabcdef0-dirty", args: []string{"--version"}, want: "worker v1.2.3-4-gabcdef0-dirty\n"},
		{name: "not asked", stamped: "v1.2.3", args: []string{}, want: ""},
		// A test binary carries no VCS version: the fallback is "dev".
		{name: "not stamped", stamped: "", args: []string{"-version"}, want: "worker dev\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func(v string) { Version = v }(Version)
			Version = tt.stamped
			fs := flag.NewFlagSet("worker", flag.ContinueOnError)
			show := Flag(fs, "worker")
			require.NoError(t, fs.Parse(tt.args))
			var out bytes.Buffer
			require.Equal(t, tt.want != "", show(&out))
			require.Equal(t, tt.want, out.String())
		})
	}
}
