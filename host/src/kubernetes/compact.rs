//! The form in which the host keeps the objects it reads: `metadata` typed, because every watch event and
//! every list looks at names, labels, owners and versions, and every other top-level field (`spec`, `status`,
//! `data`, ...) as the JSON text the API server sent, because only plugins read those.
//!
//! This is what keeps the watch caches small (issue 11). kube's `DynamicObject` holds everything but
//! `metadata` as a `serde_json::Value` tree, in which every JSON object, however small, is a B-tree node
//! of eleven slots: a heap profile at 300 RayClusters put 53 of the operator's 67 MiB heap peak in the
//! cached objects, about 36 KB per object, several times its JSON; kept as text, they took 8.7 MiB (about
//! 6 KB each). A field's text is one allocation of the JSON's own size; it is parsed into a tree only when
//! a plugin reads the object (`to_value`).
//!
//! Caveat: the fields are kept with `serde_json`'s `RawValue`, which only a `serde_json` deserializer (from
//! text or from a `Value`) can produce: a format that buffers values first (an untagged or flattened
//! container around the object) fails to deserialize it. Lists (`items`) and watch events
//! (`{"type":...,"object":...}`, tag first, as the API server sends them) are read without buffering.
//! `managedFields` are dropped as the object is read; nothing the host or a plugin does needs them.

use std::{borrow::Cow, fmt};

use kube::{
    Resource,
    api::{ApiResource, ObjectMeta, TypeMeta},
    core::DynamicResourceScope,
};
use serde::{
    Deserialize, Deserializer, Serialize, Serializer,
    de::{MapAccess, Visitor},
    ser::SerializeMap,
};
use serde_json::{Value, value::RawValue};

use crate::metrics::ObjectView;

/// An object of any kind with `metadata` typed and every other top-level field kept as JSON text.
#[derive(Clone, Debug, Default)]
pub(crate) struct CachedObject {
    /// `apiVersion` and `kind`, when the object carried both.
    pub(crate) types: Option<TypeMeta>,
    pub(crate) metadata: ObjectMeta,
    /// The other top-level fields, in the order the API server sent them.
    fields: Box<[(Box<str>, Box<RawValue>)]>,
}

impl CachedObject {
    /// An object with only `metadata` (what a reconcile trigger carries).
    pub(crate) fn from_metadata(metadata: ObjectMeta) -> Self {
        Self {
            metadata,
            ..Self::default()
        }
    }

    /// The whole object as a JSON tree, built on each call.
    pub(crate) fn to_value(&self) -> serde_json::Result<Value> {
        serde_json::to_value(self)
    }

    /// The object as the metrics read it (`status` left as text).
    pub(crate) fn view(&self) -> ObjectView<'_> {
        let meta = &self.metadata;
        ObjectView {
            name: meta.name.as_deref().unwrap_or_default(),
            namespace: meta.namespace.as_deref().unwrap_or_default(),
            uid: meta.uid.as_deref().unwrap_or_default(),
            labels: meta.labels.as_ref(),
            created: meta
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.as_millisecond() as f64 / 1000.0),
            status: self.field("status"),
        }
    }

    /// The JSON text of one top-level field other than `apiVersion`, `kind` and `metadata`.
    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(key, _)| &**key == name)
            .map(|(_, raw)| raw.get())
    }
}

impl Serialize for CachedObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(types) = &self.types {
            map.serialize_entry("apiVersion", &types.api_version)?;
            map.serialize_entry("kind", &types.kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (name, raw) in &self.fields {
            map.serialize_entry(name, raw)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for CachedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = CachedObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CachedObject, A::Error> {
        let mut api_version: Option<String> = None;
        let mut kind: Option<String> = None;
        let mut metadata: Option<ObjectMeta> = None;
        let mut fields = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match &*key {
                "apiVersion" => api_version = Some(map.next_value()?),
                "kind" => kind = Some(map.next_value()?),
                "metadata" => metadata = Some(map.next_value()?),
                _ => {
                    let raw: Box<RawValue> = map.next_value()?;
                    fields.push((Box::<str>::from(&*key), raw));
                }
            }
        }
        let mut metadata = metadata.unwrap_or_default();
        metadata.managed_fields = None;
        let types = match (api_version, kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            _ => None,
        };
        Ok(CachedObject {
            types,
            metadata,
            fields: fields.into_boxed_slice(),
        })
    }
}

/// Like `DynamicObject`, the kind comes with the object's `ApiResource`.
impl Resource for CachedObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use kube::{
        api::{DynamicObject, WatchEvent},
        core::ObjectList,
    };
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "head", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                "labels": {"ray.io/cluster": "c"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:spec": {}}}],
            },
            "spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0", "args": ["a\"b"]}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "ratio": 0.5, "empty": {}},
        })
    }

    fn without_managed_fields(mut object: Value) -> Value {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        object
    }

    #[test]
    fn reads_back_what_was_sent_but_managed_fields() {
        let text = serde_json::to_string(&pod()).unwrap();
        let object: CachedObject = serde_json::from_str(&text).unwrap();
        assert_eq!(object.metadata.name.as_deref(), Some("head"));
        assert_eq!(object.metadata.managed_fields, None);
        assert_eq!(object.types.as_ref().map(|t| t.kind.as_str()), Some("Pod"));
        assert_eq!(object.to_value().unwrap(), without_managed_fields(pod()));
        // The same as kube's own dynamic form, once that drops managedFields too.
        let mut dynamic: DynamicObject = serde_json::from_str(&text).unwrap();
        dynamic.metadata.managed_fields = None;
        assert_eq!(
            object.to_value().unwrap(),
            serde_json::to_value(&dynamic).unwrap()
        );
    }

    #[test]
    fn keeps_fields_as_the_text_that_was_sent() {
        let object: CachedObject =
            serde_json::from_str(r#"{"metadata":{"name":"x"},"data":{"k": "v"},"spec":{}}"#).unwrap();
        assert_eq!(object.field("data"), Some(r#"{"k": "v"}"#));
        assert_eq!(object.field("spec"), Some("{}"));
        assert_eq!(object.types, None);
        assert_eq!(
            serde_json::to_string(&object).unwrap(),
            r#"{"metadata":{"name":"x"},"data":{"k": "v"},"spec":{}}"#
        );
    }

    #[test]
    fn reads_from_a_json_tree_too() {
        let object: CachedObject = serde_json::from_value(pod()).unwrap();
        assert_eq!(object.to_value().unwrap(), without_managed_fields(pod()));
    }

    #[test]
    fn reads_watch_events_and_lists_as_the_api_server_sends_them() {
        let event = format!(r#"{{"type":"MODIFIED","object":{}}}"#, pod());
        match serde_json::from_str::<WatchEvent<CachedObject>>(&event).unwrap() {
            WatchEvent::Modified(object) => {
                assert_eq!(object.to_value().unwrap(), without_managed_fields(pod()));
            }
            other => panic!("unexpected {other:?}"),
        }
        let list = json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"},
                          "items": [pod(), pod()]});
        let list: ObjectList<CachedObject> = serde_json::from_str(&list.to_string()).unwrap();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.items[1].to_value().unwrap(), without_managed_fields(pod()));
    }

    #[test]
    fn refuses_what_is_not_an_object() {
        assert!(serde_json::from_str::<CachedObject>("[1]").is_err());
        assert!(serde_json::from_str::<CachedObject>(r#"{"metadata": 3}"#).is_err());
        assert!(serde_json::from_str::<CachedObject>(r#"{"spec": }"#).is_err());
    }
}
