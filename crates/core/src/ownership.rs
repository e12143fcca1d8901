//! The host's ownership rules for a plugin's writes, in one place: the operator enforces them on every
//! call and the SDK's `testing::FakeHost` applies the same code, so plugin unit tests meet exactly
//! the refusals a real cluster gives. What a plugin creates or applies gets one controller owner reference,
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
//!   add our controller reference to it (and then let the plugin rewrite and delete it);
//! - deletes only of what the reconciled object controls (and of the reconciled object itself);
//! - the one exception to "no adoption": [`label_only`] intents on grandchildren.
//!
//! Refusals are messages; the host returns them as `forbidden` errors.

use serde_json::{Map, Value, json};

use crate::Kind;

mod label_only;

pub use label_only::label_only;

/// The uid of an object's controller, if it has one.
pub fn controller_uid(object: &Value) -> Option<&str> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

/// Whether `object` has a controller owner reference with `uid`.
pub fn controlled_by(object: &Value, uid: &str) -> bool {
    !uid.is_empty() && controller_uid(object) == Some(uid)
}

/// The controller owner reference the host puts on everything a plugin writes.
pub fn owner_reference(kind: &Kind, name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": kind.api_version(),
        "kind": kind.kind,
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// What the rules need to know about the writer.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
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
    pub fn check_metadata(&self, kind: &Kind, meta: &Map<String, Value>) -> Result<(), String> {
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

    /// Checks `meta` ([`Self::check_metadata`]) and gives the object `owner` (see [`owner_reference`]) as
    /// its one controller, in place of any reference the plugin wrote to the reconciled object.
    pub fn take_ownership(
        &self,
        kind: &Kind,
        meta: &mut Map<String, Value>,
        owner: Value,
    ) -> Result<(), String> {
        self.check_metadata(kind, meta)?;
        let mut references: Vec<Value> = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        references.retain(|r| r.get("uid").and_then(Value::as_str) != Some(self.uid));
        references.push(owner);
        meta.insert("ownerReferences".into(), Value::Array(references));
        Ok(())
    }

    /// Checks a finalizer the plugin adds to or removes from its object.
    pub fn check_finalizer(&self, finalizer: &str) -> Result<(), String> {
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
    pub fn check_adoption(&self, current: Option<&Value>) -> Result<(), String> {
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

    /// Refuses to delete `current` (an object other than the reconciled one) unless the reconciled object
    /// controls it.
    pub fn check_delete(&self, current: &Value) -> Result<(), String> {
        if controlled_by(current, self.uid) {
            Ok(())
        } else {
            Err("the object is not owned by the reconciled object".into())
        }
    }
}

#[cfg(test)]
mod tests;
