//! Ownership rules of a plugin's writes. What a plugin creates or applies gets one controller owner reference,
//! to the object being reconciled, and nothing that ties it to anything else:
//!
//! - no owner references of its own to other objects, controller or not (a reference to a victim would make
//!   the object garbage-collected with it, or with `blockOwnerDeletion` hold up the victim's foreground
//!   deletion); a reference with the reconciled object's uid is replaced by the host's own;
//! - no finalizers, except the plugin's declared one on an object of the kind it reconciles (only there does
//!   its `cleanup` run to remove it); `add-finalizer`/`remove-finalizer` take only the declared one, so a
//!   plugin neither strands its object behind a finalizer nobody removes nor strips another controller's;
//! - no adoption: an `apply` to an object that exists and is not controlled by the reconciled object (a
//!   controller owner reference with its uid) is refused, where a forced server-side apply would otherwise
//!   add our controller reference to it (and then let the plugin rewrite and delete it).

use kuberay_plugin_sdk::Kind;
use serde_json::{Map, Value};

/// The uid of an object's controller, if it has one.
pub(crate) fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

/// Whether `object` has a controller owner reference with `uid`.
pub(crate) fn controlled_by(object: &Value, uid: &str) -> bool {
    !uid.is_empty() && controller_uid(object) == Some(uid)
}

/// What the rules need to know about the writer.
pub(crate) struct Writer<'a> {
    /// The uid of the object being reconciled.
    pub uid: &'a str,
    /// The kind the plugin reconciles.
    pub reconciles: &'a Kind,
    /// The plugin's declared finalizer.
    pub finalizer: Option<&'a str>,
}

fn describe(reference: &Value) -> String {
    let field = |f: &str| {
        reference
            .get(f)
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let short = |s: String| s.chars().take(80).collect::<String>();
    format!("{} {}", short(field("kind")), short(field("name")))
}

impl Writer<'_> {
    /// Checks the owner references and finalizers of an object `kind` the plugin writes (its `metadata`).
    pub(crate) fn check_metadata(&self, kind: &Kind, meta: &Map<String, Value>) -> Result<(), String> {
        let references = meta.get("ownerReferences").and_then(Value::as_array);
        if let Some(foreign) = references
            .into_iter()
            .flatten()
            .find(|r| r.get("uid").and_then(Value::as_str) != Some(self.uid))
        {
            return Err(format!(
                "the object names another owner ({}); only the reconciled object may own what a plugin writes",
                describe(foreign)
            ));
        }
        let finalizers = meta.get("finalizers").and_then(Value::as_array);
        for finalizer in finalizers.into_iter().flatten() {
            let name = finalizer.as_str().unwrap_or_default();
            let declared = self.finalizer == Some(name) && kind == self.reconciles;
            if !declared {
                return Err(format!(
                    "finalizer {:?} is not the plugin's own on an object of the kind it reconciles",
                    name.chars().take(80).collect::<String>()
                ));
            }
        }
        Ok(())
    }

    /// Checks a finalizer the plugin adds to or removes from its object.
    pub(crate) fn check_finalizer(&self, finalizer: &str) -> Result<(), String> {
        match self.finalizer {
            Some(declared) if declared == finalizer => Ok(()),
            Some(declared) => Err(format!(
                "finalizer {:?} is not the plugin's declared finalizer {declared:?}",
                finalizer.chars().take(80).collect::<String>()
            )),
            None => Err("the plugin declared no finalizer".into()),
        }
    }

    /// Refuses to write over `current` (the live object, if any) unless the reconciled object controls it.
    pub(crate) fn check_adoption(&self, current: Option<&Value>) -> Result<(), String> {
        match current {
            Some(current) if !controlled_by(current, self.uid) => Err(match controller_uid(current) {
                Some(_) => "the object exists and is controlled by another object".into(),
                None => {
                    "the object exists and is not controlled by the reconciled object; plugins do not adopt"
                        .into()
                }
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const UID: &str = "11111111-aaaa";

    fn writer(kind: &Kind) -> Writer<'_> {
        Writer {
            uid: UID,
            reconciles: kind,
            finalizer: Some("ray.io/rayjob-finalizer"),
        }
    }

    fn meta(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn owner_references_to_anything_else_are_refused() {
        let jobs = Kind::new("ray.io", "v1", "RayJob");
        let pods = Kind::new("", "v1", "Pod");
        let w = writer(&jobs);
        let own = json!({"kind": "RayJob", "name": "j", "uid": UID, "controller": true});
        assert!(w.check_metadata(&pods, &meta(json!({}))).is_ok());
        assert!(
            w.check_metadata(&pods, &meta(json!({"ownerReferences": [own]})))
                .is_ok()
        );
        for foreign in [
            json!({"kind": "RayCluster", "name": "victim", "uid": "2222", "controller": true}),
            json!({"kind": "RayCluster", "name": "victim", "uid": "2222"}),
            json!({"kind": "RayCluster", "name": "victim", "uid": "2222", "blockOwnerDeletion": true}),
            json!({"kind": "RayCluster", "name": "victim"}),
        ] {
            let m = meta(json!({"ownerReferences": [own.clone(), foreign.clone()]}));
            let refused = w.check_metadata(&pods, &m).unwrap_err();
            assert!(refused.contains("RayCluster victim"), "{refused}");
        }
    }

    #[test]
    fn only_the_declared_finalizer_on_the_reconciled_kind() {
        let jobs = Kind::new("ray.io", "v1", "RayJob");
        let clusters = Kind::new("ray.io", "v1", "RayCluster");
        let w = writer(&jobs);
        let declared = meta(json!({"finalizers": ["ray.io/rayjob-finalizer"]}));
        assert!(w.check_metadata(&jobs, &declared).is_ok());
        assert!(w.check_metadata(&clusters, &declared).is_err());
        let other = meta(json!({"finalizers": ["ray.io/gcs-ft-redis-cleanup-finalizer"]}));
        assert!(w.check_metadata(&jobs, &other).is_err());
        assert!(w.check_finalizer("ray.io/rayjob-finalizer").is_ok());
        assert!(w.check_finalizer("kubernetes.io/pvc-protection").is_err());
        let none = Writer {
            finalizer: None,
            ..writer(&jobs)
        };
        assert!(none.check_finalizer("ray.io/rayjob-finalizer").is_err());
    }

    #[test]
    fn only_objects_the_reconciled_object_controls_are_written_over() {
        let jobs = Kind::new("ray.io", "v1", "RayJob");
        let w = writer(&jobs);
        let ours = json!({"metadata": {"ownerReferences": [{"uid": UID, "controller": true}]}});
        let owned_not_controlled = json!({"metadata": {"ownerReferences": [{"uid": UID}]}});
        let theirs = json!({"metadata": {"ownerReferences": [{"uid": "2222", "controller": true}]}});
        let orphan = json!({"metadata": {"name": "x"}});
        assert!(w.check_adoption(None).is_ok());
        assert!(w.check_adoption(Some(&ours)).is_ok());
        assert!(w.check_adoption(Some(&owned_not_controlled)).is_err());
        assert!(w.check_adoption(Some(&theirs)).is_err());
        assert!(w.check_adoption(Some(&orphan)).is_err());
        assert!(!controlled_by(&orphan, ""));
    }
}
