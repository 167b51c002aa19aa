package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SandboxClass is a family of sandbox runtimes.
// +kubebuilder:validation:Enum=gvisor;microvm
type SandboxClass string

const (
	SandboxClassGVisor  SandboxClass = "gvisor"
	SandboxClassMicroVM SandboxClass = "microvm"
)

// VersionState says whether a SandboxConfig version may be used.
// +kubebuilder:validation:Enum=Enabled;Disabled
type VersionState string

const (
	VersionStateEnabled  VersionState = "Enabled"
	VersionStateDisabled VersionState = "Disabled"
)

// SandboxConfigSpec is a versioned set of sandbox runtime assets of one class.
// +kubebuilder:validation:XValidation:rule="self.versions.exists(v, v.name == self.defaultVersion)",message="defaultVersion must name one of spec.versions",fieldPath=".defaultVersion"
// +kubebuilder:validation:XValidation:rule="self.versions.all(v, v.name != self.defaultVersion || !has(v.state) || v.state != 'Disabled')",message="defaultVersion must not name a Disabled version",fieldPath=".defaultVersion"
// +kubebuilder:validation:XValidation:rule="self.sandboxClass != 'gvisor' || self.versions.all(v, has(v.pauseImage))",message="pauseImage is required on every version of a gvisor SandboxConfig",fieldPath=".versions"
// +kubebuilder:validation:XValidation:rule="self.sandboxClass == 'gvisor' || self.versions.all(v, !has(v.pauseImage))",message="pauseImage is only allowed for the gvisor sandbox class",fieldPath=".versions"
// +kubebuilder:validation:XValidation:rule="self.sandboxClass != 'gvisor' || self.versions.all(v, has(v.assets) && size(v.assets) > 0 && v.assets.all(arch, 'gvisor' in v.assets[arch] || 'runsc' in v.assets[arch]))",message="every version of a gvisor SandboxConfig needs assets, and a 'gvisor' (release tarball) or legacy 'runsc' asset for every architecture it lists",fieldPath=".versions"
// +kubebuilder:validation:XValidation:rule="self.sandboxClass != 'microvm' || self.versions.all(v, has(v.assets) && size(v.assets) > 0 && v.assets.all(arch, ['cloud-hypervisor', 'virtiofsd', 'kata-kernel', 'kata-image'].all(n, n in v.assets[arch])))",message="every version of a microvm SandboxConfig needs assets, and the cloud-hypervisor, virtiofsd, kata-kernel and kata-image assets for every architecture it lists",fieldPath=".versions"
type SandboxConfigSpec struct {
	// sandboxClass is the runtime family these assets are for.
	// +kubebuilder:default=gvisor
	// +optional
	SandboxClass SandboxClass `json:"sandboxClass,omitempty"`

	// defaultVersion names the version used when none is asked for. It must
	// name an entry of versions that is not Disabled.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	DefaultVersion string `json:"defaultVersion"`

	// versions are the runtime versions this config offers, keyed by name.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +required
	Versions []SandboxConfigVersion `json:"versions"`

	// rollout stages the move of the class's unpinned pools to this config
	// once it is their class default: step by step, each step's pools
	// healthy before a bake time and the next step. Absent: every unpinned
	// pool of the class moves at once, as the reference controller does.
	// +optional
	Rollout *SandboxConfigRollout `json:"rollout,omitempty"`
}

// SandboxConfigVersion is one runtime version and the assets it is built from.
type SandboxConfigVersion struct {
	// name identifies the version; a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// state says whether the version may be used.
	// +kubebuilder:default=Enabled
	// +optional
	State VersionState `json:"state,omitempty"`

	// pauseImage is the sandbox pause container image, pinned by digest.
	// Required on every version of a gvisor config, forbidden for other classes.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^@\s]+@sha256:[0-9a-f]{64}$`
	// +optional
	PauseImage string `json:"pauseImage,omitempty"`

	// assets maps a CPU architecture (GOARCH: amd64, arm64) to the named
	// assets of that architecture. Every version needs assets, and for
	// every architecture it lists the ones its class runs on: gvisor a
	// "gvisor" asset (the release tarball; a legacy bare "runsc" binary is
	// accepted too), microvm "cloud-hypervisor", "virtiofsd", "kata-kernel"
	// and "kata-image". Other names are allowed.
	// +kubebuilder:validation:MaxProperties=8
	// +optional
	Assets map[string]map[string]SandboxAsset `json:"assets,omitempty"`
}

