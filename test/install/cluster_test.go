package install

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"ate.dev/orchestrator/internal/producttest"
	"ate.dev/orchestrator/internal/testenv"
)

const (
	systemNamespace = "ate-system"
	workerSA        = "ate-orchestrator-worker"
	starterSA       = "ate-orchestrator-starter"
	// partOf is the label the kustomization puts on every object.
	partOf = "app.kubernetes.io/part-of=ate-orchestrator"
	// fieldManager is kubectl's: `kubectl apply --server-side` applies as
	// "kubectl", so an operator's later kubectl apply owns the same fields.
	fieldManager = "kubectl"
)

// kube is the test's admin access to the API server: a dynamic client and a
// REST mapper that follows CRDs installed during the test.
type kube struct {
	dyn    dynamic.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newKube(t testing.TB) *kube {
	t.Helper()
	cfg := rest.CopyConfig(testenv.Current().RestConfig)
	cfg.WarningHandler = rest.NoWarnings{} // listing every resource, deprecated ones too
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	disc := memory.NewMemCacheClient(dc)
	return &kube{dyn: dyn, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}
}

// admin is a controller-runtime client of the test's admin whose scheme
// has the CRDs' own type too.
func admin(t testing.TB) client.Client {
	t.Helper()
	scheme := testenv.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(testenv.Current().RestConfig, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// productCRDs are the names of the product's CustomResourceDefinitions.
var productCRDs = []string{"sandboxconfigs.ate.dev", "workerpools.ate.dev"}

// productCRDsServed reports whether both of the product's CRDs exist and
// are not being deleted, read as objects. A list of pools is no such test:
// for a moment after a CRD is deleted the API server may still answer one
// list of its resource and refuse the next (seen: a cleanup's List passed,
// CleanCluster's List then failed with "could not find the requested
// resource").
func productCRDsServed(t testing.TB, a client.Client) bool {
	t.Helper()
	for _, name := range productCRDs {
		var crd apiextensionsv1.CustomResourceDefinition
		err := a.Get(context.Background(), client.ObjectKey{Name: name}, &crd)
		if apierrors.IsNotFound(err) || err == nil && crd.DeletionTimestamp != nil {
			return false
		}
		require.NoError(t, err, "reading CRD %s", name)
	}
	return true
}

// resource is the dynamic client of an object's kind, in its namespace.
func (k *kube) resource(t testing.TB, o *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		k.mapper.Reset() // a CRD applied since the last discovery
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	require.NoError(t, err, "mapping %s", gvk)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return k.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	return k.dyn.Resource(m.Resource)
}

func id(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// apply applies objs server-side in their order, as `kubectl apply
// --server-side -f` does, with no forced conflicts; dryRun sends
// dryRun=All. It returns what the server answered.
func (k *kube) apply(t testing.TB, objs []*unstructured.Unstructured, dryRun bool) []*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := metav1.ApplyOptions{FieldManager: fieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		got, err := k.resource(t, o).Apply(ctx, o.GetName(), o.DeepCopy(), opts)
		require.NoError(t, err, "server-side apply of %s (dry run %v): refused by the API server", id(o), dryRun)
		out = append(out, got)
		if o.GetKind() == "CustomResourceDefinition" && !dryRun {
			k.waitEstablished(t, o.GetName())
		}
	}
	return out
}

// waitEstablished waits for a CRD's Established condition.
func (k *kube) waitEstablished(t testing.TB, name string) {
	t.Helper()
	kc := admin(t)
	producttest.Eventually(t, "CRD "+name+" Established", func() (bool, string) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := kc.Get(context.Background(), client.ObjectKey{Name: name}, &crd); err != nil {
			return false, err.Error()
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %+v", crd.Status.Conditions)
	})
}

// get reads an object's live state; nil when it does not exist.
func (k *kube) get(t testing.TB, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := k.resource(t, o).Get(context.Background(), o.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err, "reading %s", id(o))
	return got
}

// spec is an object without what the cluster writes by itself: its
// status, resourceVersion, and the managedFields entries of status
// writers (the Deployment and disruption controllers' status updates).
// Two reads of an object no one re-applied have equal specs.
func spec(o *unstructured.Unstructured) *unstructured.Unstructured {
	o = o.DeepCopy()
	delete(o.Object, "status")
	o.SetResourceVersion("")
	var kept []metav1.ManagedFieldsEntry
	for _, e := range o.GetManagedFields() {
		if e.Subresource != "status" {
			kept = append(kept, e)
		}
	}
	o.SetManagedFields(kept)
	return o
}

// installSplit separates the CRDs from the rest (Helm hooks left out), for
// an upgrade that applies the CRDs first.
func installSplit(objs []*unstructured.Unstructured) (crds, rest []*unstructured.Unstructured) {
	for _, o := range withoutHooks(objs) {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	return crds, rest
}

// find returns the object of a kind and name among objs.
func find(t testing.TB, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the manifests have no %s %s", kind, name)
	return nil
}

// leftovers lists every object in the cluster labelled part-of
// ate-orchestrator, of every resource the API server lists, and every
// object of objs that still exists.
func (k *kube) leftovers(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	ctx := context.Background()
	k.disc.Invalidate()
	lists, err := k.disc.ServerPreferredResources()
	var partial *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &partial) {
		require.NoError(t, err)
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") {
				continue
			}
			list, err := k.dyn.Resource(gv.WithResource(r.Name)).List(ctx, metav1.ListOptions{LabelSelector: partOf})
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue // a CRD going away
			}
			require.NoError(t, err, "listing %s", gv.WithResource(r.Name))
			for i := range list.Items {
				left = append(left, "labelled "+id(&list.Items[i]))
			}
		}
	}
	for _, o := range objs {
		got, err := k.resource(t, o).Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		case err != nil:
			left = append(left, fmt.Sprintf("%s: %v", id(o), err))
		default:
			left = append(left, fmt.Sprintf("rendered %s (deleting: %v, finalizers %v)", id(o), got.GetDeletionTimestamp() != nil, got.GetFinalizers()))
		}
	}
	return left
}

// deleteAll deletes objs as `kubectl delete -f` does, the CRDs last, and
// waits until none of them and nothing labelled part of the install
// remains.
func (k *kube) deleteAll(t testing.TB, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	crds, others := installSplit(objs)
	for _, o := range append(slices.Clone(others), crds...) {
		err := k.resource(t, o).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
		require.NoError(t, client.IgnoreNotFound(err), "deleting %s", id(o))
	}
	producttest.EventuallyWithin(t, 3*time.Minute, "nothing of the install to remain", func() (bool, string) {
		left := k.leftovers(t, objs)
		return len(left) == 0, strings.Join(left, "; ")
	})
}

// impersonating writes a kubeconfig of the test's admin that impersonates a
// ServiceAccount of ate-system: every request is authorized as that
// ServiceAccount's token would be, which is how the processes authenticate
// in their pods.
func impersonating(t testing.TB, sa string) string {
	t.Helper()
	env := testenv.Current()
	cfg, err := clientcmd.LoadFromFile(env.KubeconfigPath)
	require.NoError(t, err)
	for _, a := range cfg.AuthInfos {
		a.Impersonate = "system:serviceaccount:" + systemNamespace + ":" + sa
		a.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + systemNamespace, "system:authenticated"}
	}
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}
