package main

// postgresNote starts the note of rows measured on temporal-server on
// PostgreSQL (-temporal postgres), which BENCHMARKS.md lists beside the dev
// server's. Its Temporal CPU is temporal-server's alone: PostgreSQL's
// backends are not counted.
const postgresNote = "temporal-server on PostgreSQL (SQL visibility, 4 shards, default dynamic config)."
