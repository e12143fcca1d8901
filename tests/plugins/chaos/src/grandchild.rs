//! `label-head`: labels the head Pod of its RayCluster, as KubeRay's RayService sets `ray.io/serve` on the
//! head Pods of the RayClusters it owns. It applies the RayCluster `<name>-ray` from `spec.cluster`, reads
//! its head Pod's name from `status.head.podName` (or takes the Pod `spec.target` names, which it may not
//! reach), and applies `{Pod, metadata: {name, labels: spec.labels}}` with `spec.object` merged in (its
//! top-level fields, and its `metadata` fields into the metadata: what a label-only apply may not carry).
//! Reports `status.observed: labelled <pod>`.

use std::time::Duration;

use kuberay_plugin_sdk::{
    Host, Outcome, ReconcileError,
    serde_json::{Value, json},
};

use crate::{ray_clusters, str_at};

/// Runs `label-head` for the Chaos object `object` named `name`.
pub fn label_head(host: &impl Host, object: &Value, name: &str) -> Result<Outcome, ReconcileError> {
    let cluster = format!("{name}-ray");
    host.apply(&json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": cluster},
        "spec": object.pointer("/spec/cluster").cloned().unwrap_or(json!({})),
    }))?;
    let pod = match str_at(object, "/spec/target") {
        "" => host
            .get(&ray_clusters(), &cluster)?
            .as_ref()
            .map(|c| str_at(c, "/status/head/podName").to_string())
            .unwrap_or_default(),
        target => target.to_string(),
    };
    if pod.is_empty() {
        host.apply_status(&json!({"observed": "waiting for the head Pod"}))?;
        return Ok(Outcome::requeue_after(Duration::from_secs(1)));
    }
    let labels = object.pointer("/spec/labels").cloned().unwrap_or(json!({}));
    let mut intent = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "labels": labels}});
    if let Some(extra) = object.pointer("/spec/object").and_then(Value::as_object) {
        for (field, value) in extra {
            match (field.as_str(), value.as_object()) {
                ("metadata", Some(metadata)) => {
                    for (key, value) in metadata {
                        intent["metadata"][key] = value.clone();
                    }
                }
                _ => intent[field] = value.clone(),
            }
        }
    }
    host.apply(&intent)?;
    host.apply_status(&json!({"observed": format!("labelled {pod}")}))?;
    Ok(Outcome::done())
}
