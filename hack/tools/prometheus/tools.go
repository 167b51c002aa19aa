//go:build tools

// Package tools pins Prometheus, which the local stack runs to scrape the
// worker, the starter and the API server, and which the rollout analysis'
// tests query. install.sh builds it with the remove_all_sd tag: only the
// static, file and HTTP service discoveries the local stack uses, none of
// the cloud ones and their SDKs.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
