package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// RolloutAnalysis measures each step of a rollout with Prometheus queries,
// from the step's admission until its bake ends (docs/decisions/0028-rollout-analysis.md).
type RolloutAnalysis struct {
	// metrics are measured together, every interval; each must stay
	// within its bounds.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +required
	Metrics []RolloutMetric `json:"metrics"`

	// interval is the time between two measurements (a Go duration, at
	// least 1s; default 30s).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="spec.rollout.analysis.interval must be a duration such as 30s, 1m or 1m30s"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// failureLimit is how many measurements out of bounds a step bears:
	// one more fails the step (default 0: the first fails it).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	FailureLimit int32 `json:"failureLimit,omitempty"`
}

// RolloutMetric is one PromQL query a step's measurements must keep within
// bounds.
// +kubebuilder:validation:XValidation:rule="has(self.min) || has(self.max)",message="spec.rollout.analysis.metrics[] sets min, max or both: a metric with no bound checks nothing"
type RolloutMetric struct {
	// name names the metric in status, events and the workflow's history.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// query is a PromQL instant query, a Go template over .Config,
	// .Class, .Cluster, .Step, .Pools and .Namespaces (the step's pools'
	// names and namespaces, each as a regular expression of alternatives,
	// for =~). Its result is a scalar or a vector: each series is checked;
	// an empty vector is no data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Query string `json:"query"`

	// min is the least value the result may have (a decimal number, e.g.
	// "0.99").
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$')",message="spec.rollout.analysis.metrics[].min must be a decimal number such as 0.99 or 1e-3"
	// +optional
	Min *string `json:"min,omitempty"`

	// max is the greatest value the result may have (a decimal number,
	// e.g. "0.05").
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?$')",message="spec.rollout.analysis.metrics[].max must be a decimal number such as 0.05 or 1e-3"
	// +optional
	Max *string `json:"max,omitempty"`
}

// RolloutFailurePolicy is what a failed step does.
// +kubebuilder:validation:Enum=Halt;RollBack
type RolloutFailurePolicy string

const (
	// RolloutOnFailureHalt: the rollout halts where it is; the pools it moved stay
	// until a person resumes, retries or aborts.
	RolloutOnFailureHalt RolloutFailurePolicy = "Halt"
	// RolloutOnFailureRollBack: every admitted pool goes back to the config it
	// came from, and the rollout is RolledBack until a retry or a change
	// of the config's spec.
	RolloutOnFailureRollBack RolloutFailurePolicy = "RollBack"
)

// MeasurementPhase is how one measurement of a metric judged.
// +kubebuilder:validation:Enum=Successful;Failed;Inconclusive
type MeasurementPhase string

const (
	// MeasurementSuccessful: every series within bounds.
	MeasurementSuccessful MeasurementPhase = "Successful"
	// MeasurementFailed: a series out of bounds.
	MeasurementFailed MeasurementPhase = "Failed"
	// MeasurementInconclusive: no data, or the query failed: the step
	// cannot complete on it.
	MeasurementInconclusive MeasurementPhase = "Inconclusive"
)

// RolloutMeasurement is the last measurement of one metric in a step.
type RolloutMeasurement struct {
	// metric is the metric's name.
	// +required
	Metric string `json:"metric"`
	// step is the step measured.
	// +required
	Step int32 `json:"step"`
	// phase is the measurement's judgement.
	// +required
	Phase MeasurementPhase `json:"phase"`
	// value is the result: a number, or each series' labels and number.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Value string `json:"value,omitempty"`
	// message says why a measurement failed or was inconclusive.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
	// failures counts the step's measurements of this metric out of
	// bounds so far.
	// +optional
	Failures int32 `json:"failures"`
	// measuredAt is when the query was evaluated.
	// +required
	MeasuredAt metav1.Time `json:"measuredAt"`
}
