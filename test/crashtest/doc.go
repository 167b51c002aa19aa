// Package crashtest proves the orchestrator's crash safety against real
// servers: it kills the worker right after each activity's side effect,
// kills the starter in a burst of changes, restarts the Temporal server and
// stops the API server in the middle of switches, feeds the workflows bad
// input, and runs a bounded, seeded chaos soak, and after each it asks the
// invariant Checker whether the invariants P1-P6 (docs/invariants.md) held
// throughout.
//
// The Checker is ordinary code so that other test packages can use it; the
// tests are in the _test.go files. See README.md for what survives what.
package crashtest