// SandboxAsset is a downloadable file pinned by its digest.
type SandboxAsset struct {
	// url is where the asset is fetched from.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +required
	URL string `json:"url"`

	// sha256 is the lower-case hex SHA-256 digest of the asset.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	// +required
	SHA256 string `json:"sha256"`
}

// +kubebuilder:object:root=true
// SandboxConfig's short name is sbc: sc is StorageClass's. The category ate
// makes `kubectl get ate` list SandboxConfigs and WorkerPools together.
// +kubebuilder:resource:scope=Cluster,shortName=sbc,categories=ate
// +kubebuilder:printcolumn:name="CLASS",type=string,JSONPath=`.spec.sandboxClass`,description="The sandbox class the config is for: gvisor or microvm"
// +kubebuilder:printcolumn:name="DEFAULT-VERSION",type=string,JSONPath=`.spec.defaultVersion`,description="The version that pools running this config use"
// +kubebuilder:printcolumn:name="CLASS-DEFAULT",type=string,JSONPath=`.metadata.annotations.sandboxconfig\.ate\.dev/is-class-default`,description="true when this config is the default of its class: pools naming no config resolve to it (annotation sandboxconfig.ate.dev/is-class-default)"
// +kubebuilder:printcolumn:name="ROLLOUT",type=string,JSONPath=`.status.rollout.phase`,description="The phase of the config's staged rollout (status.rollout.phase)"
// +kubebuilder:printcolumn:name="MOVED",type=integer,JSONPath=`.status.rollout.movedPools`,description="Unpinned pools of the class on this config (status.rollout.movedPools)"
// +kubebuilder:printcolumn:name="TOTAL",type=integer,JSONPath=`.status.rollout.totalPools`,description="Unpinned pools of the class (status.rollout.totalPools)"
// +kubebuilder:printcolumn:name="STEP",type=integer,JSONPath=`.status.rollout.step`,priority=1,description="The step the config's staged rollout is at, from 1 (status.rollout.step)"
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1,description="The config's Ready condition: True with no live rollout or a completed one"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the config was created"
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.rollout.message`,priority=1,description="What the rollout waits for, or why it halted (status.rollout.message)"
// +kubebuilder:subresource:status

// SandboxConfig is a versioned set of sandbox runtime assets for one sandbox
// class. WorkerPools resolve to one, either by name or as their class default.
type SandboxConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec SandboxConfigSpec `json:"spec"`
	// +optional
	Status SandboxConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SandboxConfigList is a list of SandboxConfigs.
type SandboxConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxConfig `json:"items"`
}

func init() {
	knownTypes = append(knownTypes, &SandboxConfig{}, &SandboxConfigList{})
}

// Class is the config's sandbox class: spec.sandboxClass, gvisor when unset
// (the API server defaults it, a config built in code may not).
func (c *SandboxConfig) Class() SandboxClass {
	if c.Spec.SandboxClass == "" {
		return SandboxClassGVisor
	}
	return c.Spec.SandboxClass
}

// IsClassDefault reports whether the config is annotated as a candidate for
// its class default. Only the exact value "true" counts.
func (c *SandboxConfig) IsClassDefault() bool {
	return c.Annotations[ClassDefaultAnnotation] == "true"
}

// IsDeleting reports whether the config has been marked for deletion.
func (c *SandboxConfig) IsDeleting() bool {
	return c.DeletionTimestamp != nil
}

// IsProtected reports whether the config carries the protection finalizer.
func (c *SandboxConfig) IsProtected() bool {
	for _, f := range c.Finalizers {
		if f == ProtectionFinalizer {
			return true
		}
	}
	return false
}
