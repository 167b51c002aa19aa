package wfapi

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"ate.dev/orchestrator/api/v1alpha1"
)

// Problem says why a switch's input, its pool taken from its workflow
// ID, is one no step could carry out, or "" when it is not: the pool's
// namespace is not a DNS label or its name not a DNS subdomain; or, for a
// move, the class is not one the API knows, the pool's UID is missing, or
// a config name is not a DNS subdomain. The starter never starts such a
// switch; one started by hand would fail every step client-side, and
// retry it forever, holding the pool's switch ID. Pure, so a workflow can
// call it.
func (in SwitchInput) Problem() string {
	if errs := validation.IsDNS1123Label(in.Pool.Namespace); len(errs) > 0 {
		return fmt.Sprintf("namespace %q is not a DNS label: %s", in.Pool.Namespace, strings.Join(errs, "; "))
	}
	if p := subdomain("WorkerPool", in.Pool.Name); p != "" {
		return p
	}
	if !in.IsMove() {
		return ""
	}
	switch in.Class {
	case v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM:
	default:
		return fmt.Sprintf("unknown sandbox class %q (want %q or %q)", in.Class, v1alpha1.SandboxClassGVisor, v1alpha1.SandboxClassMicroVM)
	}
	if in.Pool.UID == "" {
		return "a move names the pool's UID (pool.uid), so that it never acts on a pool created again under the name"
	}
	for _, name := range []string{in.From, in.To, in.Abandon} {
		if name == "" {
			continue
		}
		if p := subdomain("SandboxConfig", name); p != "" {
			return p
		}
	}
	return ""
}

func subdomain(kind, name string) string {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Sprintf("%s name %q is not a DNS subdomain: %s", kind, name, strings.Join(errs, "; "))
	}
	return ""
}
