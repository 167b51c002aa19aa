package v1alpha1_test

// API validation against a real kube-apiserver with the generated CRDs of
// deploy/crds installed: for every rule of the kubebuilder markers, a valid
// and an invalid object. An invalid object must be refused as Invalid with a
// cause on the field the rule guards (and, for CEL rules, the rule's
// message), and with no cause elsewhere, so each case proves the rule it
// names and nothing else.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	atev1alpha1 "ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, testenv.Options{NoTemporal: true})) }

const (
	digest    = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	pause     = "registry.example/pause@" + digest
	assetHash = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
)

// cause is one expected field error: the field the API server names
// (metav1.StatusCause.Field) and a substring of its message.
type cause struct{ field, msg string }

// Messages of the API server's schema validation, and of the CEL rules of
// the markers (quoted verbatim so a changed message fails here).
const (
	msgRequired     = "Required value"
	msgUnsupported  = "Unsupported value"
	msgTooLong      = "Too long"
	msgTooMany      = "Too many"
	msgDuplicate    = "Duplicate value"
	msgPattern      = "should match"
	msgMinimum0     = "should be greater than or equal to 0"
	msgAtLeast1Char = "should be at least 1 chars long"

	// The API server adds this cause, on no field, when schema errors made
	// it skip the CEL rules; requireInvalid ignores it.
	msgRulesNotChecked = "some validation rules were not checked because the object was invalid"

	celClassImmutable    = "sandbox class names are immutable; create a new WorkerPool to change the class"
	celLabelKey          = "label keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	celLabelReserved     = "label keys in the ate.dev domain and its subdomains are reserved"
	celAnnotationKey     = "annotation keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	celAnnotationRes     = "annotation keys in the ate.dev domain and its subdomains are reserved"
	celDefaultExists     = "defaultVersion must name one of spec.versions"
	celDefaultEnabled    = "defaultVersion must not name a Disabled version"
	celPauseRequired     = "pauseImage is required on every version of a gvisor SandboxConfig"
	celPauseGVisorOnly   = "pauseImage is only allowed for the gvisor sandbox class"
	celGVisorAssets      = "every version of a gvisor SandboxConfig needs assets, and a 'gvisor' (release tarball) or legacy 'runsc' asset for every architecture it lists"
	celMicroVMAssets     = "every version of a microvm SandboxConfig needs assets, and the cloud-hypervisor, virtiofsd, kata-kernel and kata-image assets for every architecture it lists"
	celClaims            = "spec.template.resources.claims is not supported: a worker pod declares no resource claims"
	celSelectorTerms     = "spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms must have at least one term"
	celNodeSelectorKey   = "spec.template.nodeSelector keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	celPoolName          = "metadata.name must be at most 63 characters: a WorkerPool's name is the value of its pods' ate.dev/worker-pool label"
	celOneOfPoolsPercent = "a rollout step sets exactly one of pools and percent"
	celPauseDuration     = "spec.rollout.steps[].pause must be a duration such as 30s, 10m or 1h30m"
	celMetricBound       = "spec.rollout.analysis.metrics[] sets min, max or both: a metric with no bound checks nothing"
	celAfterClusters     = "spec.rollout.after.clusters[] must each be a cluster name as the orchestrator's --cluster-name takes it: a DNS label (at most 63 lowercase letters, digits and '-', beginning and ending with a letter or digit)"
	celAfterBake         = "spec.rollout.after.bake must be a duration such as 30s, 10m or 1h30m"
	celConfigRefName     = "configRef.name must be a SandboxConfig's name, a DNS subdomain: lowercase alphanumerics, '-' and '.', beginning and ending with an alphanumeric; SandboxConfigs are cluster-scoped, so it has no namespace/ prefix"
)

// Fields as the API server names them in its causes.
const (
	fieldReplicas       = "spec.replicas"
	fieldWorkerImage    = "spec.workerImage"
	fieldClasses        = "spec.sandboxClasses"
	fieldLabels         = "spec.template.labels"
	fieldAnnotations    = "spec.template.annotations"
	fieldDefaultVersion = "spec.defaultVersion"
	fieldVersions       = "spec.versions"
)

// requireInvalid asserts err is an Invalid error whose causes are exactly
// want: each wanted cause is reported, its field is named in the message,
// and no other cause is (but the note that CEL rules were skipped).
func requireInvalid(t *testing.T, err error, want ...cause) {
	t.Helper()
	require.Error(t, err, "the API server accepted an object that breaks the rule")
	require.Truef(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status))
	require.NotNil(t, status.Status().Details, "Invalid error without details: %v", err)
	got := status.Status().Details.Causes
	matches := func(w cause, c metav1.StatusCause) bool {
		return c.Field == w.field && strings.Contains(c.Message, w.msg)
	}
	for _, w := range want {
		require.Containsf(t, err.Error(), w.field, "the error does not name the field")
		require.Truef(t, slices.ContainsFunc(got, func(c metav1.StatusCause) bool { return matches(w, c) }),
			"no cause on %s containing %q; causes: %s", w.field, w.msg, formatCauses(got))
	}
	for _, c := range got {
		if strings.Contains(c.Message, msgRulesNotChecked) {
			continue
		}
		require.Truef(t, slices.ContainsFunc(want, func(w cause) bool { return matches(w, c) }),
			"unexpected cause %s: %s; causes: %s", c.Field, c.Message, formatCauses(got))
	}
}

func formatCauses(cs []metav1.StatusCause) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n  %s: %s", c.Field, c.Message)
	}
	return b.String()
}

// toUnstructured converts obj for the API server and removes the fields at
// the dotted paths in unset (a numeric segment indexes a list), so cases can
// send objects without a field the Go types always serialise.
func toUnstructured(t *testing.T, obj client.Object, kind string, unset ...string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(atev1alpha1.GroupVersion.WithKind(kind))
	for _, path := range unset {
		segs := strings.Split(path, ".")
		var cur any = u.Object
		for _, s := range segs[:len(segs)-1] {
			if i, err := strconv.Atoi(s); err == nil {
				cur = cur.([]any)[i]
			} else {
				cur = cur.(map[string]any)[s]
			}
		}
		parent, ok := cur.(map[string]any)
		require.Truef(t, ok, "unset %s: parent is not an object", path)
		_, ok = parent[segs[len(segs)-1]]
		require.Truef(t, ok, "unset %s: no such field", path)
		delete(parent, segs[len(segs)-1])
	}
	return u
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// stringMap returns n entries key-i: value.
func stringMap(n int, key func(i int) string, value string) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[key(i)] = value
	}
	return m
}

func labelValues(m map[string]string) map[string]atev1alpha1.LabelValue {
	out := make(map[string]atev1alpha1.LabelValue, len(m))
	for k, v := range m {
		out[k] = atev1alpha1.LabelValue(v)
	}
	return out
}

