// Package deployment builds the worker Deployment of a WorkerPool as a
// server-side-apply configuration.
//
// Build is pure: it reads only the pool and returns the configuration the
// orchestrator applies with field manager FieldManager and forced ownership.
// Under server-side apply the configuration is the complete set of fields the
// orchestrator owns: a field declared in one apply and left out of the next is
// removed from the Deployment (unless another manager also owns it). So every
// optional field of the pool's template is declared only when the template
// sets it, and nothing is ever declared as an empty value: an empty struct,
// map or string would claim ownership of a field without meaning anything,
// leave `affinity: {}` or `priorityClassName: ""` behind on the Deployment, and
// fight any other manager that sets the field. Clearing a template field
// therefore clears it on the Deployment at the next apply.
package deployment

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"ate.dev/orchestrator/api/v1alpha1"
)

// FieldManager is the server-side-apply field manager of the worker
// Deployments. Apply with it and with forced ownership.
const FieldManager = "ate-orchestrator"

// ContainerName is the name of the single container of a worker pod.
const ContainerName = "worker"

// Environment variables the worker container receives from the downward API.
const (
	// EnvPodUID is the pod's UID.
	EnvPodUID = "POD_UID"
	// EnvCPULimitMillicores is the worker container's CPU limit in
	// millicores (the node's allocatable CPU when the template sets no
	// limit). The divisor is 1m because the downward API rounds up to a
	// whole divisor: the default divisor of one core would report a limit
	// of 500m as 1.
	EnvCPULimitMillicores = "CPU_LIMIT_MILLICORES"
	// EnvMemoryLimitBytes is the worker container's memory limit in bytes
	// (the node's allocatable memory when the template sets no limit).
	EnvMemoryLimitBytes = "MEMORY_LIMIT_BYTES"
)

// Paths inside the worker container.
const (
	// StateDir is the host directory shared with atelet (sockets, actor
	// directories, cached binaries). It is mounted at the same path as in
	// atelet so that paths exchanged between the two mean the same thing.
	StateDir = "/var/lib/ate"
	// IdentityDir holds the pod certificate (credential-bundle.pem) that
	// identifies the worker to atelet and the router, and the trust bundle
	// (trust-bundle.pem) of its signer.
	IdentityDir = "/run/podidentity.podcert.ate.dev"
	// EgressTrustDir holds the trust bundle (trust-bundle.pem) that
	// verifies the egress gateway.
	EgressTrustDir = "/run/servicedns.podcert.ate.dev"
	// TunDevice is the tun device a micro-VM worker opens to build the
	// guest's tap.
	TunDevice = "/dev/net/tun"
)

// Container ports.
const (
	// PortHTTPS carries router-to-atunnel traffic.
	PortHTTPS int32 = 443
	// PortConnect carries router-to-atunnel traffic too.
	PortConnect int32 = 8443
	// PortHealth serves ReadinessPath.
	PortHealth int32 = 8080
	// ReadinessPath fails until the worker has registered.
	ReadinessPath = "/readyz"
)

const (
	// TerminationGracePeriodSeconds gives the actors of a terminating
	// worker an hour to finish their checkpoints.
	TerminationGracePeriodSeconds int64 = 3600

	// ProgressDeadlineSeconds must exceed TerminationGracePeriodSeconds.
	// With maxSurge 0 a rollout step frees capacity only by terminating an
	// old worker, and a worker may legitimately take the whole grace period
	// to drain; its replacement often cannot be scheduled before then (the
	// node's ate.dev/kvm devices, CPU and memory are held by the
	// terminating pod). A deadline shorter than the grace period would mark
	// a healthy, merely draining rollout Progressing=False
	// (ProgressDeadlineExceeded). The extra five minutes cover scheduling,
	// the image pull and the worker's registration (/readyz).
	ProgressDeadlineSeconds int32 = int32(TerminationGracePeriodSeconds) + 300

	// MaxUnavailable is how many workers a rollout may take down at once.
	// It rounds down, so pools under ten replicas would get 0; the
	// Deployment controller then takes down one at a time (it never lets
	// both maxSurge and maxUnavailable resolve to 0).
	MaxUnavailable = "10%"
)

// Names of the volumes of a worker pod.
const (
	stateVolume       = "var-lib-ate"
	identityVolume    = "atunnel-identity"
	egressTrustVolume = "atunnel-egress-trust"
	tunVolume         = "dev-net-tun"
)

