package activities

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/kube"
	"ate.dev/orchestrator/internal/wfapi"
)

// pagingLive is a fake API server that pages WorkerPool lists as the real
// one does (the fake client does not): a continue token is the index of the
// next pool, "expired" answers 410 Expired. It records the tokens asked.
// It also holds the objects given.
func pagingLive(t *testing.T, pools int, onConfig func(i int) bool, objs ...ctrlclient.Object) (ctrlclient.WithWatch, *[]string) {
	t.Helper()
	for i := range pools {
		config := "other"
		if onConfig(i) {
			config = "c"
		}
		objs = append(objs, &v1alpha1.WorkerPool{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%05d", i)},
			Status: v1alpha1.WorkerPoolStatus{SandboxClasses: []v1alpha1.WorkerPoolSandboxClassStatus{{
				Name: gvisor, ConfigRef: &v1alpha1.SandboxConfigReference{Name: config},
			}}},
		})
	}
	store := fake.NewClientBuilder().WithScheme(kube.Scheme).WithObjects(objs...).Build()
	var mu sync.Mutex
	var asked []string
	live := interceptor.NewClient(store, interceptor.Funcs{
		List: func(ctx context.Context, c ctrlclient.WithWatch, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
			var o ctrlclient.ListOptions
			o.ApplyOptions(opts)
			mu.Lock()
			asked = append(asked, o.Continue)
			mu.Unlock()
			if o.Continue == "expired" {
				return apierrors.NewResourceExpired("the continue token is too old")
			}
			pl, ok := list.(*v1alpha1.WorkerPoolList)
			if !ok {
				return c.List(ctx, list, opts...)
			}
			var all v1alpha1.WorkerPoolList
			if err := c.List(ctx, &all); err != nil {
				return err
			}
			sort.Slice(all.Items, func(i, j int) bool { return all.Items[i].Name < all.Items[j].Name })
			from := 0
			if o.Continue != "" {
				var err error
				if from, err = strconv.Atoi(o.Continue); err != nil {
					return apierrors.NewBadRequest("invalid continue token")
				}
			}
			to := min(from+int(o.Limit), len(all.Items))
			pl.Items = all.Items[from:to]
			pl.Continue = ""
			if to < len(all.Items) {
				pl.Continue = strconv.Itoa(to)
			}
			return nil
		},
	})
	return live, &asked
}

// TestUnprotectPagesHeartbeatsAndResumes: Unprotect's live list takes 500
// pools a page, heartbeats its progress (the incarnation it listed after,
// the next page's token, the count so far and a sample) after each page
// but the last, and an attempt retried after a heartbeat of the same
// incarnation at the same resourceVersion resumes from it; a heartbeat of
// another one starts the list afresh, and a token the API server calls
// expired restarts it. Users found: in use, with a count and a sample,
// whatever their number, and the finalizer stays.
func TestUnprotectPagesHeartbeatsAndResumes(t *testing.T) {
	const pools = 1300 // three pages
	onConfig := func(i int) bool { return i%2 == 0 }
	key := func(i int) string { return wfapi.PoolKey("ns", fmt.Sprintf("p%05d", i)) }
	var firstTen []string
	for i := 0; len(firstTen) < UserSampleSize; i += 2 {
		firstTen = append(firstTen, key(i))
	}
	config := sandboxConfig("c", gvisor, true, true)
	config.UID = "u1"
	tests := []struct {
		name      string
		resume    *LiveListProgress
		wantAsked []string
		wantCount int
		wantBeats int
	}{
		{name: "a first attempt lists every page", wantAsked: []string{"", "500", "1000"}, wantCount: 650, wantBeats: 2},
		{name: "a retry resumes from its heartbeat",
			resume:    &LiveListProgress{UID: "u1", ResourceVersion: "999", Continue: "1000", Pages: 2, Users: Users{Count: 500, Sample: firstTen}},
			wantAsked: []string{"1000"}, wantCount: 500 + 150},
		{name: "a heartbeat of another incarnation: a fresh list",
			resume:    &LiveListProgress{UID: "u0", ResourceVersion: "999", Continue: "1000", Pages: 2, Users: Users{Count: 500, Sample: firstTen}},
			wantAsked: []string{"", "500", "1000"}, wantCount: 650, wantBeats: 2},
		{name: "an expired token restarts the list",
			resume:    &LiveListProgress{UID: "u1", ResourceVersion: "999", Continue: "expired", Pages: 1, Users: Users{Count: 250, Sample: firstTen}},
			wantAsked: []string{"expired", "", "500", "1000"}, wantCount: 650, wantBeats: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			live, asked := pagingLive(t, pools, onConfig, config.DeepCopy())
			var read v1alpha1.SandboxConfig
			require.NoError(t, live.Get(context.Background(), ctrlclient.ObjectKey{Name: "c"}, &read))
			a := &Activities{Live: live}
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivity(a)
			if tt.resume != nil {
				resume := *tt.resume
				resume.ResourceVersion = read.ResourceVersion
				env.SetHeartbeatDetails(resume)
			}
			var beats []LiveListProgress
			env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
				var p LiveListProgress
				require.NoError(t, details.Get(&p))
				beats = append(beats, p)
			})
			v, err := env.ExecuteActivity(a.Unprotect, UnprotectInput{Config: "c", UID: "u1", ResourceVersion: read.ResourceVersion})
			require.NoError(t, err)
			var res UnprotectResult
			require.NoError(t, v.Get(&res))
			require.Equal(t, ReleaseInUse, res.Result)
			got := res.Users
			require.Equal(t, tt.wantCount, got.Count)
			require.Equal(t, firstTen, got.Sample, "the sample: the first keys")
			var after v1alpha1.SandboxConfig
			require.NoError(t, live.Get(context.Background(), ctrlclient.ObjectKey{Name: "c"}, &after))
			require.Contains(t, after.Finalizers, v1alpha1.ProtectionFinalizer, "in use: the finalizer stays")
			require.Equal(t, tt.wantAsked, *asked)
			// The SDK throttles heartbeats: at least the first is sent.
			require.Equal(t, tt.wantBeats > 0, len(beats) > 0, "heartbeats %v", beats)
			require.LessOrEqual(t, len(beats), tt.wantBeats)
			for i, b := range beats {
				require.Equal(t, strconv.Itoa(500*(i+1)), b.Continue, "heartbeat %d names the next page", i+1)
				require.Equal(t, 250*(i+1), b.Users.Count, "heartbeat %d counts the users so far", i+1)
				require.Equal(t, types.UID("u1"), b.UID, "heartbeat %d names the incarnation listed after", i+1)
				require.LessOrEqual(t, len(b.Users.Sample), UserSampleSize)
			}
		})
	}
}
