//! A container's `/etc/resolv.conf`, written as a kubelet writes it from the Pod's `dnsPolicy` and `dnsConfig`.

use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::network::services::CLUSTER_DOMAIN;

/// The file's text, or `None` when the container keeps the host's (`dnsPolicy: Default`, or `ClusterFirst` on
/// a node without cluster DNS).
pub fn resolv_conf(pod: &Pod, cluster_dns: Option<Ipv4Addr>) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    let policy = spec.dns_policy.as_deref().unwrap_or("ClusterFirst");
    let (mut servers, mut searches, mut options): (Vec<String>, Vec<String>, Vec<String>) = match policy {
        "None" => (Vec::new(), Vec::new(), Vec::new()),
        "ClusterFirst" | "ClusterFirstWithHostNet" => {
            let ns = pod.namespace().unwrap_or_default();
            (
                vec![cluster_dns?.to_string()],
                vec![
                    format!("{ns}.svc.{CLUSTER_DOMAIN}"),
                    format!("svc.{CLUSTER_DOMAIN}"),
                    CLUSTER_DOMAIN.to_string(),
                ],
                vec!["ndots:5".to_string()],
            )
        }
        _ => return None,
    };
    if let Some(config) = &spec.dns_config {
        servers.extend(config.nameservers.iter().flatten().cloned());
        searches.extend(config.searches.iter().flatten().cloned());
        for option in config.options.iter().flatten() {
            let Some(name) = option.name.as_deref() else {
                continue;
            };
            // A Pod's option replaces the policy's option of the same name.
            options.retain(|o| o.split(':').next() != Some(name));
            options.push(match &option.value {
                Some(value) => format!("{name}:{value}"),
                None => name.to_string(),
            });
        }
    }
    servers.truncate(3);
    searches.dedup();
    let mut text = String::new();
    if !searches.is_empty() {
        text.push_str(&format!("search {}\n", searches.join(" ")));
    }
    for server in servers {
        text.push_str(&format!("nameserver {server}\n"));
    }
    if !options.is_empty() {
        text.push_str(&format!("options {}\n", options.join(" ")));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "team"}, "spec": spec}))
            .unwrap_or_default()
    }

    const DNS: Option<Ipv4Addr> = Some(Ipv4Addr::new(10, 240, 0, 1));

    #[test]
    fn cluster_first_names_the_cluster_dns_and_the_namespace_search_path() {
        let text = resolv_conf(&pod(json!({"containers": []})), DNS);
        assert_eq!(
            text.as_deref(),
            Some(
                "search team.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.240.0.1\n\
                 options ndots:5\n"
            )
        );
    }

    #[test]
    fn dns_config_adds_to_the_policy_and_none_takes_it_alone() {
        let config = json!({"nameservers": ["1.2.3.4"], "searches": ["example.org"],
                            "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]});
        let text = resolv_conf(&pod(json!({"containers": [], "dnsConfig": config})), DNS).unwrap_or_default();
        assert!(text.contains("cluster.local example.org\n"), "{text}");
        assert!(
            text.contains("nameserver 10.240.0.1\nnameserver 1.2.3.4\n"),
            "{text}"
        );
        assert!(text.ends_with("options ndots:2 edns0\n"), "{text}");
        let none = json!({"containers": [], "dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.2.3.4"]}});
        assert_eq!(
            resolv_conf(&pod(none), DNS).as_deref(),
            Some("nameserver 1.2.3.4\n")
        );
        let default = json!({"containers": [], "dnsPolicy": "Default"});
        assert_eq!(resolv_conf(&pod(default), DNS), None);
        assert_eq!(resolv_conf(&pod(json!({"containers": []})), None), None);
    }
}
