//! The `ReconcilePlugin` resource (`plugins.kuberay-wasm.io/v1alpha1`, cluster-scoped; its CRD is
//! `deploy/crds/plugins.kuberay-wasm.io_reconcileplugins.yaml`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The API group.
pub const GROUP: &str = "plugins.kuberay-wasm.io";
/// The served version.
pub const VERSION: &str = "v1alpha1";

/// One plugin the administrator runs, fetched from a registry.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcilePlugin {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: ReconcilePluginSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ReconcilePluginStatus>,
}

/// What the administrator asks for. The resource's name is the plugin's: the component must call itself so.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcilePluginSpec {
    /// `registry/repository@sha256:<digest>`.
    #[serde(default)]
    pub artifact: String,
    /// The kind it reconciles, as the policy file writes kinds (`ray.io/v1/RayCluster`).
    #[serde(default)]
    pub reconciles: String,
    /// What it is granted: the keys of a policy file's entry (`owns`, `verbs`, `rayHeads`, `finalizer`,
    /// content rules, `budget`), with the file's `defaults` where it says nothing.
    #[serde(default)]
    pub grant: Map<String, Value>,
    /// A `kubernetes.io/dockerconfigjson` Secret in the operator's namespace with the registry's credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_secret: Option<String>,
    /// Signature verification; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// The plugin's configuration (JSON), read through the `config` interface of the WIT world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// `true` keeps the version serving now and does not roll out changes of the spec.
    #[serde(default)]
    pub paused: bool,
}

/// How a version's signature is checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// A PEM public key (ECDSA P-256, as `cosign generate-key-pair` writes): the artifact must carry a cosign
    /// signature it verifies.
    #[serde(default)]
    pub public_key: String,
}

/// What the operator last observed (written by the leader).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReconcilePluginStatus {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The manifest digest serving.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Its first 12 hexadecimal digits, for `kubectl get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_digest: Option<String>,
    /// The digest that served before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_digest: Option<String>,
    /// The version the plugin reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why the last version asked for does not serve, if it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The operator installation that wrote this status (its Lease, `namespace/name`): two installations
    /// serving one resource show here as a name that changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
}

impl k8s_openapi::Resource for ReconcilePlugin {
    const API_VERSION: &'static str = "plugins.kuberay-wasm.io/v1alpha1";
    const GROUP: &'static str = GROUP;
    const KIND: &'static str = "ReconcilePlugin";
    const VERSION: &'static str = VERSION;
    const URL_PATH_SEGMENT: &'static str = "reconcileplugins";
    type Scope = k8s_openapi::ClusterResourceScope;
}

impl k8s_openapi::ListableResource for ReconcilePlugin {
    const LIST_KIND: &'static str = "ReconcilePluginList";
}

impl k8s_openapi::Metadata for ReconcilePlugin {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Serialize for ReconcilePlugin {
    /// With `apiVersion` and `kind`, as every object is written.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut object = serializer.serialize_struct("ReconcilePlugin", 5)?;
        object.serialize_field("apiVersion", <Self as k8s_openapi::Resource>::API_VERSION)?;
        object.serialize_field("kind", <Self as k8s_openapi::Resource>::KIND)?;
        object.serialize_field("metadata", &self.metadata)?;
        object.serialize_field("spec", &self.spec)?;
        if let Some(status) = &self.status {
            object.serialize_field("status", status)?;
        }
        object.end()
    }
}

/// The first 12 hexadecimal digits of `sha256:<hex>`.
pub(crate) fn short(digest: &str) -> String {
    digest.trim_start_matches("sha256:").chars().take(12).collect()
}
