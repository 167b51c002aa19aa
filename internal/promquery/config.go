// Package promquery is how the worker asks a Prometheus server for the
// values a rollout's analysis judges: instant PromQL queries over its HTTP
// API (client_golang's api/prometheus/v1), with an optional bearer token and
// CA bundle. It defines no flag: internal/options binds --prometheus-url,
// --prometheus-bearer-token-file and --prometheus-ca-file to Config.
package promquery

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Config is how the worker reaches Prometheus.
type Config struct {
	URL             string // http(s)://host:port[/prefix]; "" = no Prometheus
	BearerTokenFile string // optional; read on every request (rotated tokens)
	CAFile          string // optional; PEM bundle for an https URL
}

// The flags (and their environment variables) that set Config's fields,
// named in Validate's errors: the flag is what an operator changes.
const (
	urlFlag   = "--prometheus-url (PROMETHEUS_URL)"
	tokenFlag = "--prometheus-bearer-token-file (PROMETHEUS_BEARER_TOKEN_FILE)"
	caFlag    = "--prometheus-ca-file (PROMETHEUS_CA_FILE)"
)

// Validate checks what can be checked before the first query: the URL's
// form, and that the files exist, are readable and hold a token and
// certificates. A token or CA without a URL is refused rather than
// ignored: it says a URL was meant and is missing.
func (c Config) Validate() error {
	if c.URL == "" {
		var set []string
		if c.BearerTokenFile != "" {
			set = append(set, tokenFlag)
		}
		if c.CAFile != "" {
			set = append(set, caFlag)
		}
		if len(set) > 0 {
			return fmt.Errorf("%s set without %s: set the URL of the Prometheus to query, or unset them", strings.Join(set, " and "), urlFlag)
		}
		return nil
	}
	u, err := parseURL(c.URL)
	if err != nil {
		return err
	}
	var errs []error
	if c.BearerTokenFile != "" {
		if _, err := readToken(c.BearerTokenFile); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", tokenFlag, err))
		}
	}
	if c.CAFile != "" {
		if u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("%s applies to an https %s, got %s", caFlag, urlFlag, u.Redacted()))
		} else if _, err := readCA(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", caFlag, err))
		}
	}
	return errors.Join(errs...)
}

// parseURL accepts http(s)://host[:port][/prefix]. A query or fragment is
// refused: the client appends /api/v1/query to the path and would drop them.
func parseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s must be an http or https URL: %w", urlFlag, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s must be an http or https URL such as http://prometheus.monitoring:9090, got %q", urlFlag, u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s must have no query or fragment (a path prefix is fine), got %q", urlFlag, u.Redacted())
	}
	return u, nil
}

// readToken reads a bearer token file: the token is its content without
// surrounding white space (a Secret's key mounted as a file, a projected
// service account token).
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the bearer token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("the bearer token file %s is empty", path)
	}
	return token, nil
}

// readCA reads a PEM bundle of CA certificates.
func readCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the CA bundle: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("the CA bundle %s holds no PEM certificate", path)
	}
	return pool, nil
}
