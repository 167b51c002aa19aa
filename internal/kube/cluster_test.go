package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"ate.dev/orchestrator/internal/wfapi"
)

func TestClusterIdentity(t *testing.T) {
	kubeSystem := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab"}}
	tests := []struct {
		name    string
		objects []corev1.Namespace
		set     string
		want    wfapi.Cluster
		err     string
	}{
		{name: "a name set wins", objects: []corev1.Namespace{*kubeSystem}, set: "prod-eu-1", want: "prod-eu-1"},
		{name: "a name set needs no API server", set: "prod-eu-1", want: "prod-eu-1"},
		{name: "no name: kube-system's UID", objects: []corev1.Namespace{*kubeSystem}, want: "5f1b0c2e-8a7d-4c9b-9e3f-0123456789ab"},
		{name: "no name and no kube-system", err: "reading namespace kube-system"},
		{name: "a name that cannot stand in a workflow ID", set: "prod/eu", err: `--cluster-name: cluster name "prod/eu" is not a DNS label`},
		{name: "an upper-case name", set: "Prod", err: "is not a DNS label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset()
			for i := range tt.objects {
				_, err := cs.CoreV1().Namespaces().Create(context.Background(), &tt.objects[i], metav1.CreateOptions{})
				require.NoError(t, err)
			}
			got, err := ClusterIdentity(context.Background(), cs, tt.set)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