func labelMap(n int) map[string]atev1alpha1.LabelValue {
	m := make(map[string]atev1alpha1.LabelValue, n)
	for i := range n {
		m[fmt.Sprintf("example.com/l%d", i)] = "v"
	}
	return m
}

func tolerations(n int) []corev1.Toleration {
	ts := make([]corev1.Toleration, n)
	for i := range ts {
		ts[i] = corev1.Toleration{Key: fmt.Sprintf("example.com/t%d", i), Operator: corev1.TolerationOpExists}
	}
	return ts
}

// --- WorkerPool ---

func validPool(ns, name string) *atev1alpha1.WorkerPool {
	return &atev1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: atev1alpha1.WorkerPoolSpec{
			Replicas:       ptr.To[int32](2),
			WorkerImage:    "registry.example/worker:1",
			SandboxClasses: []atev1alpha1.WorkerPoolSandboxClass{{Name: atev1alpha1.SandboxClassGVisor}},
		},
	}
}

// withTemplate returns the pool's template, creating it.
func withTemplate(p *atev1alpha1.WorkerPool) *atev1alpha1.WorkerPoolPodTemplate {
	if p.Spec.Template == nil {
		p.Spec.Template = &atev1alpha1.WorkerPoolPodTemplate{}
	}
	return p.Spec.Template
}

func setLabel(k string, v atev1alpha1.LabelValue) func(*atev1alpha1.WorkerPool) {
	return func(p *atev1alpha1.WorkerPool) {
		withTemplate(p).Labels = map[string]atev1alpha1.LabelValue{k: v}
	}
}

func setAnnotation(k, v string) func(*atev1alpha1.WorkerPool) {
	return func(p *atev1alpha1.WorkerPool) {
		withTemplate(p).Annotations = map[string]string{k: v}
	}
}

