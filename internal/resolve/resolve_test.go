package resolve

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
)

const (
	gvisor  = v1alpha1.SandboxClassGVisor
	microvm = v1alpha1.SandboxClassMicroVM
)

func unpinned(class v1alpha1.SandboxClass) v1alpha1.WorkerPoolSandboxClass {
	return v1alpha1.WorkerPoolSandboxClass{Name: class}
}

func pinnedTo(class v1alpha1.SandboxClass, name string) v1alpha1.WorkerPoolSandboxClass {
	return v1alpha1.WorkerPoolSandboxClass{Name: class, ConfigRef: &v1alpha1.SandboxConfigReference{Name: name}}
}

func TestClass(t *testing.T) {
	def := func(name string, created int64) Config {
		return Config{Name: name, Class: gvisor, ClassDefault: true, Protected: true, CreatedUnix: created}
	}
	plain := func(name string, class v1alpha1.SandboxClass) Config {
		return Config{Name: name, Class: class, Protected: true, CreatedUnix: 100}
	}
	deleting := func(c Config, protected bool) Config {
		c.Deleting, c.Protected = true, protected
		return c
	}
	tests := []struct {
		name    string
		entry   v1alpha1.WorkerPoolSandboxClass
		current string
		configs []Config
		want    Result
	}{
		{
			name:    "pinned config exists",
			entry:   pinnedTo(gvisor, "release1"),
			configs: []Config{plain("release1", gvisor)},
			want:    Result{Class: gvisor, Target: "release1", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "release1"`},
		},
		{
			name:    "pinned config missing keeps the current one",
			entry:   pinnedTo(gvisor, "gvisor-release2"),
			current: "gvisor-release1",
			configs: []Config{plain("gvisor-release1", gvisor)},
			want: Result{Class: gvisor, Target: "gvisor-release1", Reason: v1alpha1.ReasonSandboxConfigNotFound,
				Message: `SandboxConfig "gvisor-release2" not found; keeping "gvisor-release1"`},
		},
		{
			name:  "pinned config missing with nothing to keep",
			entry: pinnedTo(gvisor, "gvisor-release2"),
			want:  Result{Class: gvisor, Reason: v1alpha1.ReasonSandboxConfigNotFound, Message: `SandboxConfig "gvisor-release2" not found`},
		},
		{
			name:    "pinned config of the other class",
			entry:   pinnedTo(gvisor, "vm"),
			current: "release1",
			configs: []Config{plain("vm", microvm), plain("release1", gvisor)},
			want: Result{Class: gvisor, Target: "release1", Reason: v1alpha1.ReasonSandboxClassMismatch,
				Message: `SandboxConfig "vm" is of sandbox class "microvm", not "gvisor"; keeping "release1"`},
		},
		{
			name:    "class mismatch is reported before deletion",
			entry:   pinnedTo(gvisor, "vm"),
			configs: []Config{deleting(plain("vm", microvm), true)},
			want:    Result{Class: gvisor, Reason: v1alpha1.ReasonSandboxClassMismatch, Message: `SandboxConfig "vm" is of sandbox class "microvm", not "gvisor"`},
		},
		{
			name:    "pinned config in deletion is refused for a new user",
			entry:   pinnedTo(gvisor, "old"),
			configs: []Config{deleting(plain("old", gvisor), true)},
			want:    Result{Class: gvisor, Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `SandboxConfig "old" is being deleted`},
		},
		{
			name:    "pinned config in deletion is kept by a pool already on it while protected",
			entry:   pinnedTo(gvisor, "old"),
			current: "old",
			configs: []Config{deleting(plain("old", gvisor), true)},
			want: Result{Class: gvisor, Target: "old", Reason: v1alpha1.ReasonSandboxConfigDeleting,
				Message: `SandboxConfig "old" is being deleted; keeping "old"`},
		},
		{
			name:    "pinned config in deletion without the finalizer is not kept",
			entry:   pinnedTo(gvisor, "old"),
			current: "old",
			configs: []Config{deleting(plain("old", gvisor), false)},
			want:    Result{Class: gvisor, Reason: v1alpha1.ReasonSandboxConfigDeleting, Message: `SandboxConfig "old" is being deleted`},
		},
		{
			name:    "default: the newest annotated config",
			entry:   unpinned(gvisor),
			configs: []Config{def("gvisor-default", 100), def("gvisor-default-v2", 200), plain("newer-not-default", gvisor)},
			want:    Result{Class: gvisor, Target: "gvisor-default-v2", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "gvisor-default-v2"`},
		},
		{
			name:    "default: equal creation times pick the name that sorts first",
			entry:   unpinned(gvisor),
			configs: []Config{def("b", 100), def("a", 100), def("c", 100)},
			want:    Result{Class: gvisor, Target: "a", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "a"`},
		},
		{
			name:    "default: only the exact value true counts and other classes are ignored",
			entry:   unpinned(gvisor),
			configs: []Config{{Name: "vm", Class: microvm, ClassDefault: true, CreatedUnix: 300}, def("gv", 100)},
			want:    Result{Class: gvisor, Target: "gv", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "gv"`},
		},
		{
			name:    "default: a config in deletion is no longer a default",
			entry:   unpinned(gvisor),
			current: "v2",
			configs: []Config{def("v1", 100), deleting(def("v2", 200), true)},
			want:    Result{Class: gvisor, Target: "v1", Resolved: true, Reason: v1alpha1.ReasonResolved, Message: `resolved to SandboxConfig "v1"`},
		},
		{
			name:    "default: none, keeps the current config",
			entry:   unpinned(gvisor),
			current: "old",
			configs: []Config{plain("old", gvisor)},
			want: Result{Class: gvisor, Target: "old", Reason: v1alpha1.ReasonDefaultConfigNotFound,
				Message: `no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"; keeping "old"`},
		},
		{
			name:    "default: none, the current config is in deletion and protected",
			entry:   unpinned(gvisor),
			current: "old",
			configs: []Config{deleting(def("old", 100), true)},
			want: Result{Class: gvisor, Target: "old", Reason: v1alpha1.ReasonSandboxConfigDeleting,
				Message: `SandboxConfig "old" is being deleted and no other SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"; keeping "old"`},
		},
		{
			name:    "default: none, the current config lost its finalizer",
			entry:   unpinned(gvisor),
			current: "old",
			configs: []Config{deleting(def("old", 100), false)},
			want: Result{Class: gvisor, Reason: v1alpha1.ReasonDefaultConfigNotFound,
				Message: `no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"`},
		},
		{
			name:    "default: none, the current config changed class",
			entry:   unpinned(gvisor),
			current: "old",
			configs: []Config{plain("old", microvm)},
			want: Result{Class: gvisor, Reason: v1alpha1.ReasonDefaultConfigNotFound,
				Message: `no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"`},
		},
		{
			name:    "default: none and nothing to keep",
			entry:   unpinned(gvisor),
			current: "gone",
			want: Result{Class: gvisor, Reason: v1alpha1.ReasonDefaultConfigNotFound,
				Message: `no SandboxConfig of sandbox class "gvisor" is annotated sandboxconfig.ate.dev/is-class-default: "true"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Class(Pool{Namespace: "ns", Name: "p"}, tt.entry, tt.current, tt.configs))
		})
	}
}

func TestConfigFromDefaultsTheClassToGVisor(t *testing.T) {
	c := &v1alpha1.SandboxConfig{}
	c.Name = "x"
	c.Annotations = map[string]string{v1alpha1.ClassDefaultAnnotation: "True"}
	got := ConfigFrom(c)
	require.Equal(t, gvisor, got.Class)
	require.False(t, got.ClassDefault, "only the exact value \"true\" marks a class default")
}
