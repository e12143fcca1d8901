//! Where a request to a Ray head goes. This crate, never the plugin or user asking, decides:
//!
//! - directly: the cluster is `http://<head-svc>.<ns>.svc.<domain>:<port>` (the port the head Service names
//!   after the role) and the head Pod is `http://<podIP>:<port>`. Service names are resolved to the Service's
//!   ready endpoints through the Kubernetes API, the way cluster DNS resolves a headless Service, so direct
//!   mode works wherever the caller can reach Pod addresses, in a cluster or next to one;
//! - through the API server (`--use-kubernetes-proxy`): `/api/v1/namespaces/<ns>/services/<head-svc>:<port
//!   name>/proxy<path>` and `/api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy<path>`, with the credentials of
//!   the client the caller hands in (the operator's own, or a user's), for callers that cannot reach Pods.

use std::net::SocketAddr;

use kuberay_plugin_sdk::{HostError, Kind, PortRole, RayTarget};
use serde_json::Value;

use crate::{
    ObjectLookup,
    identity::{Failure, controlled_by, require_controlled},
};

/// How Ray heads are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutingMode {
    /// Straight to the head Service's endpoints or the head Pod's address; `cluster_domain` is the cluster's
    /// DNS domain (`cluster.local`), which names the head Service in the `Host` header.
    Direct { cluster_domain: String },
    /// Only through the API server's `services/proxy` and `pods/proxy` subresources.
    KubernetesProxy,
}

/// A resolved destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// `authority` is what the URL names (and the Host header carries); `addrs` are where it resolves.
    Direct {
        authority: String,
        addrs: Vec<SocketAddr>,
        kind: &'static str,
    },
    /// An API server path (without the Ray path).
    Proxy { prefix: String, kind: &'static str },
}

impl Route {
    /// A label for metrics: `direct-service`, `direct-pod`, `proxy-service` or `proxy-pod`.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Self::Direct { kind, .. } | Self::Proxy { kind, .. } => kind,
        }
    }
}

fn role_port_name(role: PortRole) -> &'static str {
    match role {
        PortRole::Dashboard => "dashboard",
        PortRole::Serve => "serve",
        PortRole::DashboardAgent => "dashboard-agent",
    }
}

