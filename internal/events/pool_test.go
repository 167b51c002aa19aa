package events

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/wfapi"
)

// TestFailureWarningIsPerAppearance: the same failure since the same time
// is one event, whoever records it; a new appearance or another pool
// incarnation is another.
func TestFailureWarningIsPerAppearance(t *testing.T) {
	pool := wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"}
	since := metav1.NewTime(time.Unix(100, 0))
	name := func(pool wfapi.PoolRef, since metav1.Time, message string) string {
		ev := FailureWarning(pool, v1alpha1.SandboxClassGVisor, "SandboxConfigNotFound", message, since)
		return Name(ev.Pool, ev.Key)
	}
	first := name(pool, since, "gone")
	for _, tc := range []struct {
		name string
		got  string
		same bool
	}{
		{"the same appearance", name(pool, since, "gone"), true},
		{"a later appearance", name(pool, metav1.NewTime(time.Unix(101, 0)), "gone"), false},
		{"another message", name(pool, since, "still gone"), false},
		{"another incarnation", name(wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-2"}, since, "gone"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.same, tc.got == first)
		})
	}
}

// TestNameFitsAnObjectName: the pool's name is cut so the event's name
// stays a valid object name.
func TestNameFitsAnObjectName(t *testing.T) {
	long := strings.Repeat("p", 253)
	n := Name(wfapi.PoolRef{Name: long, UID: "u"}, "k")
	require.LessOrEqual(t, len(n), 253)
	require.True(t, strings.HasPrefix(n, strings.Repeat("p", 200)+"."))
}
