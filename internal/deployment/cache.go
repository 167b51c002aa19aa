package deployment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// ownedDigestAnnotation carries, on the worker's cached copy of a
// Deployment only, the digest of the fields FieldManager owns on it (see
// ForCache). It is never written to the API server: nothing applies or
// updates a cached Deployment (Apply builds from the pool).
const ownedDigestAnnotation = "internal.ate.dev/owned-fields-sha256"

// ForCache is the worker's cache transform for Deployments. The keeper
// reads of a cached Deployment its name, resourceVersion, owner
// references, selector and status, and whether applying the pool's
// Deployment would change it (CachedUpToDate). That last answer needs the
// fields the product owns, pod template included, and the template is most
// of a Deployment: so ForCache computes, from the product's own
// managedFields entry, a digest of the owned fields (what UpToDate
// compares), keeps it in an annotation, and drops the pod template, every
// managedFields entry, the annotations and the labels but the pool's.
//
// A Deployment whose owned fields cannot be extracted gets no digest, so
// it never looks up to date and the keeper applies: a cost, never a missed
// apply.
func ForCache(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil
	}
	digest := ""
	if prior := d.Annotations[ownedDigestAnnotation]; prior != "" && len(d.ManagedFields) == 0 {
		// Transformed already: the informer may run its transform on an
		// object it holds again (client-go asks transforms to be
		// idempotent), and the managedFields the digest came from are gone.
		// An object from the API server always has managedFields.
		digest = prior
	} else if have, err := appsv1ac.ExtractDeployment(d, FieldManager); err == nil {
		digest, _ = digestOf(have)
	}

	d.ManagedFields = nil
	d.Annotations = nil
	if digest != "" {
		d.Annotations = map[string]string{ownedDigestAnnotation: digest}
	}
	if pool, ok := d.Labels[v1alpha1.WorkerPoolLabel]; ok {
		d.Labels = map[string]string{v1alpha1.WorkerPoolLabel: pool}
	} else {
		d.Labels = nil
	}
	d.Spec.Template = corev1.PodTemplateSpec{}
	return d, nil
}

// CachedUpToDate is UpToDate for a Deployment as ForCache keeps it: the
// digest of the fields FieldManager owns on it against the digest of what
// Build declares. Both are the JSON of an apply configuration, in which
// quantities are canonical and nil and empty collections alike omitted,
// so the two agree where UpToDate's semantic comparison does (the tests run
// UpToDate's cases through both). It fails only when Build does.
func CachedUpToDate(d *appsv1.Deployment, pool *v1alpha1.WorkerPool) (bool, error) {
	want, err := Build(pool)
	if err != nil {
		return false, err
	}
	have := d.Annotations[ownedDigestAnnotation]
	if have == "" {
		return false, nil
	}
	wantDigest, err := digestOf(want)
	if err != nil {
		return false, fmt.Errorf("deployment: digesting the Deployment of WorkerPool %s/%s: %w", pool.Namespace, pool.Name, err)
	}
	return have == wantDigest, nil
}

func digestOf(ac *appsv1ac.DeploymentApplyConfiguration) (string, error) {
	b, err := json.Marshal(ac)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
