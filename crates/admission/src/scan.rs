//! What an object says, read the same way wherever it stands: the objects it refers to by name and the
//! settings Pod Security forbids, found in every pod-shaped part (a Pod's spec, a Job's or a custom
//! resource's template, a RayCluster's groups) and every container-shaped part (a RayCluster's
//! `autoscalerOptions`). The object a plugin writes is read with it, and so is the user's request it is
//! judged against (`provenance`), so the two are compared field for field.
//!
//! References are recognised by the field names Kubernetes gives them, anywhere in the object: a custom
//! resource that embeds a pod template is read like a Pod, and a field that merely looks like a reference
//! (`secretName` in some other schema) is treated as one, which errs on the side of asking.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::pod_security::{self, Finding};

/// The kind of object a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    Secret,
    ConfigMap,
    PersistentVolumeClaim,
    /// A PersistentVolume bound by name (`volumeName`), which bypasses its claim's selection.
    PersistentVolume,
    /// A volume's data source other than a claim (a VolumeSnapshot, a populator's object).
    VolumeSource,
    ServiceAccount,
    /// A RayCluster selected by `clusterSelector` (whose head the selecting object may reach).
    RayCluster,
}

impl Target {
    /// How people call it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Secret => "Secret",
            Self::ConfigMap => "ConfigMap",
            Self::PersistentVolumeClaim => "PersistentVolumeClaim",
            Self::PersistentVolume => "PersistentVolume",
            Self::VolumeSource => "volume data source",
            Self::ServiceAccount => "ServiceAccount",
            Self::RayCluster => "RayCluster",
        }
    }
}

/// A name an object refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub target: Target,
    pub name: String,
    /// Where (a JSON pointer), for messages.
    pub at: String,
}

/// What [`scan`] found.
#[derive(Debug, Default)]
pub struct Scan {
    pub references: Vec<Reference>,
    pub findings: Vec<Finding>,
}

/// Reads `value`, whose JSON pointer is `base` (for messages).
pub fn scan(value: &Value, base: &str) -> Scan {
    let mut walk = Walk {
        path: vec![base.to_string()],
        scan: Scan::default(),
    };
    walk.value(value, false);
    walk.scan
}

struct Walk {
    path: Vec<String>,
    scan: Scan,
}

fn name_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str).filter(|n| !n.is_empty())
}

impl Walk {
    fn pointer(&self) -> String {
        self.path.concat()
    }

    fn reference(&mut self, target: Target, name: Option<&str>, key: &str) {
        if let Some(name) = name {
            let at = format!("{}/{key}", self.pointer());
            self.scan.references.push(Reference {
                target,
                name: name.to_string(),
                at,
            });
        }
    }

    fn value(&mut self, value: &Value, in_pod: bool) {
        match value {
            Value::Object(map) => self.object(value, map, in_pod),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.path.push(format!("/{i}"));
                    self.value(item, in_pod);
                    self.path.pop();
                }
            }
            _ => {}
        }
    }

    fn object(&mut self, value: &Value, map: &Map<String, Value>, in_pod: bool) {
        let pod = !in_pod && pod_security::is_pod_spec(value);
        if pod {
            let mut found = Vec::new();
            pod_security::pod_findings(value, &mut found);
            self.findings(found);
        } else if !in_pod && map.get("securityContext").is_some_and(Value::is_object) {
            let mut found = Vec::new();
            let who = format!("the container-shaped part {}", self.pointer());
            pod_security::container_findings(value, None, &who, &mut found);
            self.findings(found);
        }
        if let Some(annotations) = map.get("annotations").and_then(Value::as_object) {
            let mut found = Vec::new();
            pod_security::annotation_findings(annotations, &mut found);
            self.findings(found);
        }
        for (key, inner) in map {
            self.field(key, inner);
            self.path
                .push(format!("/{}", key.replace('~', "~0").replace('/', "~1")));
            self.value(inner, in_pod || pod);
            self.path.pop();
        }
    }

    fn findings(&mut self, found: Vec<Finding>) {
        let at = self.pointer();
        self.scan.findings.extend(found.into_iter().map(|f| Finding {
            message: format!("{at}: {}", f.message),
            ..f
        }));
    }

    /// The reference a field makes, if it is one.
    fn field(&mut self, key: &str, inner: &Value) {
        match key {
            "secretName" => self.reference(Target::Secret, inner.as_str().filter(|n| !n.is_empty()), key),
            "secret" | "secretRef" | "secretKeyRef" => {
                self.reference(Target::Secret, name_at(inner, "name"), key)
            }
            k if k.ends_with("SecretRef") => self.reference(Target::Secret, name_at(inner, "name"), key),
            "imagePullSecrets" => self.each_named(Target::Secret, inner, key),
            "certificateRefs" => {
                for item in inner.as_array().into_iter().flatten() {
                    if name_at(item, "kind").is_none_or(|k| k == "Secret") {
                        self.reference(Target::Secret, name_at(item, "name"), key);
                    }
                }
            }
            "configMap" | "configMapRef" | "configMapKeyRef" => {
                self.reference(Target::ConfigMap, name_at(inner, "name"), key)
            }
            // `storage` is also a RayCluster's `gcsFaultToleranceOptions.storage`, whose `claimName` the head mounts.
            "persistentVolumeClaim" | "storage" => {
                self.reference(Target::PersistentVolumeClaim, name_at(inner, "claimName"), key)
            }
            "volumeName" => self.reference(
                Target::PersistentVolume,
                inner.as_str().filter(|n| !n.is_empty()),
                key,
            ),
            "dataSource" | "dataSourceRef" => {
                let target = match name_at(inner, "kind") {
                    Some("PersistentVolumeClaim") => Target::PersistentVolumeClaim,
                    _ => Target::VolumeSource,
                };
                self.reference(target, name_at(inner, "name"), key);
            }
            "serviceAccountName" | "serviceAccount" => self.reference(
                Target::ServiceAccount,
                inner.as_str().filter(|n| !n.is_empty()),
                key,
            ),
            "clusterSelector" => self.reference(Target::RayCluster, name_at(inner, "ray.io/cluster"), key),
            _ => {}
        }
    }

    fn each_named(&mut self, target: Target, list: &Value, key: &str) {
        for item in list.as_array().into_iter().flatten() {
            self.reference(target, name_at(item, "name"), key);
        }
    }
}

