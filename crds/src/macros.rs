//! The two pieces of plumbing every resource and every open-valued string of the API needs.

/// A string-valued enum whose set of values is open: the CRD accepts any string there (KubeRay validates none
/// of these fields), and Ray may report values KubeRay does not know yet. Unknown values are kept verbatim in
/// `Other` instead of failing deserialization, because one odd object must never stop the operator from
/// reading all the others. `From<&str>` maps known strings to their variants, so `Other` never holds one.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A value this crate does not know, kept as it was written.
            Other(String),
        }

        impl $name {
            /// The string written to the API.
            pub fn as_str(&self) -> &str {
                match self {
                    $( Self::$variant => $value, )+
                    Self::Other(value) => value,
                }
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                match value {
                    $( $value => Self::$variant, )+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                match Self::from(value.as_str()) {
                    Self::Other(_) => Self::Other(value),
                    known => known,
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;

            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Ok(Self::from(value))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                String::deserialize(deserializer).map(Self::from)
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string" })
            }
        }
    };
}

/// `k8s_openapi::Resource`, `ListableResource` and `Metadata` for a top-level kind, which is all
/// `kube::Api<K>` needs through kube's blanket impl (so this crate needs no `kube`), plus serde impls that
/// write `apiVersion` and `kind` like every Kubernetes object and refuse an object of another kind.
macro_rules! ray_resource {
    ($ty:ident, spec = $spec:ty, status = $status:ty, plural = $plural:literal, list_kind = $list_kind:literal) => {
        impl k8s_openapi::Resource for $ty {
            const API_VERSION: &'static str = $crate::API_VERSION;
            const GROUP: &'static str = $crate::GROUP;
            const KIND: &'static str = stringify!($ty);
            const VERSION: &'static str = $crate::VERSION;
            const URL_PATH_SEGMENT: &'static str = $plural;
            type Scope = k8s_openapi::NamespaceResourceScope;
        }

        impl k8s_openapi::ListableResource for $ty {
            const LIST_KIND: &'static str = $list_kind;
        }

        impl k8s_openapi::Metadata for $ty {
            type Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct as _;
                let fields = if self.status.is_some() { 5 } else { 4 };
                let mut object = serializer.serialize_struct(stringify!($ty), fields)?;
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

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct Wire {
                    api_version: Option<String>,
                    kind: Option<String>,
                    #[serde(default)]
                    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
                    #[serde(default)]
                    spec: $spec,
                    status: Option<$status>,
                }

                let wire = Wire::deserialize(deserializer)?;
                let expected = <Self as k8s_openapi::Resource>::API_VERSION;
                if let Some(api_version) = wire.api_version.filter(|v| v != expected) {
                    return Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(&api_version),
                        &expected,
                    ));
                }
                let expected = <Self as k8s_openapi::Resource>::KIND;
                if let Some(kind) = wire.kind.filter(|k| k != expected) {
                    return Err(serde::de::Error::invalid_value(
                        serde::de::Unexpected::Str(&kind),
                        &expected,
                    ));
                }
                Ok(Self {
                    metadata: wire.metadata,
                    spec: wire.spec,
                    status: wire.status,
                })
            }
        }
    };
}
