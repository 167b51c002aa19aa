package producttest

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// asset is a placeholder asset of the right shape (nothing fetches it).
func asset(name string) v1alpha1.SandboxAsset {
	return v1alpha1.SandboxAsset{URL: "https://assets.example/" + name, SHA256: strings.Repeat("b", 64)}
}

// GVisorConfig is a valid gvisor SandboxConfig, annotated as a class default
// when classDefault is set.
func GVisorConfig(name string, classDefault bool) *v1alpha1.SandboxConfig {
	c := &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass:   v1alpha1.SandboxClassGVisor,
			DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{
				Name:       "v1",
				PauseImage: "registry.example/pause@sha256:" + strings.Repeat("a", 64),
				Assets:     map[string]map[string]v1alpha1.SandboxAsset{"amd64": {"gvisor": asset("gvisor.tar.zstd")}},
			}},
		},
	}
	if classDefault {
		c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "true"}
	}
	return c
}

// MicroVMConfig is a valid microvm SandboxConfig.
func MicroVMConfig(name string) *v1alpha1.SandboxConfig {
	files := map[string]v1alpha1.SandboxAsset{}
	for _, f := range []string{"cloud-hypervisor", "virtiofsd", "kata-kernel", "kata-image"} {
		files[f] = asset(f)
	}
	return &v1alpha1.SandboxConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SandboxConfigSpec{
			SandboxClass: v1alpha1.SandboxClassMicroVM, DefaultVersion: "v1",
			Versions: []v1alpha1.SandboxConfigVersion{{Name: "v1", Assets: map[string]map[string]v1alpha1.SandboxAsset{"amd64": files}}},
		},
	}
}

// Pool is a gvisor WorkerPool with no workers, pinned to configRef unless
// it is empty.
func Pool(ns, name, configRef string) *v1alpha1.WorkerPool {
	p := &v1alpha1.WorkerPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.WorkerPoolSpec{
			Replicas:       Ptr(int32(0)),
			WorkerImage:    "ateworker-gvisor:v1",
			SandboxClasses: []v1alpha1.WorkerPoolSandboxClass{{Name: v1alpha1.SandboxClassGVisor}},
		},
	}
	if configRef != "" {
		p.Spec.SandboxClasses[0].ConfigRef = &v1alpha1.SandboxConfigReference{Name: configRef}
	}
	return p
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }
