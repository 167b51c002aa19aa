package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/kubernetes"
)

// reqKey is one row of the API server's apiserver_request_total, summed
// over codes, scopes, versions and components: a verb on a resource.
type reqKey struct {
	Verb     string // GET, LIST, WATCH, POST, PUT, PATCH, APPLY, DELETE, ...
	Resource string // e.g. "workerpools/status", "events.events.k8s.io"
}

func (k reqKey) String() string { return k.Verb + " " + k.Resource }

type reqCounts map[reqKey]float64

func (c reqCounts) sub(o reqCounts) reqCounts {
	out := reqCounts{}
	for _, keys := range []reqCounts{c, o} {
		for k := range keys {
			if d := c[k] - o[k]; d != 0 {
				out[k] = d
			}
		}
	}
	return out
}

func isWrite(verb string) bool {
	switch verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// productResources are the resources the product reads or writes; the rest
// of the API server's traffic in a window (its own leases, endpoints, ...)
// is background and reported apart.
var productResources = map[string]bool{
	"workerpools.ate.dev": true, "workerpools.ate.dev/status": true,
	"sandboxconfigs.ate.dev": true,
	"deployments.apps":       true,
	"events.events.k8s.io":   true,
}

// reqSummary sums a window's requests: the product's writes and reads
// (WATCH excluded: a watch is a stream, not a per-switch cost), event
// creates, LISTs of all pools, and the background.
type reqSummary struct {
	Writes, Reads, EventCreates, PoolLists, Background float64
	ByVerbResource                                     map[string]float64
}

func summarize(c reqCounts) reqSummary {
	s := reqSummary{ByVerbResource: map[string]float64{}}
	for k, v := range c {
		if !productResources[k.Resource] {
			s.Background += v
			continue
		}
		s.ByVerbResource[k.String()] = v
		switch {
		case isWrite(k.Verb):
			s.Writes += v
		case k.Verb == "GET" || k.Verb == "LIST":
			s.Reads += v
		}
		if k.Verb == "POST" && k.Resource == "events.events.k8s.io" {
			s.EventCreates += v
		}
		if k.Verb == "LIST" && k.Resource == "workerpools.ate.dev" {
			s.PoolLists += v
		}
	}
	return s
}

// scrapeAPIServer reads apiserver_request_total from the API server's
// /metrics through the rest client.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (reqCounts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping the API server's /metrics: %w", err)
	}
	fams, err := parseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's /metrics: %w", err)
	}
	out := reqCounts{}
	for _, m := range fams["apiserver_request_total"].GetMetric() {
		res := label(m, "resource")
		if res == "" {
			continue // non-resource URLs (/metrics, discovery)
		}
		if g := label(m, "group"); g != "" {
			res += "." + g
		}
		if sub := label(m, "subresource"); sub != "" {
			res += "/" + sub
		}
		out[reqKey{Verb: label(m, "verb"), Resource: res}] += m.GetCounter().GetValue()
	}
	return out, nil
}

// requestCounter counts the bench's own requests the way the API server
// labels them, so they can be subtracted from its counters.
type requestCounter struct {
	mu sync.Mutex
	m  reqCounts
}

func newRequestCounter() *requestCounter { return &requestCounter{m: reqCounts{}} }

func (c *requestCounter) snapshot() reqCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.m)
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if k, ok := classify(req); ok {
			c.mu.Lock()
			c.m[k]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// classify names a request as the API server's metrics do: the verb (LIST
// and WATCH for collection GETs, APPLY for server-side apply) and the
// resource with its group and subresource.
func classify(req *http.Request) (reqKey, bool) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return reqKey{}, false
	}
	if len(parts) == 0 {
		return reqKey{}, false // discovery
	}
	if parts[0] == "namespaces" && len(parts) >= 3 {
		parts = parts[2:] // a namespaced resource
	}
	res, name, sub := parts[0], "", ""
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = parts[2]
	}
	if group != "" {
		res += "." + group
	}
	if sub != "" {
		res += "/" + sub
	}
	verb := req.Method
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "WATCH"
		case name == "":
			verb = "LIST"
		}
	case http.MethodPatch:
		if strings.HasPrefix(req.Header.Get("Content-Type"), "application/apply-patch") {
			verb = "APPLY"
		}
	case http.MethodDelete:
		if name == "" {
			verb = "DELETECOLLECTION"
		}
	}
	return reqKey{Verb: verb, Resource: res}, true
}
