//! What a granted object may contain: the pod specs inside objects that become Pods, Secrets, Services and
//! RoleBindings. [`check`] decides what can be decided from the object alone and returns the references
//! (Secrets, ServiceAccounts, Roles) whose ownership the host must then verify against the cluster.

use std::collections::BTreeSet;

use kuberay_plugin_sdk::Kind;
use serde_json::Value;

use super::{file::ContentRules, pod_security};

/// Names an object refers to, each allowed only if the reconciled object controls it (or, where the rules
/// say so, its spec names it).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct References {
    pub secrets: BTreeSet<String>,
    pub service_accounts: BTreeSet<String>,
    /// Roles a RoleBinding binds.
    pub roles: BTreeSet<String>,
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn each<'a>(value: &'a Value, pointer: &str) -> impl Iterator<Item = &'a Value> {
    value
        .pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The pod specs of a RayCluster spec at `base`.
fn ray_cluster_pods(object: &Value, base: &str) -> Vec<String> {
    let mut pointers = vec![format!("{base}/headGroupSpec/template/spec")];
    let workers = each(object, &format!("{base}/workerGroupSpecs")).count();
    pointers.extend((0..workers).map(|i| format!("{base}/workerGroupSpecs/{i}/template/spec")));
    pointers
}

/// Where the pod specs of an object of `kind` are (JSON pointers).
pub(crate) fn pod_spec_pointers(kind: &Kind, object: &Value) -> Vec<String> {
    match (kind.group.as_str(), kind.kind.as_str()) {
        ("", "Pod") => vec!["/spec".into()],
        ("", "PodTemplate") => vec!["/template/spec".into()],
        ("batch", "Job") | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet") => {
            vec!["/spec/template/spec".into()]
        }
        ("", "ReplicationController") => vec!["/spec/template/spec".into()],
        ("batch", "CronJob") => vec!["/spec/jobTemplate/spec/template/spec".into()],
        ("ray.io", "RayCluster") => ray_cluster_pods(object, "/spec"),
        ("ray.io", "RayJob") => {
            let mut pointers = ray_cluster_pods(object, "/spec/rayClusterSpec");
            pointers.push("/spec/submitterPodTemplate/spec".into());
            pointers
        }
        ("ray.io", "RayService") => ray_cluster_pods(object, "/spec/rayClusterConfig"),
        ("ray.io", "RayCronJob") => {
            let mut pointers = ray_cluster_pods(object, "/spec/jobTemplate/rayClusterSpec");
            pointers.push("/spec/jobTemplate/submitterPodTemplate/spec".into());
            pointers
        }
        _ => Vec::new(),
    }
}

/// Secret names referred to anywhere in `value`: `secretName`, `secretKeyRef`/`secretRef`/`*SecretRef`
/// objects, projected `secret` sources and `imagePullSecrets`.
pub(crate) fn secret_names(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let name = match key.as_str() {
                    "secretName" => inner.as_str(),
                    "secret" | "secretRef" | "secretKeyRef" => str_at(inner, "/name"),
                    k if k.ends_with("SecretRef") => str_at(inner, "/name"),
                    _ => None,
                };
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    out.insert(name.to_string());
                }
                if key == "imagePullSecrets" {
                    out.extend(
                        each(inner, "")
                            .filter_map(|s| str_at(s, "/name"))
                            .map(String::from),
                    );
                }
                secret_names(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| secret_names(i, out)),
        _ => {}
    }
}

/// ServiceAccount names referred to anywhere in `value` (`serviceAccountName`, `serviceAccount`).
pub(crate) fn service_account_names(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if matches!(key.as_str(), "serviceAccountName" | "serviceAccount")
                    && let Some(name) = inner.as_str().filter(|n| !n.is_empty())
                {
                    out.insert(name.to_string());
                }
                service_account_names(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| service_account_names(i, out)),
        _ => {}
    }
}

