package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the server-side apply field manager of the samples.
const fieldOwner = "ate-devstack"

// applyDir server-side applies every object of the YAML files in dir, in
// file name order (so a namespace file can come first), like
// `kubectl apply --server-side -f dir`. Re-applying is a no-op, so a
// restarted stack keeps what the orchestrator wrote to status.
func applyDir(ctx context.Context, c client.Client, dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var applied []string
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return applied, err
		}
		for _, u := range objs {
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
				return applied, fmt.Errorf("applying %s %s from %s: %w", u.GetKind(), name(u), f, err)
			}
			applied = append(applied, fmt.Sprintf("%s %s", u.GetKind(), name(u)))
		}
	}
	return applied, nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		if len(u.Object) == 0 { // an empty document between "---"
			continue
		}
		objs = append(objs, u)
	}
}

func name(u *unstructured.Unstructured) string {
	if u.GetNamespace() != "" {
		return u.GetNamespace() + "/" + u.GetName()
	}
	return u.GetName()
}
