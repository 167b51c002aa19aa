package events

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
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
		return FailureWarning(pool, v1alpha1.SandboxClassGVisor, v1alpha1.ReasonSandboxConfigNotFound, message, since).Event().Name()
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

// TestPoolEventIsAboutThePool: a pool event is recorded about the pool's
// incarnation, in its namespace, with its words as they are.
func TestPoolEventIsAboutThePool(t *testing.T) {
	pool := wfapi.PoolRef{Namespace: "ns", Name: "p", UID: "uid-1"}
	ev := PoolEvent{Pool: pool, Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonSandboxConfigSwitched,
		Action: "Switch", Note: "n", Key: "switch/run-1"}.Event()
	require.Equal(t, Event{Regarding: corev1.ObjectReference{APIVersion: "ate.dev/v1alpha1", Kind: "WorkerPool", Namespace: "ns", Name: "p", UID: "uid-1"},
		Key: "switch/run-1", Type: corev1.EventTypeNormal, Reason: v1alpha1.EventReasonSandboxConfigSwitched, Action: "Switch", Note: "n"}, ev)
	require.Equal(t, "ns", ev.Namespace())
	require.Equal(t, "p.321d2615b896b4bc", ev.Name())
}
