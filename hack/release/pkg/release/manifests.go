package release

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Names of the release's manifests.
const (
	InstallName    = "install.yaml"
	MonitoringName = "monitoring.yaml"
)

// ImageName is the name deploy/'s containers give the orchestrator's image
// and its kustomization's images entry rewrites.
const ImageName = "ate-orchestrator"

// VersionLabel marks every object of a release with its version. Only the
// objects' own labels: not selectors, which are immutable, nor pod
// templates, which would roll the pods for a label.
const VersionLabel = "app.kubernetes.io/version"

// SystemNamespace is the namespace of the processes (deploy/manager).
const SystemNamespace = "ate-system"

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// PinnedImage is the image reference of a release: the repository and the
// index digest, so that every node runs the same bytes for every platform.
func PinnedImage(image, digest string) string { return image + "@" + digest }

// RenderInstall is `kustomize build deploy/` with the orchestrator's image
// set to image@digest (`kustomize edit set image`) and every object
// labelled with the version, on a copy of deployDir, so that
// deploy/ stays as it is. It fails when a container does not end up on the
// pinned image.
func RenderInstall(deployDir, image, digest, version string) ([]byte, error) {
	if !digestPattern.MatchString(digest) {
		return nil, fmt.Errorf("image digest %q: want sha256: and 64 hex digits", digest)
	}
	tmp, err := os.MkdirTemp("", "ate-release-deploy-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "deploy")
	if err := os.CopyFS(root, os.DirFS(deployDir)); err != nil {
		return nil, fmt.Errorf("copying %s: %w", deployDir, err)
	}
	kpath := filepath.Join(root, "kustomization.yaml")
	b, err := os.ReadFile(kpath)
	if err != nil {
		return nil, fmt.Errorf("reading deploy/kustomization.yaml: %w", err)
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		return nil, fmt.Errorf("parsing deploy/kustomization.yaml: %w", err)
	}
	found := false
	for i := range k.Images {
		if k.Images[i].Name == ImageName {
			k.Images[i] = types.Image{Name: ImageName, NewName: image, Digest: digest}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("deploy/kustomization.yaml has no images entry %q to pin", ImageName)
	}
	k.Labels = append(k.Labels, types.Label{Pairs: map[string]string{VersionLabel: version}})
	if b, err = yaml.Marshal(&k); err != nil {
		return nil, fmt.Errorf("writing the release's kustomization: %w", err)
	}
	if err := os.WriteFile(kpath, b, 0o644); err != nil {
		return nil, fmt.Errorf("writing the release's kustomization: %w", err)
	}
	// In the order `kustomize build` and `kubectl apply -k` write (the
	// Namespace and the CRDs first): `kubectl apply -f install.yaml`
	// applies in file order, and a Role before its Namespace is refused.
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), root)
	if err != nil {
		return nil, fmt.Errorf("kustomize build of deploy/: %w", err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("writing the kustomize output as YAML: %w", err)
	}
	want := PinnedImage(image, digest)
	images, err := ContainerImages(out)
	if err != nil {
		return nil, err
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("install.yaml has no container")
	}
	for where, img := range images {
		if img != want {
			return nil, fmt.Errorf("install.yaml: %s has image %q, want %q", where, img, want)
		}
	}
	header := fmt.Sprintf("# ate-orchestrator %s: the CRDs, the namespace %s, the processes' ServiceAccounts,\n"+
		"# roles and Deployments, the image pinned by digest (%s).\n"+
		"#   kubectl apply --server-side -f install.yaml\n", version, SystemNamespace, want)
	return append([]byte(header), out...), nil
}

// ContainerImages lists the image of every container, init container and
// ephemeral container of every object of a multi-document YAML stream,
// keyed by "Kind namespace/name container".
func ContainerImages(stream []byte) (map[string]string, error) {
	objs, err := SplitYAML(stream)
	if err != nil {
		return nil, err
	}
	images := map[string]string{}
	for _, o := range objs {
		md, _ := o["metadata"].(map[string]any)
		id := fmt.Sprintf("%v %v/%v", o["kind"], md["namespace"], md["name"])
		walkContainers(o, func(c map[string]any) {
			img, _ := c["image"].(string)
			images[fmt.Sprintf("%s %v", id, c["name"])] = img
		})
	}
	return images, nil
}

// walkContainers calls f on each element of every containers,
// initContainers and ephemeralContainers list under v, wherever the pod
// spec is (Deployment, Job, CronJob, Pod...).
func walkContainers(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if k == "containers" || k == "initContainers" || k == "ephemeralContainers" {
				if list, ok := v[k].([]any); ok {
					for _, c := range list {
						if c, ok := c.(map[string]any); ok {
							f(c)
						}
					}
					continue
				}
			}
			walkContainers(v[k], f)
		}
	case []any:
		for _, e := range v {
			walkContainers(e, f)
		}
	}
}

