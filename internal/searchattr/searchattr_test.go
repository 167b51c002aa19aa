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
