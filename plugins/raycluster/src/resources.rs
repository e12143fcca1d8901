//! `desiredCPU`, `desiredMemory`, `desiredGPU` and `desiredTPU`: what the cluster asks of the Kubernetes
//! scheduler at its requested size (the columns `kubectl get rayclusters` shows). Each Pod counts its
//! containers' requests, or limits where no request is set; sums keep the first operand's format, as
//! Go's quantity arithmetic does.

use crate::{quantity::Quantity, ray_start::is_gpu_resource};

/// Resource names and their quantities (`kuberay_rules::resources`).
pub use kuberay_rules::resources::{ResourceList, desired};

/// All GPU kinds together (`nvidia.com/gpu`, MIG slices, ...).
pub fn gpus(total: &ResourceList) -> Quantity {
    total
        .iter()
        .filter(|(k, v)| is_gpu_resource(k) && !v.is_zero())
        .fold(Quantity::default(), |sum, (_, v)| sum.plus(*v))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodSpec;
    use k8s_openapi::{
        api::core::v1::{Container, PodTemplateSpec, ResourceRequirements},
        apimachinery::pkg::api::resource::Quantity as Q,
    };
    use kuberay_crds::{RayClusterSpec, WorkerGroupSpec};

    use super::*;

    fn template(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> PodTemplateSpec {
        let list = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), Q((*v).to_string())))
                    .collect(),
            )
        };
        PodTemplateSpec {
            spec: Some(PodSpec {
                containers: vec![Container {
                    resources: Some(ResourceRequirements {
                        requests: list(requests),
                        limits: list(limits),
                        ..ResourceRequirements::default()
                    }),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..PodTemplateSpec::default()
        }
    }

    #[test]
    fn sums_requests_then_limits_over_replicas() {
        let mut spec = RayClusterSpec::default();
        spec.head_group_spec.template = template(&[("cpu", "1"), ("memory", "2Gi")], &[]);
        spec.worker_group_specs = Some(vec![
            WorkerGroupSpec {
                replicas: Some(3),
                template: template(&[("cpu", "500m")], &[("memory", "1Gi"), ("nvidia.com/gpu", "1")]),
                ..WorkerGroupSpec::default()
            },
            WorkerGroupSpec {
                replicas: Some(2),
                num_of_hosts: Some(2),
                template: template(&[], &[("google.com/tpu", "4")]),
                ..WorkerGroupSpec::default()
            },
            WorkerGroupSpec {
                replicas: Some(5),
                suspend: Some(true),
                template: template(&[("cpu", "10")], &[]),
                ..WorkerGroupSpec::default()
            },
        ]);
        let total = desired(&spec);
        assert_eq!(total["cpu"].canonical(), "2500m");
        assert_eq!(total["memory"].canonical(), "5Gi");
        assert_eq!(gpus(&total).canonical(), "3");
        assert_eq!(total["google.com/tpu"].canonical(), "16");
    }
}
