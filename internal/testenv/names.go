package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/localstack/servers"
)

// Namespace creates a Kubernetes namespace named after the test with a
// random suffix, and deletes it when the test ends. (envtest runs no
// namespace controller, so the deleted namespace stays Terminating; its
// name is never reused.)
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := UniqueName(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Kube.Create(ctx, ns); err != nil {
		t.Fatalf("testenv: creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Kube.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			t.Errorf("testenv: deleting namespace %s: %v", name, err)
		}
	})
	return name
}

// TaskQueue returns a Temporal task queue name unique to this call, so
// workers of different tests never take each other's tasks.
func TaskQueue(t testing.TB) string {
	return "tq-" + UniqueName(t)
}

// UniqueName is a DNS label (at most 63 characters) made of the test's
// name and a random suffix.
func UniqueName(t testing.TB) string {
	var b strings.Builder
	dash := true // no leading dash, no runs of dashes
	for _, r := range strings.ToLower(t.Name()) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	base := strings.TrimSuffix(b.String(), "-")
	if len(base) > 50 {
		base = strings.TrimSuffix(base[:50], "-")
	}
	if base == "" {
		base = "t"
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	return base + "-" + hex.EncodeToString(suffix)
}

// FreeAddr is a free TCP address on 127.0.0.1 (servers.FreeAddr, the one
// free-port helper), for a program's metrics or probe server.
func FreeAddr(t testing.TB) string {
	t.Helper()
	addr, err := servers.FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