func TestWorkerPoolValidation(t *testing.T) {
	env := testenv.Current()
	ns := env.Namespace(t)

	long := func(n int) string { return strings.Repeat("a", n) }
	// A qualified name with the longest prefix and name Kubernetes allows:
	// a 253-character DNS subdomain of 63-character labels, '/', 63 characters.
	longPrefix := strings.Join([]string{long(63), long(63), long(63), long(61)}, ".")

	cases := []struct {
		name   string
		mutate func(*atev1alpha1.WorkerPool)
		unset  []string // dotted paths removed from the request
		want   []cause  // nil: the object is valid
	}{
		// spec.replicas: required, >= 0.
		{name: "replicas zero", mutate: func(p *atev1alpha1.WorkerPool) { p.Spec.Replicas = ptr.To[int32](0) }},
		{name: "replicas missing", unset: []string{"spec.replicas"},
			want: []cause{{fieldReplicas, msgRequired}}},
		{name: "replicas negative", mutate: func(p *atev1alpha1.WorkerPool) { p.Spec.Replicas = ptr.To[int32](-1) },
			// The second cause is the scale subresource's own check of its specReplicasPath.
			want: []cause{{fieldReplicas, msgMinimum0}, {"." + fieldReplicas, "should be a non-negative integer"}}},

		// spec.workerImage: required, 1 to 1024 characters.
		{name: "workerImage 1024 characters", mutate: func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = long(1024) }},
		{name: "workerImage missing", unset: []string{"spec.workerImage"},
			want: []cause{{fieldWorkerImage, msgRequired}}},
		{name: "workerImage empty", mutate: func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = "" },
			want: []cause{{fieldWorkerImage, msgAtLeast1Char}}},
		{name: "workerImage too long", mutate: func(p *atev1alpha1.WorkerPool) { p.Spec.WorkerImage = long(1025) },
			want: []cause{{fieldWorkerImage, msgTooLong}}},

		// spec.sandboxClasses: required, exactly one entry, keyed by name,
		// name gvisor or microvm, optional configRef.name of 1 to 253 characters.
		{name: "class microvm", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses[0].Name = atev1alpha1.SandboxClassMicroVM
		}},
		{name: "configRef name 253 characters", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses[0].ConfigRef = &atev1alpha1.SandboxConfigReference{Name: long(253)}
		}},
		{name: "sandboxClasses missing", unset: []string{"spec.sandboxClasses"},
			want: []cause{{fieldClasses, msgRequired}}},
		{name: "sandboxClasses empty", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses = []atev1alpha1.WorkerPoolSandboxClass{}
		}, want: []cause{{fieldClasses, "should have at least 1 items"}}},
		{name: "sandboxClasses two entries", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses = append(p.Spec.SandboxClasses, atev1alpha1.WorkerPoolSandboxClass{Name: atev1alpha1.SandboxClassMicroVM})
		}, want: []cause{{fieldClasses, msgTooMany}}},
		{name: "sandboxClasses duplicate name", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses = append(p.Spec.SandboxClasses, p.Spec.SandboxClasses[0])
		}, want: []cause{{fieldClasses, msgTooMany}, {fieldClasses + "[1]", msgDuplicate}}},
		{name: "class name missing", unset: []string{"spec.sandboxClasses.0.name"},
			want: []cause{{fieldClasses + "[0].name", msgRequired}}},
		{name: "class name unknown", mutate: func(p *atev1alpha1.WorkerPool) { p.Spec.SandboxClasses[0].Name = "kata" },
			want: []cause{{fieldClasses + "[0].name", msgUnsupported}}},
		{name: "configRef name empty", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses[0].ConfigRef = &atev1alpha1.SandboxConfigReference{}
		}, want: []cause{{fieldClasses + "[0].configRef.name", msgAtLeast1Char}, {fieldClasses + "[0].configRef.name", celConfigRefName}}},
		{name: "configRef name too long", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses[0].ConfigRef = &atev1alpha1.SandboxConfigReference{Name: long(254)}
		}, want: []cause{{fieldClasses + "[0].configRef.name", msgTooLong}}},
		// configRef.name: a name a SandboxConfig can have (a DNS subdomain),
		// or no config could ever be found by it.
		{name: "configRef name with dots and dashes", mutate: pinTo("gvisor-v2.1.example")},
		{name: "configRef name with a namespace", mutate: pinTo("ate-system/gvisor-v2"),
			want: []cause{{fieldClasses + "[0].configRef.name", celConfigRefName}}},
		{name: "configRef name ..", mutate: pinTo(".."),
			want: []cause{{fieldClasses + "[0].configRef.name", celConfigRefName}}},
		{name: "configRef name with a percent sign", mutate: pinTo("a%b"),
			want: []cause{{fieldClasses + "[0].configRef.name", celConfigRefName}}},
		{name: "configRef name upper-case", mutate: pinTo("GVisor"),
			want: []cause{{fieldClasses + "[0].configRef.name", celConfigRefName}}},
		{name: "configRef name ending in a dash", mutate: pinTo("gvisor-"),
			want: []cause{{fieldClasses + "[0].configRef.name", celConfigRefName}}},

		// spec.template: every field at its limit.
		{name: "template at the limits", mutate: func(p *atev1alpha1.WorkerPool) {
			tpl := withTemplate(p)
			tpl.Labels = labelMap(64)
			tpl.Annotations = stringMap(64, func(i int) string { return fmt.Sprintf("example.com/a%d", i) }, long(1024))
			tpl.NodeSelector = labelValues(stringMap(64, func(i int) string { return fmt.Sprintf("example.com/n%d", i) }, "v"))
			tpl.Tolerations = tolerations(16)
			tpl.PriorityClassName = long(253)
			tpl.ServiceAccountName = long(253)
		}},

		// spec.template.labels: at most 64, qualified-name keys outside the
		// ate.dev domain, label values.
		{name: "labels 65", mutate: func(p *atev1alpha1.WorkerPool) { withTemplate(p).Labels = labelMap(65) },
			want: []cause{{fieldLabels, msgTooMany}}},
		{name: "label key without prefix", mutate: setLabel("team", "a")},
		{name: "label key longest", mutate: setLabel(longPrefix+"/"+long(63), "a")},
		{name: "label key notate.dev allowed", mutate: setLabel("notate.dev/x", "a")},
		{name: "label key ate.device allowed", mutate: setLabel("ate.device/x", "a")},
		{name: "label key sub.notate.dev allowed", mutate: setLabel("x.notate.dev/x", "a")},
		{name: "label key ate.dev reserved", mutate: setLabel("ate.dev/x", "a"),
			want: []cause{{fieldLabels, celLabelReserved}}},
		{name: "label key subdomain of ate.dev reserved", mutate: setLabel("foo.ate.dev/x", "a"),
			want: []cause{{fieldLabels, celLabelReserved}}},
		{name: "label key deep subdomain of ate.dev reserved", mutate: setLabel("a.b.ate.dev/x", "a"),
			want: []cause{{fieldLabels, celLabelReserved}}},
		{name: "label key name too long", mutate: setLabel("example.com/"+long(64), "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label key empty name", mutate: setLabel("example.com/", "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label key two slashes", mutate: setLabel("example.com/a/b", "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label key upper-case prefix", mutate: setLabel("Example.com/a", "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label key name with a space", mutate: setLabel("a b", "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label key prefix label too long", mutate: setLabel(long(64)+".example.com/x", "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label key prefix too long", mutate: setLabel(longPrefix+"a/x", "a"),
			want: []cause{{fieldLabels, celLabelKey}}},
		{name: "label value empty", mutate: setLabel("team", "")},
		{name: "label value 63 characters", mutate: setLabel("team", atev1alpha1.LabelValue("A-_."+long(59)))},
		{name: "label value too long", mutate: setLabel("team", atev1alpha1.LabelValue(long(64))),
			want: []cause{{fieldLabels + ".team", msgTooLong}}},
		{name: "label value with a space", mutate: setLabel("team", "a b"),
			want: []cause{{fieldLabels + ".team", msgPattern}}},
		{name: "label value ends with a dash", mutate: setLabel("team", "a-"),
			want: []cause{{fieldLabels + ".team", msgPattern}}},

		// spec.template.annotations: at most 64, qualified-name keys outside
		// the ate.dev domain; values are free.
		{name: "annotations 65", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).Annotations = stringMap(65, func(i int) string { return fmt.Sprintf("example.com/a%d", i) }, "v")
		}, want: []cause{{fieldAnnotations, msgTooMany}}},
		{name: "annotation key notate.dev allowed", mutate: setAnnotation("notate.dev/x", "any value: 'quoted' and spaced")},
		{name: "annotation key ate.dev reserved", mutate: setAnnotation("ate.dev/x", "v"),
			want: []cause{{fieldAnnotations, celAnnotationRes}}},
		{name: "annotation key subdomain of ate.dev reserved", mutate: setAnnotation("foo.ate.dev/x", "v"),
			want: []cause{{fieldAnnotations, celAnnotationRes}}},
		{name: "annotation key invalid", mutate: setAnnotation("example.com/a/b", "v"),
			want: []cause{{fieldAnnotations, celAnnotationKey}}},
		{name: "annotation key prefix too long", mutate: setAnnotation(longPrefix+"a/x", "v"),
			want: []cause{{fieldAnnotations, celAnnotationKey}}},

		// metadata.name: the value of the pods' ate.dev/worker-pool label.
		{name: "name of 63 characters", mutate: func(p *atev1alpha1.WorkerPool) { p.Name = long(63) }},
		{name: "name of 64 characters", mutate: func(p *atev1alpha1.WorkerPool) { p.Name = long(64) },
			want: []cause{{"<nil>", celPoolName}}},
		{name: "name of 70 characters", mutate: func(p *atev1alpha1.WorkerPool) { p.Name = "pool-" + long(63) + ".x" },
			want: []cause{{"<nil>", celPoolName}}},
		// spec.template.nodeSelector: qualified-name keys, label values.
		{name: "nodeSelector valid", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeSelector = map[string]atev1alpha1.LabelValue{"example.com/zone": atev1alpha1.LabelValue(long(63)), "disk": "ssd_1.a-b", "empty": ""}
		}},
		{name: "nodeSelector value too long", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeSelector = map[string]atev1alpha1.LabelValue{"example.com/zone": atev1alpha1.LabelValue(long(64))}
		}, want: []cause{{"spec.template.nodeSelector.example.com/zone", msgTooLong}}},
		{name: "nodeSelector value not a label value", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeSelector = map[string]atev1alpha1.LabelValue{"zone": "zone a"}
		}, want: []cause{{"spec.template.nodeSelector.zone", msgPattern}}},
		{name: "nodeSelector value ending in a dash", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeSelector = map[string]atev1alpha1.LabelValue{"zone": "a-"}
		}, want: []cause{{"spec.template.nodeSelector.zone", msgPattern}}},
		{name: "nodeSelector key invalid", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeSelector = map[string]atev1alpha1.LabelValue{"example.com/a/b": "v"}
		}, want: []cause{{"spec.template.nodeSelector", celNodeSelectorKey}}},

		// The rest of spec.template.
		{name: "nodeSelector 65", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeSelector = labelValues(stringMap(65, func(i int) string { return fmt.Sprintf("example.com/n%d", i) }, "v"))
		}, want: []cause{{"spec.template.nodeSelector", msgTooMany}}},
		{name: "tolerations 17", mutate: func(p *atev1alpha1.WorkerPool) { withTemplate(p).Tolerations = tolerations(17) },
			want: []cause{{"spec.template.tolerations", msgTooMany}}},
		{name: "priorityClassName too long", mutate: func(p *atev1alpha1.WorkerPool) { withTemplate(p).PriorityClassName = long(254) },
			want: []cause{{"spec.template.priorityClassName", msgTooLong}}},
		{name: "serviceAccountName too long", mutate: func(p *atev1alpha1.WorkerPool) { withTemplate(p).ServiceAccountName = long(254) },
			want: []cause{{"spec.template.serviceAccountName", msgTooLong}}},
		// Fields the worker Deployment cannot carry (deployment.Build or the
		// Deployment's own validation would refuse them).
		{name: "resources without claims", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).Resources = &corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Claims: []corev1.ResourceClaim{}}
		}},
		{name: "resources with claims", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).Resources = &corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}
		}, want: []cause{{"spec.template.resources.claims", celClaims}}},
		{name: "nodeAffinity with a required term", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"sandbox"}}}}}}}
		}},
		{name: "nodeAffinity with no required term", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{}}}
		}, want: []cause{{"spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", celSelectorTerms}}},
		{name: "nodeAffinity without nodeSelectorTerms", mutate: func(p *atev1alpha1.WorkerPool) {
			withTemplate(p).NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}
		}, unset: []string{"spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"},
			want: []cause{{"spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", msgRequired}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			p := validPool(ns, fmt.Sprintf("pool-%d", i))
			if tc.mutate != nil {
				tc.mutate(p)
			}
			err := env.Kube.Create(ctx, toUnstructured(t, p, "WorkerPool", tc.unset...))
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			requireInvalid(t, err, tc.want...)
		})
	}
}

