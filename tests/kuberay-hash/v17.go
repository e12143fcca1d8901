package main

// KubeRay v1.7.0's RayClusterSpec differs from the newest ray-operator module the Go module proxy serves
// (v1.6.2) in the ray.io types below: v1.7 added fields and made `redisAddress` optional. These
// declarations state v1.7's JSON facts (field names, order, omitempty) for the types that changed; every
// other type is v1.6.2's own, which v1.7 did not change. Keep them in step with KubeRay's
// ray-operator/apis/ray/v1/raycluster_types.go when the pinned version moves.

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

type v17RayClusterSpec struct {
	UpgradeStrategy          *rayv1.RayClusterUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	AuthOptions              *rayv1.AuthOptions               `json:"authOptions,omitempty"`
	Suspend                  *bool                            `json:"suspend,omitempty"`
	ManagedBy                *string                          `json:"managedBy,omitempty"`
	AutoscalerOptions        *v17AutoscalerOptions            `json:"autoscalerOptions,omitempty"`
	HeadServiceAnnotations   map[string]string                `json:"headServiceAnnotations,omitempty"`
	EnableInTreeAutoscaling  *bool                            `json:"enableInTreeAutoscaling,omitempty"`
	GcsFaultToleranceOptions *v17GcsFaultToleranceOptions     `json:"gcsFaultToleranceOptions,omitempty"`
	HistoryServerOptions     *v17HistoryServerOptions         `json:"historyServerOptions,omitempty"`
	NetworkPolicy            *v17NetworkPolicyConfig          `json:"networkPolicy,omitempty"`
	TLSOptions               *v17TLSOptions                   `json:"tlsOptions,omitempty"`
	HeadGroupSpec            v17HeadGroupSpec                 `json:"headGroupSpec"`
	RayVersion               string                           `json:"rayVersion,omitempty"`
	WorkerGroupSpecs         []v17WorkerGroupSpec             `json:"workerGroupSpecs,omitempty"`
}

type v17TLSOptions struct {
	Enabled *bool `json:"enabled,omitempty"`
}

type v17GcsFaultToleranceOptions struct {
	Backend                  string                 `json:"backend,omitempty"`
	RedisUsername            *rayv1.RedisCredential `json:"redisUsername,omitempty"`
	RedisPassword            *rayv1.RedisCredential `json:"redisPassword,omitempty"`
	ExternalStorageNamespace string                 `json:"externalStorageNamespace,omitempty"`
	RedisAddress             string                 `json:"redisAddress,omitempty"`
	Storage                  *v17GcsEmbeddedStorage `json:"storage,omitempty"`
}

type v17GcsEmbeddedStorage struct {
	ClaimName        string                              `json:"claimName,omitempty"`
	Size             *resource.Quantity                  `json:"size,omitempty"`
	StorageClassName *string                             `json:"storageClassName,omitempty"`
	AccessModes      []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
	SubPath          string                              `json:"subPath,omitempty"`
	DeletionPolicy   *string                             `json:"deletionPolicy,omitempty"`
}

type v17HistoryServerOptions struct {
	CollectorOptions *v17CollectorOptions `json:"collectorOptions,omitempty"`
}

type v17CollectorOptions struct {
	Image           *string                      `json:"image,omitempty"`
	ImagePullPolicy *corev1.PullPolicy           `json:"imagePullPolicy,omitempty"`
	Resources       *corev1.ResourceRequirements `json:"resources,omitempty"`
	Env             []corev1.EnvVar              `json:"env,omitempty"`
}

type v17NetworkPolicyConfig struct {
	Mode         *string                            `json:"mode,omitempty"`
	Head         *v17NetworkPolicyRules             `json:"head,omitempty"`
	Worker       *v17NetworkPolicyRules             `json:"worker,omitempty"`
	WorkerGroups []v17WorkerGroupNetworkPolicyRules `json:"workerGroups,omitempty"`
}