/// The Secrets and ServiceAccounts an object of `kind` names: anywhere in the spec of a Ray object (whose
/// schema has no free-form fields besides pod templates: `authOptions.secretName`,
/// `gcsFaultToleranceOptions.redisPassword.valueFrom.secretKeyRef`, ...), else in its pod templates.
pub(crate) fn names_in_spec(kind: &Kind, object: &Value) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut secrets, mut accounts) = (BTreeSet::new(), BTreeSet::new());
    let pointers = if kind.group == "ray.io" {
        vec!["/spec".to_string()]
    } else {
        pod_spec_pointers(kind, object)
    };
    for pointer in pointers {
        if let Some(spec) = object.pointer(&pointer) {
            secret_names(spec, &mut secrets);
            service_account_names(spec, &mut accounts);
        }
    }
    (secrets, accounts)
}

/// Checks `object` (of `kind`, to be created or applied in `namespace`) against `rules`.
pub(crate) fn check(
    kind: &Kind,
    object: &Value,
    rules: &ContentRules,
    namespace: &str,
) -> Result<References, String> {
    let mut refs = References::default();
    for pointer in pod_spec_pointers(kind, object) {
        let Some(spec) = object.pointer(&pointer) else {
            continue;
        };
        pod_security::check(spec, rules).map_err(|e| format!("{pointer}: {e}"))?;
        secret_names(spec, &mut refs.secrets);
        service_account_names(spec, &mut refs.service_accounts);
    }
    match (kind.group.as_str(), kind.kind.as_str()) {
        ("", "Secret") if str_at(object, "/type") == Some("kubernetes.io/service-account-token") => {
            return Err("Secrets of type kubernetes.io/service-account-token are not allowed".into());
        }
        ("", "Service") => service(object, rules)?,
        ("rbac.authorization.k8s.io", "RoleBinding") => role_binding(object, namespace, &mut refs)?,
        _ => {}
    }
    refs.service_accounts.remove("default");
    refs.service_accounts
        .retain(|sa| !rules.service_accounts.contains(sa));
    Ok(refs)
}

fn service(object: &Value, rules: &ContentRules) -> Result<(), String> {
    let service_type = str_at(object, "/spec/type").unwrap_or("ClusterIP");
    if !rules.service_types.contains(service_type) {
        return Err(format!("Services of type {service_type} are not allowed"));
    }
    if each(object, "/spec/externalIPs").next().is_some() {
        return Err("Services with externalIPs are not allowed".into());
    }
    Ok(())
}