func pinTo(name string) func(*atev1alpha1.WorkerPool) {
	return func(p *atev1alpha1.WorkerPool) {
		p.Spec.SandboxClasses[0].ConfigRef = &atev1alpha1.SandboxConfigReference{Name: name}
	}
}

// TestWorkerPoolSandboxClassImmutable updates a created pool: the class
// names may not change, everything else may (within the rules a create
// is checked by: a configRef.name no config can have is refused here too).
func TestWorkerPoolSandboxClassImmutable(t *testing.T) {
	env := testenv.Current()
	ns := env.Namespace(t)
	cases := []struct {
		name   string
		mutate func(*atev1alpha1.WorkerPool)
		want   []cause
	}{
		{name: "class name changed", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses[0].Name = atev1alpha1.SandboxClassMicroVM
		}, want: []cause{{fieldClasses, celClassImmutable}}},
		{name: "class replaced by an entry with a configRef", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses = []atev1alpha1.WorkerPoolSandboxClass{{
				Name: atev1alpha1.SandboxClassMicroVM, ConfigRef: &atev1alpha1.SandboxConfigReference{Name: "micro"},
			}}
		}, want: []cause{{fieldClasses, celClassImmutable}}},
		{name: "configRef set", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.SandboxClasses[0].ConfigRef = &atev1alpha1.SandboxConfigReference{Name: "other"}
		}},
		{name: "configRef set to a name no config can have", mutate: pinTo("x/y"),
			want: []cause{{fieldClasses + "[0].configRef.name", celConfigRefName}}},
		{name: "replicas, image and template changed", mutate: func(p *atev1alpha1.WorkerPool) {
			p.Spec.Replicas = ptr.To[int32](7)
			p.Spec.WorkerImage = "registry.example/worker:2"
			withTemplate(p).Labels = map[string]atev1alpha1.LabelValue{"team": "a"}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			p := validPool(ns, fmt.Sprintf("pool-%d", i))
			p.Spec.SandboxClasses[0].ConfigRef = &atev1alpha1.SandboxConfigReference{Name: "first"}
			require.NoError(t, env.Kube.Create(ctx, p))
			tc.mutate(p)
			err := env.Kube.Update(ctx, p)
			if tc.want == nil {
				require.NoError(t, err)
				var got atev1alpha1.WorkerPool
				require.NoError(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(p), &got))
				require.Equal(t, p.Spec, got.Spec, "the update was stored")
				return
			}
			requireInvalid(t, err, tc.want...)
			var got atev1alpha1.WorkerPool
			require.NoError(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(p), &got))
			require.Equal(t, atev1alpha1.SandboxClassGVisor, got.Spec.SandboxClasses[0].Name, "the class is unchanged")
		})
	}
}

// TestWorkerPoolSubresources checks the status and scale subresources: the
// main resource ignores status, the status subresource ignores spec, and
// scale reads and writes spec.replicas, status.replicas and status.selector.
func TestWorkerPoolSubresources(t *testing.T) {
	env := testenv.Current()
	ctx := ctxFor(t)
	p := validPool(env.Namespace(t), "pool")
	require.NoError(t, env.Kube.Create(ctx, p))
	key := client.ObjectKeyFromObject(p)

	t.Run("status is ignored on the main resource", func(t *testing.T) {
		var got atev1alpha1.WorkerPool
		require.NoError(t, env.Kube.Get(ctx, key, &got))
		got.Status.Replicas = 9
		got.Status.ObservedGeneration = 9
		require.NoError(t, env.Kube.Update(ctx, &got))
		require.NoError(t, env.Kube.Get(ctx, key, &got))
		require.Equal(t, atev1alpha1.WorkerPoolStatus{}, got.Status)
	})

	t.Run("spec is ignored on the status subresource", func(t *testing.T) {
		var got atev1alpha1.WorkerPool
		require.NoError(t, env.Kube.Get(ctx, key, &got))
		got.Spec.WorkerImage = "registry.example/worker:ignored"
		got.Status.Replicas = 2
		got.Status.ReadyReplicas = 1
		got.Status.Selector = "ate.dev/worker-pool=pool"
		require.NoError(t, env.Kube.Status().Update(ctx, &got))
		require.NoError(t, env.Kube.Get(ctx, key, &got))
		require.Equal(t, "registry.example/worker:1", got.Spec.WorkerImage)
		require.Equal(t, int32(2), got.Status.Replicas)
		require.Equal(t, "ate.dev/worker-pool=pool", got.Status.Selector)
	})

	t.Run("scale reads spec.replicas, status.replicas and status.selector", func(t *testing.T) {
		var scale autoscalingv1.Scale
		require.NoError(t, env.Kube.SubResource("scale").Get(ctx, p, &scale))
		require.Equal(t, int32(2), scale.Spec.Replicas)
		require.Equal(t, int32(2), scale.Status.Replicas)
		require.Equal(t, "ate.dev/worker-pool=pool", scale.Status.Selector)
	})

	t.Run("scale patch sets spec.replicas", func(t *testing.T) {
		var scale autoscalingv1.Scale
		require.NoError(t, env.Kube.SubResource("scale").Patch(ctx, p,
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":5}}`)),
			client.WithSubResourceBody(&scale)))
		require.Equal(t, int32(5), scale.Spec.Replicas)
		var got atev1alpha1.WorkerPool
		require.NoError(t, env.Kube.Get(ctx, key, &got))
		require.Equal(t, int32(5), *got.Spec.Replicas)
	})

	t.Run("scale patch to a negative count is refused", func(t *testing.T) {
		var scale autoscalingv1.Scale
		err := env.Kube.SubResource("scale").Patch(ctx, p,
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":-1}}`)),
			client.WithSubResourceBody(&scale))
		require.Truef(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
		require.ErrorContains(t, err, "spec.replicas")
		var got atev1alpha1.WorkerPool
		require.NoError(t, env.Kube.Get(ctx, key, &got))
		require.Equal(t, int32(5), *got.Spec.Replicas)
	})
}

// --- SandboxConfig ---

func validConfig(name string) *atev1alpha1.SandboxConfig {
	return &atev1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: atev1alpha1.SandboxConfigSpec{
			SandboxClass:   atev1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []atev1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: pause,
				Assets: map[string]map[string]atev1alpha1.SandboxAsset{
					"amd64": {"runsc": asset("runsc")},
				},
			}},
		},
	}
}

