package searchattr

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
)

// Problem is a custom search attribute a namespace lacks, or holds with
// another type.
type Problem struct {
	Definition
	Namespace string
	// Have is the type the namespace has it with; unspecified when missing.
	Have string
}

// Fix is the command an operator runs to fix it: the CLI's create for a
// missing attribute; for one of the wrong type, removing it first (which
// drops what was indexed under it).
func (p Problem) Fix() string {
	create := fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s",
		p.Namespace, p.Name, p.Type.String())
	if p.Have == "" {
		return create
	}
	return fmt.Sprintf("temporal operator search-attribute remove --namespace %s --name %s && %s", p.Namespace, p.Name, create)
}

func (p Problem) String() string {
	if p.Have == "" {
		return fmt.Sprintf("search attribute %s (%s) is not registered in Temporal namespace %q; register it with: %s",
			p.Name, p.Type, p.Namespace, p.Fix())
	}
	return fmt.Sprintf("search attribute %s of Temporal namespace %q has type %s, want %s; fix with: %s",
		p.Name, p.Namespace, p.Have, p.Type, p.Fix())
}

// Check lists the custom search attributes of a namespace and returns every
// definition it lacks or holds with another type: without them every
// workflow start and search attribute upsert of the product fails.
func Check(ctx context.Context, c client.Client, namespace string) ([]Problem, error) {
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("listing the search attributes of Temporal namespace %q: %w", namespace, err)
	}
	var problems []Problem
	for _, d := range Definitions {
		typ, ok := have.GetCustomAttributes()[d.Name]
		switch {
		case !ok:
			problems = append(problems, Problem{Definition: d, Namespace: namespace})
		case typ != d.Type:
			problems = append(problems, Problem{Definition: d, Namespace: namespace, Have: typ.String()})
		}
	}
	return problems, nil
}

// Describe joins problems into one readiness message.
func Describe(problems []Problem) string {
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
