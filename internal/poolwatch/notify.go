package poolwatch

import (
	toolscache "k8s.io/client-go/tools/cache"

	"ate.dev/orchestrator/api/v1alpha1"
	"ate.dev/orchestrator/internal/notify"
)

// NotifyClasses is an event handler for an informer of WorkerPools that
// tells n, under each class's name, that the class's unpinned pools
// changed: for every pool added, updated or deleted, each class it follows
// the default of (UnpinnedClassIndex) before or after the change. The
// worker registers it on its cache's WorkerPool informer, which calls it
// once its store holds the change, so a waiter it wakes (a rollout step's
// wait) finds the change in the cache. It never blocks the informer
// (notify.Notifier.Notify).
func NotifyClasses(n *notify.Notifier) toolscache.ResourceEventHandler {
	changed := func(objs ...any) {
		for _, obj := range objs {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if wp, ok := obj.(*v1alpha1.WorkerPool); ok {
				for _, class := range unpinnedClasses(wp) {
					n.Notify(class)
				}
			}
		}
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(obj) },
		UpdateFunc: func(oldObj, newObj any) { changed(oldObj, newObj) },
		DeleteFunc: func(obj any) { changed(obj) },
	}
}