func versions(n int) []atev1alpha1.SandboxConfigVersion {
	vs := make([]atev1alpha1.SandboxConfigVersion, n)
	for i := range vs {
		vs[i] = atev1alpha1.SandboxConfigVersion{Name: fmt.Sprintf("v%d", i+1), PauseImage: pause, Assets: gvisorAssets("amd64")}
	}
	return vs
}

// asset is a well-formed asset.
func asset(name string) atev1alpha1.SandboxAsset {
	return atev1alpha1.SandboxAsset{URL: "https://assets.example/" + name, SHA256: assetHash}
}

// gvisorAssets are the assets a gvisor version needs, for each arch.
func gvisorAssets(arches ...string) map[string]map[string]atev1alpha1.SandboxAsset {
	out := map[string]map[string]atev1alpha1.SandboxAsset{}
	for _, a := range arches {
		out[a] = map[string]atev1alpha1.SandboxAsset{"gvisor": asset("gvisor.tar.zstd")}
	}
	return out
}

// microvmAssetNames are the assets a microvm version needs per arch.
var microvmAssetNames = []string{"cloud-hypervisor", "virtiofsd", "kata-kernel", "kata-image"}

// microvmAssets are the assets a microvm version needs, for each arch.
func microvmAssets(arches ...string) map[string]map[string]atev1alpha1.SandboxAsset {
	out := map[string]map[string]atev1alpha1.SandboxAsset{}
	for _, a := range arches {
		out[a] = map[string]atev1alpha1.SandboxAsset{}
		for _, n := range microvmAssetNames {
			out[a][n] = asset(n)
		}
	}
	return out
}

func microvm(c *atev1alpha1.SandboxConfig) {
	c.Spec.SandboxClass = atev1alpha1.SandboxClassMicroVM
	for i := range c.Spec.Versions {
		c.Spec.Versions[i].PauseImage = ""
		c.Spec.Versions[i].Assets = microvmAssets("amd64")
	}
}

