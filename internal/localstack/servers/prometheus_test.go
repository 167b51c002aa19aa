package servers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"ate.dev/orchestrator/internal/promquery"
)

// TestPrometheusScrapesItsTargets runs the real Prometheus: a gauge served
// by a target added at run time is read back through the HTTP API, with
// the target's labels, as it changes; a removed target's series go stale;
// and the API server's job reaches an HTTPS server that demands the client
// certificate of the rest config it was given.
func TestPrometheusScrapesItsTargets(t *testing.T) {
	bin, err := PrometheusBinary()
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ate_test_gauge", Help: "A value the test sets."}, []string{"pool"})
	reg.MustRegister(gauge)
	gauge.WithLabelValues("a").Set(42)
	target := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(target.Close)

	apiServer, restConfig := clientCertServer(t)
	dir := t.TempDir()
	p, err := NewPrometheus(PrometheusConfig{
		Binary: bin, Dir: dir, ScrapeInterval: time.Second,
		APIServer: restConfig, APIServerScrapeInterval: time.Second,
		LogFile: filepath.Join(dir, "prometheus.log"),
	})
	require.NoError(t, err)
	require.Equal(t, "http://"+p.Address(), p.URL())
	ctx := context.Background()
	require.NoError(t, p.Start(ctx))
	t.Cleanup(func() { _ = p.Stop() })

	hostport := strings.TrimPrefix(target.URL, "http://")
	require.NoError(t, p.AddTarget("gauge", hostport, map[string]string{"stack": "test"}))
	want := `ate_test_gauge{instance="` + hostport + `", job="gauge", pool="a", stack="test"}`
	got, err := p.WaitForQuery(ctx, `ate_test_gauge{job="gauge"}`, 30*time.Second, nil)
	require.NoError(t, err, logTail(filepath.Join(dir, "prometheus.log"), 20))
	require.Equal(t, []promquery.Sample{{Labels: want, Value: 42}}, got)

	// A change shows at the next scrape.
	gauge.WithLabelValues("a").Set(7)
	_, err = p.WaitForQuery(ctx, `ate_test_gauge{job="gauge"}`, 30*time.Second, func(s []promquery.Sample) bool {
		return len(s) == 1 && s[0].Value == 7
	})
	require.NoError(t, err)

	// The API server's job authenticated with the client certificate (the
	// server refuses the handshake without one, and up would be 0).
	_, err = p.WaitForQuery(ctx, `up{job="kube-apiserver"}`, 30*time.Second, func(s []promquery.Sample) bool {
		return len(s) == 1 && s[0].Value == 1
	})
	require.NoError(t, err, logTail(filepath.Join(dir, "prometheus.log"), 20))
	require.NotZero(t, apiServer.scrapes(), "the API server's stand-in was never scraped")

	// Removed, the target's series go stale: an instant query finds none.
	require.NoError(t, p.RemoveTarget("gauge", hostport))
	_, err = p.WaitForQuery(ctx, `up{job="gauge"}`, 30*time.Second, func(s []promquery.Sample) bool { return len(s) == 0 })
	require.NoError(t, err)

	require.NoError(t, p.Stop())
	require.False(t, p.Running())
	_, err = p.Client().Query(ctx, "up", time.Time{})
	require.Error(t, err, "still answering after Stop")
}

// WaitForQuery fails, naming the query and the last answer, when the
// answer never comes.
func TestPrometheusWaitForQueryTimesOut(t *testing.T) {
	bin, err := PrometheusBinary()
	require.NoError(t, err)
	p, err := NewPrometheus(PrometheusConfig{Binary: bin, Dir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(func() { _ = p.Stop() })
	_, err = p.WaitForQuery(context.Background(), `absent_series_of_no_target`, time.Second, nil)
	require.ErrorContains(t, err, `"absent_series_of_no_target" did not answer as wanted within 1s: the last answer was []`)
}

// A target's file is replaced whole and removed by name; bad targets are
// refused before any file is written.
func TestPrometheusTargetFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WritePrometheusTarget(dir, "worker", "127.0.0.1:9090", map[string]string{"cluster": "local"}))
	require.NoError(t, WritePrometheusTarget(dir, "worker", "127.0.0.1:9090", map[string]string{"cluster": "local-2"}))
	b, err := os.ReadFile(filepath.Join(dir, "worker_127.0.0.1_9090.json"))
	require.NoError(t, err)
	require.JSONEq(t, `[{"targets":["127.0.0.1:9090"],"labels":{"job":"worker","cluster":"local-2"}}]`, string(b))
	require.ErrorContains(t, WritePrometheusTarget(dir, "worker", "127.0.0.1", nil), `target "127.0.0.1" of job worker is not a host:port`)
	require.ErrorContains(t, WritePrometheusTarget(dir, "", "127.0.0.1:1", nil), "needs a job")
	require.NoError(t, RemovePrometheusTarget(dir, "worker", "127.0.0.1:9090"))
	require.NoError(t, RemovePrometheusTarget(dir, "worker", "127.0.0.1:9090"), "removing a removed target")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// The API server's job takes a bearer token when the rest config has no
// client certificate, from a file only its owner reads.
func TestPrometheusAPIServerJobWithAToken(t *testing.T) {
	dir := t.TempDir()
	p, err := NewPrometheus(PrometheusConfig{Binary: "prometheus", Dir: dir, APIServer: &rest.Config{
		Host: "https://127.0.0.1:6443", BearerToken: "s3cret", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")},
	}})
	require.NoError(t, err)
	cfg, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	require.NoError(t, err)
	require.NotContains(t, string(cfg), "s3cret")
	require.Contains(t, string(cfg), "credentials_file: "+filepath.Join(dir, "kube-apiserver", "token"))
	st, err := os.Stat(filepath.Join(dir, "kube-apiserver", "token"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.Equal(t, "http://"+p.Address(), p.URL())

	_, err = NewPrometheus(PrometheusConfig{Binary: "prometheus", Dir: t.TempDir(), APIServer: &rest.Config{Host: "https://127.0.0.1:6443"}})
	require.ErrorContains(t, err, "neither a client certificate nor a bearer token")
}

// stand-in is an HTTPS server that serves /metrics only to a client
// certificate of its own CA, as kube-apiserver does to its admin.
type standIn struct{ n chan struct{} }

func (s standIn) scrapes() int { return len(s.n) }

// clientCertServer starts the stand-in and returns a rest config that
// reaches it: its serving CA, and a client certificate it trusts.
func clientCertServer(t *testing.T) (standIn, *rest.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	clients := x509.NewCertPool()
	clients.AddCert(cert)

	s := standIn{n: make(chan struct{}, 1000)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.n <- struct{}{}:
		default:
		}
		_, _ = io.WriteString(w, "# TYPE apiserver_stand_in gauge\napiserver_stand_in 1\n")
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clients, MinVersion: tls.VersionTLS12}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return s, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
		CertData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyData:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}}
}
