package resolve

import (
	"fmt"

	"ate.dev/orchestrator/api/v1alpha1"
)

// CheckTarget says whether a class may move to a config, read live just now
// (nil when it does not exist). A switch confirms only a config that exists,
// is of the class and is not being deleted; otherwise it rolls back with the
// returned reason and message, worded as resolution words them.
func CheckTarget(name string, c *Config, class v1alpha1.SandboxClass) (ok bool, reason, message string) {
	switch {
	case c == nil:
		return false, v1alpha1.ReasonSandboxConfigNotFound, fmt.Sprintf("SandboxConfig %q not found", name)
	case c.Class != class:
		return false, v1alpha1.ReasonSandboxClassMismatch,
			fmt.Sprintf("SandboxConfig %q is of sandbox class %q, not %q", name, c.Class, class)
	case c.Deleting:
		return false, v1alpha1.ReasonSandboxConfigDeleting, fmt.Sprintf("SandboxConfig %q is being deleted", name)
	}
	return true, v1alpha1.ReasonResolved, ResolvedMessage(name)
}

// ResolvedMessage is the message of the Resolved condition of a class that
// names config name: what resolution, a confirmed switch and the status
// write of a confirm all say.
func ResolvedMessage(name string) string {
	return fmt.Sprintf("resolved to SandboxConfig %q", name)
}

// Keeping appends the config a failed class keeps to a failure message.
func Keeping(message, kept string) string {
	if kept == "" {
		return message
	}
	return fmt.Sprintf("%s; keeping %q", message, kept)
}
