// Package events is the one home of the events.k8s.io/v1 Events the
// product records: the objects they are about (Pool, Config), their
// deterministic names (Name), how one is built (Event.Build) and created
// once (Recorder), and the pool events' vocabulary (PoolEvent, the
// RecordEvent activity's input; FailureWarning).
//
// Every recorder goes through it: the activities (RecordEvent, a switch
// step's failure report, RecordRolloutEvent, the release's Warning about a
// config in deletion) and the worker's pool keeper, which records the
// Warnings of failures a pool's status shows. A switch and the keeper must
// give the same occurrence the same name, so that it is recorded once
// whoever sees it first; the package sits below both so the keeper need
// not import the activities. Event reasons live in api/v1alpha1/names.go,
// beside the API's other names.
package events
