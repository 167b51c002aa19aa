package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkerPoolSpec asks for N worker pods of one sandbox class.
type WorkerPoolSpec struct {
	// replicas is the desired number of worker pods.
	// +kubebuilder:validation:Minimum=0
	// +required
	Replicas *int32 `json:"replicas"`

	// workerImage is the worker container image.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	WorkerImage string `json:"workerImage"`

	// sandboxClasses is the runtime family the pool runs: exactly one entry today.
	// The class names are immutable: to change the class, create a new pool.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:XValidation:rule="self.all(c, oldSelf.exists(o, o.name == c.name))",message="sandbox class names are immutable; create a new WorkerPool to change the class"
	// +required
	SandboxClasses []WorkerPoolSandboxClass `json:"sandboxClasses"`

	// template holds optional pod metadata, scheduling and resources for the
	// worker Deployment and its pods.
	// +optional
	Template *WorkerPoolPodTemplate `json:"template,omitempty"`
}

// WorkerPoolSandboxClass selects the SandboxConfig of one sandbox class.
type WorkerPoolSandboxClass struct {
	// name is the sandbox class.
	// +required
	Name SandboxClass `json:"name"`

	// configRef names the SandboxConfig to use. Without it the pool follows
	// the newest config of the class annotated
	// sandboxconfig.ate.dev/is-class-default: "true". Its name must be one a
	// SandboxConfig can have (a DNS subdomain, with no namespace: configs
	// are cluster-scoped).
	// +kubebuilder:validation:XValidation:rule="self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="configRef.name must be a SandboxConfig's name, a DNS subdomain: lowercase alphanumerics, '-' and '.', beginning and ending with an alphanumeric; SandboxConfigs are cluster-scoped, so it has no namespace/ prefix",fieldPath=".name"
	// +optional
	ConfigRef *SandboxConfigReference `json:"configRef,omitempty"`
}

// SandboxConfigReference names a cluster-scoped SandboxConfig.
type SandboxConfigReference struct {
	// name is the SandboxConfig's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
}

// SwitchRunReference names one run of a SandboxConfigSwitch workflow.
type SwitchRunReference struct {
	// workflowID is the switch's Temporal workflow ID:
	// <cluster>/workerpool/<namespace>/<name>/switch for the pool's switches.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1000
	// +required
	WorkflowID string `json:"workflowID"`
	// runID is the Temporal run ID of the switch.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +required
	RunID string `json:"runID"`
}

// RunIDOf is the run ID a reference holds, or "" for none.
func (r *SwitchRunReference) RunIDOf() string {
	if r == nil {
		return ""
	}
	return r.RunID
}

// NameOf is the name a reference holds, or "" for none.
func (r *SandboxConfigReference) NameOf() string {
	if r == nil {
		return ""
	}
	return r.Name
}

