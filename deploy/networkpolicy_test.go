package deploy_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/internal/testenv"
)

const networkPolicyComponent = "components/networkpolicy"

// overlay writes a kustomization.yaml into a directory of its own, with
// "../ate-orchestrator/deploy" (the path deploy/README.md's overlays use)
// pointing at this deploy/, and builds it.
func overlay(t *testing.T, kustomization string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	deploy, err := filepath.Abs(".")
	require.NoError(t, err)
	rel, err := filepath.Rel(dir, deploy) // kustomize refuses absolute paths
	require.NoError(t, err)
	kustomization = strings.ReplaceAll(kustomization, "../ate-orchestrator/deploy", rel)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644))
	return buildDir(t, dir)
}

// withNetworkPolicy builds deploy/ with the NetworkPolicy component, as an
// overlay of deploy/README.md's first form does.
func withNetworkPolicy(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return overlay(t, "resources:\n  - ../ate-orchestrator/deploy\ncomponents:\n  - ../ate-orchestrator/deploy/"+networkPolicyComponent+"\n")
}

func networkPolicies(t *testing.T, objs []*unstructured.Unstructured) map[string]*networkingv1.NetworkPolicy {
	t.Helper()
	out := map[string]*networkingv1.NetworkPolicy{}
	for _, o := range objs {
		if o.GetKind() != "NetworkPolicy" {
			continue
		}
		np := &networkingv1.NetworkPolicy{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, np))
		out[np.Name] = np
	}
	return out
}

// pod is the pod a Deployment of the build makes: its labels and its
// container ports.
type pod struct {
	labels labels.Set
	ports  []corev1.ContainerPort
}

func pods(t *testing.T, objs []*unstructured.Unstructured) map[string]pod {
	t.Helper()
	out := map[string]pod{}
	for _, name := range []string{"worker", "starter"} {
		var d appsv1.Deployment
		require.True(t, find(t, objs, "Deployment", "ate-orchestrator-"+name, &d))
		var ports []corev1.ContainerPort
		for _, c := range d.Spec.Template.Spec.Containers {
			ports = append(ports, c.Ports...)
		}
		out[name] = pod{labels: d.Spec.Template.Labels, ports: ports}
	}
	return out
}

// selecting returns the policies of a type that select the pod.
func selecting(t *testing.T, nps map[string]*networkingv1.NetworkPolicy, p pod, typ networkingv1.PolicyType) []*networkingv1.NetworkPolicy {
	t.Helper()
	var out []*networkingv1.NetworkPolicy
	for _, np := range nps {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		require.NoError(t, err)
		if sel.Matches(p.labels) && slices.Contains(np.Spec.PolicyTypes, typ) {
			out = append(out, np)
		}
	}
	return out
}

// TestNetworkPolicyComponent builds deploy/ with the component and checks,
// for each pod of the worker and the starter, what the policies that
// select it allow: ingress on its metrics and probe ports only, egress to
// DNS, the API server and the Temporal port of the ConfigMap's
// TEMPORAL_ADDRESS only; and that without the component there is no
// NetworkPolicy at all.
func TestNetworkPolicyComponent(t *testing.T) {
	require.Empty(t, networkPolicies(t, build(t)), "deploy/ alone has NetworkPolicies: they are the optional component's")

	objs := withNetworkPolicy(t)
	nps := networkPolicies(t, objs)
	require.Len(t, nps, 5)
	for _, np := range nps {
		require.Equal(t, systemNamespace, np.Namespace, "NetworkPolicy %s", np.Name)
		require.NotEmpty(t, np.Spec.PolicyTypes, "NetworkPolicy %s: without policyTypes, one with no ingress rules would deny ingress too", np.Name)
	}
	deny := nps["ate-orchestrator-default-deny"]
	require.NotNil(t, deny)
	require.Empty(t, deny.Spec.PodSelector.MatchLabels, "the default deny selects every pod of ate-system")
	require.Empty(t, deny.Spec.PodSelector.MatchExpressions)
	require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, deny.Spec.PolicyTypes)
	require.Empty(t, deny.Spec.Ingress)
	require.Empty(t, deny.Spec.Egress)

	temporalPort := temporalPortOf(t, objs)
	for name, p := range pods(t, objs) {
		t.Run(name, func(t *testing.T) {
			ingress := selecting(t, nps, p, networkingv1.PolicyTypeIngress)
			egress := selecting(t, nps, p, networkingv1.PolicyTypeEgress)
			require.Contains(t, ingress, deny)
			require.Contains(t, egress, deny)
			require.Greater(t, len(ingress), 1, "no policy lets Prometheus or the kubelet reach the %s", name)

			// Ingress: the named ports of the pod's metrics and probes,
			// from anyone.
			var in []string
			for _, np := range ingress {
				for _, r := range np.Spec.Ingress {
					for _, port := range r.Ports {
						require.Equal(t, intstr.String, port.Port.Type, "%s: a port by number would not follow the Deployment's", np.Name)
						require.True(t, slices.ContainsFunc(p.ports, func(c corev1.ContainerPort) bool { return c.Name == port.Port.StrVal }),
							"%s allows port %s, which the %s's containers do not declare (%v)", np.Name, port.Port.StrVal, name, p.ports)
						in = append(in, port.Port.StrVal)
					}
				}
			}
			require.ElementsMatch(t, []string{"metrics", "health"}, in)

			// Egress: DNS, the API server, Temporal.
			var out []string
			for _, np := range egress {
				for _, r := range np.Spec.Egress {
					for _, port := range r.Ports {
						out = append(out, string(*port.Protocol)+"/"+port.Port.String())
					}
				}
			}
			require.ElementsMatch(t, []string{"UDP/53", "TCP/53", "TCP/443", "TCP/6443", "TCP/" + strconv.Itoa(temporalPort)}, out)
		})
	}
}

