//! Hashes of a RayCluster spec that KubeRay stores on objects and compares later, so they must be the
//! same for the same spec whichever operator computed them:
//!
//! - [`recreate_hash`]: `ray.io/upgrade-strategy-recreate-hash` on Pods of a cluster with
//!   `upgradeStrategy.type: Recreate`;
//! - [`without_replicas_and_workers_to_delete`]: `ray.io/hash-without-replicas-and-workers-to-delete` on
//!   the RayClusters a RayService creates, which decides whether a RayService change needs a new cluster.
//!
//! Both are SHA-1 in base32hex of a JSON rendering of the spec.

use kuberay_crds::RayClusterSpec;
use serde_json::Value;

/// The hash of the spec without the fields that must not trigger a re-creation.
pub fn recreate_hash(spec: &RayClusterSpec) -> String {
    let mut spec = spec.clone();
    spec.upgrade_strategy = None;
    if let Some(pod) = spec.head_group_spec.template.spec.as_mut() {
        pod.tolerations = None;
        pod.scheduling_gates = None;
    }
    for group in spec.worker_group_specs.iter_mut().flatten() {
        group.replicas = None;
        group.min_replicas = None;
        group.max_replicas = None;
        // `workersToDelete` is all a scale strategy holds.
        group.scale_strategy = None;
        if let Some(pod) = group.template.spec.as_mut() {
            pod.tolerations = None;
            pod.scheduling_gates = None;
        }
    }
    hash_of(&spec)
}

/// JSON with object keys sorted at every level, so equal specs always hash equally.
fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*key).clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(*key) {
                    canonical_json(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// RFC 4648 base32 with the extended-hex alphabet, padded, as Go's `base32.HexEncoding`.
fn base32hex(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHIJKLMNOPQRSTUV";
    let mut out = String::new();
    for chunk in bytes.chunks(5) {
        let mut buffer = [0u8; 5];
        buffer[..chunk.len()].copy_from_slice(chunk);
        let bits = buffer.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
        let symbols = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < symbols {
                let index = usize::try_from((bits >> (35 - 5 * i)) & 31).unwrap_or(0);
                out.push(char::from(ALPHABET[index]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The hash of a RayService's cluster spec without the fields the autoscaler changes (`replicas`,
/// `min/maxReplicas`, `workersToDelete`).
pub fn without_replicas_and_workers_to_delete(spec: &RayClusterSpec) -> String {
    let mut spec = spec.clone();
    for group in spec.worker_group_specs.iter_mut().flatten() {
        group.replicas = None;
        group.min_replicas = None;
        group.max_replicas = None;
        group.scale_strategy = None;
    }
    hash_of(&spec)
}

fn hash_of(spec: &RayClusterSpec) -> String {
    let mut text = String::new();
    canonical_json(&serde_json::to_value(spec).unwrap_or(Value::Null), &mut text);
    base32hex(&sha1_smol::Sha1::from(text.as_bytes()).digest().bytes())
}

#[cfg(test)]
mod tests {
    use kuberay_crds::{RayClusterUpgradeStrategy, RayClusterUpgradeType, ScaleStrategy, WorkerGroupSpec};

    use super::*;

    #[test]
    fn base32hex_matches_the_rfc_vectors() {
        assert_eq!(base32hex(b"f"), "CO======");
        assert_eq!(base32hex(b"foobar"), "CPNMUOJ1E8======");
        assert_eq!(base32hex(&[0u8; 20]).len(), 32);
    }

    #[test]
    fn replicas_and_workers_to_delete_do_not_change_the_hash() {
        let mut spec = RayClusterSpec {
            worker_group_specs: Some(vec![WorkerGroupSpec {
                group_name: "g".into(),
                replicas: Some(1),
                ..WorkerGroupSpec::default()
            }]),
            ..RayClusterSpec::default()
        };
        let before = recreate_hash(&spec);
        if let Some(group) = spec.worker_group_specs.as_mut().and_then(|g| g.first_mut()) {
            group.replicas = Some(5);
            group.max_replicas = Some(9);
            group.scale_strategy = Some(ScaleStrategy {
                workers_to_delete: Some(vec!["p".into()]),
            });
        }
        spec.upgrade_strategy = Some(RayClusterUpgradeStrategy {
            type_: Some(RayClusterUpgradeType::Recreate),
        });
        assert_eq!(recreate_hash(&spec), before);
        spec.ray_version = Some("2.9.0".into());
        assert_ne!(recreate_hash(&spec), before);
    }
}
