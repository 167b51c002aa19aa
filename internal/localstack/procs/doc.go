// Package procs starts child processes that never outlive the process that
// started them: the test binaries and `make dev` start a Temporal server,
// etcd and kube-apiserver, and a failed, panicking or killed run must not
// leave them behind holding ports and files.
//
// On Linux every child gets PR_SET_PDEATHSIG=SIGKILL. The kernel ties that
// signal to the thread that forked the child, not to the process, so every
// fork happens on one dedicated OS thread that lives as long as the process
// (see OnSpawnerThread). Children get their own process group, so a
// terminal's Ctrl-C reaches only the parent, which then stops them in order.
//
// Processes that a library forks itself (controller-runtime's envtest runs
// etcd and kube-apiserver with exec.Command and no hook) are started through
// a launcher script from WriteLauncher: it re-executes the current binary,
// whose init sets the death signal and then execs the real program, in the
// same process.
package procs
