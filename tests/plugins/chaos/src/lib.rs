//! A plugin that misbehaves on request, to prove the host contains it. It reconciles
//! `testing.kuberay-wasm.io/v1` `Chaos` objects; `spec.behaviour` picks what it does:
//!
//! - `ok`: applies a ConfigMap `<name>-ok` and reports `status.observed`;
//! - `loop`: spins forever;
//! - `trap`: panics (a trap);
//! - `oom`: allocates until it hits the memory limit;
//! - `other-namespace`: creates a ConfigMap in the namespace named by `spec.target`;
//! - `delete-unowned`: deletes the ConfigMap named by `spec.target`, which it does not own;
//! - `secret`: reads the Secret named by `spec.target` (Secrets are withheld unless the operator allows it);
//! - `ungranted`: lists ServiceAccounts, a kind it never asked for;
//! - `garbage`: hands the host a create call that is not JSON;
//! - `print`: writes lines to stdout and stderr;
//! - `requeue-max`: succeeds but asks to be requeued after the longest duration there is;
//! - `create` / `apply`: creates or applies `spec.object` as given (the user's request: what the user asked
//!   for), or the object whose JSON text is `spec.forged` (what the plugin invents: the text is a string in the
//!   user's spec, not a request for any of its settings): a privileged Pod, a hostPath volume, a Secret volume,
//!   a RayCluster naming someone's token Secret, a NodePort Service selecting another cluster's head, ...;
//! - `create-quietly`: creates the same way and ignores a refusal, then reports `status.observed: done`;
//! - `ray`: applies the RayCluster `<name>-ray` from `spec.cluster` (a RayCluster spec) unless `spec.target`
//!   names another cluster, then sends `GET spec.path` (default `/api/gcs_healthz`) to its head (`spec.role`:
//!   `dashboard` (default), `serve` or `dashboard-agent`; `spec.via`: `cluster` (default) or `head-pod`) and
//!   reports the answer's status code and body in `status.status` and `status.observed` (`spec.method` and
//!   `spec.body` change the request: `POST` a job submission to a head; `spec.headers` adds headers);
//! - floods of host calls, oversized inputs and forged log lines: see [`flood`];
//! - `adopt`, `foreign-owner`, `foreign-finalizer`, `add-finalizer`, `bad-name`: see [`identity`];
//! - `label-head`: labels its RayCluster's head Pod (a grandchild, as a RayService does): see [`grandchild`].
//!
//! Built with the feature `greedy`, its metadata also asks for `list` and `delete` on Pods (a reload that
//! asks for more); with `reconcile-secrets`, it calls itself `chaos-secrets` and asks to reconcile `v1/Secret`.

mod flood;
mod grandchild;
mod identity;

use kuberay_plugin_sdk::{
    Capability, Host, HostError, Kind, Outcome, Plugin, PluginMetadata, PortRole, RayRequest, RayTarget,
    ReconcileError, Request, Verb,
    serde_json::{self, Value, json},
};

pub struct Chaos;

fn config_maps() -> Kind {
    Kind::new("", "v1", "ConfigMap")
}

fn ray_clusters() -> Kind {
    Kind::new("ray.io", "v1", "RayCluster")
}

fn chaos_kind() -> Kind {
    Kind::new("testing.kuberay-wasm.io", "v1", "Chaos")
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The Pod verbs it asks for (more when built `greedy`).
fn pod_verbs() -> &'static [Verb] {
    if cfg!(feature = "greedy") {
        &[Verb::Create, Verb::Apply, Verb::List, Verb::Delete]
    } else {
        &[Verb::Create, Verb::Apply]
    }
}

impl Plugin for Chaos {
    fn metadata() -> PluginMetadata {
        let (name, reconciles) = if cfg!(feature = "reconcile-secrets") {
            ("chaos-secrets", Kind::new("", "v1", "Secret"))
        } else {
            ("chaos", chaos_kind())
        };
        PluginMetadata {
            name: name.into(),
            version: "0.1.0".into(),
            reconciles,
            owns: vec![config_maps(), ray_clusters()],
            capabilities: vec![
                // Apply: objects of its own kind (a custom resource that embeds a pod template).
                Capability::new(
                    chaos_kind(),
                    &[
                        Verb::Get,
                        Verb::Apply,
                        Verb::ApplyStatus,
                        Verb::RecordEvent,
                        Verb::Finalize,
                    ],
                ),
                Capability::new(
                    config_maps(),
                    &[Verb::Get, Verb::List, Verb::Create, Verb::Apply, Verb::Delete],
                ),
                Capability::new(Kind::new("", "v1", "Secret"), &[Verb::Get, Verb::Create]),
                Capability::new(ray_clusters(), &[Verb::Get, Verb::Apply]),
                Capability::new(Kind::new("", "v1", "Pod"), pod_verbs()),
                Capability::new(Kind::new("", "v1", "Service"), &[Verb::Apply]),
                Capability::new(
                    Kind::new("rbac.authorization.k8s.io", "v1", "RoleBinding"),
                    &[Verb::Apply],
                ),
                // What a third-party plugin might be granted, to try the side doors with (provenance tests).
                Capability::new(
                    Kind::new("rbac.authorization.k8s.io", "v1", "Role"),
                    &[Verb::Apply],
                ),
                Capability::new(Kind::new("networking.k8s.io", "v1", "Ingress"), &[Verb::Apply]),
                Capability::new(
                    Kind::new("networking.k8s.io", "v1", "NetworkPolicy"),
                    &[Verb::Apply],
                ),
                Capability::new(Kind::new("ray.io", "v1", "RayJob"), &[Verb::Create]),
                Capability::new(
                    Kind::new("discovery.k8s.io", "v1", "EndpointSlice"),
                    &[Verb::Create],
                ),
            ],
            finalizer: None,
            uses_ray_head: true,
        }
    }

