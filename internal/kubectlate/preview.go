package kubectlate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/rolloutplan"
)

func newPreviewCommand(o *options) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "preview (NAME | -f FILE)",
		Short: "Show the pools each step of a SandboxConfig's rollout would move",
		Long: `Show the plan of a SandboxConfig's staged rollout over the cluster's unpinned pools of
its class: the pools admitted already, the pools each remaining step would move, and the
pools that would move back if it lost the class-default annotation. It reads; it moves
nothing, and it is the same preview as the starter's (internal/rolloutplan).

NAME previews the applied config. -f FILE previews the SandboxConfigs of a YAML file
as if it were applied (a pull request's): a config of the cluster of the same name keeps
its status and creation time, a new one is created now, and so is the newest default of
its class if annotated so. Other kinds in the file are ignored.`,
		Example: `  kubectl ate rollout preview gvisor-v2
  kubectl ate rollout preview -f deploy/gitops/sandboxconfigs/gvisor-v3.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (len(args) == 1) == (file != "") || len(args) > 1 {
				return errors.New("preview takes a SandboxConfig's NAME or -f FILE, not both")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != "json" {
				return fmt.Errorf("--output %q: only json is supported", output)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			var previews []*rolloutplan.Preview
			if file != "" {
				previews, err = previewFile(cmd.Context(), c, file, o.streams.ErrOut, time.Now())
			} else {
				var p *rolloutplan.Preview
				p, err = previewApplied(cmd.Context(), c, args[0])
				previews = append(previews, p)
			}
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(o.streams.Out)
				enc.SetIndent("", "  ")
				if len(previews) == 1 {
					return enc.Encode(previews[0])
				}
				return enc.Encode(previews)
			}
			for _, p := range previews {
				p.Print(o.streams.Out)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "a YAML file of SandboxConfigs to preview as if applied")
	cmd.Flags().StringVarP(&output, "output", "o", "", "json: print the preview as JSON")
	return cmd
}

func previewApplied(ctx context.Context, c ctrlclient.Reader, name string) (*rolloutplan.Preview, error) {
	cfg, err := getConfig(ctx, c, name)
	if err != nil {
		return nil, err
	}
	p, err := rolloutplan.ReadPreview(ctx, pagedReader{Reader: c, size: pageSize}, cfg)
	if err != nil {
		return nil, fmt.Errorf("previewing SandboxConfig %q: %w", name, err)
	}
	return p, nil
}

// previewFile previews each SandboxConfig of file as if the file were
// applied at now: every config of the file is in place of the cluster's
// of its name (or beside them), for the others' previews too.
func previewFile(ctx context.Context, c ctrlclient.Reader, file string, warn io.Writer, now time.Time) ([]*rolloutplan.Preview, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	configs, err := parseConfigs(b, file, warn)
	if err != nil {
		return nil, err
	}
	paged := pagedReader{Reader: c, size: pageSize}
	var live v1alpha1.SandboxConfigList
	if err := paged.List(ctx, &live); err != nil {
		return nil, fmt.Errorf("listing SandboxConfigs: %w", err)
	}
	// Creation times have a second's resolution, and of two defaults
	// created within one the name that sorts first is the newest: a new
	// config of the file is previewed as created after every config of
	// the cluster, as it will be when applied later on.
	created := now.Truncate(time.Second)
	for _, l := range live.Items {
		if !l.CreationTimestamp.Time.Before(created) {
			created = l.CreationTimestamp.Add(time.Second)
		}
	}
	for i := range configs {
		if err := asApplied(ctx, c, &configs[i], created); err != nil {
			return nil, err
		}
	}
	r := overlayReader{Reader: paged, configs: configs}
	var out []*rolloutplan.Preview
	for i := range configs {
		p, err := rolloutplan.ReadPreview(ctx, r, &configs[i])
		if err != nil {
			return nil, fmt.Errorf("previewing SandboxConfig %q of %s: %w", configs[i].Name, file, err)
		}
		p.Source = file
		out = append(out, p)
	}
	return out, nil
}

// parseConfigs reads the SandboxConfigs of a YAML (or JSON) stream,
// strictly: a field the API does not know is an error, as the API server's
// schema would make it.
func parseConfigs(b []byte, file string, warn io.Writer) ([]v1alpha1.SandboxConfig, error) {
	dec := utilyaml.NewYAMLReader(bufioReader(b))
	var out []v1alpha1.SandboxConfig
	for n := 1; ; n++ {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading document %d of %s: %w", n, file, err)
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d of %s: %w", n, file, err)
		}
		if tm.Kind == "" && len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if tm.Kind != "SandboxConfig" || tm.APIVersion != v1alpha1.GroupVersion.String() {
			fmt.Fprintf(warn, "%s: document %d is a %s %s, not a SandboxConfig: ignored\n", file, n, tm.APIVersion, tm.Kind)
			continue
		}
		var c v1alpha1.SandboxConfig
		if err := yaml.UnmarshalStrict(doc, &c); err != nil {
			return nil, fmt.Errorf("SandboxConfig in document %d of %s: %w", n, file, err)
		}
		if c.Name == "" {
			return nil, fmt.Errorf("SandboxConfig in document %d of %s has no metadata.name", n, file)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no SandboxConfig (apiVersion %s, kind SandboxConfig)", file, v1alpha1.GroupVersion)
	}
	return out, nil
}

// asApplied makes c what applying it would leave: a config of its name in
// the cluster keeps its identity, creation time, finalizers and status
// (the spec and metadata labels and annotations are the file's); a new
// one is created at created.
func asApplied(ctx context.Context, c ctrlclient.Reader, cfg *v1alpha1.SandboxConfig, created time.Time) error {
	var live v1alpha1.SandboxConfig
	err := c.Get(ctx, ctrlclient.ObjectKey{Name: cfg.Name}, &live)
	switch {
	case apierrors.IsNotFound(err):
		cfg.CreationTimestamp = metav1.NewTime(created)
		cfg.Status = v1alpha1.SandboxConfigStatus{}
		return nil
	case err != nil:
		return fmt.Errorf("reading SandboxConfig %q: %w", cfg.Name, err)
	}
	cfg.UID, cfg.CreationTimestamp, cfg.DeletionTimestamp = live.UID, live.CreationTimestamp, live.DeletionTimestamp
	cfg.Finalizers, cfg.Generation, cfg.Status = live.Finalizers, live.Generation, live.Status
	return nil
}

// overlayReader lists the SandboxConfigs of the cluster with configs in
// place of those of their names: the cluster as a file would leave it.
type overlayReader struct {
	ctrlclient.Reader
	configs []v1alpha1.SandboxConfig
}

func (r overlayReader) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	l, ok := list.(*v1alpha1.SandboxConfigList)
	if !ok {
		return nil
	}
	for _, c := range r.configs {
		i := 0
		for i < len(l.Items) && l.Items[i].Name != c.Name {
			i++
		}
		if i == len(l.Items) {
			l.Items = append(l.Items, v1alpha1.SandboxConfig{})
		}
		l.Items[i] = *c.DeepCopy()
	}
	return nil
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }
