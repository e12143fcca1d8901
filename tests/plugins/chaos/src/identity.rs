//! Behaviours that try to take over, or reach through, objects the Chaos object does not own:
//!
//! - `adopt`: applies a ConfigMap over the existing one `spec.target` names;
//! - `foreign-owner`: applies `<name>-owned` with an owner reference (not a controller one, with
//!   `blockOwnerDeletion`) to the ConfigMap `spec.target` with uid `spec.uid`;
//! - `foreign-finalizer`: applies `<name>-stuck` carrying the finalizer `spec.target`;
//! - `add-finalizer`: adds the finalizer `spec.target` to its own object (it declares none);
//! - `bad-name`: passes `spec.target` as an object name (or, for `list`, a label selector) to the host call
//!   `spec.call`: `get`, `delete`, `apply`, `list`, `event` or `ray`.

use kuberay_plugin_sdk::{
    Event, Host, HostError, PortRole, RayRequest, RayTarget,
    serde_json::{Value, json},
};

use crate::{config_maps, str_at};

fn config_map(name: &str, metadata: Value) -> Value {
    let mut metadata = metadata;
    metadata["name"] = json!(name);
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"taken": "by chaos"}})
}

/// Runs a behaviour of this module; `None` when `behaviour` is not one of them.
pub fn run(host: &impl Host, object: &Value, behaviour: &str) -> Option<Result<(), HostError>> {
    let name = str_at(object, "/metadata/name");
    let target = str_at(object, "/spec/target");
    let result = match behaviour {
        "adopt" => host.apply(&config_map(target, json!({}))).map(drop),
        "foreign-owner" => {
            let reference = json!({
                "apiVersion": "v1", "kind": "ConfigMap", "name": target, "uid": str_at(object, "/spec/uid"),
                "blockOwnerDeletion": true,
            });
            let metadata = json!({"ownerReferences": [reference]});
            host.apply(&config_map(&format!("{name}-owned"), metadata))
                .map(drop)
        }
        "foreign-finalizer" => {
            let metadata = json!({"finalizers": [target]});
            host.apply(&config_map(&format!("{name}-stuck"), metadata))
                .map(drop)
        }
        "add-finalizer" => host.add_finalizer(target),
        "bad-name" => bad_name(host, str_at(object, "/spec/call"), target),
        _ => return None,
    };
    Some(result)
}

fn bad_name(host: &impl Host, call: &str, target: &str) -> Result<(), HostError> {
    match call {
        "get" => host.get(&config_maps(), target).map(drop),
        "delete" => host.delete(&config_maps(), target, None),
        "apply" => host.apply(&config_map(target, json!({}))).map(drop),
        "list" => host.list(&config_maps(), target).map(drop),
        "event" => host
            .record_event(&Event::normal("Chaos", "Test", "about a bad name").about(config_maps(), target)),
        "ray" => host
            .ray(&RayRequest {
                cluster: target.into(),
                role: PortRole::Dashboard,
                target: RayTarget::Cluster,
                method: "GET".into(),
                path: "/api/version".into(),
                headers: vec![],
                body: vec![],
            })
            .map(drop),
        other => Err(HostError::Invalid(format!("unknown call {other:?}"))),
    }
}
