package deploy_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The admission policy of deploy/policy parses strictly into the
// admissionregistration.k8s.io/v1 types, matches the WorkerPool CRD's group
// and resource, and every field of the pool its expressions read exists in
// the CRD's schema: a renamed field would otherwise make the policy check
// nothing (an absent optional field reads as its default).
func TestWorkerPoolPolicyMatchesTheCRD(t *testing.T) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "policy")
	require.NoError(t, err, "kustomize build deploy/policy")
	var policy admissionv1.ValidatingAdmissionPolicy
	var binding admissionv1.ValidatingAdmissionPolicyBinding
	var paramName, paramNamespace string
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		require.NoError(t, err)
		switch r.GetKind() {
		case "ValidatingAdmissionPolicy":
			require.NoError(t, yaml.UnmarshalStrict(b, &policy), "deploy/policy's ValidatingAdmissionPolicy")
		case "ValidatingAdmissionPolicyBinding":
			require.NoError(t, yaml.UnmarshalStrict(b, &binding), "deploy/policy's ValidatingAdmissionPolicyBinding")
		case "ConfigMap":
			paramName, paramNamespace = r.GetName(), r.GetNamespace()
		}
	}
	require.Equal(t, policy.Name, binding.Spec.PolicyName, "the binding binds another policy")
	require.Equal(t, []admissionv1.ValidationAction{admissionv1.Deny}, binding.Spec.ValidationActions)
	require.NotNil(t, binding.Spec.ParamRef)
	require.Equal(t, paramName, binding.Spec.ParamRef.Name, "the binding's paramRef names another ConfigMap")
	require.Equal(t, paramNamespace, binding.Spec.ParamRef.Namespace)
	require.Equal(t, systemNamespace, paramNamespace)
	require.NotNil(t, binding.Spec.ParamRef.ParameterNotFoundAction)
	require.Equal(t, admissionv1.DenyAction, *binding.Spec.ParamRef.ParameterNotFoundAction, "a missing parameter must refuse, not admit everything")

	crdYAML, err := os.ReadFile("crds/ate.dev_workerpools.yaml")
	require.NoError(t, err)
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.Unmarshal(crdYAML, &crd))

	require.NotNil(t, policy.Spec.MatchConstraints)
	rules := policy.Spec.MatchConstraints.ResourceRules
	require.Len(t, rules, 1)
	require.Equal(t, []string{crd.Spec.Group}, rules[0].APIGroups)
	require.Equal(t, []string{crd.Spec.Names.Plural}, rules[0].Resources, "the status subresource must stay out: the worker writes it")
	require.ElementsMatch(t, []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, rules[0].Operations)

	// Every path object.spec.a.b... (with ?. or .) the expressions read.
	var text []string
	for _, v := range policy.Spec.Variables {
		text = append(text, v.Expression)
	}
	for _, v := range policy.Spec.Validations {
		text = append(text, v.Expression, v.MessageExpression)
	}
	paths := map[string]bool{}
	for _, m := range regexp.MustCompile(`object\.spec((?:\.\??[A-Za-z]+)+)(\()?`).FindAllStringSubmatch(strings.Join(text, "\n"), -1) {
		path := "spec" + strings.ReplaceAll(m[1], "?", "")
		if m[2] == "(" { // the last segment is a method: orValue, startsWith
			path = path[:strings.LastIndex(path, ".")]
		}
		paths[path] = true
	}
	// The fields the policy must check, each read by some expression.
	for _, want := range []string{
		"spec.workerImage",
		"spec.template.tolerations",
		"spec.template.nodeSelector",
		"spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
	} {
		require.True(t, paths[want], "the policy does not read %s (it reads %v)", want, slices.Sorted(maps.Keys(paths)))
	}
	var versions []string
	for _, v := range crd.Spec.Versions {
		versions = append(versions, v.Name)
	}
	for _, v := range crd.Spec.Versions {
		for path := range paths {
			t.Run(v.Name+"/"+path, func(t *testing.T) {
				s := v.Schema.OpenAPIV3Schema
				for _, f := range strings.Split(path, ".") {
					next, ok := s.Properties[f]
					require.True(t, ok, "the WorkerPool CRD (version %s) has no field %s (in %s)", v.Name, f, path)
					s = &next
				}
			})
		}
	}
	// Fields under the expressions' list elements: tolerations' key and
	// operator, terms' matchExpressions and their key and operator.
	for _, v := range crd.Spec.Versions {
		tmpl := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["template"]
		for _, c := range []struct {
			list   string
			fields []string
		}{
			{"tolerations", []string{"key", "operator", "value"}},
		} {
			items := tmpl.Properties[c.list].Items
			require.NotNil(t, items, "%s: %s has no items", v.Name, c.list)
			for _, f := range c.fields {
				require.Contains(t, items.Schema.Properties, f, "%s: spec.template.%s[] has no %s", v.Name, c.list, f)
			}
		}
		terms := tmpl.Properties["nodeAffinity"].Properties["requiredDuringSchedulingIgnoredDuringExecution"].Properties["nodeSelectorTerms"].Items
		require.NotNil(t, terms)
		exprs := terms.Schema.Properties["matchExpressions"].Items
		require.NotNil(t, exprs, "%s: nodeSelectorTerms[] has no matchExpressions", v.Name)
		require.Contains(t, exprs.Schema.Properties, "key")
		require.Contains(t, exprs.Schema.Properties, "operator")
		require.Contains(t, exprs.Schema.Properties, "values")
	}
	require.NotEmpty(t, versions)
}

// The policy's fallback list of protected node keys, used when the
// ConfigMap leaves protectedNodeKeys out, is the list the ConfigMap ships:
// an overlay that replaces the ConfigMap with an older one (allowed
// registries only) keeps the guard it had, not a narrower one.
func TestWorkerPoolPolicyDefaultsAreTheShippedParameters(t *testing.T) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), "policy")
	require.NoError(t, err, "kustomize build deploy/policy")
	var policy admissionv1.ValidatingAdmissionPolicy
	var shipped string
	for _, r := range m.Resources() {
		b, err := r.AsYAML()
		require.NoError(t, err)
		switch r.GetKind() {
		case "ValidatingAdmissionPolicy":
			require.NoError(t, yaml.UnmarshalStrict(b, &policy))
		case "ConfigMap":
			data := r.GetDataMap()
			require.Contains(t, data, "protectedNodeKeys", "deploy/policy's ConfigMap")
			shipped = data["protectedNodeKeys"]
		}
	}
	split := func(s string) []string {
		var keys []string
		for _, k := range strings.Split(strings.ReplaceAll(s, "\n", ","), ",") {
			if k = strings.TrimSpace(k); k != "" {
				keys = append(keys, k)
			}
		}
		return keys
	}
	var fallback []string
	for _, v := range policy.Spec.Variables {
		if v.Name != "protectedNodes" {
			continue
		}
		m := regexp.MustCompile(`params\.\?data\.\?protectedNodeKeys\.orValue\('([^']*)'\)`).FindStringSubmatch(v.Expression)
		require.NotNil(t, m, "the variable protectedNodes reads no protectedNodeKeys with a fallback: %s", v.Expression)
		fallback = split(m[1])
	}
	require.NotEmpty(t, fallback, "the policy has no variable protectedNodes")
	require.Equal(t, split(shipped), fallback, "the ConfigMap's protectedNodeKeys (expected) and the policy's fallback (actual)")
	for _, want := range []string{"node-role.kubernetes.io/control-plane", "node-role.kubernetes.io/master"} {
		require.Contains(t, fallback, want)
	}
}
