// Package servers runs the real servers the orchestrator talks to, on this
// machine: a Temporal dev server (the temporal CLI's `server start-dev`) and
// a Kubernetes control plane (etcd and kube-apiserver through
// controller-runtime's envtest). Package localstack assembles them into the
// one local stack that the tests (internal/testenv), the bench (test/bench) and
// `make dev` (hack/devstack) run.
//
// Every process is started through package procs, so it dies with the
// process that started it, and each server can be stopped, killed and
// started again on the same address, for tests of crashes and restarts.
package servers
