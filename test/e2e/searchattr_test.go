package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"ate.dev/orchestrator/internal/probes"
	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/searchattr"
	"ate.dev/orchestrator/internal/syncbuf"
	"ate.dev/orchestrator/internal/testenv"
)

// TestMissingSearchAttributesKeepAProcessNotReady: in a Temporal namespace
// created without the product's custom search attributes, the readiness the
// worker and the starter serve fails, naming each missing attribute, and the
// log gives the command that registers it. Once an operator has run those
// exact commands, the process turns ready without a restart.
func TestMissingSearchAttributesKeepAProcessNotReady(t *testing.T) {
	env := testenv.Current()
	ctx := context.Background()
	namespace := "sa-" + testenv.UniqueName(t)
	if len(namespace) > 60 {
		namespace = namespace[:60]
	}
	opts := env.TemporalClientOptions()
	opts.Namespace = namespace
	nsClient, err := tclient.NewNamespaceClient(opts)
	require.NoError(t, err)
	defer nsClient.Close()
	require.NoError(t, nsClient.Register(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
	}))
	c, err := tclient.DialContext(ctx, opts)
	require.NoError(t, err)
	defer c.Close()

	var logs syncbuf.Buffer
	attrs := &probes.SearchAttributes{Namespace: namespace, Every: 100 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))}
	var conn probes.Connecting
	addr := testenv.FreeAddr(t)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// As the mains wire it.
	probes.Serve(wctx, addr, probes.All(conn.Ready, attrs.Ready), slog.Default())
	conn.Connected(c)
	go attrs.Watch(wctx, c)

	var commands []string
	for _, d := range searchattr.Definitions {
		commands = append(commands, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type Keyword", namespace, d.Name))
	}
	producttest.Eventually(t, "not ready, naming the missing search attributes", func() (bool, string) {
		code, body := readyz(addr)
		return code == http.StatusServiceUnavailable && strings.Contains(body, commands[0]), fmt.Sprintf("%d %s", code, body)
	})
	_, body := readyz(addr)
	for _, d := range searchattr.Definitions {
		require.Contains(t, body, "search attribute "+d.Name+" (Keyword) is not registered")
	}
	for _, cmd := range commands {
		require.Contains(t, logs.String(), `command="`+cmd+`"`)
	}

	// The operator runs what the log says, against this server.
	for _, cmd := range commands {
		args := strings.Fields(cmd)
		run := exec.Command(env.TemporalCLI, args[1:]...)
		run.Env = append(os.Environ(), "TEMPORAL_ADDRESS="+env.TemporalAddress)
		out, err := run.CombinedOutput()
		require.NoError(t, err, "%s: %s", cmd, out)
	}
	producttest.Eventually(t, "ready once they exist", func() (bool, string) {
		code, body := readyz(addr)
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	require.Contains(t, logs.String(), "every custom search attribute is registered")
}

func readyz(addr string) (int, string) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
