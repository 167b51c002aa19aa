package rbac

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

// TestMetricsEndpointAuthenticatesAndAuthorises serves /metrics as each
// deployed process does (HTTPS, METRICS_SECURE), reviewing requests with the
// process's own ServiceAccount and its generated roles, and checks, against
// the real API server, that it refuses a request without a token (401) and
// one whose ServiceAccount has no right to /metrics (403), and serves one
// whose ServiceAccount is bound to deploy/'s ate-orchestrator-metrics-reader.
func TestMetricsEndpointAuthenticatesAndAuthorises(t *testing.T) {
	installRBAC(t)
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(env.RestConfig)
	require.NoError(t, err)
	ns := env.Namespace(t)

	// Prometheus's identity, bound to the shipped reader role, and one
	// with no right at all.
	token := func(sa string) string {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err, "creating ServiceAccount %s", sa)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err, "requesting a token of %s", sa)
		return tr.Status.Token
	}
	scraper, stranger := token("prometheus"), token("stranger")
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ate-orchestrator-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: ns}},
	}
	_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})

	// The server's certificate is self-signed: the client trusts it as the
	// shipped PodMonitor does.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test server
	get := func(url, bearer string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, "", err
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}

	for _, process := range []string{workerSA, starterSA} {
		t.Run(process, func(t *testing.T) {
			sctx, stop := context.WithCancel(ctx)
			defer stop()
			addr := testenv.FreeAddr(t)
			url := "https://" + addr + "/metrics"
			require.NoError(t, probes.ServeMetrics(sctx, probes.Metrics{BindAddress: addr, Secure: true}, as(process), slog.New(slog.DiscardHandler)))

			// Up: it answers HTTPS (with a refusal, without a token).
			var code int
			producttest.Eventually(t, "the HTTPS metrics endpoint to answer", func() (bool, string) {
				var err error
				code, _, err = get(url, "")
				return err == nil, fmt.Sprint(err)
			})
			require.Equal(t, http.StatusUnauthorized, code, "a request without a token")

			// A token the TokenReview rejects: controller-runtime's filter
			// answers 500 ("Authentication failed": the authenticator
			// returns an error, not a plain no), never the metrics.
			code, body, err := get(url, "not-a-token")
			require.NoError(t, err)
			require.Contains(t, []int{http.StatusUnauthorized, http.StatusInternalServerError}, code, "a request with a token the API server does not know: %s", body)
			require.NotContains(t, body, "# HELP")

			code, body, err = get(url, stranger)
			require.NoError(t, err)
			require.Equal(t, http.StatusForbidden, code, "a ServiceAccount without get on /metrics: %s", body)

			code, body, err = get(url, scraper)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code, "a ServiceAccount bound to ate-orchestrator-metrics-reader: %s", body)
			require.Contains(t, body, "# HELP rest_client_requests_total", "controller-runtime's registry")

			// Plain HTTP is not served on the HTTPS port.
			_, _, err = get("http://"+addr+"/metrics", scraper)
			if err == nil {
				plain, _, _ := get("http://"+addr+"/metrics", scraper)
				require.NotEqual(t, http.StatusOK, plain, "plain HTTP must not serve the metrics")
			}
		})
	}
}
