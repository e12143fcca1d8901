use k8s_openapi::{Metadata, Resource, apimachinery::pkg::apis::meta::v1::ObjectMeta};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{Host, HostError, Kind, document::host_error};

/// Typed reads and writes for any `k8s_openapi::Resource` (built-in kinds and `kuberay-crds`). Reads parse
/// what the host sent straight into `K` ([`crate::Document::into_typed`]).
pub trait TypedHost: Host {
    fn get_as<K: Resource + DeserializeOwned>(&self, name: &str) -> Result<Option<K>, HostError> {
        self.get_document(&Kind::of::<K>(), name)?
            .map(|d| d.into_typed().map_err(host_error))
            .transpose()
    }

    fn list_as<K: Resource + DeserializeOwned>(&self, label_selector: &str) -> Result<Vec<K>, HostError> {
        self.list_documents(&Kind::of::<K>(), label_selector)?
            .into_iter()
            .map(|d| d.into_typed().map_err(host_error))
            .collect()
    }

    fn create_as<K: Resource + Serialize + DeserializeOwned>(&self, object: &K) -> Result<K, HostError> {
        self.create_document(&to_value(object)?)?
            .into_typed()
            .map_err(host_error)
    }

    fn apply_as<K: Resource + Serialize + DeserializeOwned>(&self, object: &K) -> Result<K, HostError> {
        self.apply_document(&to_value(object)?)?
            .into_typed()
            .map_err(host_error)
    }

    /// Deletes `object`, but only the incarnation with its uid.
    fn delete_object<K: Resource + Metadata<Ty = ObjectMeta>>(&self, object: &K) -> Result<(), HostError> {
        let meta = object.metadata();
        let name = meta
            .name
            .as_deref()
            .ok_or_else(|| HostError::Invalid("object without a name".into()))?;
        self.delete(&Kind::of::<K>(), name, meta.uid.as_deref())
    }
}

impl<H: Host + ?Sized> TypedHost for H {}

/// JSON of a typed object with `apiVersion` and `kind` set (custom types may not serialize them).
pub fn to_value<K: Resource + Serialize>(object: &K) -> Result<Value, HostError> {
    let mut value = serde_json::to_value(object).map_err(|e| HostError::Invalid(e.to_string()))?;
    if let Some(map) = value.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| Value::String(K::API_VERSION.to_string()));
        map.entry("kind")
            .or_insert_with(|| Value::String(K::KIND.to_string()));
    }
    Ok(value)
}
