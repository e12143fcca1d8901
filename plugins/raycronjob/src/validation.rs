//! What KubeRay checks before scheduling (`ValidateRayCronJobSpec`): a name short enough for its RayJobs'
//! names, a schedule without `TZ=`, a schedule that parses, and a time zone that exists. The job template
//! is validated by the RayJob plugin when a RayJob made from it is reconciled (a bad one ends
//! `ValidationFailed` there), and by the API server's schema and CEL rules before that.

use kuberay_crds::RayCronJob;

use crate::{
    consts::MAX_RAYCRONJOB_NAME_LENGTH,
    schedule::{self, Invalid, Schedule},
};

/// The RayCronJob's schedule, or why it cannot have one.
pub fn validate(cronjob: &RayCronJob) -> Result<Schedule, Invalid> {
    let name = cronjob.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_RAYCRONJOB_NAME_LENGTH {
        return Err(Invalid(format!(
            "RayCronJob name should be no more than {MAX_RAYCRONJOB_NAME_LENGTH} characters"
        )));
    }
    schedule::parse(&cronjob.spec.schedule, cronjob.spec.time_zone.as_deref())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kuberay_crds::RayCronJobSpec;

    use super::*;

    fn cronjob(name: &str, schedule: &str) -> RayCronJob {
        RayCronJob {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: RayCronJobSpec {
                schedule: schedule.into(),
                ..RayCronJobSpec::default()
            },
            status: None,
        }
    }

    #[test]
    fn names_leave_room_for_the_tick_suffix() {
        assert!(validate(&cronjob(&"a".repeat(36), "* * * * *")).is_ok());
        let long = validate(&cronjob(&"a".repeat(37), "* * * * *"));
        assert_eq!(
            long.err(),
            Some(Invalid(
                "RayCronJob name should be no more than 36 characters".into()
            ))
        );
    }

    #[test]
    fn the_schedule_must_parse() {
        assert!(validate(&cronjob("c", "every minute")).is_err());
    }
}
