package helmchart

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ValuesTable is the Markdown table of a chart's values.yaml: one row per
// value documented by a comment that starts with "# --" (helm-docs'
// convention), with its key path, default and the comment. A mapping is
// listed under its children's keys when any child is documented, else as
// one row (resources). A value nobody documented is an error, so the table
// cannot miss one: deploy/chart/README.md holds this table and a test
// compares it with values.yaml.
func ValuesTable(valuesYAML []byte) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(valuesYAML, &doc); err != nil {
		return "", err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return "", fmt.Errorf("values.yaml is not a mapping")
	}
	var b strings.Builder
	b.WriteString("| Key | Default | Description |\n|---|---|---|\n")
	if err := valueRows(&b, "", doc.Content[0]); err != nil {
		return "", err
	}
	return b.String(), nil
}

func valueRows(b *strings.Builder, prefix string, m *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		if v.Kind == yaml.MappingNode && documentedChild(v) {
			if err := valueRows(b, key+".", v); err != nil {
				return err
			}
			continue
		}
		desc, ok := description(k.HeadComment)
		if !ok {
			return fmt.Errorf("values.yaml: %s has no \"# --\" comment", key)
		}
		var x any
		if err := v.Decode(&x); err != nil {
			return fmt.Errorf("values.yaml: %s: %w", key, err)
		}
		def, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("values.yaml: %s: %w", key, err)
		}
		fmt.Fprintf(b, "| `%s` | `%s` | %s |\n", key, def, strings.ReplaceAll(desc, "|", `\|`))
	}
	return nil
}

func documentedChild(m *yaml.Node) bool {
	for i := 0; i < len(m.Content); i += 2 {
		if _, ok := description(m.Content[i].HeadComment); ok {
			return true
		}
	}
	return false
}

// description is the text of the last "# --" comment block of a head
// comment: its first line after "# --" and the comment lines that follow.
func description(head string) (string, bool) {
	lines := strings.Split(head, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return "", false
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "#") {
			break
		}
		l = strings.TrimPrefix(l, "#")
		if i == 0 {
			l = strings.TrimPrefix(l, " --")
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return strings.Join(words, " "), true
}
