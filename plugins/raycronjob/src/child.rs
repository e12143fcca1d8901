//! The RayJob of one tick: named `<cronjob>-<Unix minutes of the tick>`, so the name is the same whoever
//! computes it and a second create for the same tick is refused as already existing; labelled with its
//! RayCronJob and annotated with the tick; its spec is the `jobTemplate`. The host adds the controller owner
//! reference to the RayCronJob.

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::ObjectMeta, jiff::Timestamp};
use kuberay_crds::{
    RayCronJob, RayJob,
    constants::{annotations, labels},
};

/// `<cronjob>-<tick in Unix minutes>`.
pub fn name(cronjob: &str, tick: i64) -> String {
    format!("{cronjob}-{}", tick.div_euclid(60))
}

/// `ray.io/cronjob-scheduled-timestamp`: the tick in UTC, RFC 3339 to the second (`2024-01-01T00:05:00Z`).
pub fn scheduled_timestamp(tick: i64) -> String {
    Timestamp::from_second(tick)
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The RayJob a RayCronJob creates at `tick` (Unix seconds).
pub fn build(cronjob: &RayCronJob, tick: i64) -> RayJob {
    let cron_name = cronjob.metadata.name.clone().unwrap_or_default();
    RayJob {
        metadata: ObjectMeta {
            name: Some(name(&cron_name, tick)),
            namespace: cronjob.metadata.namespace.clone(),
            labels: Some([(labels::RAY_CRONJOB_NAME.to_string(), cron_name)].into()),
            annotations: Some(
                [(
                    annotations::RAY_CRONJOB_SCHEDULED_TIMESTAMP.to_string(),
                    scheduled_timestamp(tick),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        spec: cronjob.spec.job_template.clone(),
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use kuberay_crds::RayCronJobSpec;

    use super::*;

    #[test]
    fn the_name_is_the_tick_in_minutes() {
        // 2024-01-01T00:05:00Z
        assert_eq!(name("nightly", 1_704_067_500), "nightly-28401125");
        assert_eq!(name("nightly", 1_704_067_559), "nightly-28401125");
        assert_ne!(name("nightly", 1_704_067_500), name("nightly", 1_704_067_560));
        assert_eq!(scheduled_timestamp(1_704_067_500), "2024-01-01T00:05:00Z");
    }

    #[test]
    fn the_rayjob_carries_the_template_label_and_annotation() {
        let cronjob = RayCronJob {
            metadata: ObjectMeta {
                name: Some("nightly".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            spec: RayCronJobSpec {
                schedule: "* * * * *".into(),
                job_template: kuberay_crds::RayJobSpec {
                    entrypoint: Some("python x.py".into()),
                    ..kuberay_crds::RayJobSpec::default()
                },
                ..RayCronJobSpec::default()
            },
            status: None,
        };
        let job = build(&cronjob, 1_704_067_500);
        assert_eq!(job.metadata.name.as_deref(), Some("nightly-28401125"));
        assert_eq!(job.metadata.namespace.as_deref(), Some("ns"));
        let labels = job.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels.get("ray.io/cronjob-name").map(String::as_str),
            Some("nightly")
        );
        let annotations = job.metadata.annotations.unwrap_or_default();
        assert_eq!(
            annotations
                .get("ray.io/cronjob-scheduled-timestamp")
                .map(String::as_str),
            Some("2024-01-01T00:05:00Z")
        );
        assert_eq!(job.spec.entrypoint.as_deref(), Some("python x.py"));
    }
}
