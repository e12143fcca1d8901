//! KubeRay's spec hashes, byte for byte. KubeRay stores them on objects and compares them later, so an
//! operator taking over from KubeRay must compute the same value for the same spec, or every object it
//! finds looks changed:
//!
//! - [`recreate_hash`]: `ray.io/upgrade-strategy-recreate-hash` on the head Pod, which the RayCluster
//!   reconciler compares for `upgradeStrategy.type: Recreate` (a different value deletes every Pod);
//! - [`rayservice_hash`]: `ray.io/hash-without-replicas-and-workers-to-delete` on the RayClusters a
//!   RayService creates (a different value prepares a new cluster).
//!
//! The rule (KubeRay v1.7.0, `GenerateHashWithoutReplicasAndWorkersToDelete`): take the `RayClusterSpec` as
//! decoded into KubeRay's Go types from the object the API server returned (CRD defaults applied); clear
//! `upgradeStrategy`, the `tolerations` and `schedulingGates` of every Pod template, and the `replicas`,
//! `minReplicas`, `maxReplicas` and `scaleStrategy.workersToDelete` of every worker group; `json.Marshal`
//! it; SHA-1; base32 with the extended-hex alphabet, padded (32 characters). The RayCluster reconciler first
//! gives every group without `rayStartParams` an empty map; a RayService clears `suspend` instead.
//!
//! Go's JSON is reproduced from a table of KubeRay's Go types ([`go_types`], generated from KubeRay's own
//! Go module by `make hash-table`): Go struct order, zero values for what the object leaves out,
//! `omitempty`/`omitzero`, sorted map keys, Go's string escaping, and the canonical forms of quantities
//! (`1000m` → `1`) and times (UTC, seconds). A test compares the result with KubeRay's own functions for
//! every sample manifest (`tests/kuberay-hash`).
//!
//! Caveats: the spec is read through `kuberay_crds` and k8s-openapi, so a field those types do not know
//! (a Pod field newer than the k8s-openapi version, a field our CRD prunes) is missing here while KubeRay,
//! built against newer Kubernetes types, may hash it; a pod template's `managedFields` are written with
//! sorted keys where Go keeps the document's order; k8s-openapi cannot tell whether a `headService` template
//! spelled out `apiVersion: v1` and `kind: Service`, so they are taken as absent, as they usually are.

mod go_types;
mod gojson;
mod gotime;
mod quantity;
mod table;

use kuberay_crds::RayClusterSpec;
use serde_json::{Map, Value};

/// `ray.io/upgrade-strategy-recreate-hash` of a RayCluster's spec, as KubeRay's RayCluster reconciler
/// computes it.
pub fn recreate_hash(spec: &RayClusterSpec) -> String {
    let mut value = to_value(spec);
    default_ray_start_params(&mut value);
    hash_value(value)
}

/// `ray.io/hash-without-replicas-and-workers-to-delete` of the RayCluster a RayService creates from its
/// `rayClusterConfig`, as KubeRay's RayService reconciler computes it (`suspend` does not count).
pub fn rayservice_hash(cluster_config: &RayClusterSpec) -> String {
    let mut value = to_value(cluster_config);
    if let Some(spec) = value.as_object_mut() {
        spec.remove("suspend");
    }
    hash_value(value)
}

/// What Go's `json.Marshal` writes for the Pod spec member `member` (`affinity`, `tolerations`,
/// `nodeSelector`, ...) given as the API server's JSON, from the same table of Go types as the hashes; `None`
/// if a Pod spec has no such member.
pub fn pod_spec_member_json(member: &str, value: &Value) -> Option<String> {
    let path = ["headGroupSpec", "template", "spec", member];
    let index = path.iter().try_fold(go_types::RAY_CLUSTER_SPEC, |index, name| {
        gojson::member(index, name)
    })?;
    Some(gojson::encode(index, value))
}

/// A JSON string as Go's encoder writes it (HTML-safe).
pub fn go_string(text: &str) -> String {
    let mut out = String::new();
    gojson::string(text, &mut out);
    out
}

fn to_value(spec: &RayClusterSpec) -> Value {
    // Serializing these types cannot fail (no maps with non-string keys); `null` would hash as the zero spec.
    let mut value = serde_json::to_value(spec).unwrap_or(Value::Null);
    // k8s-openapi always writes a Service's `apiVersion` and `kind`; a head Service template rarely has
    // them, and Go writes them only when the object has them.
    remove(
        value.pointer_mut("/headGroupSpec/headService"),
        &["apiVersion", "kind"],
    );
    value
}

/// The hash of a spec given as the API server's JSON.
fn hash_value(mut spec: Value) -> String {
    mute(&mut spec);
    let json = gojson::encode(go_types::RAY_CLUSTER_SPEC, &spec);
    base32hex(&sha1_smol::Sha1::from(json.as_bytes()).digest().bytes())
}

/// Clears what must not count as a change: what the autoscaler writes and what Kueue-like controllers
/// inject into Pod templates.
fn mute(spec: &mut Value) {
    const POD: &str = "/template/spec";
    if let Some(head) = spec.get_mut("headGroupSpec") {
        remove(head.pointer_mut(POD), &["tolerations", "schedulingGates"]);
    }
    for group in spec
        .get_mut("workerGroupSpecs")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        remove(Some(&mut *group), &["replicas", "minReplicas", "maxReplicas"]);
        remove(group.get_mut("scaleStrategy"), &["workersToDelete"]);
        remove(group.pointer_mut(POD), &["tolerations", "schedulingGates"]);
    }
    remove(Some(spec), &["upgradeStrategy"]);
}

fn remove(object: Option<&mut Value>, keys: &[&str]) {
    if let Some(object) = object.and_then(Value::as_object_mut) {
        for key in keys {
            object.remove(*key);
        }
    }
}

/// The RayCluster reconciler's defaulting before it hashes: a group without `rayStartParams` gets `{}`.
fn default_ray_start_params(spec: &mut Value) {
    default_params(spec.get_mut("headGroupSpec"));
    for group in spec
        .get_mut("workerGroupSpecs")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        default_params(Some(group));
    }
}

fn default_params(group: Option<&mut Value>) {
    if let Some(group) = group.and_then(Value::as_object_mut) {
        let params = group.entry("rayStartParams").or_insert(Value::Null);
        if params.is_null() {
            *params = Value::Object(Map::new());
        }
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

#[cfg(test)]
mod oracle_tests;
#[cfg(test)]
mod tests;
