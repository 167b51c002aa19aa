package resolve

import (
	"testing"

	"github.com/stretchr/testify/require"

	"ate.dev/orchestrator/api/v1alpha1"
)

func TestNextMove(t *testing.T) {
	def := Config{Name: "def", Class: gvisor, ClassDefault: true, Protected: true, CreatedUnix: 10}
	newer := Config{Name: "newer", Class: gvisor, ClassDefault: true, CreatedUnix: 20}
	old := Config{Name: "old", Class: gvisor, Protected: true, Deleting: true, CreatedUnix: 5}
	vm := Config{Name: "vm", Class: microvm, CreatedUnix: 5}
	status := func(classes ...v1alpha1.WorkerPoolSandboxClassStatus) *v1alpha1.WorkerPoolStatus {
		return &v1alpha1.WorkerPoolStatus{SandboxClasses: classes}
	}
	on := func(class v1alpha1.SandboxClass, current, pending string) v1alpha1.WorkerPoolSandboxClassStatus {
		st := v1alpha1.WorkerPoolSandboxClassStatus{Name: class}
		if current != "" {
			st.ConfigRef = &v1alpha1.SandboxConfigReference{Name: current}
		}
		if pending != "" {
			st.PendingConfigRef = &v1alpha1.SandboxConfigReference{Name: pending}
		}
		return st
	}
	tests := []struct {
		name    string
		spec    []v1alpha1.WorkerPoolSandboxClass
		status  *v1alpha1.WorkerPoolStatus
		configs []Config
		want    *Move
	}{
		{
			name:    "a new pool takes the class default",
			spec:    []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor)},
			status:  status(),
			configs: []Config{def},
			want:    &Move{Class: gvisor, To: "def"},
		},
		{
			name:    "a pool on the newest default needs nothing",
			spec:    []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor)},
			status:  status(on(gvisor, "newer", "")),
			configs: []Config{def, newer},
		},
		{
			name:    "a newer default moves the pool",
			spec:    []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor)},
			status:  status(on(gvisor, "def", "")),
			configs: []Config{def, newer},
			want:    &Move{Class: gvisor, From: "def", To: "newer"},
		},
		{
			name:    "moving off a config in deletion says so",
			spec:    []v1alpha1.WorkerPoolSandboxClass{pinnedTo(gvisor, "def")},
			status:  status(on(gvisor, "old", "")),
			configs: []Config{def, old},
			want:    &Move{Class: gvisor, From: "old", To: "def", FromDeleting: true, SpecConfigRef: "def"},
		},
		{
			name:    "a claim of the move under way is reported with it",
			spec:    []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor)},
			status:  status(on(gvisor, "def", "newer")),
			configs: []Config{def, newer},
			want:    &Move{Class: gvisor, From: "def", To: "newer", Pending: "newer"},
		},
		{
			name:    "a claim with no move to make is abandoned",
			spec:    []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor)},
			status:  status(on(gvisor, "newer", "def")),
			configs: []Config{def, newer},
			want:    &Move{Class: gvisor, From: "newer", Abandon: "def", Pending: "def"},
		},
		{
			name:    "a failed resolution that keeps its config needs no switch",
			spec:    []v1alpha1.WorkerPoolSandboxClass{pinnedTo(gvisor, "missing")},
			status:  status(on(gvisor, "def", "")),
			configs: []Config{def},
		},
		{
			name:    "a failed resolution with nothing to keep needs no switch",
			spec:    []v1alpha1.WorkerPoolSandboxClass{pinnedTo(gvisor, "vm")},
			status:  status(),
			configs: []Config{vm},
		},
		{
			name:    "the first class in spec order that needs work",
			spec:    []v1alpha1.WorkerPoolSandboxClass{unpinned(gvisor), pinnedTo(microvm, "vm")},
			status:  status(on(gvisor, "newer", "")),
			configs: []Config{def, newer, vm},
			want:    &Move{Class: microvm, To: "vm", SpecConfigRef: "vm"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NextMove(Pool{Namespace: "ns", Name: "p"}, tt.spec, tt.status, tt.configs)
			if tt.want == nil {
				require.False(t, ok, "unexpected move %+v", got)
				return
			}
			require.True(t, ok)
			require.Equal(t, *tt.want, got)
		})
	}
}
