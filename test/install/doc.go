// Package install tests the orchestrator's install, re-apply, upgrade and
// uninstall on the local cluster (internal/localstack/cluster: a real
// kube-apiserver and etcd, kube-controller-manager, kube-scheduler and kwok's
// nodes) with a real Temporal dev server, as a platform team runs them:
//
//   - the manifests (sources_test.go: the kustomize build of deploy/; the lead
//     adds the release's install.yaml and the Helm chart there) are applied
//     server-side, as `kubectl apply --server-side` does, with no CRD
//     installed beforehand;
//   - the worker and the starter run as processes on this host with the
//     installed configuration (the env of their Deployment: its literal
//     variables and the installed ConfigMap) and impersonating the
//     installed ServiceAccounts, so a right their roles lack or a setting
//     the ConfigMap gets wrong fails a test;
//   - the uninstall stops them, runs teardown as the documented Job runs it
//     (the worker's ServiceAccount, no arguments) and deletes every object
//     of the install.
//
// The tests share one cluster and run one after another; each removes what
// it installed, and checks that nothing of it remains.
package install
