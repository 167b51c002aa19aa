// Package cluster holds the end-to-end tests of the product on a real
// cluster (internal/localstack/cluster, docs/local-cluster.md): the worker
// Deployments the product applies get ReplicaSets and pods, scheduled onto
// kwok's simulated nodes by their class, and the pool's status mirrors
// what the real controllers report. The product runs in the test process,
// as in test/e2e; the other e2e packages run without the cluster because
// they play the Deployment controller themselves.
package cluster
