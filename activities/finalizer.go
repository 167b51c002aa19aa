package activities

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/resolve"
	"ate.dev/orchestrator/internal/wfapi"
)

// ProtectInput names the config a class is about to move to.
type ProtectInput struct {
	Config string                `json:"config"`
	Class  v1alpha1.SandboxClass `json:"class"`
	// FromCache lets a config the worker's cache shows usable and already
	// protected pass without a read from the API server. A switch's
	// first Protect sets it: the live read after its claim catches a cache
	// that was behind (a config deleted since rolls back; one recreated
	// without the finalizer is protected again, live).
	FromCache bool `json:"fromCache,omitempty"`
	// Pool is the pool whose switch protects the config, when a
	// switch calls: a Protect that keeps failing reports on its class (see
	// reportStepFailure). Last, so the printed input keeps its start.
	Pool wfapi.PoolRef `json:"pool,omitempty"`
}

// TargetCheck says whether a config may be used by a class, and if not, why.
type TargetCheck struct {
	OK      bool   `json:"ok"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Protect adds the protection finalizer to the config a class is about to
// move to, before any status names it (P1). A config that is missing, of
// another class or in deletion is refused: the API server would not take a
// new finalizer on a config in deletion anyway, and a new user must not take
// it. The patch carries the resourceVersion, so it cannot land on a config
// that changed since it was read; a conflict reads again.
func (a *Activities) Protect(ctx context.Context, in ProtectInput) (_ *TargetCheck, err error) {
	defer a.reportStepFailure(ctx, StepProtect, in.Pool, in.Class, &err)
	if in.Config == "" || in.Class == "" {
		return nil, invalidInput("protecting a SandboxConfig needs its name and the sandbox class, got %+v", in)
	}
	if in.FromCache && a.protectedInCache(ctx, in) {
		return checkTarget(in.Config, &resolve.Config{Class: in.Class}, in.Class), nil
	}
	var check *TargetCheck
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var c v1alpha1.SandboxConfig
		if err := a.Live.Get(ctx, ctrlclient.ObjectKey{Name: in.Config}, &c); err != nil {
			if apierrors.IsNotFound(err) {
				check = checkTarget(in.Config, nil, in.Class)
				return nil
			}
			return err
		}
		view := resolve.ConfigFrom(&c)
		if check = checkTarget(in.Config, &view, in.Class); !check.OK || c.IsProtected() {
			return nil
		}
		base := c.DeepCopy()
		controllerutil.AddFinalizer(&c, v1alpha1.ProtectionFinalizer)
		return a.Live.Patch(ctx, &c, ctrlclient.MergeFromWithOptions(base, ctrlclient.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer %s to SandboxConfig %q: %w", v1alpha1.ProtectionFinalizer, in.Config, err)
	}
	return check, nil
}

// protectedInCache reports whether the worker's cache shows the config of
// the class, not in deletion, with the finalizer. Only a yes is trusted: a
// no, or a cache that cannot say, reads live.
func (a *Activities) protectedInCache(ctx context.Context, in ProtectInput) bool {
	if a.Cache == nil {
		return false
	}
	var c v1alpha1.SandboxConfig
	if err := a.Cache.Get(ctx, ctrlclient.ObjectKey{Name: in.Config}, &c); err != nil {
		return false
	}
	return c.Class() == in.Class && !c.IsDeleting() && c.IsProtected()
}

func checkTarget(name string, c *resolve.Config, class v1alpha1.SandboxClass) *TargetCheck {
	ok, reason, message := resolve.CheckTarget(name, c, class)
	return &TargetCheck{OK: ok, Reason: reason, Message: message}
}

// ReadConfig reads a SandboxConfig from the API server, never from a cache;
// nil means it does not exist. The result carries the incarnation's UID and
// the resourceVersion read.
func (a *Activities) ReadConfig(ctx context.Context, name string) (*resolve.Config, error) {
	if name == "" {
		return nil, invalidInput("reading a SandboxConfig needs its name")
	}
	var c v1alpha1.SandboxConfig
	if err := a.Live.Get(ctx, ctrlclient.ObjectKey{Name: name}, &c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading SandboxConfig %q: %w", name, err)
	}
	view := resolve.ConfigFrom(&c)
	view.UID, view.ResourceVersion = c.UID, c.ResourceVersion
	return &view, nil
}