impl Scan {
    /// The names referred to, by target.
    pub fn names(&self) -> BTreeMap<Target, std::collections::BTreeSet<String>> {
        let mut names: BTreeMap<Target, std::collections::BTreeSet<String>> = BTreeMap::new();
        for r in &self.references {
            names.entry(r.target).or_default().insert(r.name.clone());
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refs(value: Value) -> Vec<(Target, String)> {
        scan(&value, "")
            .references
            .into_iter()
            .map(|r| (r.target, r.name))
            .collect()
    }

    #[test]
    fn the_embedded_gcs_stores_claim_is_a_reference() {
        let cluster = json!({"spec": {"gcsFaultToleranceOptions": {"backend": "rocksdb",
            "storage": {"claimName": "gcs-data"}}}});
        assert!(refs(cluster).contains(&(Target::PersistentVolumeClaim, "gcs-data".to_string())));
        // A resource named `storage` is a quantity, not a reference.
        let claim = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}});
        assert!(refs(claim).is_empty());
    }

    #[test]
    fn references_are_found_wherever_they_stand() {
        let pod = json!({"spec": {
            "serviceAccountName": "robot",
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [
                {"name": "a", "secret": {"secretName": "vol"}},
                {"name": "b", "projected": {"sources": [{"secret": {"name": "proj"}}, {"configMap": {"name": "cm"}}]}},
                {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "d", "ephemeral": {"volumeClaimTemplate": {"spec": {"volumeName": "pv-1",
                    "dataSource": {"kind": "VolumeSnapshot", "name": "snap"}}}}},
                {"name": "e", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "csi"}}},
            ],
            "containers": [{"name": "c",
                "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}},
                        {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "k"}}}],
                "envFrom": [{"secretRef": {"name": "from"}}, {"configMapRef": {"name": "cfg2"}}]}],
        }});
        let found = refs(pod);
        for expected in [
            (Target::ServiceAccount, "robot"),
            (Target::Secret, "pull"),
            (Target::Secret, "vol"),
            (Target::Secret, "proj"),
            (Target::ConfigMap, "cm"),
            (Target::PersistentVolumeClaim, "data"),
            (Target::PersistentVolume, "pv-1"),
            (Target::VolumeSource, "snap"),
            (Target::Secret, "csi"),
            (Target::Secret, "env"),
            (Target::ConfigMap, "cfg"),
            (Target::Secret, "from"),
            (Target::ConfigMap, "cfg2"),
        ] {
            assert!(
                found.contains(&(expected.0, expected.1.to_string())),
                "{expected:?} not in {found:?}"
            );
        }
        assert_eq!(found.len(), 13, "{found:?}");
        let cluster = json!({"spec": {
            "authOptions": {"mode": "token", "secretName": "token"},
            "clusterSelector": {"ray.io/cluster": "shared"},
        }});
        assert_eq!(
            refs(cluster),
            [
                (Target::Secret, "token".to_string()),
                (Target::RayCluster, "shared".to_string())
            ]
        );
        let gateway = json!({"spec": {"listeners": [{"tls": {"certificateRefs": [
            {"name": "cert"}, {"kind": "Secret", "name": "cert2"}, {"kind": "ConfigMap", "name": "other"}]}}]}});
        assert_eq!(
            refs(gateway),
            [
                (Target::Secret, "cert".to_string()),
                (Target::Secret, "cert2".to_string())
            ]
        );
    }

    #[test]
    fn pod_and_container_shaped_parts_are_found_in_any_kind() {
        let jobset = json!({"spec": {"replicatedJobs": [{"template": {"spec": {"template": {
            "metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "unconfined"}},
            "spec": {"hostNetwork": true, "containers": [{"name": "c", "securityContext": {"privileged": true}}]},
        }}}}]}});
        let found = scan(&jobset, "");
        let signatures: Vec<&str> = found.findings.iter().map(|f| f.signature.as_str()).collect();
        for expected in ["hostNetwork", "privileged", "apparmor:unconfined"] {
            assert!(signatures.contains(&expected), "{signatures:?}");
        }
        let pod_finding = found
            .findings
            .iter()
            .find(|f| f.signature == "hostNetwork")
            .unwrap();
        assert!(
            pod_finding
                .message
                .starts_with("/spec/replicatedJobs/0/template/spec/template/spec:"),
            "{}",
            pod_finding.message
        );
        let autoscaler = json!({"spec": {"autoscalerOptions": {"image": "x",
            "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}}});
        let found = scan(&autoscaler, "");
        assert!(
            found
                .findings
                .iter()
                .any(|f| f.signature == "capability:SYS_ADMIN" && f.message.contains("autoscalerOptions")),
            "{:?}",
            found.findings
        );
    }
}