// TestNetworkPolicyLetsTheTeardownJobOut: the teardown Job of docs/install.md
// ("Uninstall") runs in ate-system, so the component's default deny
// selects it; its pod's labels must let it resolve and reach the API server.
func TestNetworkPolicyLetsTheTeardownJobOut(t *testing.T) {
	readme, err := os.ReadFile("../docs/install.md")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?s)kubectl -n ate-system apply --server-side -f - <<'EOF'\n(.*?)\nEOF\n`).FindSubmatch(readme)
	require.NotNil(t, m, "docs/install.md has no teardown Job applied with a here-document")
	var job batchv1.Job
	require.NoError(t, yaml.UnmarshalStrict(m[1], &job))
	require.Equal(t, []string{"/usr/local/bin/teardown"}, job.Spec.Template.Spec.Containers[0].Command)
	nps := networkPolicies(t, withNetworkPolicy(t))
	egress := selecting(t, nps, pod{labels: job.Spec.Template.Labels}, networkingv1.PolicyTypeEgress)
	for _, want := range []string{"ate-orchestrator-default-deny", "ate-orchestrator-allow-apiserver", "ate-orchestrator-allow-dns"} {
		require.True(t, slices.ContainsFunc(egress, func(np *networkingv1.NetworkPolicy) bool { return np.Name == want }),
			"the teardown Job's pod (labels %v) is not selected by %s", job.Spec.Template.Labels, want)
	}
}

// temporalPortOf is the port of the ConfigMap's TEMPORAL_ADDRESS.
func temporalPortOf(t *testing.T, objs []*unstructured.Unstructured) int {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && strings.HasPrefix(o.GetName(), "ate-orchestrator-config-") {
			addr, _, _ := unstructured.NestedString(o.Object, "data", "TEMPORAL_ADDRESS")
			_, port, err := net.SplitHostPort(addr)
			require.NoError(t, err, "TEMPORAL_ADDRESS %q", addr)
			n, err := strconv.Atoi(port)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no ConfigMap ate-orchestrator-config-<hash>")
	return 0
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// TestNetworkPolicyREADMEOverlay builds the overlay deploy/README.md shows
// for a Temporal on another port and in a namespace of the cluster: its
// patches change ate-orchestrator-allow-temporal, and only it.
func TestNetworkPolicyREADMEOverlay(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var snippet string
	for _, m := range yamlBlock.FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], networkPolicyComponent) && strings.Contains(m[1], "patches:") {
			snippet = m[1]
		}
	}
	require.NotEmpty(t, snippet, "deploy/README.md has no overlay with the NetworkPolicy component and a patch")
	port := regexp.MustCompile(`path: /spec/egress/0/ports/0/port\s+value: (\d+)`).FindStringSubmatch(snippet)
	require.NotNil(t, port, "the overlay does not patch the Temporal port:\n%s", snippet)

	patched := networkPolicies(t, overlay(t, snippet))
	shipped := networkPolicies(t, withNetworkPolicy(t))
	require.Len(t, patched, len(shipped))
	for name, np := range patched {
		if name != "ate-orchestrator-allow-temporal" {
			require.Equal(t, shipped[name].Spec, np.Spec, "the overlay changed %s", name)
			continue
		}
		require.Len(t, np.Spec.Egress, 1)
		rule := np.Spec.Egress[0]
		require.Equal(t, port[1], rule.Ports[0].Port.String())
		require.Len(t, rule.To, 1, "the overlay narrows Temporal to a namespace")
		require.Equal(t, map[string]string{"kubernetes.io/metadata.name": "temporal"}, rule.To[0].NamespaceSelector.MatchLabels)
	}
}

// TestNetworkPolicyAppliesToAPIServer applies the component's policies
// server-side to a real kube-apiserver, which validates them (named ports,
// protocols, selectors) and stores them as written.
func TestNetworkPolicyAppliesToAPIServer(t *testing.T) {
	env := testenv.Current()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}
	if err := env.Kube.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	owner := client.FieldOwner("ate-deploy-test")
	built := networkPolicies(t, withNetworkPolicy(t))
	for _, o := range withNetworkPolicy(t) {
		if o.GetKind() != "NetworkPolicy" {
			continue
		}
		require.NoError(t, env.Kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), owner, client.ForceOwnership),
			"server-side apply of NetworkPolicy %s", o.GetName())
		t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), o.DeepCopy()) })
		var stored networkingv1.NetworkPolicy
		require.NoError(t, env.Kube.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: o.GetName()}, &stored))
		require.Equal(t, built[o.GetName()].Spec, stored.Spec, "NetworkPolicy %s as stored", o.GetName())
	}
	// The server does refuse a broken one: a port name that is no
	// IANA_SVC_NAME.
	bad := built["ate-orchestrator-allow-metrics-and-probes"].DeepCopy()
	bad.Name, bad.ResourceVersion = "ate-orchestrator-broken", ""
	bad.Spec.Ingress[0].Ports[0].Port = ptr.To(intstr.FromString("Not_A_Port"))
	err := env.Kube.Create(ctx, bad, client.DryRunAll)
	require.True(t, apierrors.IsInvalid(err), "a NetworkPolicy with port Not_A_Port: %v", err)
}
