package searchattr

import (
	"slices"
	"testing"
)

// The dev server parses "NAME=Type" with the type's short name; the
// protobuf enum's String() must give exactly that.
func TestDevServerFlags(t *testing.T) {
	flags := DevServerFlags()
	want := []string{
		"--search-attribute", "KubernetesCluster=Keyword",
		"--search-attribute", "WorkerPool=Keyword",
		"--search-attribute", "SandboxClass=Keyword",
		"--search-attribute", "FromConfig=Keyword",
		"--search-attribute", "ToConfig=Keyword",
		"--search-attribute", "SandboxConfig=Keyword",
		"--search-attribute", "Outcome=Keyword",
	}
	if !slices.Equal(flags, want) {
		t.Fatalf("DevServerFlags() = %q, want %q", flags, want)
	}
}

// The command an operator is told to run: create for a missing attribute,
// remove then create for one of the wrong type.
func TestProblemFix(t *testing.T) {
	missing := Problem{Definition: Definitions[0], Namespace: "ns"}
	if got, want := missing.Fix(), "temporal operator search-attribute create --namespace ns --name KubernetesCluster --type Keyword"; got != want {
		t.Fatalf("Fix() = %q, want %q", got, want)
	}
	wrong := Problem{Definition: Definitions[0], Namespace: "ns", Have: "Text"}
	if got, want := wrong.Fix(), "temporal operator search-attribute remove --namespace ns --name KubernetesCluster && temporal operator search-attribute create --namespace ns --name KubernetesCluster --type Keyword"; got != want {
		t.Fatalf("Fix() = %q, want %q", got, want)
	}
}
