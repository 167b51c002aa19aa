package v1alpha1_test

// What a kubectl user meets, asked of the real API server as kubectl asks
// it: short names and categories through discovery, printer columns through
// the Table form of a list.

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

// serverResources is the server's discovery of every group, as
// kubectl caches it.
func serverResources(t *testing.T) (*discovery.DiscoveryClient, []*metav1.APIResourceList) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(testenv.Current().RestConfig)
	require.NoError(t, err)
	var lists []*metav1.APIResourceList
	// The CRDs were just installed: wait until discovery serves ours.
	require.Eventually(t, func() bool {
		_, lists, err = dc.ServerGroupsAndResources()
		return err == nil && slices.ContainsFunc(lists, func(l *metav1.APIResourceList) bool {
			return l.GroupVersion == atev1alpha1.GroupVersion.String()
		})
	}, 30*time.Second, 100*time.Millisecond, "discovery does not serve %s: %v", atev1alpha1.GroupVersion, err)
	return dc, lists
}

// Each kind's short name is its own: kubectl resolves a name any resource
// of any group claims as a plural, singular or short name, so a clash with a
// built-in (sc is StorageClass's) makes one of them unreachable by it.
// `kubectl get ate` lists both kinds and nothing else.
func TestKubectlNamesAndCategory(t *testing.T) {
	_, lists := serverResources(t)
	tests := []struct {
		plural    string
		shortName string
	}{
		{"workerpools", "wp"},
		{"sandboxconfigs", "sbc"},
	}
	claimedBy := map[string][]string{} // name -> group/resource claiming it
	var inCategory []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			id := r.Name + "." + gv.Group
			for _, n := range append([]string{r.Name, r.SingularName}, r.ShortNames...) {
				if n != "" && !slices.Contains(claimedBy[n], id) {
					claimedBy[n] = append(claimedBy[n], id)
				}
			}
			if slices.Contains(r.Categories, "ate") && !slices.Contains(inCategory, id) {
				inCategory = append(inCategory, id)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.plural, func(t *testing.T) {
			id := tt.plural + "." + atev1alpha1.GroupVersion.Group
			require.Equal(t, []string{id}, claimedBy[tt.shortName], "short name %s", tt.shortName)
		})
	}
	slices.Sort(inCategory)
	require.Equal(t, []string{"sandboxconfigs.ate.dev", "workerpools.ate.dev"}, inCategory, "resources in category ate")
}

// Every printer column says what it shows: the Table the server sends kubectl
// carries each column's description (for one the CRD leaves undescribed, the
// server makes up "Custom resource definition column (in JSONPath format):
// ...").
func TestPrinterColumnsDescribed(t *testing.T) {
	dc, _ := serverResources(t)
	tests := []struct {
		plural  string
		columns []string
		// wide are the columns only `-o wide` shows (priority 1).
		wide []string
	}{
		{"workerpools", []string{"Name", "DESIRED", "REPLICAS", "READY", "SANDBOXCONFIG", "RESOLVED", "AGE"}, nil},
		{"sandboxconfigs", []string{"Name", "CLASS", "DEFAULT-VERSION", "CLASS-DEFAULT", "ROLLOUT", "MOVED", "TOTAL", "STEP", "READY", "AGE", "MESSAGE"},
			[]string{"STEP", "READY", "MESSAGE"}},
	}
	for _, tt := range tests {
		t.Run(tt.plural, func(t *testing.T) {
			raw, err := dc.RESTClient().Get().AbsPath("/apis", atev1alpha1.GroupVersion.Group, atev1alpha1.GroupVersion.Version, tt.plural).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctxFor(t))
			require.NoError(t, err, "listing %s as a Table", tt.plural)
			var table metav1.Table
			require.NoError(t, json.Unmarshal(raw, &table))
			var names, wide []string
			for _, c := range table.ColumnDefinitions {
				names = append(names, c.Name)
				if c.Priority > 0 {
					wide = append(wide, c.Name)
				}
				// The server's stand-in for a column the CRD does not describe.
				require.NotContains(t, c.Description, "Custom resource definition column", "column %s of %s has no description", c.Name, tt.plural)
				require.NotEmpty(t, c.Description, "column %s of %s", c.Name, tt.plural)
			}
			require.Equal(t, tt.columns, names)
			require.Equal(t, tt.wide, wide, "the columns of -o wide only")
		})
	}
}
