// Package crashhook lets crash tests kill the worker at an exact point: right
// after an activity's side effect and before its completion reaches the
// Temporal server, the moment at-least-once delivery is about.
//
// It exists only in test builds: built with `-tags crashtest`, Interceptors
// returns an interceptor that sends SIGKILL to the worker's own process when
// the activity named by $ATE_CRASH_AFTER_ACTIVITY returns successfully
// (optionally only for an argument containing $ATE_CRASH_AFTER_ARG). Without
// the tag it returns nothing, and production binaries carry no trace of it.
package crashhook

// EnvActivity names the activity after which a crashtest worker kills itself.
const EnvActivity = "ATE_CRASH_AFTER_ACTIVITY"

// EnvArg restricts the kill to a run whose first argument, printed with
// %v, contains this string.
const EnvArg = "ATE_CRASH_AFTER_ARG"