    fn reconcile(host: &impl Host, request: Request) -> Result<Outcome, ReconcileError> {
        let object = &request
            .object
            .into_value()
            .map_err(|e| ReconcileError::InvalidObject(e.to_string()))?;
        let name = str_at(object, "/metadata/name");
        let target = str_at(object, "/spec/target");
        if let Some(result) = identity::run(host, object, str_at(object, "/spec/behaviour")) {
            result?;
            host.apply_status(&json!({"observed": "done"}))?;
            return Ok(Outcome::done());
        }
        match str_at(object, "/spec/behaviour") {
            "ok" => {
                let config_map = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("{name}-ok")},
                    "data": {"owner": name},
                });
                host.apply(&config_map)?;
                host.apply_status(&json!({"observed": "ok"}))?;
                Ok(Outcome::done())
            }
            "loop" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            "trap" => panic!("chaos plugin asked to trap"),
            "oom" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 8 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "other-namespace" => {
                let escape = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("{name}-escape"), "namespace": target},
                });
                host.create(&escape)?;
                Ok(Outcome::done())
            }
            "delete-unowned" => {
                host.delete(&config_maps(), target, None)?;
                Ok(Outcome::done())
            }
            "secret" => {
                host.get(&Kind::new("", "v1", "Secret"), target)?;
                Ok(Outcome::done())
            }
            "ungranted" => {
                host.list(&Kind::new("", "v1", "ServiceAccount"), "")?;
                Ok(Outcome::done())
            }
            "garbage" => Err(garbage().into()),
            "print" => {
                println!("chaos says hello on stdout");
                eprintln!("chaos says hello on stderr");
                Ok(Outcome::done())
            }
            "ray" => ray(host, object, name),
            "label-head" => grandchild::label_head(host, object, name),
            "create" => {
                host.create(&target_object(object)?)?;
                host.apply_status(&json!({"observed": "done"}))?;
                Ok(Outcome::done())
            }
            "apply" => {
                host.apply(&target_object(object)?)?;
                host.apply_status(&json!({"observed": "done"}))?;
                Ok(Outcome::done())
            }
            "create-quietly" => {
                // A refusal ignored: the host reports it anyway.
                let _ = host.create(&target_object(object)?);
                host.apply_status(&json!({"observed": "done"}))?;
                Ok(Outcome::done())
            }
            "requeue-max" => {
                host.apply_status(&json!({"observed": "requeue-max"}))?;
                Ok(Outcome::requeue_after(std::time::Duration::MAX))
            }
            other if flood::handles(other) => flood::run(host, other, object),
            other => Err(ReconcileError::InvalidObject(format!(
                "unknown behaviour {other:?}"
            ))),
        }
    }
}

/// The object to write: `spec.object` (the user's) or the JSON text of `spec.forged` (the plugin's own).
fn target_object(object: &Value) -> Result<Value, ReconcileError> {
    match object.pointer("/spec/forged").and_then(Value::as_str) {
        Some(text) => serde_json::from_str(text).map_err(|e| ReconcileError::InvalidObject(e.to_string())),
        None => Ok(object.pointer("/spec/object").cloned().unwrap_or(Value::Null)),
    }
}

fn ray(host: &impl Host, object: &Value, name: &str) -> Result<Outcome, ReconcileError> {
    let cluster = match str_at(object, "/spec/target") {
        "" => {
            let cluster = json!({
                "apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": {"name": format!("{name}-ray")},
                "spec": object.pointer("/spec/cluster").cloned().unwrap_or(json!({})),
            });
            host.apply(&cluster)?;
            format!("{name}-ray")
        }
        target => target.to_string(),
    };
    let path = match str_at(object, "/spec/path") {
        "" => "/api/gcs_healthz",
        path => path,
    };
    let role = match str_at(object, "/spec/role") {
        "serve" => PortRole::Serve,
        "dashboard-agent" => PortRole::DashboardAgent,
        _ => PortRole::Dashboard,
    };
    let target = if str_at(object, "/spec/via") == "head-pod" {
        RayTarget::HeadPod
    } else {
        RayTarget::Cluster
    };
    let method = match str_at(object, "/spec/method") {
        "" => "GET",
        method => method,
    };
    let mut headers: Vec<(String, String)> = match str_at(object, "/spec/body") {
        "" => vec![],
        _ => vec![("Content-Type".into(), "application/json".into())],
    };
    if let Some(extra) = object.pointer("/spec/headers").and_then(Value::as_object) {
        headers.extend(
            extra
                .iter()
                .map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_string())),
        );
    }
    let request = RayRequest {
        cluster,
        role,
        target,
        method: method.into(),
        path: path.into(),
        headers,
        body: str_at(object, "/spec/body").as_bytes().to_vec(),
    };
    let response = host.ray(&request)?;
    host.apply_status(&json!({
        "observed": String::from_utf8_lossy(&response.body).trim(),
        "status": response.status,
    }))?;
    Ok(Outcome::requeue_after(std::time::Duration::from_secs(5)))
}

/// Calls the host's create import with text that is not JSON, bypassing the SDK's typed API.
#[cfg(target_arch = "wasm32")]
fn garbage() -> HostError {
    use kuberay_plugin_sdk::guest::kuberay::plugin::kubernetes;
    match kubernetes::create("{ this is not json") {
        Ok(_) => HostError::Internal("the host accepted garbage".into()),
        Err(e) => HostError::Invalid(format!("{e:?}")),
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn garbage() -> HostError {
    HostError::Invalid("garbage is only sent from WebAssembly".into())
}

kuberay_plugin_sdk::export_plugin!(Chaos);
