package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
)

// TestEventReasonsAreSpelledAsReleased pins the spelling of every reason of
// an event the product records (users, alerts and runbooks match on them),
// so that the tests elsewhere can use the constants and a renamed constant
// value still fails here.
func TestEventReasonsAreSpelledAsReleased(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		// Normal, on a WorkerPool, after each change of a class's configRef.
		{atev1alpha1.EventReasonSandboxConfigSwitched, "SandboxConfigSwitched"},
		// Warning, on a WorkerPool: a failed resolution (the Resolved
		// condition's reason), also on a SandboxConfig in deletion whose
		// pools wait for a rollout (SandboxConfigDeleting).
		{atev1alpha1.ReasonSandboxConfigNotFound, "SandboxConfigNotFound"},
		{atev1alpha1.ReasonSandboxClassMismatch, "SandboxClassMismatch"},
		{atev1alpha1.ReasonSandboxConfigDeleting, "SandboxConfigDeleting"},
		{atev1alpha1.ReasonDefaultConfigNotFound, "DefaultConfigNotFound"},
		{atev1alpha1.ReasonSandboxConfigNotProtected, "SandboxConfigNotProtected"},
		// Warning, on a WorkerPool: a switch step that keeps failing.
		{atev1alpha1.EventReasonSwitchStepFailing, "SwitchStepFailing"},
		// Warning, on a WorkerPool: its Deployment cannot be applied (the
		// DeploymentApplied condition's reason).
		{atev1alpha1.ReasonDeploymentNotOwned, "DeploymentNotOwned"},
		{atev1alpha1.ReasonDeploymentApplyFailed, "DeploymentApplyFailed"},
		{atev1alpha1.ReasonDeploymentInvalid, "DeploymentInvalid"},
		// On a SandboxConfig, about its rollout.
		{atev1alpha1.EventReasonRolloutStepCompleted, "RolloutStepCompleted"},
		{atev1alpha1.EventReasonRolloutPaused, "RolloutPaused"},
		{atev1alpha1.EventReasonRolloutResumed, "RolloutResumed"},
		{atev1alpha1.EventReasonRolloutPromoted, "RolloutPromoted"},
		{atev1alpha1.EventReasonRolloutCompleted, "RolloutCompleted"},
		{atev1alpha1.EventReasonRolloutHalted, "RolloutHalted"},
		{atev1alpha1.EventReasonRolloutAborted, "RolloutAborted"},
		{atev1alpha1.EventReasonRolloutRolledBack, "RolloutRolledBack"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			require.Equal(t, tc.want, tc.got)
		})
	}
}