// Port names; a port name is at most 15 characters.
const (
	portNameHTTPS   = "https"
	portNameConnect = "connect"
	portNameHealth  = "health"
)

// Pod certificate and trust bundle projections.
const (
	identitySigner       = "podidentity.podcert.ate.dev/identity"
	egressSigner         = "servicedns.podcert.ate.dev/identity"
	podCertKeyType       = "ECDSAP256"
	credentialBundleFile = "credential-bundle.pem"
	trustBundleFile      = "trust-bundle.pem"
	canaryingLabel       = "podcert.ate.dev/canarying"
	canaryingLive        = "live"
)

// gvisorCapabilities is what an unprivileged gVisor worker needs: runsc's
// gofer maps a full-range identity in a user namespace
// (SETUID/SETGID/SETPCAP/SETFCAP), the sandbox pivots root and traces the
// application (SYS_ADMIN/SYS_CHROOT/SYS_PTRACE), actor networking programs
// veths and nftables (NET_ADMIN/NET_RAW), and OCI root filesystems are
// unpacked and device nodes created as root over image-owned trees
// (DAC_OVERRIDE/FOWNER/CHOWN/MKNOD).
var gvisorCapabilities = []corev1.Capability{
	"NET_ADMIN", "SYS_ADMIN", "SYS_CHROOT", "SYS_PTRACE",
	"SETUID", "SETGID", "SETPCAP", "DAC_OVERRIDE",
	"FOWNER", "CHOWN", "MKNOD", "NET_RAW", "SETFCAP",
}

// virtiofsdCapabilities is what the micro-VM worker needs on top of the
// gVisor set, for virtiofsd (the vhost-user daemon serving the guest's
// virtio-fs). virtiofsd's child keeps CHOWN, DAC_OVERRIDE, FOWNER, FSETID,
// SETGID, SETUID, MKNOD and SETFCAP, plus DAC_READ_SEARCH when it references
// inodes by file handle (--inode-file-handles, default "prefer":
// open_by_handle_at(2) needs it); it re-applies that set to itself and the
// kernel refuses to raise a capability the bounding set lacks, so a missing
// one makes it exit ("can't apply the child capabilities"). The gVisor set
// already has all but FSETID and DAC_READ_SEARCH; FSETID also keeps the
// setgid bit when it writes files for the guest. At start virtiofsd raises
// RLIMIT_NOFILE, soft and hard, to min(1000000, fs.nr_open) unless the soft
// limit is already that high; raising the hard limit needs SYS_RESOURCE
// (runtimes commonly start containers with a lower hard limit, e.g. 524288).
// virtiofsd's own namespace sandbox (unshare, pivot_root) is covered by
// SYS_ADMIN above, and cloud-hypervisor's tap by NET_ADMIN.
var virtiofsdCapabilities = []corev1.Capability{"FSETID", "DAC_READ_SEARCH", "SYS_RESOURCE"}

// Capabilities returns the capabilities the worker container of a sandbox
// class adds after dropping ALL, or nil for an unknown class.
func Capabilities(class v1alpha1.SandboxClass) []corev1.Capability {
	switch class {
	case v1alpha1.SandboxClassGVisor:
		return append([]corev1.Capability(nil), gvisorCapabilities...)
	case v1alpha1.SandboxClassMicroVM:
		return append(append([]corev1.Capability(nil), gvisorCapabilities...), virtiofsdCapabilities...)
	default:
		return nil
	}
}

// SelectorLabels returns the labels that select a pool's worker pods: the
// Deployment's selector, and the pool's status.selector.
func SelectorLabels(pool *v1alpha1.WorkerPool) map[string]string {
	return map[string]string{v1alpha1.WorkerPoolLabel: pool.Name}
}

