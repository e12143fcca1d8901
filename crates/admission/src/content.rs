//! What a written object of a given kind may say beyond its references and Pod Security settings: Secret
//! types, Service types and selectors, RBAC bindings and rules, Ingress, Gateway and HTTPRoute routing, and
//! the `ray.io/cluster` label that ties Pods to a cluster's Services. [`check`] decides what the object alone
//! decides and returns the rest as [`Needs`], which `admission::judge` settles against the cluster (what the
//! reconciled object controls) and the user's request (`provenance`).

use std::collections::BTreeMap;

use kuberay_core::Kind;
use serde_json::Value;

use super::{each, pod_security, provenance::string_map, str_at, strings_at};
use crate::policy::file::{ContentRules, RoleRule};

/// The label that ties a Pod to its RayCluster (the head Service and the operator find Pods by it).
pub const CLUSTER_LABEL: &str = "ray.io/cluster";

/// KubeRay's own annotation domain: annotations a plugin writes there carry no controller configuration.
const KUBERAY_ANNOTATIONS: &str = "ray.io/";

/// What must still be verified of an object that passed [`check`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Objects the reconciled object must control (directly or through an object of a kind it owns), and
    /// what the written object does with each.
    pub owned: Vec<(Kind, String, &'static str)>,
    /// ServiceAccounts a RoleBinding binds: controlled, named by the user's request, or granted.
    pub bound_accounts: Vec<String>,
    /// Values the user's request must hold (`what`, value): hosts, class names, Service types.
    pub said: Vec<(&'static str, String)>,
    /// Annotations the user's request must carry.
    pub annotations: Vec<(String, String)>,
    /// A Service's selector: it must pick Pods of a RayCluster of the reconciled object, or be the user's.
    pub selector: Option<BTreeMap<String, String>>,
    /// `ray.io/cluster` values on Pods and pod templates: the reconciled cluster, one it controls, or one the
    /// user's request names.
    pub cluster_labels: Vec<String>,
}

impl Needs {
    /// Whether nothing is left to verify.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

type Checked = Result<(), String>;

fn kind(group: &str, kind: &str) -> Kind {
    Kind::new(group, "v1", kind)
}

/// Checks `object` (of `kind`, to be written in `namespace`) against `rules`; returns what is left to verify.
pub fn check(kind: &Kind, object: &Value, rules: &ContentRules, namespace: &str) -> Result<Needs, String> {
    let mut needs = Needs::default();
    cluster_labels(object, &mut needs);
    match (kind.group.as_str(), kind.kind.as_str()) {
        ("", "Secret") if str_at(object, "/type") == Some("kubernetes.io/service-account-token") => {
            return Err("Secrets of type kubernetes.io/service-account-token are not allowed".into());
        }
        ("", "Service") => service(object, rules, &mut needs)?,
        ("rbac.authorization.k8s.io", "RoleBinding") => role_binding(object, namespace, &mut needs)?,
        ("rbac.authorization.k8s.io", "Role") => role(object, &rules.role_rules)?,
        ("networking.k8s.io", "Ingress") => ingress(object, &mut needs)?,
        ("networking.k8s.io", "NetworkPolicy") => network_policy(object, &mut needs)?,
        ("gateway.networking.k8s.io", "Gateway") => gateway(object, namespace, &mut needs)?,
        ("gateway.networking.k8s.io", "HTTPRoute" | "GRPCRoute") => route(object, namespace, &mut needs)?,
        ("discovery.k8s.io", "EndpointSlice") => endpoints_of(
            str_at(object, "/metadata/labels/kubernetes.io~1service-name"),
            &mut needs,
        )?,
        // Endpoints are named after their Service.
        ("", "Endpoints") => endpoints_of(str_at(object, "/metadata/name"), &mut needs)?,
        _ => {}
    }
    Ok(needs)
}

/// `ray.io/cluster` on the labels of everything that becomes a Pod: the object itself if it is one (metadata
/// beside a pod spec), and every pod template in it.
fn cluster_labels(value: &Value, needs: &mut Needs) {
    match value {
        Value::Object(map) => {
            let template = map.get("spec").is_some_and(pod_security::is_pod_spec);
            if template && let Some(cluster) = value.pointer("/metadata/labels/ray.io~1cluster") {
                needs
                    .cluster_labels
                    .push(cluster.as_str().unwrap_or_default().to_string());
            }
            map.values().for_each(|v| cluster_labels(v, needs));
        }
        Value::Array(items) => items.iter().for_each(|v| cluster_labels(v, needs)),
        _ => {}
    }
}

/// Endpoints (an EndpointSlice's `kubernetes.io/service-name`, an Endpoints object's name) feed a Service's
/// traffic: only one the reconciled object controls.
fn endpoints_of(service: Option<&str>, needs: &mut Needs) -> Checked {
    let Some(service) = service else {
        return Err("endpoints must name the Service they belong to".into());
    };
    needs
        .owned
        .push((kind("", "Service"), service.to_string(), "adds endpoints to"));
    Ok(())
}

/// Annotations outside KubeRay's own domain: controller configuration, which must be the user's.
fn annotations(object: &Value, needs: &mut Needs) {
    let map = object.pointer("/metadata/annotations").and_then(Value::as_object);
    for (key, value) in map.into_iter().flatten() {
        if !key.starts_with(KUBERAY_ANNOTATIONS) {
            needs
                .annotations
                .push((key.clone(), value.as_str().unwrap_or_default().to_string()));
        }
    }
}

fn service(object: &Value, rules: &ContentRules, needs: &mut Needs) -> Checked {
    let service_type = str_at(object, "/spec/type").unwrap_or("ClusterIP");
    if service_type == "ExternalName" && !rules.service_types.contains(service_type) {
        return Err("Services of type ExternalName are not allowed".into());
    }
    if !rules.service_types.contains(service_type) {
        needs.said.push(("Service type", service_type.to_string()));
    }
    if each(object, "/spec/externalIPs").next().is_some() {
        return Err("Services with externalIPs are not allowed".into());
    }
    annotations(object, needs);
    match object.pointer("/spec/selector").and_then(Value::as_object) {
        Some(selector) if !selector.is_empty() => {
            let selector = string_map(selector)
                .ok_or_else(|| "a Service selector's values must be strings".to_string())?;
            needs.selector = Some(selector);
        }
        _ => {}
    }
    Ok(())
}

/// A NetworkPolicy's rules add to what the Pods it selects may send and receive (policies only ever widen
/// each other), so it must select Pods by labels, and the selector is judged as a Service's.
fn network_policy(object: &Value, needs: &mut Needs) -> Checked {
    let labels = object
        .pointer("/spec/podSelector/matchLabels")
        .and_then(Value::as_object);
    match labels.and_then(string_map) {
        Some(selector) if !selector.is_empty() => {
            needs.selector = Some(selector);
            Ok(())
        }
        _ => Err("a NetworkPolicy must select its Pods by podSelector.matchLabels".into()),
    }
}

fn role_binding(object: &Value, namespace: &str, needs: &mut Needs) -> Checked {
    let role_kind = str_at(object, "/roleRef/kind");
    let role_group = str_at(object, "/roleRef/apiGroup");
    match (role_kind, role_group, str_at(object, "/roleRef/name")) {
        (Some("Role"), Some("rbac.authorization.k8s.io"), Some(name)) => {
            needs.owned.push((
                kind("rbac.authorization.k8s.io", "Role"),
                name.to_string(),
                "binds",
            ));
        }
        _ => return Err("a RoleBinding may only bind a Role the reconciled object controls".into()),
    }
    for subject in each(object, "/subjects") {
        let same_namespace = str_at(subject, "/namespace").is_none_or(|ns| ns == namespace);
        match (str_at(subject, "/kind"), str_at(subject, "/name")) {
            (Some("ServiceAccount"), Some(name)) if same_namespace => {
                needs.bound_accounts.push(name.to_string());
            }
            _ => {
                return Err(
                    "a RoleBinding may only bind ServiceAccounts of the reconciled object's namespace".into(),
                );
            }
        }
    }
    Ok(())
}

/// Each rule of a written Role must be covered by one rule the policy allows.
fn role(object: &Value, allowed: &[RoleRule]) -> Checked {
    for rule in each(object, "/rules") {
        if rule.get("nonResourceURLs").is_some() {
            return Err("a Role may not grant nonResourceURLs".into());
        }
        let covered = |a: &RoleRule| {
            let all = |pointer: &str, set: &std::collections::BTreeSet<String>| {
                strings_at(rule, pointer).all(|v| set.contains(v))
            };
            all("/apiGroups", &a.api_groups) && all("/resources", &a.resources) && all("/verbs", &a.verbs)
        };
        if !allowed.iter().any(covered) {
            let list = |pointer: &str| strings_at(rule, pointer).collect::<Vec<_>>().join(",");
            return Err(format!(
                "the Role grants {} on {} in API groups [{}], which the policy's roleRules do not cover",
                list("/verbs"),
                list("/resources"),
                list("/apiGroups")
            ));
        }
    }
    Ok(())
}

/// A backend `service` of an Ingress: a Service the reconciled object controls.
fn ingress_backend(backend: &Value, needs: &mut Needs) -> Checked {
    if backend.get("resource").is_some() {
        return Err("an Ingress backend may only be a Service the reconciled object controls".into());
    }
    if let Some(name) = str_at(backend, "/service/name") {
        needs
            .owned
            .push((kind("", "Service"), name.to_string(), "routes to"));
    }
    Ok(())
}

fn ingress(object: &Value, needs: &mut Needs) -> Checked {
    annotations(object, needs);
    if let Some(class) = str_at(object, "/spec/ingressClassName") {
        needs.said.push(("Ingress class", class.to_string()));
    }
    if let Some(backend) = object.pointer("/spec/defaultBackend") {
        ingress_backend(backend, needs)?;
    }
    for rule in each(object, "/spec/rules") {
        if let Some(host) = str_at(rule, "/host") {
            needs.said.push(("host", host.to_string()));
        }
        for path in each(rule, "/http/paths") {
            ingress_backend(path.get("backend").unwrap_or(&Value::Null), needs)?;
        }
    }
    for tls in each(object, "/spec/tls") {
        needs
            .said
            .extend(strings_at(tls, "/hosts").map(|h| ("TLS host", h.to_string())));
    }
    Ok(())
}

fn local(reference: &Value, namespace: &str) -> Checked {
    match str_at(reference, "/namespace") {
        Some(other) if other != namespace => Err(format!(
            "a reference to namespace {other} leaves the reconciled object's namespace"
        )),
        _ => Ok(()),
    }
}

fn gateway(object: &Value, namespace: &str, needs: &mut Needs) -> Checked {
    annotations(object, needs);
    if let Some(class) = str_at(object, "/spec/gatewayClassName") {
        needs.said.push(("Gateway class", class.to_string()));
    }
    for address in each(object, "/spec/addresses") {
        needs.said.push((
            "address",
            str_at(address, "/value").unwrap_or_default().to_string(),
        ));
    }
    for listener in each(object, "/spec/listeners") {
        if let Some(host) = str_at(listener, "/hostname") {
            needs.said.push(("hostname", host.to_string()));
        }
        for reference in each(listener, "/tls/certificateRefs") {
            local(reference, namespace)?;
        }
        if let Some(from) = str_at(listener, "/allowedRoutes/namespaces/from").filter(|f| *f != "Same") {
            needs.said.push(("routes from namespaces", from.to_string()));
        }
    }
    Ok(())
}

fn route(object: &Value, namespace: &str, needs: &mut Needs) -> Checked {
    annotations(object, needs);
    for parent in each(object, "/spec/parentRefs") {
        local(parent, namespace)?;
        let kind_name = str_at(parent, "/kind").unwrap_or("Gateway");
        if kind_name != "Gateway" {
            return Err(format!("a route may only attach to a Gateway, not a {kind_name}"));
        }
        if let Some(name) = str_at(parent, "/name") {
            needs.owned.push((
                kind("gateway.networking.k8s.io", "Gateway"),
                name.to_string(),
                "attaches to",
            ));
        }
    }
    needs.said.extend(
        object
            .pointer("/spec/hostnames")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|h| ("hostname", h.to_string())),
    );
    for rule in each(object, "/spec/rules") {
        for backend in each(rule, "/backendRefs") {
            local(backend, namespace)?;
            let kind_name = str_at(backend, "/kind").unwrap_or("Service");
            if kind_name != "Service" {
                return Err(format!("a route may only send to Services, not to a {kind_name}"));
            }
            if let Some(name) = str_at(backend, "/name") {
                needs
                    .owned
                    .push((kind("", "Service"), name.to_string(), "sends to"));
            }
        }
    }
    Ok(())
}

/// The `ray.io/cluster` value a selector requires, if it requires one.
pub fn selected_cluster(selector: &BTreeMap<String, String>) -> Option<&str> {
    selector.get(CLUSTER_LABEL).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kind_of(text: &str) -> Kind {
        crate::policy::file::parse_kind(text).unwrap()
    }

    fn rules() -> ContentRules {
        ContentRules::default()
    }

    #[test]
    fn token_secrets_external_services_and_foreign_bindings_are_refused() {
        let rules = rules();
        let token = json!({"type": "kubernetes.io/service-account-token"});
        assert!(check(&kind_of("v1/Secret"), &token, &rules, "ns").is_err());
        assert!(check(&kind_of("v1/Secret"), &json!({"type": "Opaque"}), &rules, "ns").is_ok());
        let external = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        assert!(check(&kind_of("v1/Service"), &external, &rules, "ns").is_err());
        let ips = json!({"spec": {"externalIPs": ["1.2.3.4"]}});
        assert!(check(&kind_of("v1/Service"), &ips, &rules, "ns").is_err());
        let node_port = check(
            &kind_of("v1/Service"),
            &json!({"spec": {"type": "NodePort", "selector": {"ray.io/cluster": "c"}}}),
            &rules,
            "ns",
        )
        .unwrap();
        assert_eq!(node_port.said, [("Service type", "NodePort".to_string())]);
        assert_eq!(
            node_port.selector,
            Some([("ray.io/cluster".to_string(), "c".to_string())].into())
        );
        let rb = kind_of("rbac.authorization.k8s.io/v1/RoleBinding");
        let cluster_role = json!({"roleRef": {"kind": "ClusterRole", "apiGroup": "rbac.authorization.k8s.io", "name": "admin"}});
        assert!(check(&rb, &cluster_role, &rules, "ns").is_err());
        let role = |subject: Value| {
            json!({
                "roleRef": {"kind": "Role", "apiGroup": "rbac.authorization.k8s.io", "name": "r"},
                "subjects": [subject],
            })
        };
        assert!(check(&rb, &role(json!({"kind": "User", "name": "alice"})), &rules, "ns").is_err());
        let elsewhere = json!({"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"});
        assert!(check(&rb, &role(elsewhere), &rules, "ns").is_err());
        let needs = check(
            &rb,
            &role(json!({"kind": "ServiceAccount", "name": "sa", "namespace": "ns"})),
            &rules,
            "ns",
        )
        .unwrap();
        assert_eq!(
            needs.owned,
            [(
                kind("rbac.authorization.k8s.io", "Role"),
                "r".to_string(),
                "binds"
            )]
        );
        assert_eq!(needs.bound_accounts, ["sa".to_string()]);
    }

    #[test]
    fn roles_grant_only_what_the_policy_lists() {
        let role = kind_of("rbac.authorization.k8s.io/v1/Role");
        let pods = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]});
        assert!(check(&role, &pods, &rules(), "ns").is_err(), "none by default");
        let mut allowing = rules();
        allowing.role_rules = vec![RoleRule {
            api_groups: ["".to_string()].into(),
            resources: ["pods".to_string()].into(),
            verbs: ["get".to_string(), "list".to_string(), "watch".to_string()].into(),
        }];
        assert!(check(&role, &pods, &allowing, "ns").is_ok());
        let secrets = json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]});
        let refused = check(&role, &secrets, &allowing, "ns").unwrap_err();
        assert!(refused.contains("secrets"), "{refused}");
        let star = json!({"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["*"]}]});
        assert!(check(&role, &star, &allowing, "ns").is_err());
    }

    #[test]
    fn a_network_policy_is_judged_by_the_pods_it_selects() {
        let np = kind_of("networking.k8s.io/v1/NetworkPolicy");
        let head = json!({"spec": {
            "podSelector": {"matchLabels": {"ray.io/cluster": "c", "ray.io/node-type": "head"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]
        }});
        let needs = check(&np, &head, &rules(), "ns").unwrap();
        assert_eq!(
            needs.selector,
            Some(BTreeMap::from([
                ("ray.io/cluster".to_string(), "c".to_string()),
                ("ray.io/node-type".to_string(), "head".to_string())
            ]))
        );
        for every_pod in [
            json!({"spec": {"podSelector": {}}}),
            json!({"spec": {"podSelector": {"matchLabels": {}}}}),
            json!({"spec": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}}),
            json!({"spec": {}}),
        ] {
            let refused = check(&np, &every_pod, &rules(), "ns").unwrap_err();
            assert!(refused.contains("podSelector.matchLabels"), "{refused}");
        }
    }

    #[test]
    fn ingresses_gateways_and_routes_name_what_must_be_verified() {
        let ingress = json!({"metadata": {"annotations": {
            "nginx.ingress.kubernetes.io/configuration-snippet": "evil", "ray.io/x": "y"}},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example", "http": {"paths": [
                {"backend": {"service": {"name": "c-head-svc"}}}]}}],
                "tls": [{"hosts": ["a.example"], "secretName": "tls"}]}});
        let needs = check(&kind_of("networking.k8s.io/v1/Ingress"), &ingress, &rules(), "ns").unwrap();
        assert_eq!(
            needs.annotations,
            [(
                "nginx.ingress.kubernetes.io/configuration-snippet".to_string(),
                "evil".to_string()
            )]
        );
        assert_eq!(
            needs.said,
            [
                ("Ingress class", "nginx".to_string()),
                ("host", "a.example".to_string()),
                ("TLS host", "a.example".to_string())
            ]
        );
        assert_eq!(
            needs.owned,
            [(kind("", "Service"), "c-head-svc".to_string(), "routes to")]
        );
        let resource = json!({"spec": {"defaultBackend": {"resource": {"kind": "Bucket", "name": "b"}}}});
        assert!(
            check(
                &kind_of("networking.k8s.io/v1/Ingress"),
                &resource,
                &rules(),
                "ns"
            )
            .is_err()
        );

        let foreign_cert = json!({"spec": {"listeners": [{"tls": {"certificateRefs": [
            {"name": "cert", "namespace": "kube-system"}]}}]}});
        assert!(
            check(
                &kind_of("gateway.networking.k8s.io/v1/Gateway"),
                &foreign_cert,
                &rules(),
                "ns"
            )
            .is_err()
        );
        let route = json!({"spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [
            {"name": "a-serve-svc", "weight": 50}]}]}});
        let needs = check(
            &kind_of("gateway.networking.k8s.io/v1/HTTPRoute"),
            &route,
            &rules(),
            "ns",
        )
        .unwrap();
        assert_eq!(needs.owned.len(), 2);
        let elsewhere = json!({"spec": {"rules": [{"backendRefs": [{"name": "x", "namespace": "other"}]}]}});
        assert!(
            check(
                &kind_of("gateway.networking.k8s.io/v1/HTTPRoute"),
                &elsewhere,
                &rules(),
                "ns"
            )
            .is_err()
        );
    }

    #[test]
    fn endpoints_must_belong_to_a_service_to_verify() {
        let slice = json!({"metadata": {"labels": {"kubernetes.io/service-name": "victim-head-svc"}}});
        let needs = check(
            &kind_of("discovery.k8s.io/v1/EndpointSlice"),
            &slice,
            &rules(),
            "ns",
        )
        .unwrap();
        assert_eq!(
            needs.owned,
            [(
                kind("", "Service"),
                "victim-head-svc".to_string(),
                "adds endpoints to"
            )]
        );
        let orphan = json!({"metadata": {"labels": {}}});
        assert!(
            check(
                &kind_of("discovery.k8s.io/v1/EndpointSlice"),
                &orphan,
                &rules(),
                "ns"
            )
            .is_err()
        );
        let endpoints = json!({"metadata": {"name": "victim-head-svc"}});
        let needs = check(&kind_of("v1/Endpoints"), &endpoints, &rules(), "ns").unwrap();
        assert_eq!(needs.owned.len(), 1);
    }

    #[test]
    fn cluster_labels_of_pods_and_templates_are_collected() {
        let pod = json!({"kind": "Pod", "metadata": {"labels": {"ray.io/cluster": "victim"}},
            "spec": {"containers": []}});
        let needs = check(&kind_of("v1/Pod"), &pod, &rules(), "ns").unwrap();
        assert_eq!(needs.cluster_labels, ["victim".to_string()]);
        let job = json!({"kind": "Job", "spec": {"template": {"metadata": {"labels": {"ray.io/cluster": "v"}},
            "spec": {"containers": []}}}});
        let needs = check(&kind_of("batch/v1/Job"), &job, &rules(), "ns").unwrap();
        assert_eq!(needs.cluster_labels, ["v".to_string()]);
    }
}