/// KubeRay's default port of each role, used when the head container does not name one.
fn default_port(role: PortRole) -> u16 {
    match role {
        PortRole::Dashboard => 8265,
        PortRole::Serve => 8000,
        PortRole::DashboardAgent => 52365,
    }
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn unavailable(message: String) -> HostError {
    HostError::Unavailable(message)
}

/// The head Service of a RayCluster as KubeRay names it (`kuberay_rules::names`, the rule the plugins
/// follow): `spec.headGroupSpec.headService.metadata.name` if set and not empty, else `<cluster>-head-svc`. The status is not consulted (it names the same Service for every cluster KubeRay or
/// our plugin builds); whatever the name, [`RayHeads::send`](crate::RayHeads::send) only uses a Service the
/// cluster controls.
pub fn head_service_name(cluster: &Value) -> String {
    kuberay_rules::names::head_service_name_of_json(cluster)
}

/// The cluster's head Service, if it exists: refused unless the cluster controls it and it selects the
/// cluster's own Pods (`ray.io/cluster=<cluster>`, as KubeRay's selector does).
async fn head_service(
    lookup: &impl ObjectLookup,
    namespace: &str,
    cluster: &Value,
) -> Result<(String, Value), Failure> {
    let cluster_name = str_at(cluster, "/metadata/name").unwrap_or_default();
    let service_name = head_service_name(cluster);
    let service = lookup
        .get(&Kind::new("", "v1", "Service"), namespace, &service_name)
        .await?
        .ok_or_else(|| {
            unavailable(format!(
                "RayCluster {cluster_name} has no head Service {service_name} yet"
            ))
        })?;
    require_controlled(&service, cluster, "Service")?;
    if str_at(&service, "/spec/selector/ray.io~1cluster") != Some(cluster_name) {
        return Err(Failure::Refused(format!(
            "head Service {service_name} does not select the Pods of RayCluster {cluster_name}"
        )));
    }
    Ok((service_name, service))
}

pub(crate) async fn resolve(
    lookup: &impl ObjectLookup,
    mode: &RoutingMode,
    namespace: &str,
    cluster: &Value,
    role: PortRole,
    target: RayTarget,
) -> Result<Route, Failure> {
    match target {
        RayTarget::Cluster => {
            let (service_name, service) = head_service(lookup, namespace, cluster).await?;
            let port_name = role_port_name(role);
            let port = service
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|p| p["name"] == port_name)
                .ok_or_else(|| {
                    unavailable(format!(
                        "head Service {service_name} has no port named {port_name}"
                    ))
                })?;
            match mode {
                RoutingMode::KubernetesProxy => Ok(Route::Proxy {
                    prefix: format!(
                        "/api/v1/namespaces/{namespace}/services/{service_name}:{port_name}/proxy"
                    ),
                    kind: "proxy-service",
                }),
                RoutingMode::Direct { cluster_domain } => {
                    let service_port = port.get("port").and_then(Value::as_u64).unwrap_or(0);
                    let addrs = super::endpoints::resolve(lookup, namespace, &service, port_name).await?;
                    Ok(Route::Direct {
                        authority: format!("{service_name}.{namespace}.svc.{cluster_domain}:{service_port}"),
                        addrs,
                        kind: "direct-service",
                    })
                }
            }
        }
        RayTarget::HeadPod => {
            let pod = head_pod(lookup, namespace, cluster).await?;
            let pod_name = str_at(&pod, "/metadata/name").unwrap_or_default().to_string();
            let port = pod
                .pointer("/spec/containers/0/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|p| p["name"] == role_port_name(role))
                .and_then(|p| p.get("containerPort").and_then(Value::as_u64))
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or_else(|| default_port(role));
            match mode {
                RoutingMode::KubernetesProxy => Ok(Route::Proxy {
                    prefix: format!("/api/v1/namespaces/{namespace}/pods/{pod_name}:{port}/proxy"),
                    kind: "proxy-pod",
                }),
                RoutingMode::Direct { .. } => {
                    let ip = str_at(&pod, "/status/podIP")
                        .ok_or_else(|| unavailable(format!("head Pod {pod_name} has no address yet")))?;
                    let addr: SocketAddr = format!("{ip}:{port}").parse().map_err(|_| {
                        unavailable(format!("head Pod {pod_name} has an unusable address {ip}"))
                    })?;
                    Ok(Route::Direct {
                        authority: addr.to_string(),
                        addrs: vec![addr],
                        kind: "direct-pod",
                    })
                }
            }
        }
    }
}

/// The head Pod: the one the status names, else the Pod labelled as the head; either way one the cluster
/// controls (a status naming another Pod is refused; labelled Pods it does not control are passed over).
async fn head_pod(lookup: &impl ObjectLookup, namespace: &str, cluster: &Value) -> Result<Value, Failure> {
    let pods = Kind::new("", "v1", "Pod");
    if let Some(name) = str_at(cluster, "/status/head/podName")
        && let Some(pod) = lookup.get(&pods, namespace, name).await?
    {
        require_controlled(&pod, cluster, "Pod")?;
        return Ok(pod);
    }
    let cluster_name = str_at(cluster, "/metadata/name").unwrap_or_default();
    let selector = format!("ray.io/cluster={cluster_name},ray.io/node-type=head");
    lookup
        .list(&pods, namespace, &selector)
        .await?
        .into_iter()
        .find(|p| p.pointer("/metadata/deletionTimestamp").is_none() && controlled_by(p, cluster))
        .ok_or_else(|| {
            Failure::Host(unavailable(format!(
                "RayCluster {cluster_name} has no head Pod yet"
            )))
        })
}
