// Package fleet tests many Kubernetes clusters on one Temporal server, as a
// platform team runs a fleet on one shared Temporal namespace (issue 35,
// docs/many-clusters.md): testenv's API server and Temporal dev server, and
// beside them more API servers, each with its own etcd, started per test
// (package localstack, without Temporal). Each cluster runs its own worker
// and starter with the same settings (same Temporal namespace, no task
// queue, and no cluster name or distinct ones), and the tests require that
// no cluster's workflows act on, or even disturb, another's: every pool of
// every cluster converges, each move is recorded once in its own cluster,
// no switch ends "pool gone" for a pool that exists, a change in one
// cluster changes nothing in the others, and the invariant checker of
// test/crashtest finds no violation of P1-P6 in any.
//
// The tests are in the _test.go files; `make test` runs them.
package fleet
