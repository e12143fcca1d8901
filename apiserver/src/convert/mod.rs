//! Conversions between the API's messages ([`crate::api`]) and the Kubernetes objects that store them:
//! `ray.io/v1` RayClusters, RayJobs and RayServices, ConfigMaps (compute templates) and Events. Pure
//! functions, no I/O. The forward direction builds exactly what KubeRay's apiserver builds; the reverse one
//! leaves out what KubeRay (or the operator) adds by itself, so that a message read back equals the one
//! that was sent.

pub(crate) mod cluster;
pub(crate) mod compute_template;
pub(crate) mod env;
pub(crate) mod events;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod job;
pub(crate) mod labels;
pub(crate) mod pod_template;
pub(crate) mod service;
pub(crate) mod volumes;

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff};

use crate::api;

/// The compute templates a cluster spec refers to, by name, read before anything is created.
pub(crate) type Templates = BTreeMap<String, api::ComputeTemplate>;

/// A protobuf timestamp with whole seconds, as KubeRay sends them.
pub(crate) fn timestamp(time: &jiff::Timestamp) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: time.as_second(),
        nanos: 0,
    }
}

pub(crate) fn time(time: Option<&Time>) -> Option<prost_types::Timestamp> {
    time.map(|t| timestamp(&t.0))
}

/// A protobuf map in key order, or `None` when it is empty (Kubernetes omits empty maps).
pub(crate) fn sorted(map: &HashMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!map.is_empty()).then(|| map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// A Kubernetes map as a protobuf map (empty when absent).
pub(crate) fn unsorted(map: Option<&BTreeMap<String, String>>) -> HashMap<String, String> {
    map.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// `None` for an empty string, as Go's `omitempty` leaves it out.
pub(crate) fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// `None` for an empty list.
pub(crate) fn non_empty_vec<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

/// Go's `time.Time.String()` of a UTC time (`2024-05-01 10:20:30.123456789 +0000 UTC`), the format of
/// KubeRay's timestamp annotations.
pub(crate) fn go_time_string(now: jiff::Timestamp) -> String {
    now.strftime("%Y-%m-%d %H:%M:%S%.f +0000 UTC").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_time_format() {
        let t: jiff::Timestamp = "2024-05-01T10:20:30.5Z".parse().unwrap_or_default();
        assert_eq!(go_time_string(t), "2024-05-01 10:20:30.5 +0000 UTC");
        let t: jiff::Timestamp = "2024-05-01T10:20:30Z".parse().unwrap_or_default();
        assert_eq!(go_time_string(t), "2024-05-01 10:20:30 +0000 UTC");
    }
}
