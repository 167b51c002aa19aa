// Package replay holds workflow histories recorded from real runs of the
// product, and the tests that replay them against the current workflow code.
//
// The fixtures in testdata/ are named <switch|release>-<scenario>.<version>.json,
// the JSON that `temporal workflow show --output json` writes and the SDK's
// WorkflowReplayer reads. The corpus begins with v1, the shapes the first
// release ships: every workflow ID names its cluster
// (docs/decisions/0010-cluster-identity.md), a move is one workflow task
// of local steps (0007) with one live read of its target, Confirm's, and a
// release lists the pools once per look, in Unprotect (0008); the shapes
// before them were replaced before any release (firstVersions,
// shapeVersions). Each fixture keeps, in
// <name>.<version>.execution.json, the workflow ID and run ID it was
// recorded under: a switch reads its pool from its workflow ID, so it
// replays only under that ID (ReplayFixture). The tests (plain `go test`,
// no servers):
//
//   - TestReplay replays every fixture with NewReplayer, which registers the
//     workflows exactly as the worker does (workflows.RegisterWorkflows) with
//     the worker's data converter and interceptors (ReplayerOptions);
//   - TestOrdering reads the order of activities and looks from the events
//     (and the inputs of a switch's local steps from a replay);
//   - TestReplayCatchesIncompatibleChanges shows that a changed workflow
//     fails the replay with a nondeterminism error, and
//     TestOrderingCatchesWrongSwitches that a wrongly shaped switch fails
//     the ordering checks.
//
// The recorder is TestRecord, built only with the tag `record`
// (`make record-histories`). It never overwrites a fixture: to record
// after changing a workflow, bump Version. See README.md.
package replay
