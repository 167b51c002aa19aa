package promquery

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakePrometheus answers /api/v1/query with body and status, and records
// what each request asked.
type fakePrometheus struct {
	status int
	body   string

	mu       sync.Mutex
	requests []request
}

type request struct {
	path, query, time, authorization string
}

func (f *fakePrometheus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm() // the client POSTs the query as a form, or GETs it
	f.mu.Lock()
	f.requests = append(f.requests, request{path: r.URL.Path, query: r.Form.Get("query"), time: r.Form.Get("time"), authorization: r.Header.Get("Authorization")})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.status)
	_, _ = w.Write([]byte(f.body))
}

func (f *fakePrometheus) last(t *testing.T) request {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotEmpty(t, f.requests, "no request reached the fake Prometheus")
	return f.requests[len(f.requests)-1]
}

func TestQuery(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    []Sample
		wantErr []string // substrings of the error
	}{
		{
			name: "a scalar is one sample without labels",
			body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0.25"]}}`,
			want: []Sample{{Labels: "", Value: 0.25}},
		},
		{
			name: "a vector is a sample per series, sorted by labels",
			body: `{"status":"success","data":{"resultType":"vector","result":[
				{"metric":{"__name__":"up","job":"starter"},"value":[1700000000,"0"]},
				{"metric":{"pool":"a"},"value":[1700000000,"1.5"]},
				{"metric":{"__name__":"up","job":"apiserver"},"value":[1700000000,"1"]}]}}`,
			want: []Sample{
				{Labels: `up{job="apiserver"}`, Value: 1},
				{Labels: `up{job="starter"}`, Value: 0},
				{Labels: `{pool="a"}`, Value: 1.5},
			},
		},
		{
			name: "an empty vector is no data, not an error",
			body: `{"status":"success","data":{"resultType":"vector","result":[]}}`,
			want: []Sample{},
		},
		{
			name:    "a matrix is an error",
			body:    `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pool":"a"},"values":[[1700000000,"1"]]}]}}`,
			wantErr: []string{"the result is a matrix, not a scalar or an instant vector"},
		},
		{
			name:    "a string is an error",
			body:    `{"status":"success","data":{"resultType":"string","result":[1700000000,"hello"]}}`,
			wantErr: []string{`"string"`},
		},
		{
			name:    "a query Prometheus refuses",
			status:  http.StatusBadRequest,
			body:    `{"status":"error","errorType":"bad_data","error":"parse error: unexpected end of input"}`,
			wantErr: []string{"bad_data", "parse error: unexpected end of input"},
		},
		{
			name:    "an HTTP error",
			status:  http.StatusBadGateway,
			body:    `upstream down`,
			wantErr: []string{"server error: 502", "(the server said: upstream down)"},
		},
	}
	at := time.Unix(1700000000, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakePrometheus{status: tt.status, body: tt.body}
			if fake.status == 0 {
				fake.status = http.StatusOK
			}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			// A path prefix, as behind a proxy: the API is under it.
			c, err := New(Config{URL: srv.URL + "/prom/"})
			require.NoError(t, err)

			got, err := c.Query(context.Background(), `sum(rate(x[1m]))`, at)
			require.Equal(t, request{path: "/prom/api/v1/query", query: `sum(rate(x[1m]))`, time: "1700000000"}, fake.last(t))
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				// Every error names the Prometheus and the query.
				for _, want := range append([]string{srv.URL + "/prom/", `"sum(rate(x[1m]))"`}, tt.wantErr...) {
					require.ErrorContains(t, err, want)
				}
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

// The token is read from its file on every request: a rotated token is
// sent from the next query on, and a token file gone fails the query
// without a request.
func TestQuerySendsTheBearerTokenOfItsFile(t *testing.T) {
	fake := &fakePrometheus{status: http.StatusOK, body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("first\n"), 0o600))
	c, err := New(Config{URL: srv.URL, BearerTokenFile: token})
	require.NoError(t, err)

	_, err = c.Query(context.Background(), "1", time.Time{})
	require.NoError(t, err)
	require.Equal(t, "Bearer first", fake.last(t).authorization)
	require.Empty(t, fake.last(t).time, "a zero time is the server's now")

	require.NoError(t, os.WriteFile(token, []byte("rotated"), 0o600))
	_, err = c.Query(context.Background(), "1", time.Time{})
	require.NoError(t, err)
	require.Equal(t, "Bearer rotated", fake.last(t).authorization)

	require.NoError(t, os.Remove(token))
	_, err = c.Query(context.Background(), "1", time.Time{})
	require.ErrorContains(t, err, "--prometheus-bearer-token-file")
	require.ErrorContains(t, err, "reading the bearer token")
	fake.mu.Lock()
	require.Len(t, fake.requests, 2, "a query without its token was sent")
	fake.mu.Unlock()
}

// An https Prometheus whose certificate a private CA signed is trusted
// with --prometheus-ca-file, and not without it.
func TestQueryTrustsTheCAFile(t *testing.T) {
	fake := &fakePrometheus{status: http.StatusOK, body: `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"7"]}}`}
	srv := httptest.NewUnstartedServer(fake)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	c, err := New(Config{URL: srv.URL, CAFile: ca})
	require.NoError(t, err)
	got, err := c.Query(context.Background(), "7", time.Time{})
	require.NoError(t, err)
	require.Equal(t, []Sample{{Value: 7}}, got)

	without, err := New(Config{URL: srv.URL})
	require.NoError(t, err)
	_, err = without.Query(context.Background(), "7", time.Time{})
	require.ErrorContains(t, err, "certificate signed by unknown authority")
}

// A query is bounded by its context's deadline; the server's slowness
// fails it rather than holding it.
func TestQueryHonoursTheContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers only when the client has gone or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	c, err := New(Config{URL: srv.URL})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err = c.Query(ctx, "up", time.Time{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(started), DefaultTimeout, "the context's deadline, not the default, bounds the query")
}

func TestNewWithoutURLIsNoClient(t *testing.T) {
	c, err := New(Config{})
	require.NoError(t, err)
	require.Nil(t, c)

	c, err = New(Config{BearerTokenFile: "/token"})
	require.ErrorContains(t, err, "without --prometheus-url")
	require.Nil(t, c)
}

// The URL in errors and URL() never carries a password.
func TestClientURLIsRedacted(t *testing.T) {
	c, err := New(Config{URL: "http://user:secret@127.0.0.1:1"})
	require.NoError(t, err)
	require.Equal(t, "http://user:xxxxx@127.0.0.1:1", c.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Query(ctx, "up", time.Time{})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}
