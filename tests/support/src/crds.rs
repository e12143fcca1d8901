//! Installing the project's CRDs. They are too large for client-side `kubectl apply` (its
//! last-applied-configuration annotation is capped at 256 KiB), so they are server-side applied.

use std::{path::Path, time::Duration};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, Client, ResourceExt,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams},
};
use serde::Deserialize;

use crate::error::{Error, Result};

const FIELD_MANAGER: &str = "kuberay-testenv";

/// Every CRD in the YAML files of `dir`.
pub fn load(dir: &Path) -> Result<Vec<CustomResourceDefinition>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(Error::io(format!("reading {}", dir.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    let mut crds = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(&file).map_err(Error::io(format!("reading {}", file.display())))?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value = serde_json::Value::deserialize(doc)
                .map_err(|e| Error::Other(format!("{}: {e}", file.display())))?;
            if value.is_null() {
                continue;
            }
            let crd: CustomResourceDefinition = serde_json::from_value(value)
                .map_err(|e| Error::Other(format!("{}: {e}", file.display())))?;
            crds.push(crd);
        }
    }
    Ok(crds)
}

/// Applies the CRDs of `dir` and waits until each is Established.
pub async fn install(client: &Client, dir: &Path) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crds = load(dir)?;
    for crd in &crds {
        api.patch(
            &crd.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(crd),
        )
        .await?;
    }
    for crd in &crds {
        let name = crd.name_any();
        let mut established = false;
        for _ in 0..100 {
            let current = api.get(&name).await?;
            established = current
                .status
                .and_then(|s| s.conditions)
                .into_iter()
                .flatten()
                .any(|c| c.type_ == "Established" && c.status == "True");
            if established {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !established {
            return Err(Error::Other(format!("CRD {name} did not become Established")));
        }
        wait_served(client, crd).await?;
    }
    Ok(())
}

/// Waits until objects of `crd` can be listed: for a moment after a CRD is Established the API server may
/// still answer 429 "storage is (re)initializing".
async fn wait_served(client: &Client, crd: &CustomResourceDefinition) -> Result<()> {
    let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
        return Ok(());
    };
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", crd.spec.group, version.name),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    for _ in 0..200 {
        match api.list(&ListParams::default().limit(1)).await {
            Err(kube::Error::Api(status)) if status.code == 429 => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
            Ok(_) => return Ok(()),
        }
    }
    Err(Error::Other(format!("{} is not served", crd.name_any())))
}
