//! A container's environment as a kubelet and container runtime build it: the image's `ENV` (a default `PATH`
//! otherwise), `HOSTNAME`, the `kubernetes` Service variables, then `envFrom` and `env` (literal values with
//! `$(VAR)` references, `fieldRef`, `configMapKeyRef` and `secretKeyRef`).

use std::{collections::BTreeMap, net::SocketAddr};

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret};
use kube::{Api, Client, ResourceExt};

/// The image's default search path (distroless and Debian images use this one).
pub(crate) const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The environment of `container`; `image_env` is the image's `ENV`, `api` is where the `kubernetes` Service
/// is reachable from the Pod.
pub async fn build(
    client: &Client,
    pod: &Pod,
    container: &Container,
    image_env: &BTreeMap<String, String>,
    pod_ip: Option<std::net::Ipv4Addr>,
    api: Option<SocketAddr>,
) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), DEFAULT_PATH.into()),
        ("HOSTNAME".into(), pod.name_any()),
        ("HOME".into(), "/".into()),
    ];
    for (k, v) in image_env {
        set(&mut env, k.clone(), v.clone());
    }
    if let Some(api) = api {
        env.extend(service_variables(api));
    }
    let namespace = pod.namespace().unwrap_or_default();
    let mut cache = Sources::new(client.clone(), namespace);
    for from in container.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let data = if let Some(cm) = &from.config_map_ref {
            cache.config_map(&cm.name, cm.optional.unwrap_or(false)).await?
        } else if let Some(secret) = &from.secret_ref {
            cache
                .secret(&secret.name, secret.optional.unwrap_or(false))
                .await?
        } else {
            BTreeMap::new()
        };
        for (k, v) in data {
            set(&mut env, format!("{prefix}{k}"), v);
        }
    }
    for var in container.env.iter().flatten() {
        let value = match &var.value_from {
            None => expand(var.value.as_deref().unwrap_or_default(), &env),
            Some(from) => {
                if let Some(field) = &from.field_ref {
                    field_value(pod, &field.field_path, pod_ip)?
                } else if let Some(key) = &from.config_map_key_ref {
                    let data = cache.config_map(&key.name, key.optional.unwrap_or(false)).await?;
                    match data.get(&key.key) {
                        Some(v) => v.clone(),
                        None if key.optional.unwrap_or(false) => continue,
                        None => return Err(format!("key {} not found in configmap {}", key.key, key.name)),
                    }
                } else if let Some(key) = &from.secret_key_ref {
                    let data = cache.secret(&key.name, key.optional.unwrap_or(false)).await?;
                    match data.get(&key.key) {
                        Some(v) => v.clone(),
                        None if key.optional.unwrap_or(false) => continue,
                        None => return Err(format!("key {} not found in secret {}", key.key, key.name)),
                    }
                } else {
                    return Err(format!(
                        "env {}: only fieldRef, configMapKeyRef and secretKeyRef are supported",
                        var.name
                    ));
                }
            }
        };
        set(&mut env, var.name.clone(), value);
    }
    Ok(env)
}

/// The variables a kubelet sets for the `kubernetes` Service (`KUBERNETES_SERVICE_HOST` and friends).
pub fn service_variables(api: SocketAddr) -> Vec<(String, String)> {
    let (host, port) = (api.ip().to_string(), api.port().to_string());
    let url = format!("tcp://{host}:{port}");
    let p = format!("KUBERNETES_PORT_{port}_TCP");
    vec![
        ("KUBERNETES_SERVICE_HOST".into(), host.clone()),
        ("KUBERNETES_SERVICE_PORT".into(), port.clone()),
        ("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.clone()),
        ("KUBERNETES_PORT".into(), url.clone()),
        (p.clone(), url),
        (format!("{p}_PROTO"), "tcp".into()),
        (format!("{p}_PORT"), port),
        (format!("{p}_ADDR"), host),
    ]
}

fn set(env: &mut Vec<(String, String)>, name: String, value: String) {
    env.retain(|(k, _)| *k != name);
    env.push((name, value));
}

/// `$(VAR)` replaced by an earlier variable's value; `$$` escapes; unknown references stay as written.
pub(crate) fn expand(value: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            out.push('$');
            rest = stripped;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => out.push_str(&format!("$({name})")),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The value of a downward-API field path.
pub fn field_value(pod: &Pod, path: &str, pod_ip: Option<std::net::Ipv4Addr>) -> Result<String, String> {
    let spec = pod.spec.as_ref();
    let status = pod.status.as_ref();
    let keyed = |prefix: &str, map: &BTreeMap<String, String>| {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        Some(map.get(key).cloned().unwrap_or_default())
    };
    let value = match path {
        "metadata.name" => Some(pod.name_any()),
        "metadata.namespace" => Some(pod.namespace().unwrap_or_default()),
        "metadata.uid" => Some(pod.uid().unwrap_or_default()),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" => pod_ip
            .map(|ip| ip.to_string())
            .or_else(|| status.and_then(|s| s.pod_ip.clone())),
        "status.hostIP" => status.and_then(|s| s.host_ip.clone()),
        p if p.starts_with("metadata.labels['") => keyed("metadata.labels['", pod.labels()),
        p if p.starts_with("metadata.annotations['") => keyed("metadata.annotations['", pod.annotations()),
        other => return Err(format!("field path {other:?} is not supported")),
    };
    Ok(value.unwrap_or_default())
}

/// ConfigMaps and Secrets read once per container start.
struct Sources {
    client: Client,
    namespace: String,
    read: BTreeMap<(bool, String), BTreeMap<String, String>>,
}

impl Sources {
    fn new(client: Client, namespace: String) -> Self {
        Self {
            client,
            namespace,
            read: BTreeMap::new(),
        }
    }

    async fn config_map(&mut self, name: &str, optional: bool) -> Result<BTreeMap<String, String>, String> {
        if let Some(data) = self.read.get(&(false, name.to_string())) {
            return Ok(data.clone());
        }
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let data = match api.get_opt(name).await {
            Ok(Some(cm)) => cm.data.unwrap_or_default(),
            Ok(None) if optional => BTreeMap::new(),
            Ok(None) => return Err(format!("configmap {name:?} not found")),
            Err(e) => return Err(format!("reading configmap {name:?}: {e}")),
        };
        self.read.insert((false, name.to_string()), data.clone());
        Ok(data)
    }

    async fn secret(&mut self, name: &str, optional: bool) -> Result<BTreeMap<String, String>, String> {
        if let Some(data) = self.read.get(&(true, name.to_string())) {
            return Ok(data.clone());
        }
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let data: BTreeMap<String, String> = match api.get_opt(name).await {
            Ok(Some(s)) => s
                .data
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                .collect(),
            Ok(None) if optional => BTreeMap::new(),
            Ok(None) => return Err(format!("secret {name:?} not found")),
            Err(e) => return Err(format!("reading secret {name:?}: {e}")),
        };
        self.read.insert((true, name.to_string()), data.clone());
        Ok(data)
    }
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn references_expand_like_a_kubelet() {
        let env = vec![("A".to_string(), "x".to_string())];
        assert_eq!(expand("$(A)-$(B)-$$(A)", &env), "x-$(B)-$(A)");
    }
}
