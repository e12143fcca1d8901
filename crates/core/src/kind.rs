use std::fmt;

use serde::{Deserialize, Serialize};

/// A Kubernetes kind: group (empty for the core API), version and kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Kind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl Kind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        }
    }

    /// The kind of a Rust type that implements `k8s_openapi::Resource` (built-in types and `kuberay-crds`).
    pub fn of<K: k8s_openapi::Resource>() -> Self {
        Self::new(K::GROUP, K::VERSION, K::KIND)
    }

    /// Parses an `apiVersion` (`v1`, `ray.io/v1`) and a kind.
    pub fn from_api_version(api_version: &str, kind: &str) -> Self {
        match api_version.split_once('/') {
            Some((group, version)) => Self::new(group, version, kind),
            None => Self::new("", api_version, kind),
        }
    }

    /// The kind of a JSON object, from its `apiVersion` and `kind`.
    pub fn of_object(object: &serde_json::Value) -> Option<Self> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        Some(Self::from_api_version(api_version, kind))
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.api_version(), self.kind)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    #[test]
    fn api_versions_round_trip() {
        assert_eq!(Kind::of::<Pod>().api_version(), "v1");
        let ray = Kind::from_api_version("ray.io/v1", "RayCluster");
        assert_eq!(
            (ray.group.as_str(), ray.api_version().as_str()),
            ("ray.io", "ray.io/v1")
        );
        assert_eq!(ray.to_string(), "ray.io/v1/RayCluster");
    }
}
