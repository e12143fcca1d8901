//! The RayService's status conditions, set the way Kubernetes' `meta.SetStatusCondition` does: the
//! transition time moves only when the status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kuberay_crds::RayServiceStatuses;
use kuberay_rules::time;

/// `True`, `False` or `Unknown`.
pub const TRUE: &str = "True";
pub const FALSE: &str = "False";
pub const UNKNOWN: &str = "Unknown";

/// The condition of `type_`, if set.
pub fn find<'a>(status: &'a RayServiceStatuses, type_: &str) -> Option<&'a Condition> {
    status.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of `type_` is `True`.
pub fn is_true(status: &RayServiceStatuses, type_: &str) -> bool {
    find(status, type_).is_some_and(|c| c.status == TRUE)
}

/// Sets a condition; `observedGeneration` is the status's, as KubeRay's `setCondition` does.
pub fn set(status: &mut RayServiceStatuses, type_: &str, value: &str, reason: &str, message: &str, now: i64) {
    let generation = status.observed_generation;
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let fresh = Condition {
        type_: type_.to_string(),
        status: value.to_string(),
        reason: reason.to_string(),
        message: message.to_string(),
        observed_generation: generation,
        last_transition_time: time::from_seconds(now),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            if existing.status != value {
                existing.last_transition_time = fresh.last_transition_time;
            }
            existing.status = fresh.status;
            existing.reason = fresh.reason;
            existing.message = fresh.message;
            existing.observed_generation = fresh.observed_generation;
        }
        None => conditions.push(fresh),
    }
}

/// Removes the condition of `type_`.
pub fn remove(status: &mut RayServiceStatuses, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let mut status = RayServiceStatuses::default();
        set(&mut status, "Ready", FALSE, "Initializing", "a", 10);
        set(&mut status, "Ready", FALSE, "Other", "b", 20);
        let ready = find(&status, "Ready").unwrap();
        assert_eq!(
            (time::seconds(&ready.last_transition_time), ready.reason.as_str()),
            (10, "Other")
        );
        set(&mut status, "Ready", TRUE, "Up", "c", 30);
        assert!(is_true(&status, "Ready"));
        let ready = find(&status, "Ready").unwrap();
        assert_eq!(time::seconds(&ready.last_transition_time), 30);
        remove(&mut status, "Ready");
        assert!(find(&status, "Ready").is_none());
    }
}
