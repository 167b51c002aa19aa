package promquery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultTimeout bounds a query whose context has no deadline: an
// unreachable Prometheus must fail the query, which the caller may retry,
// rather than hold it for as long as TCP does.
const DefaultTimeout = 10 * time.Second

// Client runs instant queries against one Prometheus. It is safe for
// concurrent use.
type Client struct {
	url string // redacted: no password, for errors
	api v1.API
}

// New is a client of c's Prometheus, after Validate; nil, nil when c.URL
// is "" (no Prometheus configured). The CA bundle is read once, here; the
// bearer token on every request, so a rotated token is used as soon as its
// file changes.
func New(c Config) (*Client, error) {
	if c.URL == "" {
		return nil, c.Validate() // a token or CA without URL is still an error
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	u, err := parseURL(c.URL)
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if c.CAFile != "" {
		pool, err := readCA(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caFlag, err)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = transport
	if c.BearerTokenFile != "" {
		rt = &bearerToken{file: c.BearerTokenFile, next: transport}
	}
	ac, err := api.NewClient(api.Config{Address: c.URL, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", urlFlag, err)
	}
	return &Client{url: u.Redacted(), api: v1.NewAPI(ac)}, nil
}

// URL is the Prometheus the client queries, without a password if the
// URL had one.
func (c *Client) URL() string { return c.url }

// Sample is one series of an instant query's result.
type Sample struct {
	Labels string // the series' labels, e.g. {pool="a"}; "" for a scalar
	Value  float64
}

// Query runs an instant PromQL query at time at. A scalar gives one
// Sample; a vector one per series (empty: no data); a matrix or string
// result is an error. Errors name the Prometheus URL and the query.
//
// A vector's samples are sorted by their labels, so that one answer is
// always recorded the same way; a series' labels are its metric name and
// label set as PromQL prints them (up{job="worker"}; {} for a series with
// none, such as sum(...)'s). A zero at is the server's now. Prometheus'
// warnings (e.g. a counter function over a series that is not a counter)
// are dropped: the value is what the caller judges. With no deadline on
// ctx the query is bounded by DefaultTimeout.
func (c *Client) Query(ctx context.Context, query string, at time.Time) ([]Sample, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	value, _, _, err := c.api.Query(ctx, query, at)
	if err != nil {
		return nil, fmt.Errorf("querying Prometheus %s for %q: %w%s", c.url, query, err, detail(err))
	}
	switch v := value.(type) {
	case *model.Scalar:
		return []Sample{{Value: float64(v.Value)}}, nil
	case model.Vector:
		out := make([]Sample, 0, len(v))
		for _, s := range v {
			out = append(out, Sample{Labels: s.Metric.String(), Value: float64(s.Value)})
		}
		slices.SortFunc(out, func(a, b Sample) int { return strings.Compare(a.Labels, b.Labels) })
		return out, nil
	case nil:
		return nil, fmt.Errorf("querying Prometheus %s for %q: the answer has no result", c.url, query)
	default:
		// A matrix is a range selector (x[5m]) without a function over it.
		// (client_golang itself refuses a string result.)
		return nil, fmt.Errorf("querying Prometheus %s for %q: the result is a %s, not a scalar or an instant vector", c.url, query, value.Type())
	}
}

// detail is what the server answered with an HTTP error that is not
// Prometheus' own (a proxy's 401 or 502 page), which client_golang keeps
// out of its error's message; at most maxDetail bytes of it.
func detail(err error) string {
	const maxDetail = 512
	var apiErr *v1.Error
	if !errors.As(err, &apiErr) || apiErr.Detail == "" {
		return ""
	}
	d := strings.TrimSpace(apiErr.Detail)
	if len(d) > maxDetail {
		d = d[:maxDetail] + "..."
	}
	return " (the server said: " + d + ")"
}

// bearerToken sets the token of file on every request, read each time: a
// projected service account token, or a Secret mounted as a file, is
// rotated by rewriting the file.
type bearerToken struct {
	file string
	next http.RoundTripper
}

func (b *bearerToken) RoundTrip(req *http.Request) (*http.Response, error) {
	token, err := readToken(b.file)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, fmt.Errorf("%s: %w", tokenFlag, err)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change its request
	req.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(req)
}
