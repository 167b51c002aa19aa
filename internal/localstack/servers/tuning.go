package servers

// The dev server settings the product is measured with (`make bench`), and
// so the ones `make dev` and the tests run it with (NewTemporal applies
// them): what users run is what is measured. BENCHMARKS.md tells what each
// one is worth.

// DevServerPragmas are the SQLite pragmas of the dev server's database file:
// the write-ahead log, synced at checkpoints rather than at every commit.
var DevServerPragmas = []string{"journal_mode=wal", "synchronous=normal"}

// DevServerDynamicConfig returns the dev server's dynamic config values
// (JSON), a fresh map each call.
func DevServerDynamicConfig() map[string]string {
	return map[string]string{
		// One partition: no forwarding between partitions, every poller
		// meets every task.
		"matching.numTaskqueueReadPartitions":  "1",
		"matching.numTaskqueueWritePartitions": "1",
		// The one shard's queues load new tasks at most this often: at the
		// default 20/s every hand-off waits up to 50 ms.
		"history.transferProcessorMaxPollRPS":   "1000",
		"history.timerProcessorMaxPollRPS":      "1000",
		"history.visibilityProcessorMaxPollRPS": "1000",
		// The CLI turns this on for the dev server, so that a search
		// attribute registered a moment ago is usable at once; it costs a
		// database read per start and upsert that carries search
		// attributes. The product's are registered when the server starts,
		// and production servers run with it off.
		"system.forceSearchAttributesCacheRefreshOnRead": "false",
		// An activity scheduled by a workflow task goes back to the worker
		// in the task's completion response instead of through matching:
		// the switch's Claim costs no extra round trip.
		"system.enableActivityEagerExecution": "true",
	}
}