func TestSandboxConfigValidation(t *testing.T) {
	env := testenv.Current()
	type config = atev1alpha1.SandboxConfig
	v0 := fieldVersions + "[0]"
	assetField := v0 + ".assets.amd64.runsc"
	setPause := func(image string) func(*config) {
		return func(c *config) { c.Spec.Versions[0].PauseImage = image }
	}

	cases := []struct {
		name   string
		mutate func(*config)
		unset  []string
		want   []cause
		check  func(t *testing.T, got *config) // on the stored object of a valid case
	}{
		// spec.sandboxClass: gvisor or microvm, default gvisor.
		{name: "gvisor", check: func(t *testing.T, got *config) {
			require.Equal(t, atev1alpha1.VersionStateEnabled, got.Spec.Versions[0].State, "state defaults to Enabled")
		}},
		{name: "sandboxClass defaults to gvisor", // omitempty: the request has no sandboxClass
			mutate: func(c *config) { c.Spec.SandboxClass = "" },
			check: func(t *testing.T, got *config) {
				require.Equal(t, atev1alpha1.SandboxClassGVisor, got.Spec.SandboxClass)
			}},
		{name: "defaulted gvisor requires pauseImage", mutate: func(c *config) {
			c.Spec.SandboxClass = ""
			c.Spec.Versions[0].PauseImage = ""
		}, want: []cause{{fieldVersions, celPauseRequired}}},
		{name: "microvm", mutate: microvm},
		{name: "sandboxClass unknown", mutate: func(c *config) { c.Spec.SandboxClass = "kata" },
			want: []cause{{"spec.sandboxClass", msgUnsupported}}},

		// spec.defaultVersion: required, names a version that is not Disabled.
		{name: "defaultVersion names an explicitly Enabled version", mutate: func(c *config) {
			c.Spec.Versions = versions(2)
			c.Spec.Versions[0].State = atev1alpha1.VersionStateDisabled
			c.Spec.Versions[1].State = atev1alpha1.VersionStateEnabled
			c.Spec.DefaultVersion = "v2"
		}},
		{name: "defaultVersion missing", unset: []string{"spec.defaultVersion"},
			want: []cause{{fieldDefaultVersion, msgRequired}}},
		{name: "defaultVersion names no version", mutate: func(c *config) { c.Spec.DefaultVersion = "v2" },
			want: []cause{{fieldDefaultVersion, celDefaultExists}}},
		{name: "defaultVersion names a Disabled version", mutate: func(c *config) {
			c.Spec.Versions = versions(2)
			c.Spec.Versions[0].State = atev1alpha1.VersionStateDisabled
		}, want: []cause{{fieldDefaultVersion, celDefaultEnabled}}},

		// spec.versions: required, 1 to 16, keyed by name.
		{name: "versions 16", mutate: func(c *config) { c.Spec.Versions = versions(16) }},
		{name: "versions missing", unset: []string{"spec.versions"},
			want: []cause{{fieldVersions, msgRequired}}},
		{name: "versions empty", mutate: func(c *config) { c.Spec.Versions = []atev1alpha1.SandboxConfigVersion{} },
			want: []cause{{fieldVersions, "should have at least 1 items"}, {fieldDefaultVersion, celDefaultExists}}},
		{name: "versions 17", mutate: func(c *config) { c.Spec.Versions = versions(17) },
			want: []cause{{fieldVersions, msgTooMany}}},
		{name: "versions duplicate name", mutate: func(c *config) {
			c.Spec.Versions = append(versions(1), versions(1)...)
		}, want: []cause{{fieldVersions + "[1]", msgDuplicate}}},

		// spec.versions[].name: a DNS label.
		{name: "version name 63 characters", mutate: func(c *config) {
			name := "v-" + strings.Repeat("0", 61)
			c.Spec.Versions[0].Name, c.Spec.DefaultVersion = name, name
		}},
		{name: "version name too long", mutate: func(c *config) {
			c.Spec.Versions[0].Name = strings.Repeat("v", 64)
		}, want: []cause{{v0 + ".name", msgTooLong}}}, // CEL skipped, so no defaultVersion cause
		{name: "version name upper case", mutate: func(c *config) {
			c.Spec.Versions[0].Name, c.Spec.DefaultVersion = "V1", "V1"
		}, want: []cause{{v0 + ".name", msgPattern}}},
		{name: "version name with a dot", mutate: func(c *config) {
			c.Spec.Versions[0].Name, c.Spec.DefaultVersion = "v1.2", "v1.2"
		}, want: []cause{{v0 + ".name", msgPattern}}},
		{name: "version name starts with a dash", mutate: func(c *config) {
			c.Spec.Versions[0].Name, c.Spec.DefaultVersion = "-v1", "-v1"
		}, want: []cause{{v0 + ".name", msgPattern}}},
		{name: "version name missing", unset: []string{"spec.versions.0.name"},
			want: []cause{{v0 + ".name", msgRequired}}},

		// spec.versions[].state: Enabled or Disabled, default Enabled.
		{name: "state Disabled on a version that is not the default", mutate: func(c *config) {
			c.Spec.Versions = versions(2)
			c.Spec.Versions[1].State = atev1alpha1.VersionStateDisabled
		}, check: func(t *testing.T, got *config) {
			require.Equal(t, atev1alpha1.VersionStateEnabled, got.Spec.Versions[0].State)
			require.Equal(t, atev1alpha1.VersionStateDisabled, got.Spec.Versions[1].State)
		}},
		{name: "state unknown", mutate: func(c *config) { c.Spec.Versions[0].State = "Paused" },
			want: []cause{{v0 + ".state", msgUnsupported}}},

		// spec.versions[].pauseImage: pinned by digest; required for gvisor,
		// forbidden for other classes.
		{name: "pauseImage with a tag and a digest", mutate: setPause("registry.example:5000/pause:3.9@" + digest)},
		{name: "pauseImage missing on gvisor", mutate: setPause(""),
			want: []cause{{fieldVersions, celPauseRequired}}},
		{name: "pauseImage missing on one gvisor version", mutate: func(c *config) {
			c.Spec.Versions = versions(2)
			c.Spec.Versions[1].PauseImage = ""
		}, want: []cause{{fieldVersions, celPauseRequired}}},
		{name: "pauseImage on microvm", mutate: func(c *config) {
			microvm(c)
			c.Spec.Versions[0].PauseImage = pause
		}, want: []cause{{fieldVersions, celPauseGVisorOnly}}},
		{name: "pauseImage by tag", mutate: setPause("registry.example/pause:3.9"),
			want: []cause{{v0 + ".pauseImage", msgPattern}}},
		{name: "pauseImage short digest", mutate: setPause("registry.example/pause@sha256:0123"),
			want: []cause{{v0 + ".pauseImage", msgPattern}}},
		{name: "pauseImage upper-case digest", mutate: setPause("registry.example/pause@" + strings.ToUpper(digest)),
			want: []cause{{v0 + ".pauseImage", msgPattern}}},
		{name: "pauseImage sha512 digest", mutate: setPause("registry.example/pause@sha512:" + strings.Repeat("0", 128)),
			want: []cause{{v0 + ".pauseImage", msgPattern}}},
		{name: "pauseImage without repository", mutate: setPause("@" + digest),
			want: []cause{{v0 + ".pauseImage", msgPattern}}},
		{name: "pauseImage too long", mutate: setPause(strings.Repeat("r", 512-len("@"+digest)+1) + "@" + digest),
			want: []cause{{v0 + ".pauseImage", msgTooLong}}},

		// spec.versions[].assets: arch -> name -> {url, sha256}.
		{name: "assets of 8 architectures", mutate: func(c *config) {
			a := c.Spec.Versions[0].Assets
			for i := range 7 {
				a[fmt.Sprintf("arch%d", i)] = map[string]atev1alpha1.SandboxAsset{"runsc": asset("runsc")}
			}
		}},
		{name: "assets of 9 architectures", mutate: func(c *config) {
			a := c.Spec.Versions[0].Assets
			for i := range 8 {
				a[fmt.Sprintf("arch%d", i)] = map[string]atev1alpha1.SandboxAsset{"runsc": asset("runsc")}
			}
		}, want: []cause{{v0 + ".assets", msgTooMany}}},

		// The assets of each class, for every architecture a version lists.
		{name: "gvisor with the gvisor asset on two architectures", mutate: func(c *config) {
			c.Spec.Versions[0].Assets = gvisorAssets("amd64", "arm64")
		}},
		{name: "gvisor with the legacy runsc asset and others", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["amd64"]["containerd-shim-runsc-v1"] = asset("shim")
		}},
		{name: "gvisor with no assets", mutate: func(c *config) { c.Spec.Versions[0].Assets = nil },
			want: []cause{{fieldVersions, celGVisorAssets}}},
		{name: "gvisor with an empty assets map", mutate: func(c *config) {
			c.Spec.Versions[0].Assets = map[string]map[string]atev1alpha1.SandboxAsset{}
		}, want: []cause{{fieldVersions, celGVisorAssets}}},
		{name: "gvisor with no assets on one version", mutate: func(c *config) {
			c.Spec.Versions = versions(2)
			c.Spec.Versions[1].Assets = nil
		}, want: []cause{{fieldVersions, celGVisorAssets}}},
		{name: "gvisor with an architecture lacking the gvisor asset", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["arm64"] = map[string]atev1alpha1.SandboxAsset{"containerd-shim-runsc-v1": asset("shim")}
		}, want: []cause{{fieldVersions, celGVisorAssets}}},
		{name: "defaulted gvisor with no assets", mutate: func(c *config) {
			c.Spec.SandboxClass = ""
			c.Spec.Versions[0].Assets = nil
		}, want: []cause{{fieldVersions, celGVisorAssets}}},
		{name: "microvm with the four assets on two architectures", mutate: func(c *config) {
			microvm(c)
			c.Spec.Versions[0].Assets = microvmAssets("amd64", "arm64")
			c.Spec.Versions[0].Assets["arm64"]["kata-config"] = asset("kata-config")
		}},
		{name: "microvm with no assets", mutate: func(c *config) {
			microvm(c)
			c.Spec.Versions[0].Assets = nil
		}, want: []cause{{fieldVersions, celMicroVMAssets}}},
		{name: "microvm with the gvisor assets", mutate: func(c *config) {
			microvm(c)
			c.Spec.Versions[0].Assets = gvisorAssets("amd64")
		}, want: []cause{{fieldVersions, celMicroVMAssets}}},
		{name: "microvm with no assets on one version", mutate: func(c *config) {
			c.Spec.Versions = versions(2)
			microvm(c)
			c.Spec.Versions[1].Assets = nil
		}, want: []cause{{fieldVersions, celMicroVMAssets}}},
		{name: "microvm lacking kata-image on one architecture", mutate: func(c *config) {
			microvm(c)
			c.Spec.Versions[0].Assets = microvmAssets("amd64", "arm64")
			delete(c.Spec.Versions[0].Assets["arm64"], "kata-image")
		}, want: []cause{{fieldVersions, celMicroVMAssets}}},
		{name: "asset url missing", unset: []string{"spec.versions.0.assets.amd64.runsc.url"},
			want: []cause{{assetField + ".url", msgRequired}}},
		{name: "asset url empty", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["amd64"]["runsc"] = atev1alpha1.SandboxAsset{SHA256: assetHash}
		}, want: []cause{{assetField + ".url", msgAtLeast1Char}}},
		{name: "asset url too long", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["amd64"]["runsc"] = atev1alpha1.SandboxAsset{URL: "https://" + strings.Repeat("a", 2041), SHA256: assetHash}
		}, want: []cause{{assetField + ".url", msgTooLong}}},
		{name: "asset sha256 missing", unset: []string{"spec.versions.0.assets.amd64.runsc.sha256"},
			want: []cause{{assetField + ".sha256", msgRequired}}},
		{name: "asset sha256 short", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["amd64"]["runsc"] = atev1alpha1.SandboxAsset{URL: "https://assets.example/runsc", SHA256: assetHash[:63]}
		}, want: []cause{{assetField + ".sha256", msgPattern}}},
		{name: "asset sha256 upper case", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["amd64"]["runsc"] = atev1alpha1.SandboxAsset{URL: "https://assets.example/runsc", SHA256: strings.ToUpper(assetHash)}
		}, want: []cause{{assetField + ".sha256", msgPattern}}},
		{name: "asset sha256 with a prefix", mutate: func(c *config) {
			c.Spec.Versions[0].Assets["amd64"]["runsc"] = atev1alpha1.SandboxAsset{URL: "https://assets.example/runsc", SHA256: "sha256:" + assetHash}
		}, want: []cause{{assetField + ".sha256", msgPattern}}},

		// spec.rollout: 1 to 16 steps, each exactly one of pools (>= 1) and
		// percent (1 to 100), pause a Go duration; a gate names its
		// workflow type and task queue.
		{name: "rollout of three steps with a gate", mutate: withRollout(
			atev1alpha1.RolloutStep{Pools: ptr.To[int32](1), Pause: &metav1.Duration{Duration: 10 * time.Minute}},
			atev1alpha1.RolloutStep{Percent: ptr.To[int32](25), Pause: &metav1.Duration{Duration: 90 * time.Minute}},
			atev1alpha1.RolloutStep{Percent: ptr.To[int32](100)}),
			check: func(t *testing.T, got *config) {
				require.Len(t, got.Spec.Rollout.Steps, 3)
				require.Equal(t, 90*time.Minute, got.Spec.Rollout.Steps[1].Pause.Duration)
			}},
		{name: "rollout with no steps", mutate: withRollout(),
			want: []cause{{"spec.rollout.steps", "should have at least 1 items"}}},
		{name: "rollout of 17 steps", mutate: func(c *config) {
			steps := make([]atev1alpha1.RolloutStep, 17)
			for i := range steps {
				steps[i].Percent = ptr.To(int32(i + 1))
			}
			withRollout(steps...)(c)
		}, want: []cause{{"spec.rollout.steps", msgTooMany}}},
		{name: "rollout step with both pools and percent", mutate: withRollout(atev1alpha1.RolloutStep{Pools: ptr.To[int32](1), Percent: ptr.To[int32](10)}),
			want: []cause{{"spec.rollout.steps[0]", celOneOfPoolsPercent}}},
		{name: "rollout step with neither pools nor percent", mutate: withRollout(atev1alpha1.RolloutStep{Pause: &metav1.Duration{Duration: time.Minute}}),
			want: []cause{{"spec.rollout.steps[0]", celOneOfPoolsPercent}}},
		{name: "rollout step of 0 pools", mutate: withRollout(atev1alpha1.RolloutStep{Pools: ptr.To[int32](0)}),
			want: []cause{{"spec.rollout.steps[0].pools", "should be greater than or equal to 1"}}},
		{name: "rollout step of 0 percent", mutate: withRollout(atev1alpha1.RolloutStep{Percent: ptr.To[int32](0)}),
			want: []cause{{"spec.rollout.steps[0].percent", "should be greater than or equal to 1"}}},
		{name: "rollout step of 101 percent", mutate: withRollout(atev1alpha1.RolloutStep{Percent: ptr.To[int32](101)}),
			want: []cause{{"spec.rollout.steps[0].percent", "should be less than or equal to 100"}}},
		{name: "rollout step pause not a duration", mutate: func(c *config) {
			withRollout(atev1alpha1.RolloutStep{Percent: ptr.To[int32](100)})(c)
			c.Spec.Rollout.Steps[0].Pause = &metav1.Duration{Duration: -time.Minute} // "-1m0s"
		}, want: []cause{{"spec.rollout.steps[0].pause", celPauseDuration}}},
		{name: "rollout approval step", mutate: func(c *config) {
			withRollout(atev1alpha1.RolloutStep{Pools: ptr.To[int32](1), Approval: true}, atev1alpha1.RolloutStep{Percent: ptr.To[int32](100)})(c)
		}, check: func(t *testing.T, got *config) { require.True(t, got.Spec.Rollout.Steps[0].Approval) }},
		{name: "rollout gate without a task queue", mutate: func(c *config) {
			withRollout(atev1alpha1.RolloutStep{Percent: ptr.To[int32](100)})(c)
			c.Spec.Rollout.Gate = &atev1alpha1.RolloutGate{WorkflowType: "CheckSandboxes"}
		}, unset: []string{"spec.rollout.gate.taskQueue"}, want: []cause{{"spec.rollout.gate.taskQueue", msgRequired}}},

		// spec.rollout.analysis: 1 to 8 named metrics, each a query with a
		// min or a max that is a number; an interval that is a duration;
		// onFailure Halt or RollBack; a gate's input any JSON object.
		{name: "rollout with an analysis, RollBack and a gate's input", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.OnFailure = atev1alpha1.RolloutOnFailureRollBack
			a.Gate = &atev1alpha1.RolloutGate{WorkflowType: "CheckSandboxes", TaskQueue: "checks",
				Input: &runtime.RawExtension{Raw: []byte(`{"slo":{"availability":"99.9"},"owners":["a"]}`)}}
		}), check: func(t *testing.T, got *config) {
			r := got.Spec.Rollout
			require.Equal(t, atev1alpha1.RolloutOnFailureRollBack, r.OnFailure)
			require.Equal(t, "0.05", *r.Analysis.Metrics[0].Max)
			require.Equal(t, time.Minute, r.Analysis.Interval.Duration)
			require.JSONEq(t, `{"slo":{"availability":"99.9"},"owners":["a"]}`, string(r.Gate.Input.Raw), "kept whole, not pruned")
		}},
		{name: "analysis metric with no bound", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.Analysis.Metrics[0].Max = nil
		}), want: []cause{{"spec.rollout.analysis.metrics[0]", celMetricBound}}},
		{name: "analysis bound not a number", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.Analysis.Metrics[0].Min = ptr.To("5%")
		}), want: []cause{{"spec.rollout.analysis.metrics[0].min", "spec.rollout.analysis.metrics[].min must be a decimal number such as 0.99 or 1e-3"}}},
		{name: "analysis metric name not a DNS label", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.Analysis.Metrics[0].Name = "Error Rate"
		}), want: []cause{{"spec.rollout.analysis.metrics[0].name", msgPattern}}},
		{name: "analysis metrics named twice", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.Analysis.Metrics = append(a.Analysis.Metrics, a.Analysis.Metrics[0])
		}), want: []cause{{"spec.rollout.analysis.metrics[1]", "Duplicate value"}}},
		{name: "analysis interval not a duration", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.Analysis.Interval = &metav1.Duration{Duration: -time.Second}
		}), want: []cause{{"spec.rollout.analysis.interval", "spec.rollout.analysis.interval must be a duration such as 30s, 1m or 1m30s"}}},
		{name: "onFailure neither Halt nor RollBack", mutate: withAnalysis(func(a *atev1alpha1.SandboxConfigRollout) {
			a.OnFailure = "Rollback"
		}), want: []cause{{"spec.rollout.onFailure", `Unsupported value: "Rollback": supported values: "Halt", "RollBack"`}}},
		// spec.rollout.after: 1 to 16 distinct cluster names, each a DNS
		// label; bake a Go duration.
		{name: "rollout after two clusters with a bake", mutate: withAfter(&atev1alpha1.RolloutAfter{
			Clusters: []string{"staging-1", "0a1b2c3d-4e5f-6789-abcd-ef0123456789"}, Bake: &metav1.Duration{Duration: time.Hour}}),
			check: func(t *testing.T, got *config) {
				require.Equal(t, []string{"staging-1", "0a1b2c3d-4e5f-6789-abcd-ef0123456789"}, got.Spec.Rollout.After.Clusters)
				require.Equal(t, time.Hour, got.Spec.Rollout.After.Bake.Duration)
			}},
		{name: "rollout after no cluster", mutate: withAfter(&atev1alpha1.RolloutAfter{Clusters: []string{}}),
			want: []cause{{"spec.rollout.after.clusters", "should have at least 1 items"}}},
		{name: "rollout after 17 clusters", mutate: withAfter(&atev1alpha1.RolloutAfter{Clusters: func() []string {
			var names []string
			for i := range 17 {
				names = append(names, fmt.Sprintf("c%d", i))
			}
			return names
		}()}), want: []cause{{"spec.rollout.after.clusters", msgTooMany}}},
		{name: "rollout after a cluster twice", mutate: withAfter(&atev1alpha1.RolloutAfter{Clusters: []string{"staging", "staging"}}),
			want: []cause{{"spec.rollout.after.clusters[1]", msgDuplicate}}},
		{name: "rollout after a cluster name that is no DNS label", mutate: withAfter(&atev1alpha1.RolloutAfter{Clusters: []string{"staging", "Prod_EU"}}),
			want: []cause{{"spec.rollout.after", celAfterClusters}}},
		{name: "rollout after a cluster name of 64 characters", mutate: withAfter(&atev1alpha1.RolloutAfter{Clusters: []string{strings.Repeat("a", 64)}}),
			want: []cause{{"spec.rollout.after.clusters[0]", msgTooLong}}},
		{name: "rollout after bake not a duration", mutate: withAfter(&atev1alpha1.RolloutAfter{Clusters: []string{"staging"}, Bake: &metav1.Duration{Duration: -time.Minute}}),
			want: []cause{{"spec.rollout.after.bake", celAfterBake}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxFor(t)
			c := validConfig(testenv.UniqueName(t))
			if tc.mutate != nil {
				tc.mutate(c)
			}
			err := env.Kube.Create(ctx, toUnstructured(t, c, "SandboxConfig", tc.unset...))
			if err == nil {
				t.Cleanup(func() { _ = env.Kube.Delete(context.Background(), c) })
			}
			if tc.want != nil {
				requireInvalid(t, err, tc.want...)
				return
			}
			require.NoError(t, err)
			if tc.check != nil {
				var got config
				require.NoError(t, env.Kube.Get(ctx, client.ObjectKeyFromObject(c), &got))
				tc.check(t, &got)
			}
		})
	}
}