type v17WorkerGroupNetworkPolicyRules struct {
	GroupName             string `json:"groupName"`
	v17NetworkPolicyRules `json:",inline"`
}

type v17NetworkPolicyRules struct {
	IngressRules []networkingv1.NetworkPolicyIngressRule `json:"ingressRules,omitempty"`
	EgressRules  []networkingv1.NetworkPolicyEgressRule  `json:"egressRules,omitempty"`
}

type v17HeadGroupSpec struct {
	Template       corev1.PodTemplateSpec `json:"template"`
	HeadService    *corev1.Service        `json:"headService,omitempty"`
	EnableIngress  *bool                  `json:"enableIngress,omitempty"`
	IngressOptions *v17IngressOptions     `json:"ingressOptions,omitempty"`
	Resources      map[string]string      `json:"resources,omitempty"`
	Labels         map[string]string      `json:"labels,omitempty"`
	RayStartParams map[string]string      `json:"rayStartParams"`
	ServiceType    corev1.ServiceType     `json:"serviceType,omitempty"`
}

type v17IngressOptions struct {
	Host     *string                   `json:"host,omitempty"`
	Path     *string                   `json:"path,omitempty"`
	PathType *string                   `json:"pathType,omitempty"`
	TLS      []networkingv1.IngressTLS `json:"tls,omitempty"`
}

type v17WorkerGroupSpec struct {
	Suspend            *bool                  `json:"suspend,omitempty"`
	GroupName          string                 `json:"groupName"`
	Replicas           *int32                 `json:"replicas,omitempty"`
	MinReplicas        *int32                 `json:"minReplicas"`
	MaxReplicas        *int32                 `json:"maxReplicas"`
	IdleTimeoutSeconds *int32                 `json:"idleTimeoutSeconds,omitempty"`
	Priority           *int32                 `json:"priority,omitempty"`
	Resources          map[string]string      `json:"resources,omitempty"`
	Labels             map[string]string      `json:"labels,omitempty"`
	RayStartParams     map[string]string      `json:"rayStartParams"`
	Template           corev1.PodTemplateSpec `json:"template"`
	ScaleStrategy      rayv1.ScaleStrategy    `json:"scaleStrategy,omitempty"`
	NumOfHosts         int32                  `json:"numOfHosts,omitempty"`
}

type v17AutoscalerOptions struct {
	Resources          *corev1.ResourceRequirements `json:"resources,omitempty"`
	Image              *string                      `json:"image,omitempty"`
	ImagePullPolicy    *corev1.PullPolicy           `json:"imagePullPolicy,omitempty"`
	SecurityContext    *corev1.SecurityContext      `json:"securityContext,omitempty"`
	IdleTimeoutSeconds *int32                       `json:"idleTimeoutSeconds,omitempty"`
	UpscalingMode      *string                      `json:"upscalingMode,omitempty"`
	Version            *string                      `json:"version,omitempty"`
	Env                []corev1.EnvVar              `json:"env,omitempty"`
	EnvFrom            []corev1.EnvFromSource       `json:"envFrom,omitempty"`
	VolumeMounts       []corev1.VolumeMount         `json:"volumeMounts,omitempty"`
	Command            []string                     `json:"command,omitempty"`
	Args               []string                     `json:"args,omitempty"`
}

// clearV17 mutes what KubeRay's GenerateHashWithoutReplicasAndWorkersToDelete mutes (the same in v1.6.2
// and v1.7.0), on the v1.7 shape.
func clearV17(spec *v17RayClusterSpec) {
	spec.HeadGroupSpec.Template.Spec.Tolerations = nil
	spec.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range spec.WorkerGroupSpecs {
		group := &spec.WorkerGroupSpecs[i]
		group.Replicas = nil
		group.MaxReplicas = nil
		group.MinReplicas = nil
		group.ScaleStrategy.WorkersToDelete = nil
		group.Template.Spec.Tolerations = nil
		group.Template.Spec.SchedulingGates = nil
	}
	spec.UpgradeStrategy = nil
}