// SplitYAML parses a multi-document YAML stream into objects, skipping
// empty documents.
func SplitYAML(stream []byte) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var objs []map[string]any
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
}

// Names of the monitoring objects.
const (
	DashboardConfigMap = "ate-orchestrator-dashboard"
	PrometheusRuleName = "ate-orchestrator"
	dashboardKey       = "ate-orchestrator.json"
)

// RenderMonitoring is monitoring.yaml: the Grafana dashboard of
// monitoringDir (deploy/monitoring) in a ConfigMap labelled
// grafana_dashboard "1" (what the Grafana sidecar of kube-prometheus-stack
// provisions by default), and its alerting rules as a PrometheusRule. It
// reads the files, as RenderInstall reads deploy/: the release is cut from
// the tree, and deploy/ is no library of the product. The rules' relative
// runbook_urls become <source>/blob/<version>/docs/runbooks.md#<alert>.
func RenderMonitoring(monitoringDir, version, source string) ([]byte, error) {
	alerts, err := os.ReadFile(filepath.Join(monitoringDir, "alerts.yaml"))
	if err != nil {
		return nil, fmt.Errorf("reading the alerting rules: %w", err)
	}
	dashboard, err := os.ReadFile(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the dashboard: %w", err)
	}
	var rules map[string]any
	if err := yaml.Unmarshal(alerts, &rules); err != nil {
		return nil, fmt.Errorf("parsing deploy/monitoring/alerts.yaml: %w", err)
	}
	if _, ok := rules["groups"]; !ok || len(rules) != 1 {
		return nil, fmt.Errorf("deploy/monitoring/alerts.yaml: want only groups:, have %d keys", len(rules))
	}
	if err := absoluteRunbooks(rules, strings.TrimSuffix(source, "/")+"/blob/"+version+"/"); err != nil {
		return nil, fmt.Errorf("deploy/monitoring/alerts.yaml: %w", err)
	}
	labels := func(component string) map[string]any {
		return map[string]any{
			"app.kubernetes.io/name":      "ate-orchestrator",
			"app.kubernetes.io/part-of":   "ate-orchestrator",
			"app.kubernetes.io/component": component,
			VersionLabel:                  version,
		}
	}
	dashLabels := labels("dashboard")
	dashLabels["grafana_dashboard"] = "1"
	objs := []map[string]any{
		{
			"apiVersion": "v1",
			"kind":       "ConfigMap",
			"metadata":   map[string]any{"name": DashboardConfigMap, "namespace": SystemNamespace, "labels": dashLabels},
			"data":       map[string]any{dashboardKey: string(dashboard)},
		},
		{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "PrometheusRule",
			"metadata":   map[string]any{"name": PrometheusRuleName, "namespace": SystemNamespace, "labels": labels("alerts")},
			"spec":       rules,
		},
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# ate-orchestrator %s: the Grafana dashboard (ConfigMap, label grafana_dashboard) and\n"+
		"# the alerting rules (PrometheusRule of the Prometheus Operator). Needs the namespace of install.yaml.\n"+
		"#   kubectl apply --server-side -f monitoring.yaml\n", version)
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("writing %v as YAML: %w", o["kind"], err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes(), nil
}

// absoluteRunbooks prefixes every rule's relative runbook_url with base.
func absoluteRunbooks(rules map[string]any, base string) error {
	groups, ok := rules["groups"].([]any)
	if !ok {
		return fmt.Errorf("groups: is not a list")
	}
	for _, g := range groups {
		rs, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rs {
			ann, _ := r.(map[string]any)["annotations"].(map[string]any)
			u, ok := ann["runbook_url"].(string)
			if !ok || strings.Contains(u, "://") {
				continue
			}
			ann["runbook_url"] = base + strings.TrimPrefix(u, "/")
		}
	}
	return nil
}