// withAnalysis gives a config a one-step rollout with an analysis of one
// metric, then edits it.
func withAnalysis(edit func(*atev1alpha1.SandboxConfigRollout)) func(*atev1alpha1.SandboxConfig) {
	return func(c *atev1alpha1.SandboxConfig) {
		withRollout(atev1alpha1.RolloutStep{Percent: ptr.To[int32](100)})(c)
		c.Spec.Rollout.Analysis = &atev1alpha1.RolloutAnalysis{Interval: &metav1.Duration{Duration: time.Minute},
			Metrics: []atev1alpha1.RolloutMetric{{Name: "errors", Query: `sum(rate(errors_total{pool=~"{{.Pools}}"}[1m]))`, Max: ptr.To("0.05")}}}
		edit(c.Spec.Rollout)
	}
}

// withAfter gives a config a rollout of one 100% step with after.
func withAfter(after *atev1alpha1.RolloutAfter) func(*atev1alpha1.SandboxConfig) {
	return func(c *atev1alpha1.SandboxConfig) {
		withRollout(atev1alpha1.RolloutStep{Percent: ptr.To[int32](100)})(c)
		c.Spec.Rollout.After = after
	}
}

// withRollout gives a config spec.rollout with the steps.
func withRollout(steps ...atev1alpha1.RolloutStep) func(*atev1alpha1.SandboxConfig) {
	return func(c *atev1alpha1.SandboxConfig) {
		c.Spec.Rollout = &atev1alpha1.SandboxConfigRollout{Steps: steps}
		if steps == nil {
			c.Spec.Rollout.Steps = []atev1alpha1.RolloutStep{}
		}
	}
}
