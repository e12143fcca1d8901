//! An object as the host handed it over, parsed only when the plugin says into what.

use serde::de::DeserializeOwned;
use serde_json::{Value, error::Category};

use crate::HostError;

/// A Kubernetes object from [`crate::Host::get_document`] or [`crate::Host::list_documents`]: the JSON text
/// that crossed the component boundary (in the operator) or a value (native hosts such as
/// [`crate::testing::FakeHost`]).
///
/// Reading the text straight into a typed object parses it once; going through a [`Value`] first builds and
/// drops a map per JSON object (reading that way cost the RayCluster plugin about a sixth of its call;
/// docs/benchmarks.md).
#[derive(Debug, Clone, PartialEq)]
pub enum Document {
    /// JSON text in the Kubernetes wire form.
    Text(String),
    /// An already parsed value.
    Value(Value),
}

impl Document {
    /// The object as a JSON value.
    pub fn into_value(self) -> serde_json::Result<Value> {
        match self {
            Self::Text(text) => serde_json::from_str(&text),
            Self::Value(value) => Ok(value),
        }
    }

    /// A copy of the object as a JSON value (for reporting an object that [`Document::to_typed`] refused).
    pub fn to_value(&self) -> serde_json::Result<Value> {
        match self {
            Self::Text(text) => serde_json::from_str(text),
            Self::Value(value) => Ok(value.clone()),
        }
    }

    /// The object as a typed one.
    pub fn into_typed<K: DeserializeOwned>(self) -> serde_json::Result<K> {
        match self {
            Self::Text(text) => serde_json::from_str(&text),
            Self::Value(value) => read_value(value),
        }
    }

    /// [`Document::into_typed`] without giving the document up.
    pub fn to_typed<K: DeserializeOwned>(&self) -> serde_json::Result<K> {
        match self {
            Self::Text(text) => serde_json::from_str(text),
            Self::Value(value) => read_value(value.clone()),
        }
    }
}

impl From<Value> for Document {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

/// Natively a value is read as it is.
#[cfg(not(target_arch = "wasm32"))]
fn read_value<K: DeserializeOwned>(value: Value) -> serde_json::Result<K> {
    serde_json::from_value(value)
}

/// In a component, where the host's objects arrive as text, a value (one the plugin built itself) is
/// written out and read like text: each type then has one deserialiser in the component instead of two.
#[cfg(target_arch = "wasm32")]
fn read_value<K: DeserializeOwned>(value: Value) -> serde_json::Result<K> {
    serde_json::from_str(&value.to_string())
}

/// A host's answer that did not read: a shape the type does not accept is [`HostError::Invalid`], text that
/// is not JSON the host's fault.
pub(crate) fn host_error(e: serde_json::Error) -> HostError {
    match e.classify() {
        Category::Data => HostError::Invalid(format!("unexpected object shape: {e}")),
        Category::Io | Category::Syntax | Category::Eof => {
            HostError::Internal(format!("the host sent invalid JSON: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;

    fn pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
               "spec": {"containers": [{"name": "ray", "image": "rayproject/ray"}]}})
    }

    #[test]
    fn text_and_value_read_into_the_same_typed_object() {
        let from_text: Pod = Document::Text(pod().to_string()).into_typed().unwrap();
        let from_value: Pod = Document::Value(pod()).into_typed().unwrap();
        assert_eq!(from_text, from_value);
        assert_eq!(from_text.metadata.name.as_deref(), Some("p"));
        assert_eq!(Document::Text(pod().to_string()).into_value().unwrap(), pod());
        assert_eq!(
            Document::Text(pod().to_string()).to_typed::<Pod>().unwrap(),
            from_text
        );
    }

    #[test]
    fn a_wrong_shape_is_invalid_and_broken_text_is_the_hosts_fault() {
        let wrong = json!({"metadata": {"name": 7}});
        for document in [Document::Text(wrong.to_string()), Document::Value(wrong)] {
            let error = host_error(document.into_typed::<Pod>().unwrap_err());
            assert!(
                matches!(&error, HostError::Invalid(m) if m.contains("unexpected object shape")),
                "{error:?}"
            );
        }
        let broken = Document::Text("{\"metadata\": ".into());
        let error = host_error(broken.clone().into_typed::<Pod>().unwrap_err());
        assert!(matches!(error, HostError::Internal(_)), "{error:?}");
        assert!(broken.into_value().is_err());
    }
}
