package worker

// The worker's rights beyond those of its activities (activities/) and its
// pool reconciler (worker/poolkeeper): the Lease its replicas elect the
// pool reconciler's leader with, and the core/v1 events controller-runtime's
// leader election records about it, both in the worker's own namespace
// only (a Role; `make generate` writes it with the ClusterRole into
// deploy/rbac/worker). A LEADER_ELECTION_NAMESPACE other than ate-system
// needs the Role bound there instead.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=ate-system
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=ate-system

// The cluster's identity, when --cluster-name is not set, is the UID of the
// kube-system namespace (kube.ClusterIdentity); the starter reads it too.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get,resourceNames=kube-system

// The HTTPS metrics endpoint (internal/probes.ServeMetrics, METRICS_SECURE)
// asks the API server who a scraper is and whether it may get /metrics.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
