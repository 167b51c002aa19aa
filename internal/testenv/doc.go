// Package testenv is the harness of the integration tests: a real
// kube-apiserver and etcd with the ate.dev CRDs installed, and a real
// Temporal dev server with the custom search attributes registered, started
// once per test package.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{})) }
//
//	func TestSomething(t *testing.T) {
//		env := testenv.Current()
//		ns := env.Namespace(t)             // a fresh Kubernetes namespace
//		tq := testenv.TaskQueue(t)         // a fresh Temporal task queue
//		_ = env.Kube.Create(ctx, obj)      // controller-runtime client
//		_, _ = env.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: tq}, wf)
//	}
//
// The servers are the local stack of package internal/localstack, built as
// the bench and `make dev` build it.
//
// Binaries come from the repository's bin/ (built by `make tools`): etcd,
// kube-apiserver (and prometheus, with Options.Prometheus) from
// $KUBEBUILDER_ASSETS if set, the temporal CLI from
// $ATE_TEMPORAL_CLI if set. A missing binary fails Start with an error that
// says to run `make tools`.
//
// Every server process dies with the test binary, also when a test panics,
// times out or the binary is killed (see package procs). Server logs go to
// files under Env.Dir, which Main keeps, and names, when tests fail; set
// ATE_TESTENV_KEEP=1 to keep it always.
//
// Crash and restart tests can stop, kill and restart the Temporal server
// (set Options.PersistTemporal or TemporalDBFile so histories survive) and
// the kube-apiserver or etcd; addresses and credentials stay the same, so
// Env's clients reconnect by themselves.
package testenv
