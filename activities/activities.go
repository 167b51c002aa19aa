// Package activities holds every Kubernetes side effect of the workflows.
// Each activity is idempotent: Temporal runs activities at least once, so a
// retried claim, confirm, patch or event creation must change nothing the
// second time. Status writes are guarded by the pool's resourceVersion and
// re-read on conflict; events get deterministic names.
package activities

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/notify"
	"ate.dev/orchestrator/internal/wfapi"
)

// +kubebuilder:rbac:groups=ate.dev,resources=workerpools,verbs=get;list;watch
// +kubebuilder:rbac:groups=ate.dev,resources=workerpools/status,verbs=get;update
// +kubebuilder:rbac:groups=ate.dev,resources=sandboxconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create

// Activities are the worker's Kubernetes side effects. Register a non-nil
// value with the worker; workflows refer to the methods through a nil
// pointer, which only names them.
type Activities struct {
	// Live reads from and writes to the API server, never through a cache:
	// every decision that protects a config is made on what the API server
	// says now. It watches only to replay a gone pool's last states (see
	// landedBeforeGone).
	Live ctrlclient.WithWatch
	// Cache is the worker's informer cache of WorkerPools and
	// SandboxConfigs, with the indexes of poolwatch.Index. For a switch or
	// a release it is only a fast first look: a live list confirms before
	// anything is released, and a status write started from a cached copy
	// is guarded by its resourceVersion (see updateStatus). The rollout's
	// activities read the class's unpinned pools (poolwatch.ClassPools) and
	// the configs from it and nothing of the fleet live: what they may not
	// trust it with, whether a step's pools are there, they confirm with a
	// GET of each pool (see WaitRolloutStep). They fail without it.
	Cache ctrlclient.Reader
	// PoolEvents is told by the worker's WorkerPool informer, under a
	// class's name, when one of the class's unpinned pools changes in
	// Cache (poolwatch.NotifyClasses): a rollout step's wait looks when
	// its class's pools change rather than at its next poll. Without it
	// the wait polls Cache once a second.
	PoolEvents *notify.Notifier
	// Clientset applies Deployments and creates events.
	Clientset kubernetes.Interface
	// Temporal wakes release workflows, and reads the other clusters'
	// rollouts a rollout with spec.rollout.after waits for.
	Temporal client.Client
	// Metrics answers the PromQL queries of a rollout's analysis; nil
	// when the worker has no Prometheus (a step with an analysis then
	// holds, inconclusive, and says why).
	Metrics Querier
	// Scope is the worker's cluster and task queue: where the release and
	// switch workflows started here run.
	Scope wfapi.Scope
	// Instance names this worker in the events it records.
	Instance string
	// OperatorStartsPerSecond paces the signal-with-starts of an operator's
	// request (DefaultOperatorStartsPerSecond when zero).
	OperatorStartsPerSecond float64
	// RolloutStepDeadline is how long a staged rollout's step may take for
	// its pools to move and be Available before the rollout halts
	// (DefaultRolloutStepDeadline when zero).
	RolloutStepDeadline time.Duration
	// RolloutAfterPoll is how often a rollout waiting for other clusters
	// (spec.rollout.after) reads their rollouts again
	// (DefaultRolloutAfterPoll when zero).
	RolloutAfterPoll time.Duration
	// rolloutPoll is how often a step's wait looks when no pool event
	// wakes it (rolloutPollInterval when zero); tests lengthen it to show
	// the wait woken by events.
	rolloutPoll time.Duration

	// written is what this worker's last status writes left, for the
	// next step of the same switch to start from (see writtenPools).
	written writtenPools
	// wakes bounds how often WakeReleases wakes one config's release.
	wakes wakeLog
}

func poolKey(p wfapi.PoolRef) ctrlclient.ObjectKey { return p.Key() }

// Error types that no retry can fix.
const (
	ErrInvalidInput = "InvalidInput"
)

func invalidInput(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrInvalidInput, nil)
}

func validatePool(p wfapi.PoolRef) error {
	if p.Namespace == "" || p.Name == "" {
		return invalidInput("a WorkerPool reference needs a namespace and a name, got %q", p.String())
	}
	return nil
}
