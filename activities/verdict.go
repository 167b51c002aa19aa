package activities

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// A verdict is what one attempt of a switch's status step decided on the
// pool as that attempt read it (see updateStatus): the outcome the step
// reports and what goes with it. A step's guards and its mutation return
// one rather than set a variable of the step's: each attempt of a conflict
// retry decides afresh, and the step's PoolWrite is made of the verdict of
// its last attempt alone.
type verdict struct {
	// Outcome is the step's outcome; "" is Written.
	Outcome      WriteOutcome
	Displaced    string
	Refusal      *TargetCheck
	Earlier      *EarlierRollBack
	FailingSince *metav1.Time
}

// into sets the verdict on the step's result.
func (v verdict) into(res *PoolWrite) {
	if v.Outcome != "" {
		res.Outcome = v.Outcome
	}
	res.Displaced, res.Refusal, res.Earlier, res.FailingSince = v.Displaced, v.Refusal, v.Earlier, v.FailingSince
}

// A guard looks at the pool as read, before the mutation. nil lets the
// write go on; a verdict stops the step with nothing written, reporting
// that verdict. An error stops it too: a refusal fails the step as invalid
// input, any other error is the step's, retried.
type guard func(context.Context, *v1alpha1.WorkerPool) (*verdict, error)

// A mutation changes the pool's status as the step writes it, and says
// what the write is: the zero verdict for the step's own write, another
// (Superseded, Landed) when it leaves the class as it found it.
type mutation func(*v1alpha1.WorkerPool) verdict

// pure makes a guard of a judgement that reads nothing but the pool.
func pure(judge func(*v1alpha1.WorkerPool) *verdict) guard {
	return func(_ context.Context, pool *v1alpha1.WorkerPool) (*verdict, error) {
		return judge(pool), nil
	}
}
