//! Jobs: `RayJob` messages to and from `ray.io/v1` RayJobs.

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements},
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};
use kuberay_crds::{RayJob, RayJobSpec};

use super::{Templates, cluster, labels, non_empty, sorted, time, unsorted};
use crate::{api, error::ApiResult};

/// The submitter's CPU when the request names none.
const SUBMITTER_CPU: &str = "1";
/// The submitter's memory when the request names none.
const SUBMITTER_MEMORY: &str = "1Gi";
/// The submitter's container name in KubeRay's template.
const SUBMITTER_CONTAINER: &str = "ray-job-submitter";

/// The RayJob KubeRay's apiserver creates for `job` (validated, namespace set). Its `metadata` goes both to
/// Ray (`spec.metadata`) and onto the RayJob as annotations. Unlike KubeRay, `entrypointNumGpus` is kept.
pub(crate) fn to_ray_job(job: &api::RayJob, templates: &Templates) -> ApiResult<RayJob> {
    let ray_cluster_spec = job
        .cluster_spec
        .as_ref()
        .map(|spec| cluster::cluster_spec(&job.version, None, spec, templates, false))
        .transpose()?;
    let labels = labels::managed_labels([
        (labels::CLUSTER_NAME, job.name.as_str()),
        (labels::USER, job.user.as_str()),
    ]);
    let spec = RayJobSpec {
        entrypoint: Some(job.entrypoint.clone()),
        metadata: sorted(&job.metadata),
        runtime_env_yaml: non_empty(&job.runtime_env),
        shutdown_after_job_finishes: job.shutdown_after_job_finishes.then_some(true),
        ttl_seconds_after_finished: (job.ttl_seconds_after_finished != 0)
            .then_some(job.ttl_seconds_after_finished),
        job_id: non_empty(&job.job_id),
        cluster_selector: sorted(&job.cluster_selector),
        ray_cluster_spec,
        submitter_pod_template: job.job_submitter.as_ref().map(submitter_template),
        entrypoint_num_cpus: (job.entrypoint_num_cpus > 0.0).then_some(job.entrypoint_num_cpus),
        entrypoint_num_gpus: (job.entrypoint_num_gpus > 0.0).then_some(job.entrypoint_num_gpus),
        entrypoint_resources: non_empty(&job.entrypoint_resources),
        active_deadline_seconds: (job.active_deadline_seconds > 0).then_some(job.active_deadline_seconds),
        ..Default::default()
    };
    Ok(RayJob {
        metadata: ObjectMeta {
            name: Some(job.name.clone()),
            namespace: Some(job.namespace.clone()),
            labels: Some(labels),
            annotations: sorted(&job.metadata),
            ..Default::default()
        },
        spec,
        status: None,
    })
}

/// KubeRay's submitter Pod: one container running the submitter image, requests equal to limits.
fn submitter_template(submitter: &api::RayJobSubmitter) -> PodTemplateSpec {
    let cpu = non_empty(&submitter.cpu).unwrap_or_else(|| SUBMITTER_CPU.to_owned());
    let memory = non_empty(&submitter.memory).unwrap_or_else(|| SUBMITTER_MEMORY.to_owned());
    let list = BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpu)),
        ("memory".to_owned(), Quantity(memory)),
    ]);
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: SUBMITTER_CONTAINER.to_owned(),
                image: Some(submitter.image.clone()),
                resources: Some(ResourceRequirements {
                    limits: Some(list.clone()),
                    requests: Some(list),
                    claims: None,
                }),
                ..Default::default()
            }],
            restart_policy: Some("Never".to_owned()),
            ..Default::default()
        }),
    }
}

fn from_submitter_template(template: &PodTemplateSpec) -> Option<api::RayJobSubmitter> {
    let container = template.spec.as_ref()?.containers.first()?;
    let limit = |name: &str| {
        container
            .resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get(name))
            .map(|q| q.0.clone())
            .unwrap_or_default()
    };
    let (cpu, memory) = (limit("cpu"), limit("memory"));
    Some(api::RayJobSubmitter {
        image: container.image.clone().unwrap_or_default(),
        cpu: if cpu == SUBMITTER_CPU { String::new() } else { cpu },
        memory: if memory == SUBMITTER_MEMORY {
            String::new()
        } else {
            memory
        },
    })
}