// Build returns the server-side-apply configuration of the worker Deployment
// of pool: named after the pool, in its namespace, controlled by it. It fails
// only on a pool the API server would not have admitted (or whose Deployment
// it would reject), never on a transient condition.
//
// Its errors are *InvalidPoolError: retrying cannot help, only a change of
// the pool's spec can.
func Build(pool *v1alpha1.WorkerPool) (*appsv1ac.DeploymentApplyConfiguration, error) {
	class, err := validate(pool)
	if err != nil {
		return nil, &InvalidPoolError{err}
	}
	tmpl := pool.Spec.Template
	if tmpl == nil {
		tmpl = &v1alpha1.WorkerPoolPodTemplate{}
	}
	res, err := resources(tmpl.Resources, class)
	if err != nil {
		return nil, &InvalidPoolError{err}
	}
	affinity, err := nodeAffinity(tmpl.NodeAffinity)
	if err != nil {
		return nil, &InvalidPoolError{err}
	}
	podSpec := workerPodSpec(tmpl, class, workerContainer(pool.Spec.WorkerImage, class, res), affinity)
	return workerDeployment(pool, tmpl, podSpec), nil
}

// InvalidPoolError is a pool Build cannot make a Deployment of. The CRD's
// validation refuses every such spec today; a pool stored before a rule was
// added can still carry one.
type InvalidPoolError struct{ Err error }

func (e *InvalidPoolError) Error() string { return e.Err.Error() }
func (e *InvalidPoolError) Unwrap() error { return e.Err }

// workerContainer is the worker's one container: its ports, readiness
// probe, the downward-API environment, security context and mounts.
func workerContainer(image string, class v1alpha1.SandboxClass, res *corev1ac.ResourceRequirementsApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	container := corev1ac.Container().
		WithName(ContainerName).
		WithImage(image).
		WithPorts(
			containerPort(portNameHTTPS, PortHTTPS),
			containerPort(portNameConnect, PortConnect),
			containerPort(portNameHealth, PortHealth),
		).
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().
				WithPath(ReadinessPath).
				WithPort(intstr.FromString(portNameHealth)))).
		WithEnv(
			corev1ac.EnvVar().
				WithName(EnvPodUID).
				WithValueFrom(corev1ac.EnvVarSource().
					// apiVersion is the API server's default, declared
					// because the selector is an atomic struct: the
					// defaulted value is owned with it, and UpToDate
					// compares what is owned with what is declared.
					WithFieldRef(corev1ac.ObjectFieldSelector().
						WithAPIVersion("v1").
						WithFieldPath("metadata.uid"))),
			resourceEnv(EnvCPULimitMillicores, "limits.cpu", "1m"),
			resourceEnv(EnvMemoryLimitBytes, "limits.memory", "1"),
		).
		WithSecurityContext(containerSecurityContext(class)).
		WithVolumeMounts(
			// HostToContainer: mounts atelet makes under /var/lib/ate
			// after the worker started are visible to it. The reverse
			// (Bidirectional) would need a privileged container.
			corev1ac.VolumeMount().
				WithName(stateVolume).
				WithMountPath(StateDir).
				WithMountPropagation(corev1.MountPropagationHostToContainer),
			corev1ac.VolumeMount().
				WithName(identityVolume).
				WithMountPath(IdentityDir).
				WithReadOnly(true),
			corev1ac.VolumeMount().
				WithName(egressTrustVolume).
				WithMountPath(EgressTrustDir).
				WithReadOnly(true),
		)
	if res != nil {
		container.WithResources(res)
	}
	return container
}