// WorkerPoolPodTemplate is the part of the worker pods a pool may shape.
type WorkerPoolPodTemplate struct {
	// labels are added to the Deployment and its pods. Keys must be
	// qualified names; keys in the ate.dev domain and its subdomains are
	// reserved.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="label keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.startsWith('ate.dev/') || k.contains('.ate.dev/')))",message="label keys in the ate.dev domain and its subdomains are reserved"
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`

	// annotations are added to the Deployment and its pods. Keys must be
	// qualified names; keys in the ate.dev domain and its subdomains are
	// reserved.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="annotation keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.startsWith('ate.dev/') || k.contains('.ate.dev/')))",message="annotation keys in the ate.dev domain and its subdomains are reserved"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// nodeSelector constrains the worker pods to matching nodes. Keys must
	// be qualified names and values label values (LabelValue: at most 63
	// characters), as on a pod: the API server would refuse the pool's
	// Deployment otherwise.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="spec.template.nodeSelector keys must be qualified names: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.'"
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// tolerations are the worker pods' own tolerations; the sandbox class's
	// toleration is added after them.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// priorityClassName is the worker pods' priority class.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// nodeAffinity is the worker pods' node affinity. A required node
	// selector needs at least one term (the Deployment would be refused).
	// +kubebuilder:validation:XValidation:rule="!has(self.requiredDuringSchedulingIgnoredDuringExecution) || size(self.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms) > 0",message="spec.template.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms must have at least one term",fieldPath=".requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
	// +optional
	NodeAffinity *corev1.NodeAffinity `json:"nodeAffinity,omitempty"`

	// resources are the worker container's requests and limits. The limits
	// are each worker's CPU and memory capacity. claims are not supported: a
	// worker pod declares no resource claims for them to name.
	// +kubebuilder:validation:XValidation:rule="!has(self.claims) || size(self.claims) == 0",message="spec.template.resources.claims is not supported: a worker pod declares no resource claims",fieldPath=".claims"
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// serviceAccountName is the worker pods' service account (default ateworker).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// LabelValue is a Kubernetes label value: at most 63 alphanumerics, '-',
// '_' or '.', beginning and ending with an alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// WorkerPoolStatus is what the product reports back about a pool.
type WorkerPoolStatus struct {
	// replicas is the number of worker pods, mirrored from the Deployment.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of ready worker pods, mirrored from the Deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// selector is the label selector of the worker pods, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// observedGeneration is the pool generation the last pass acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// sandboxClasses reports, per class, the SandboxConfig in use.
	// +listType=map
	// +listMapKey=name
	// +optional
	SandboxClasses []WorkerPoolSandboxClassStatus `json:"sandboxClasses,omitempty"`

	// conditions holds SandboxConfigResolved, which summarises the per-class
	// Resolved conditions: True only when every class resolved; and, once
	// the pool is due a Deployment, DeploymentApplied: whether its worker
	// Deployment is as the pool asks, or why it cannot be applied; and,
	// once the Deployment controller reported on it, Available, mirrored
	// from the Deployment's: False while fewer workers are ready than a
	// rollout may take down (workers that cannot be scheduled, or on a
	// failed node).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkerPoolSandboxClassStatus is the state of one sandbox class of a pool.
type WorkerPoolSandboxClassStatus struct {
	// name is the sandbox class.
	// +required
	Name SandboxClass `json:"name"`

	// configRef is the SandboxConfig the class uses: the one it resolved
	// last. It is kept while resolution fails, so a running pool never loses
	// its config; it is omitted if the class never resolved.
	// +optional
	ConfigRef *SandboxConfigReference `json:"configRef,omitempty"`

	// pendingConfigRef is transient: the config a switch has claimed but not
	// yet confirmed. It protects that config from deletion while the switch
	// re-reads it (see Deletion protection in the README).
	// +optional
	PendingConfigRef *SandboxConfigReference `json:"pendingConfigRef,omitempty"`

	// lastSwitch names the switch run that last wrote configRef or
	// pendingConfigRef of this class: its claim, confirm, roll back, or the
	// clearing of a stale claim. Its Temporal history explains the class's
	// state (the Web UI shows it at
	// /namespaces/<namespace>/workflows/<workflowID>/<runID>). The switch
	// reads it too: a switch whose workflow task runs again after a crash
	// tells its own earlier writes from another switch's by it. Absent
	// until a switch moves the class.
	// +optional
	LastSwitch *SwitchRunReference `json:"lastSwitch,omitempty"`

	// conditions holds the class's Resolved condition.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// The category ate makes `kubectl get ate` list WorkerPools and
// SandboxConfigs together.
// +kubebuilder:resource:shortName=wp,categories=ate
// +kubebuilder:printcolumn:name="DESIRED",type=integer,JSONPath=`.spec.replicas`,description="The number of worker pods the pool wants (spec.replicas)"
// +kubebuilder:printcolumn:name="REPLICAS",type=integer,JSONPath=`.status.replicas`,description="Pods of the pool's Deployment (status.replicas)"
// +kubebuilder:printcolumn:name="READY",type=integer,JSONPath=`.status.readyReplicas`,description="Ready pods of the pool's Deployment (status.readyReplicas)"
// +kubebuilder:printcolumn:name="SANDBOXCONFIG",type=string,JSONPath=`.status.sandboxClasses[0].configRef.name`,description="The SandboxConfig the pool runs (status.sandboxClasses[0].configRef)"
// +kubebuilder:printcolumn:name="RESOLVED",type=string,JSONPath=`.status.conditions[?(@.type=="SandboxConfigResolved")].status`,description="Whether every sandbox class of the pool resolved a SandboxConfig (condition SandboxConfigResolved)"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the pool was created"
// The pool's name is the value of its pods' ate.dev/worker-pool label (and
// of its Deployment's selector): a label value is at most 63 characters.
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters: a WorkerPool's name is the value of its pods' ate.dev/worker-pool label"

// WorkerPool is a pool of worker pods of one sandbox class. Each pool
// resolves the SandboxConfig it runs, records it in status, protects it from
// deletion and gets a worker Deployment once resolved.
type WorkerPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WorkerPoolSpec `json:"spec"`
	// +optional
	Status WorkerPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkerPoolList is a list of WorkerPools.
type WorkerPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkerPool `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &WorkerPool{}, &WorkerPoolList{})
}

// ClassStatus returns the status entry of a class, or nil.
func (s *WorkerPoolStatus) ClassStatus(class SandboxClass) *WorkerPoolSandboxClassStatus {
	for i := range s.SandboxClasses {
		if s.SandboxClasses[i].Name == class {
			return &s.SandboxClasses[i]
		}
	}
	return nil
}

// ConfigNames returns every SandboxConfig the status names in a configRef
// or pendingConfigRef: the configs this pool holds from deletion.
func (s *WorkerPoolStatus) ConfigNames() []string {
	var names []string
	for _, c := range s.SandboxClasses {
		if c.ConfigRef != nil {
			names = append(names, c.ConfigRef.Name)
		}
		if c.PendingConfigRef != nil && (c.ConfigRef == nil || c.PendingConfigRef.Name != c.ConfigRef.Name) {
			names = append(names, c.PendingConfigRef.Name)
		}
	}
	return names
}