/// The API's view of a RayJob.
pub(crate) fn from_ray_job(job: &RayJob) -> api::RayJob {
    let meta = &job.metadata;
    let spec = &job.spec;
    let status = job.status.clone().unwrap_or_default();
    api::RayJob {
        name: meta.name.clone().unwrap_or_default(),
        namespace: meta.namespace.clone().unwrap_or_default(),
        user: labels::label(meta, labels::USER).to_owned(),
        version: spec
            .ray_cluster_spec
            .as_ref()
            .and_then(|s| s.ray_version.clone())
            .unwrap_or_default(),
        entrypoint: spec.entrypoint.clone().unwrap_or_default(),
        metadata: unsorted(spec.metadata.as_ref()),
        runtime_env: spec.runtime_env_yaml.clone().unwrap_or_default(),
        job_id: status.job_id.or_else(|| spec.job_id.clone()).unwrap_or_default(),
        shutdown_after_job_finishes: spec.shutdown_after_job_finishes.unwrap_or(false),
        cluster_selector: unsorted(spec.cluster_selector.as_ref()),
        cluster_spec: spec.ray_cluster_spec.as_ref().map(cluster::from_cluster_spec),
        ttl_seconds_after_finished: spec.ttl_seconds_after_finished.unwrap_or_default(),
        job_submitter: spec
            .submitter_pod_template
            .as_ref()
            .and_then(from_submitter_template),
        entrypoint_num_cpus: spec.entrypoint_num_cpus.unwrap_or_default(),
        entrypoint_num_gpus: spec.entrypoint_num_gpus.unwrap_or_default(),
        entrypoint_resources: spec.entrypoint_resources.clone().unwrap_or_default(),
        active_deadline_seconds: spec.active_deadline_seconds.unwrap_or_default(),
        created_at: time(meta.creation_timestamp.as_ref()),
        delete_at: time(meta.deletion_timestamp.as_ref()),
        job_status: status
            .job_status
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        job_deployment_status: status
            .job_deployment_status
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        message: status.message.unwrap_or_default(),
        start_time: time(status.start_time.as_ref()),
        end_time: time(status.end_time.as_ref()),
        ray_cluster_name: status.ray_cluster_name.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::fixtures::{self, map};

    fn job() -> api::RayJob {
        api::RayJob {
            name: "train".into(),
            namespace: "team-a".into(),
            user: "alice".into(),
            version: "2.9.0".into(),
            entrypoint: "python train.py".into(),
            metadata: map(&[("example.com/run", "42")]),
            runtime_env: "pip:\n  - requests==2.26.0\nenv_vars:\n  counter_name: test\n".into(),
            job_id: "train-42".into(),
            shutdown_after_job_finishes: true,
            cluster_spec: Some(fixtures::cluster_spec()),
            ttl_seconds_after_finished: 60,
            job_submitter: Some(api::RayJobSubmitter {
                image: "rayproject/ray:2.9.0".into(),
                cpu: "500m".into(),
                memory: String::new(),
            }),
            entrypoint_num_cpus: 1.5,
            entrypoint_num_gpus: 0.5,
            entrypoint_resources: r#"{"custom": 1}"#.into(),
            active_deadline_seconds: 3600,
            ..Default::default()
        }
    }

    fn built() -> RayJob {
        to_ray_job(&job(), &fixtures::templates()).unwrap_or_default()
    }

    #[test]
    fn ray_job_is_kuberays() {
        let rj = built();
        let labels = rj.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels["ray.io/cluster-name"], "train");
        assert_eq!(labels["ray.io/user"], "alice");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "kuberay-apiserver");
        assert_eq!(labels["app.kubernetes.io/name"], "kuberay");
        assert_eq!(labels.len(), 4);
        // The job's metadata is both Ray's metadata and the RayJob's annotations.
        assert_eq!(
            rj.metadata.annotations.clone().unwrap_or_default()["example.com/run"],
            "42"
        );
        let s = &rj.spec;
        assert_eq!(s.metadata.clone().unwrap_or_default()["example.com/run"], "42");
        assert_eq!(s.entrypoint.as_deref(), Some("python train.py"));
        assert!(
            s.runtime_env_yaml
                .as_deref()
                .is_some_and(|y| y.contains("requests==2.26.0"))
        );
        assert_eq!(s.job_id.as_deref(), Some("train-42"));
        assert_eq!(s.shutdown_after_job_finishes, Some(true));
        assert_eq!(s.ttl_seconds_after_finished, Some(60));
        assert_eq!(s.entrypoint_num_cpus, Some(1.5));
        // KubeRay writes this one onto a copy and loses it.
        assert_eq!(s.entrypoint_num_gpus, Some(0.5));
        assert_eq!(s.entrypoint_resources.as_deref(), Some(r#"{"custom": 1}"#));
        assert_eq!(s.active_deadline_seconds, Some(3600));
        assert!(s.cluster_selector.is_none());
        let cluster = s.ray_cluster_spec.clone().unwrap_or_default();
        assert_eq!(cluster.ray_version.as_deref(), Some("2.9.0"));
        // A job's head does not open the Serve ports.
        let head = cluster.head_group_spec.template.spec.unwrap_or_default();
        assert_eq!(head.containers[0].ports.as_ref().map(Vec::len), Some(4));
    }

    #[test]
    fn submitter_is_kuberays() {
        let template = built().spec.submitter_pod_template.unwrap_or_default();
        let spec = template.spec.unwrap_or_default();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        let c = &spec.containers[0];
        assert_eq!(c.name, "ray-job-submitter");
        assert_eq!(c.image.as_deref(), Some("rayproject/ray:2.9.0"));
        let r = c.resources.clone().unwrap_or_default();
        assert_eq!(r.limits, r.requests);
        let limits = r.limits.unwrap_or_default();
        assert_eq!(
            (limits["cpu"].0.as_str(), limits["memory"].0.as_str()),
            ("500m", "1Gi")
        );
    }

    #[test]
    fn round_trip() {
        assert_eq!(from_ray_job(&built()), job());
        let plain = api::RayJob {
            name: "pick".into(),
            namespace: "team-a".into(),
            user: "bob".into(),
            entrypoint: "python x.py".into(),
            cluster_selector: map(&[("ray.io/cluster", "demo")]),
            ..Default::default()
        };
        let rj = to_ray_job(&plain, &Templates::new()).unwrap_or_default();
        assert!(rj.spec.ray_cluster_spec.is_none());
        assert_eq!(
            rj.spec.cluster_selector.clone().unwrap_or_default()["ray.io/cluster"],
            "demo"
        );
        assert!(rj.metadata.annotations.is_none());
        assert_eq!(from_ray_job(&rj), plain);
    }

    #[test]
    fn status_is_read() {
        let mut rj = built();
        rj.status = serde_json::from_value(serde_json::json!({
            "jobId": "train-42", "jobStatus": "RUNNING", "jobDeploymentStatus": "Running",
            "message": "running", "rayClusterName": "train-abcde",
            "startTime": "2024-05-01T10:00:00Z", "endTime": "2024-05-01T11:00:00Z",
        }))
        .ok();
        rj.metadata.deletion_timestamp =
            serde_json::from_value(serde_json::json!("2024-05-01T12:00:00Z")).ok();
        let j = from_ray_job(&rj);
        assert_eq!(
            (j.job_status.as_str(), j.job_deployment_status.as_str()),
            ("RUNNING", "Running")
        );
        assert_eq!(
            (j.message.as_str(), j.ray_cluster_name.as_str()),
            ("running", "train-abcde")
        );
        assert_eq!(j.start_time.map(|t| t.seconds), Some(1_714_557_600));
        assert_eq!(j.end_time.map(|t| t.seconds), Some(1_714_561_200));
        assert_eq!(j.delete_at.map(|t| t.seconds), Some(1_714_564_800));
    }
}