fn role_binding(object: &Value, namespace: &str, refs: &mut References) -> Result<(), String> {
    let role_kind = str_at(object, "/roleRef/kind");
    let role_group = str_at(object, "/roleRef/apiGroup");
    match (role_kind, role_group, str_at(object, "/roleRef/name")) {
        (Some("Role"), Some("rbac.authorization.k8s.io"), Some(name)) => {
            refs.roles.insert(name.to_string());
        }
        _ => return Err("a RoleBinding may only bind a Role the reconciled object controls".into()),
    }
    for subject in each(object, "/subjects") {
        let same_namespace = str_at(subject, "/namespace").is_none_or(|ns| ns == namespace);
        match (str_at(subject, "/kind"), str_at(subject, "/name")) {
            (Some("ServiceAccount"), Some(name)) if same_namespace => {
                refs.service_accounts.insert(name.to_string());
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn kind(text: &str) -> Kind {
        super::super::file::parse_kind(text).unwrap()
    }

    #[test]
    fn pods_inside_ray_objects_and_jobs_are_policed() {
        let rules = ContentRules::default();
        let privileged = json!({"containers": [{"name": "c", "securityContext": {"privileged": true}}]});
        let cluster = json!({"spec": {
            "headGroupSpec": {"template": {"spec": {"containers": []}}},
            "workerGroupSpecs": [{"template": {"spec": {"containers": []}}}, {"template": {"spec": privileged}}],
        }});
        let e = check(&kind("ray.io/v1/RayCluster"), &cluster, &rules, "ns").unwrap_err();
        assert!(
            e.contains("workerGroupSpecs/1") && e.contains("privileged"),
            "{e}"
        );
        let job = json!({"spec": {"submitterPodTemplate": {"spec": {"hostNetwork": true}}}});
        assert!(check(&kind("ray.io/v1/RayJob"), &job, &rules, "ns").is_err());
        let batch = json!({"spec": {"template": {"spec": {"hostPID": true}}}});
        assert!(check(&kind("batch/v1/Job"), &batch, &rules, "ns").is_err());
        let pod = json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}});
        assert!(check(&kind("v1/Pod"), &pod, &rules, "ns").is_err());
    }

    #[test]
    fn secret_and_service_account_references_are_collected_for_verification() {
        let pod = json!({"spec": {
            "serviceAccountName": "robot",
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [
                {"name": "a", "secret": {"secretName": "vol"}},
                {"name": "b", "projected": {"sources": [{"secret": {"name": "proj"}}, {"serviceAccountToken": {"path": "t"}}]}},
            ],
            "containers": [{"name": "c",
                "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}],
                "envFrom": [{"secretRef": {"name": "from"}}]}],
        }});
        let refs = check(&kind("v1/Pod"), &pod, &ContentRules::default(), "ns").unwrap();
        let names = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        assert_eq!(refs.secrets, names(&["env", "from", "proj", "pull", "vol"]));
        assert_eq!(refs.service_accounts, names(&["robot"]));
        let cluster = json!({"spec": {
            "authOptions": {"mode": "token", "secretName": "token"},
            "headGroupSpec": {"template": {"spec": {"serviceAccountName": "robot", "containers": []}}},
            "workerGroupSpecs": [{"template": {"spec": {"volumes": [{"name": "v", "secret": {"secretName": "data"}}]}}}],
        }});
        let (secrets, accounts) = names_in_spec(&kind("ray.io/v1/RayCluster"), &cluster);
        assert_eq!(secrets, names(&["data", "token"]));
        assert_eq!(accounts, names(&["robot"]));
        let chaos = json!({"spec": {"object": {"spec": {"serviceAccountName": "victim"}}}});
        assert_eq!(names_in_spec(&kind("x.io/v1/Chaos"), &chaos), Default::default());
        let default_sa = json!({"spec": {"serviceAccountName": "default"}});
        assert!(
            check(&kind("v1/Pod"), &default_sa, &ContentRules::default(), "ns")
                .unwrap()
                .service_accounts
                .is_empty()
        );
    }

    #[test]
    fn token_secrets_external_services_and_foreign_bindings_are_refused() {
        let rules = ContentRules::default();
        let token = json!({"type": "kubernetes.io/service-account-token"});
        assert!(check(&kind("v1/Secret"), &token, &rules, "ns").is_err());
        assert!(check(&kind("v1/Secret"), &json!({"type": "Opaque"}), &rules, "ns").is_ok());
        let external = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
        assert!(check(&kind("v1/Service"), &external, &rules, "ns").is_err());
        let ips = json!({"spec": {"externalIPs": ["1.2.3.4"]}});
        assert!(check(&kind("v1/Service"), &ips, &rules, "ns").is_err());
        assert!(
            check(
                &kind("v1/Service"),
                &json!({"spec": {"type": "NodePort"}}),
                &rules,
                "ns"
            )
            .is_ok()
        );
        let rb = kind("rbac.authorization.k8s.io/v1/RoleBinding");
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
        let refs = check(
            &rb,
            &role(json!({"kind": "ServiceAccount", "name": "sa", "namespace": "ns"})),
            &rules,
            "ns",
        )
        .unwrap();
        assert_eq!(refs.roles, ["r".to_string()].into());
        assert_eq!(refs.service_accounts, ["sa".to_string()].into());
    }
}
