package kubectlate

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/kubeclient"
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
	return kubeclient.Live(rest)
}

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
