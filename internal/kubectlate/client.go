package kubectlate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/api/v1alpha1"
)

// pageSize is how many objects one list request asks for: a fleet of
// thousands of WorkerPools is read in pages, so that no response (and no
// API server's memory for it) holds them all at once.
const pageSize = 500

// client is a live client (no cache: the plugin reads once, or watches
// one object) for the kubeconfig the flags name.
func (o *options) client() (ctrlclient.WithWatch, error) {
	rest, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	c, err := ctrlclient.NewWithWatch(rest, ctrlclient.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a Kubernetes client for %s: %w", rest.Host, err)
	}
	return c, nil
}

// scheme knows the built-in types and ate.dev/v1alpha1: kube.Scheme's, built
// here because package kube also names clusters, for which it links the
// Temporal SDK, and a kubectl plugin has no business carrying it.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}()

// pagedReader lists in pages of size objects, following the continue
// token, and returns them as one list: what the product's shared readers
// (rollout.ClassPools, poolwatch.ListConfigs) take, with a bounded
// response per request.
type pagedReader struct {
	ctrlclient.Reader
	size int64
}

func (p pagedReader) List(ctx context.Context, list ctrlclient.ObjectList, opts ...ctrlclient.ListOption) error {
	var items []runtime.Object
	cont := ""
	for {
		page, ok := list.DeepCopyObject().(ctrlclient.ObjectList)
		if !ok {
			return fmt.Errorf("listing %T: not a list", list)
		}
		pageOpts := append(append([]ctrlclient.ListOption{}, opts...), ctrlclient.Limit(p.size), ctrlclient.Continue(cont))
		if err := p.Reader.List(ctx, page, pageOpts...); err != nil {
			return err
		}
		got, err := meta.ExtractList(page)
		if err != nil {
			return fmt.Errorf("reading a page of %T: %w", list, err)
		}
		items = append(items, got...)
		if cont = page.GetContinue(); cont == "" {
			list.SetResourceVersion(page.GetResourceVersion())
			return meta.SetList(list, items)
		}
	}
}
