package kube

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"ate.dev/orchestrator/internal/wfapi"
)

func TestClusterIdentity(t *testing.T) {
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab"}}
	tests := []struct {
		name    string
		objects []corev1.Namespace
		set     string
		want    wfapi.Cluster
		err     string
	}{
		{name: "a name set wins", objects: []corev1.Namespace{*kubeSystem}, set: "prod-eu-1", want: "prod-eu-1"},
		{name: "a name set needs no API server", set: "prod-eu-1", want: "prod-eu-1"},
		{name: "no name: kube-system's UID", objects: []corev1.Namespace{*kubeSystem}, want: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab"},
		{name: "no name and no kube-system", err: "reading namespace kube-system"},
		{name: "a name that cannot stand in a workflow ID", set: "prod/eu", err: `--cluster-name: cluster name "prod/eu" is not a DNS label`},
		{name: "an upper-case name", set: "Prod", err: "is not a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for i := range tt.objects {
				_, err := cs.CoreV1().Namespaces().Create(context.Background(), &tt.objects[i], metav1.CreateOptions{})
				require.NoError(t, err)
			}
			got, err := ClusterIdentity(context.Background(), cs, tt.set)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// TestScopeSaysWhyItWaits: while the kube-system namespace cannot be read
// (RBAC forbids it, the API server is down), naming the cluster waits, and
// says why: the first failed look in the log at once, then at most one
// line per LogEvery, the readiness probe told each look's error, and nil
// (ready as far as the name goes) once the namespace is read.
func TestScopeSaysWhyItWaits(t *testing.T) {
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab"}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "kube-system",
		errors.New(`User "system:serviceaccount:ate-system:ate-orchestrator-worker" cannot get resource "namespaces"`))
	down := errors.New("dial tcp 10.96.0.1:443: connect: connection refused")
	tests := []struct {
		name string
		set  string
		// fails is how many looks fail with err before one succeeds;
		// step how far the clock moves per look.
		fails int
		err   error
		step  time.Duration
		// wantWarns is how many warnings the wait logs; wantInLog what the
		// first says.
		wantWarns int
		wantInLog []string
	}{
		{name: "readable at once: nothing logged", fails: 0},
		{name: "a name set: no look", set: "prod-eu-1", fails: 0},
		{name: "forbidden: the error and the fix, once in 30 s", fails: 20, err: forbidden, step: time.Second,
			wantWarns: 1, wantInLog: []string{"cannot name the cluster yet", `cannot get resource \"namespaces\"`, "get on namespaces/kube-system", "--cluster-name"}},
		{name: "API server down: the error", fails: 3, err: down, step: time.Second,
			wantWarns: 1, wantInLog: []string{"cannot name the cluster yet", "connection refused"}},
		// Looks 10 s apart: the first at 0 s, then at 30, 60 and 90 s.
		{name: "a long wait: one line per 30 s", fails: 10, err: down, step: 10 * time.Second,
			wantWarns: 4, wantInLog: []string{"connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(kubeSystem)
			looks := 0
			cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				looks++
				if looks <= tt.fails {
					return true, nil, tt.err
				}
				return false, nil, nil // the tracker answers
			})
			var logs bytes.Buffer
			clock := time.Unix(0, 0)
			var reports []error
			w := NamingWait{
				Log:      slog.New(slog.NewJSONHandler(&logs, nil)),
				Interval: time.Millisecond,
				Report:   func(err error) { reports = append(reports, err) },
				now:      func() time.Time { clock = clock.Add(tt.step); return clock },
			}
			scope, err := scopeOf(t.Context(), cs, tt.set, "", w)
			require.NoError(t, err)
			want := wfapi.Cluster(kubeSystem.UID)
			if tt.set != "" {
				want = wfapi.Cluster(tt.set)
			}
			require.Equal(t, want, scope.Cluster)

			// The probe: told each failed look's error, then that it is named.
			require.Len(t, reports, tt.fails+1)
			for i, r := range reports[:tt.fails] {
				require.ErrorIs(t, r, tt.err, "report %d", i)
			}
			require.NoError(t, reports[tt.fails], "the last report: named")

			var warns []string
			for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				if strings.Contains(l, `"level":"WARN"`) {
					warns = append(warns, l)
				}
			}
			require.Len(t, warns, tt.wantWarns, logs.String())
			for _, s := range tt.wantInLog {
				require.Contains(t, warns[0], s)
			}
			if tt.fails > 0 {
				require.Contains(t, logs.String(), "named the cluster after waiting")
			} else {
				require.Empty(t, logs.String(), "nothing to say when nothing waited")
			}
		})
	}
}

// TestScopeStopsWaitingWithItsContext: a process stopped while it waits
// returns the last look's error, not a bare context error.
func TestScopeStopsWaitingWithItsContext(t *testing.T) {
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	var reports int
	_, err := scopeOf(ctx, cs, "", "", NamingWait{Log: slog.New(slog.DiscardHandler), Interval: time.Millisecond,
		Report: func(error) {
			if reports++; reports == 3 {
				cancel()
			}
		}})
	require.ErrorContains(t, err, `naming the cluster: reading namespace kube-system`)
	require.ErrorContains(t, err, `not found`)
}
