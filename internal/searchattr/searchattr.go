// Package searchattr names the custom Temporal search attributes of the
// orchestrator's workflows. The workflows set them, the Temporal dev server
// (tests and `make dev`) registers them, and operators filter on them in the
// Web UI, e.g. WorkerPool="ns/name". Their spelling is part of the operator
// surface: renaming one orphans the histories indexed under the old name.
package searchattr

import (
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
)

// Names of the custom search attributes.
const (
	// KubernetesCluster is the cluster a workflow acts for (wfapi.Cluster):
	// every workflow of the product has it, so that one query lists one
	// cluster's workflows, or a fleet's (ToConfig = "x" without it).
	KubernetesCluster = "KubernetesCluster"
	// WorkerPool is the pool a workflow acts for, as "namespace/name".
	WorkerPool = "WorkerPool"
	// SandboxClass is the sandbox class a switch moves, e.g. "gvisor".
	SandboxClass = "SandboxClass"
	// FromConfig is the SandboxConfig a switch moves away from ("" if none).
	FromConfig = "FromConfig"
	// ToConfig is the SandboxConfig a switch moves to.
	ToConfig = "ToConfig"
	// SandboxConfig is the SandboxConfig a release workflow releases.
	SandboxConfig = "SandboxConfig"
	// Outcome is how a switch or release ended, e.g. "confirmed", "rolled
	// back", "released" (the wfapi.Outcome* values).
	Outcome = "Outcome"
)

// Typed keys for workflow code (workflow.UpsertTypedSearchAttributes).
var (
	KubernetesClusterKey = temporal.NewSearchAttributeKeyKeyword(KubernetesCluster)
	WorkerPoolKey        = temporal.NewSearchAttributeKeyKeyword(WorkerPool)
	SandboxClassKey      = temporal.NewSearchAttributeKeyKeyword(SandboxClass)
	FromConfigKey        = temporal.NewSearchAttributeKeyKeyword(FromConfig)
	ToConfigKey          = temporal.NewSearchAttributeKeyKeyword(ToConfig)
	SandboxConfigKey     = temporal.NewSearchAttributeKeyKeyword(SandboxConfig)
	OutcomeKey           = temporal.NewSearchAttributeKeyKeyword(Outcome)
)

// Definition is one custom search attribute and its type.
type Definition struct {
	Name string
	Type enumspb.IndexedValueType
}

// Definitions lists every custom search attribute, to register on a server.
var Definitions = []Definition{
	{Name: KubernetesCluster, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: WorkerPool, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: SandboxClass, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: FromConfig, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: ToConfig, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: SandboxConfig, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
	{Name: Outcome, Type: enumspb.INDEXED_VALUE_TYPE_KEYWORD},
}

// DevServerFlags returns the --search-attribute flags of
// `temporal server start-dev` that register every definition.
func DevServerFlags() []string {
	flags := make([]string, 0, 2*len(Definitions))
	for _, d := range Definitions {
		flags = append(flags, "--search-attribute", fmt.Sprintf("%s=%s", d.Name, d.Type.String()))
	}
	return flags
}
