//! Status conditions with `meta.SetStatusCondition`'s semantics: the transition time changes only when
//! the status does, so an unchanged cluster keeps an unchanged status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

/// Sets a condition; a new condition is appended, keeping the order in which they first appeared.
/// `status` is `True`, `False` or `Unknown`.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &Time,
) {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            if existing.status != status {
                existing.status = status.into();
                existing.last_transition_time = now.clone();
            }
            existing.reason = reason.into();
            existing.message = message.into();
        }
        None => conditions.push(Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }),
    }
}

pub fn remove(conditions: &mut Vec<Condition>, type_: &str) {
    conditions.retain(|c| c.type_ != type_);
}
