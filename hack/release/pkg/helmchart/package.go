package helmchart

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"
	"go.yaml.in/yaml/v3"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// digestRef is REPOSITORY[:TAG]@sha256:HEX.
var digestRef = regexp.MustCompile(`^([^@\s]+?)(?::([\w][\w.-]{0,127}))?@(sha256:[0-9a-f]{64})$`)

// Package writes the chart in chartDir as a .tgz into outDir, as `helm
// package` does, for a release: its version and appVersion are the release's
// version (a leading "v" is dropped from the chart's version, which must be
// SemVer 2; appVersion keeps it, as the binaries' --version prints it), and
// its values.yaml pins image, which must name a digest
// (REPOSITORY[:TAG]@sha256:HEX): image.repository, image.tag (TAG, else
// version) and image.digest. It returns the path of the .tgz
// (outDir/ate-orchestrator-VERSION.tgz). The chart in chartDir is not
// changed.
func Package(chartDir, outDir, version, image string) (string, error) {
	m := digestRef.FindStringSubmatch(image)
	if m == nil {
		return "", fmt.Errorf("image %q: want REPOSITORY[:TAG]@sha256:HEX, pinned by digest", image)
	}
	repo, tag, digest := m[1], m[2], m[3]
	if tag == "" {
		tag = version
	}
	ch, err := loader.Load(chartDir)
	if err != nil {
		return "", fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	ch.Metadata.Version = ChartVersion(version)
	ch.Metadata.AppVersion = version
	if err := ch.Validate(); err != nil {
		return "", fmt.Errorf("chart %s at version %q: %w", chartDir, version, err)
	}
	if err := pinImage(ch, repo, tag, digest); err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	path, err := chartutil.Save(ch, outDir)
	if err != nil {
		return "", fmt.Errorf("packaging chart %s: %w", chartDir, err)
	}
	return path, nil
}

// pinImage sets image.repository, image.tag and image.digest in the chart's
// values.yaml (keeping its comments) and in its parsed values.
func pinImage(ch *chartv2.Chart, repo, tag, digest string) error {
	set := map[string]string{"repository": repo, "tag": tag, "digest": digest}
	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(f.Data, &doc); err != nil {
			return fmt.Errorf("values.yaml: %w", err)
		}
		img := mapValue(doc.Content[0], "image")
		if img == nil || img.Kind != yaml.MappingNode {
			return fmt.Errorf("values.yaml has no image: mapping")
		}
		for k, v := range set {
			n := mapValue(img, k)
			if n == nil {
				return fmt.Errorf("values.yaml has no image.%s", k)
			}
			n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!str", v, yaml.DoubleQuotedStyle
		}
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return err
		}
		f.Data = b.Bytes()
	}
	vals, ok := ch.Values["image"].(map[string]any)
	if !ok {
		return fmt.Errorf("the chart's values have no image")
	}
	for k, v := range set {
		vals[k] = v
	}
	return nil
}

// mapValue is the value of key in a YAML mapping node, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// ChartVersion is the chart version of a release version: SemVer 2, as
// Helm requires. A tag (v0.1.0) loses its "v"; a build between tags, whose
// version is `git describe`'s (4c38746-dirty, v0.1.0-3-g4c38746), becomes
// a pre-release of 0.0.0 when it is not SemVer already.
func ChartVersion(version string) string {
	v := strings.TrimPrefix(version, "v")
	if _, err := semver.StrictNewVersion(v); err == nil {
		return v
	}
	pre := strings.Trim(nonSemverChars.ReplaceAllString(version, "-"), "-")
	// SemVer forbids a numeric pre-release identifier with a leading zero,
	// and an abbreviated hash can be all digits (0160220): it takes git's
	// own "g" prefix, as in git describe's v0.1.0-3-g0160220.
	if _, err := semver.StrictNewVersion("0.0.0-" + pre); err != nil {
		pre = "g" + pre
	}
	return "0.0.0-" + pre
}

var nonSemverChars = regexp.MustCompile(`[^0-9A-Za-z-]+`)