// workerPodSpec is the pod around the container: service account, grace
// period, host volumes, tolerations, the microVM devices and the optional
// scheduling fields.
func workerPodSpec(tmpl *v1alpha1.WorkerPoolPodTemplate, class v1alpha1.SandboxClass, container *corev1ac.ContainerApplyConfiguration, affinity *corev1ac.NodeAffinityApplyConfiguration) *corev1ac.PodSpecApplyConfiguration {
	serviceAccount := tmpl.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = v1alpha1.DefaultWorkerServiceAccount
	}
	podSpec := corev1ac.PodSpec().
		WithServiceAccountName(serviceAccount).
		WithTerminationGracePeriodSeconds(TerminationGracePeriodSeconds).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsUser(0).
			WithRunAsGroup(0)).
		WithVolumes(
			corev1ac.Volume().
				WithName(stateVolume).
				WithHostPath(corev1ac.HostPathVolumeSource().
					WithPath(StateDir).
					WithType(corev1.HostPathDirectoryOrCreate)),
			identityVolumeSource(),
			egressTrustVolumeSource(),
		).
		WithTolerations(tolerations(tmpl.Tolerations, class)...)

	if class == v1alpha1.SandboxClassMicroVM {
		// /dev/kvm is not mounted: the ate.dev/kvm limit (see resources)
		// makes atelet's device plugin inject it, together with the device
		// cgroup rule a hostPath mount would lack, and keeps the pod on
		// KVM-capable nodes. /dev/net/tun needs no grant (it is in the
		// container runtimes' default device allow-list), so a hostPath
		// mount suffices; creating the tap is a NET_ADMIN matter.
		container.WithVolumeMounts(corev1ac.VolumeMount().
			WithName(tunVolume).
			WithMountPath(TunDevice))
		podSpec.WithVolumes(corev1ac.Volume().
			WithName(tunVolume).
			WithHostPath(corev1ac.HostPathVolumeSource().
				WithPath(TunDevice).
				WithType(corev1.HostPathCharDev)))
	}

	// Optional scheduling fields: declared only when set (see the package
	// documentation).
	if len(tmpl.NodeSelector) > 0 {
		selector := make(map[string]string, len(tmpl.NodeSelector))
		for k, v := range tmpl.NodeSelector {
			selector[k] = string(v)
		}
		podSpec.WithNodeSelector(selector)
	}
	if tmpl.PriorityClassName != "" {
		podSpec.WithPriorityClassName(tmpl.PriorityClassName)
	}
	if affinity != nil {
		podSpec.WithAffinity(corev1ac.Affinity().WithNodeAffinity(affinity))
	}
	podSpec.WithContainers(container)
	return podSpec
}

// workerDeployment wraps the pod spec: labels (the controller's selector
// label wins over the template's), the controller owner reference, the
// replicas and the rollout strategy, and the template's annotations.
func workerDeployment(pool *v1alpha1.WorkerPool, tmpl *v1alpha1.WorkerPoolPodTemplate, podSpec *corev1ac.PodSpecApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	labels := make(map[string]string, len(tmpl.Labels)+1)
	for k, v := range tmpl.Labels {
		labels[k] = string(v)
	}
	maps.Copy(labels, SelectorLabels(pool)) // the controller's label wins

	pod := corev1ac.PodTemplateSpec().
		WithLabels(labels).
		WithSpec(podSpec)
	deployment := appsv1ac.Deployment(pool.Name, pool.Namespace).
		WithLabels(labels).
		WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(v1alpha1.GroupVersion.String()).
			WithKind("WorkerPool").
			WithName(pool.Name).
			WithUID(pool.UID).
			WithController(true).
			WithBlockOwnerDeletion(true)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(*pool.Spec.Replicas).
			WithSelector(metav1ac.LabelSelector().
				WithMatchLabels(SelectorLabels(pool))).
			WithStrategy(appsv1ac.DeploymentStrategy().
				WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
					WithMaxSurge(intstr.FromInt32(0)).
					WithMaxUnavailable(intstr.FromString(MaxUnavailable)))).
			WithProgressDeadlineSeconds(ProgressDeadlineSeconds).
			WithTemplate(pod))
	if len(tmpl.Annotations) > 0 {
		deployment.WithAnnotations(tmpl.Annotations)
		pod.WithAnnotations(tmpl.Annotations)
	}
	return deployment
}

// validate checks what Build relies on and returns the pool's class.
func validate(pool *v1alpha1.WorkerPool) (v1alpha1.SandboxClass, error) {
	if pool == nil {
		return "", errors.New("deployment: nil WorkerPool")
	}
	ref := pool.Namespace + "/" + pool.Name
	switch {
	case pool.Name == "" || pool.Namespace == "":
		return "", fmt.Errorf("deployment: WorkerPool %q has no name or namespace", ref)
	case pool.UID == "":
		// An owner reference without a UID is rejected; a pool without
		// one was not read from the API server.
		return "", fmt.Errorf("deployment: WorkerPool %s has no UID", ref)
	case pool.Spec.Replicas == nil:
		return "", fmt.Errorf("deployment: WorkerPool %s: spec.replicas is not set", ref)
	case *pool.Spec.Replicas < 0:
		return "", fmt.Errorf("deployment: WorkerPool %s: spec.replicas is negative", ref)
	case pool.Spec.WorkerImage == "":
		return "", fmt.Errorf("deployment: WorkerPool %s: spec.workerImage is empty", ref)
	case len(pool.Spec.SandboxClasses) != 1:
		return "", fmt.Errorf("deployment: WorkerPool %s: spec.sandboxClasses must have exactly one entry, has %d",
			ref, len(pool.Spec.SandboxClasses))
	}
	class := pool.Spec.SandboxClasses[0].Name
	if Capabilities(class) == nil {
		return "", fmt.Errorf("deployment: WorkerPool %s: unknown sandbox class %q", ref, class)
	}
	return class, nil
}

func containerPort(name string, port int32) *corev1ac.ContainerPortApplyConfiguration {
	// The protocol is declared although TCP is the default: it is part of
	// the key of the ports list under server-side apply.
	return corev1ac.ContainerPort().
		WithName(name).
		WithContainerPort(port).
		WithProtocol(corev1.ProtocolTCP)
}

func resourceEnv(name, res, divisor string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().
		WithName(name).
		WithValueFrom(corev1ac.EnvVarSource().
			WithResourceFieldRef(corev1ac.ResourceFieldSelector().
				WithContainerName(ContainerName).
				WithResource(res).
				WithDivisor(resource.MustParse(divisor))))
}

// containerSecurityContext: not privileged, root, ALL capabilities dropped
// and the class's set added. seccomp and AppArmor are Unconfined for both
// classes: the sandboxes mount filesystems and pivot_root(2) (runsc and its
// gofer; virtiofsd's namespace sandbox), which the runtime-default seccomp
// profile and the default AppArmor profile deny whatever capabilities the
// container holds. Declaring them (rather than leaving them unset) keeps the
// worker working on clusters that default to RuntimeDefault.
func containerSecurityContext(class v1alpha1.SandboxClass) *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithPrivileged(false).
		WithRunAsUser(0).
		WithRunAsGroup(0).
		WithCapabilities(corev1ac.Capabilities().
			WithDrop("ALL").
			WithAdd(Capabilities(class)...)).
		WithSeccompProfile(corev1ac.SeccompProfile().
			WithType(corev1.SeccompProfileTypeUnconfined)).
		WithAppArmorProfile(corev1ac.AppArmorProfile().
			WithType(corev1.AppArmorProfileTypeUnconfined))
}

func liveTrustBundle(signer string) *corev1ac.VolumeProjectionApplyConfiguration {
	return corev1ac.VolumeProjection().
		WithClusterTrustBundle(corev1ac.ClusterTrustBundleProjection().
			WithSignerName(signer).
			WithLabelSelector(metav1ac.LabelSelector().
				WithMatchLabels(map[string]string{canaryingLabel: canaryingLive})).
			WithPath(trustBundleFile))
}

// identityVolumeSource projects the worker's pod certificate and the trust
// bundle of its signer.
func identityVolumeSource() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().
		WithName(identityVolume).
		WithProjected(corev1ac.ProjectedVolumeSource().
			WithSources(
				corev1ac.VolumeProjection().
					WithPodCertificate(corev1ac.PodCertificateProjection().
						WithSignerName(identitySigner).
						WithKeyType(podCertKeyType).
						WithCredentialBundlePath(credentialBundleFile)),
				liveTrustBundle(identitySigner),
			))
}

// egressTrustVolumeSource projects the trust bundle that verifies the egress
// gateway.
func egressTrustVolumeSource() *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().
		WithName(egressTrustVolume).
		WithProjected(corev1ac.ProjectedVolumeSource().
			WithSources(liveTrustBundle(egressSigner)))
}

// classToleration tolerates the taint that reserves nodes for a class.
func classToleration(class v1alpha1.SandboxClass) corev1.Toleration {
	return corev1.Toleration{
		Key:      v1alpha1.SandboxClassTaintKey,
		Operator: corev1.TolerationOpEqual,
		Value:    string(class),
		Effect:   corev1.TaintEffectNoSchedule,
	}
}

// tolerations returns the template's tolerations followed by the class's,
// which appears exactly once: template entries equivalent to it (an empty
// operator means Equal) are left out rather than kept in place, so the
// result does not depend on whether the template spelled it out.
func tolerations(tmpl []corev1.Toleration, class v1alpha1.SandboxClass) []*corev1ac.TolerationApplyConfiguration {
	own := classToleration(class)
	out := make([]*corev1ac.TolerationApplyConfiguration, 0, len(tmpl)+1)
	for _, t := range tmpl {
		if equivalentToleration(t, own) {
			continue
		}
		out = append(out, toleration(t))
	}
	return append(out, toleration(own))
}

func equivalentToleration(a, b corev1.Toleration) bool {
	op := func(o corev1.TolerationOperator) corev1.TolerationOperator {
		if o == "" {
			return corev1.TolerationOpEqual
		}
		return o
	}
	return a.Key == b.Key && op(a.Operator) == op(b.Operator) && a.Value == b.Value &&
		a.Effect == b.Effect && (a.TolerationSeconds == nil) == (b.TolerationSeconds == nil) &&
		(a.TolerationSeconds == nil || *a.TolerationSeconds == *b.TolerationSeconds)
}

// toleration declares the fields the toleration sets, and only those.
func toleration(t corev1.Toleration) *corev1ac.TolerationApplyConfiguration {
	ac := corev1ac.Toleration()
	if t.Key != "" {
		ac.WithKey(t.Key)
	}
	if t.Operator != "" {
		ac.WithOperator(t.Operator)
	}
	if t.Value != "" {
		ac.WithValue(t.Value)
	}
	if t.Effect != "" {
		ac.WithEffect(t.Effect)
	}
	if t.TolerationSeconds != nil {
		ac.WithTolerationSeconds(*t.TolerationSeconds)
	}
	return ac
}

// nodeAffinity converts the template's node affinity, or returns nil when it
// has no term. The apply configuration types mirror the API types' JSON, so a
// JSON round trip converts every field, including ones added later.
func nodeAffinity(na *corev1.NodeAffinity) (*corev1ac.NodeAffinityApplyConfiguration, error) {
	if na == nil || (na.RequiredDuringSchedulingIgnoredDuringExecution == nil &&
		len(na.PreferredDuringSchedulingIgnoredDuringExecution) == 0) {
		return nil, nil
	}
	raw, err := json.Marshal(na)
	if err != nil {
		return nil, fmt.Errorf("deployment: encoding spec.template.nodeAffinity: %w", err)
	}
	ac := &corev1ac.NodeAffinityApplyConfiguration{}
	if err := json.Unmarshal(raw, ac); err != nil {
		return nil, fmt.Errorf("deployment: converting spec.template.nodeAffinity: %w", err)
	}
	return ac, nil
}

// resources returns the worker container's requests and limits: the
// template's, and for the micro-VM class one ate.dev/kvm. It returns nil when
// there is nothing to declare.
//
// ate.dev/kvm is always exactly 1 for a micro-VM worker, whatever the template
// says: a worker runs its VMs through one /dev/kvm, the device plugin injects
// the same node device for any count, and a template value of 0 would leave
// the worker without /dev/kvm, so the template's value is overwritten (the
// resource list is a map: one entry per name). A template request for it is
// also set to 1, because an extended resource's request must equal its limit.
// For gVisor the template's resources are passed through unchanged.
func resources(tmpl *corev1.ResourceRequirements, class v1alpha1.SandboxClass) (*corev1ac.ResourceRequirementsApplyConfiguration, error) {
	var requests, limits corev1.ResourceList
	if tmpl != nil {
		if len(tmpl.Claims) > 0 {
			// Claims name entries of pod.spec.resourceClaims, which a
			// template cannot declare: the API server would reject the
			// Deployment.
			return nil, errors.New("deployment: spec.template.resources.claims is not supported")
		}
		requests = copyResourceList(tmpl.Requests)
		limits = copyResourceList(tmpl.Limits)
	}
	if class == v1alpha1.SandboxClassMicroVM {
		kvm := corev1.ResourceName(v1alpha1.KVMResource)
		if limits == nil {
			limits = corev1.ResourceList{}
		}
		limits[kvm] = resource.MustParse("1")
		if _, ok := requests[kvm]; ok {
			requests[kvm] = resource.MustParse("1")
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return nil, nil
	}
	ac := corev1ac.ResourceRequirements()
	if len(requests) > 0 {
		ac.WithRequests(requests)
	}
	if len(limits) > 0 {
		ac.WithLimits(limits)
	}
	return ac, nil
}

func copyResourceList(in corev1.ResourceList) corev1.ResourceList {
	if len(in) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for name, q := range in {
		out[name] = q.DeepCopy()
	}
	return out
}
