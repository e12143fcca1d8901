//! Volumes: each API `Volume` is a Pod volume plus a mount in the Ray container. The reverse reads every
//! volume back with the mount of the same name, read-only flag and propagation included (KubeRay drops
//! them for ConfigMap, Secret and emptyDir volumes, and reads a Secret's items from a nil ConfigMap).

use std::collections::BTreeMap;

use k8s_openapi::{
    api::core::v1::{
        ConfigMapVolumeSource, EmptyDirVolumeSource, EphemeralVolumeSource, HostPathVolumeSource, KeyToPath,
        PersistentVolumeClaimSpec, PersistentVolumeClaimTemplate, PersistentVolumeClaimVolumeSource,
        PodTemplateSpec, SecretVolumeSource, Volume, VolumeMount, VolumeResourceRequirements,
    },
    apimachinery::pkg::{api::resource::Quantity, apis::meta::v1::ObjectMeta},
};

use super::{labels, non_empty};
use crate::api::{
    self,
    volume::{AccessMode, HostPathType, MountPropagationMode, VolumeType},
};

const HOST_TO_CONTAINER: &str = "HostToContainer";
const BIDIRECTIONAL: &str = "Bidirectional";

/// The Pod volumes and the Ray container's mounts of `volumes`, in their order.
pub(crate) fn to_volumes(volumes: &[api::Volume]) -> (Vec<Volume>, Vec<VolumeMount>) {
    volumes.iter().map(|v| (volume(v), to_mount(v))).unzip()
}

/// Only the mounts (the autoscaler container mounts volumes of the head Pod).
pub(crate) fn to_mounts(volumes: &[api::Volume]) -> Vec<VolumeMount> {
    volumes.iter().map(to_mount).collect()
}

fn to_mount(v: &api::Volume) -> VolumeMount {
    let propagation = match v.mount_propagation_mode() {
        MountPropagationMode::None => None,
        MountPropagationMode::Hosttocontainer => Some(HOST_TO_CONTAINER.to_owned()),
        MountPropagationMode::Bidirectional => Some(BIDIRECTIONAL.to_owned()),
    };
    VolumeMount {
        name: v.name.clone(),
        mount_path: v.mount_path.clone(),
        read_only: v.read_only.then_some(true),
        mount_propagation: propagation,
        ..Default::default()
    }
}

fn volume(v: &api::Volume) -> Volume {
    let mut volume = Volume {
        name: v.name.clone(),
        ..Default::default()
    };
    match v.volume_type() {
        VolumeType::Configmap => {
            volume.config_map = Some(ConfigMapVolumeSource {
                name: v.source.clone(),
                items: items(v),
                ..Default::default()
            });
        }
        VolumeType::Secret => {
            volume.secret = Some(SecretVolumeSource {
                secret_name: Some(v.source.clone()),
                items: items(v),
                ..Default::default()
            });
        }
        VolumeType::EmptyDir => {
            volume.empty_dir = Some(EmptyDirVolumeSource {
                size_limit: non_empty(&v.storage).map(Quantity),
                medium: None,
            });
        }
        VolumeType::HostPath => {
            let kind = match v.host_path_type() {
                HostPathType::Directory => "Directory",
                HostPathType::File => "File",
            };
            volume.host_path = Some(HostPathVolumeSource {
                path: v.source.clone(),
                type_: Some(kind.to_owned()),
            });
        }
        VolumeType::PersistentVolumeClaim => {
            volume.persistent_volume_claim = Some(PersistentVolumeClaimVolumeSource {
                claim_name: v.source.clone(),
                read_only: v.read_only.then_some(true),
            });
        }
        VolumeType::Ephemeral => volume.ephemeral = Some(ephemeral(v)),
    }
    volume
}

fn items(v: &api::Volume) -> Option<Vec<KeyToPath>> {
    let items: BTreeMap<_, _> = v.items.iter().collect();
    super::non_empty_vec(
        items
            .into_iter()
            .map(|(key, path)| KeyToPath {
                key: key.clone(),
                path: path.clone(),
                mode: None,
            })
            .collect(),
    )
}

/// A generic ephemeral volume: a claim of `storage`, labelled as KubeRay labels it.
fn ephemeral(v: &api::Volume) -> EphemeralVolumeSource {
    let access_mode = match v.access_mode() {
        AccessMode::Rwo => "ReadWriteOnce",
        AccessMode::Rox => "ReadOnlyMany",
        AccessMode::Rwx => "ReadWriteMany",
    };
    let claim = PersistentVolumeClaimTemplate {
        metadata: Some(ObjectMeta {
            labels: Some(BTreeMap::from([(
                labels::MANAGED_BY.to_owned(),
                labels::MANAGED_BY_VALUE.to_owned(),
            )])),
            ..Default::default()
        }),
        spec: PersistentVolumeClaimSpec {
            access_modes: Some(vec![access_mode.to_owned()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    Quantity(v.storage.clone()),
                )])),
                limits: None,
            }),
            storage_class_name: non_empty(&v.storage_class_name),
            ..Default::default()
        },
    };
    EphemeralVolumeSource {
        volume_claim_template: Some(claim),
    }
}

/// The template's volumes as the API's, each with its mount in any container. Volume kinds the API cannot
/// express are left out.
pub(crate) fn from_pod_template(template: &PodTemplateSpec) -> Vec<api::Volume> {
    let Some(spec) = &template.spec else {
        return Vec::new();
    };
    let mounts: Vec<&VolumeMount> = spec
        .containers
        .iter()
        .flat_map(|c| c.volume_mounts.iter().flatten())
        .collect();
    spec.volumes
        .iter()
        .flatten()
        .filter_map(|v| {
            let mount = mounts.iter().find(|m| m.name == v.name).copied();
            from_volume(v, mount)
        })
        .collect()
}

fn from_volume(v: &Volume, mount: Option<&VolumeMount>) -> Option<api::Volume> {
    let mut out = api::Volume {
        name: v.name.clone(),
        mount_path: mount.map(|m| m.mount_path.clone()).unwrap_or_default(),
        read_only: mount.and_then(|m| m.read_only).unwrap_or(false),
        ..Default::default()
    };
    out.set_mount_propagation_mode(match mount.and_then(|m| m.mount_propagation.as_deref()) {
        Some(HOST_TO_CONTAINER) => MountPropagationMode::Hosttocontainer,
        Some(BIDIRECTIONAL) => MountPropagationMode::Bidirectional,
        _ => MountPropagationMode::None,
    });
    if let Some(c) = &v.config_map {
        out.set_volume_type(VolumeType::Configmap);
        out.source = c.name.clone();
        out.items = from_items(c.items.as_ref());
    } else if let Some(s) = &v.secret {
        out.set_volume_type(VolumeType::Secret);
        out.source = s.secret_name.clone().unwrap_or_default();
        out.items = from_items(s.items.as_ref());
    } else if let Some(e) = &v.empty_dir {
        out.set_volume_type(VolumeType::EmptyDir);
        out.storage = e.size_limit.as_ref().map(|q| q.0.clone()).unwrap_or_default();
    } else if let Some(h) = &v.host_path {
        out.set_volume_type(VolumeType::HostPath);
        out.source = h.path.clone();
        out.set_host_path_type(match h.type_.as_deref() {
            Some("File") => HostPathType::File,
            _ => HostPathType::Directory,
        });
    } else if let Some(p) = &v.persistent_volume_claim {
        out.set_volume_type(VolumeType::PersistentVolumeClaim);
        out.source = p.claim_name.clone();
        out.read_only |= p.read_only.unwrap_or(false);
    } else if let Some(e) = &v.ephemeral {
        out.set_volume_type(VolumeType::Ephemeral);
        from_ephemeral(e, &mut out);
    } else {
        return None;
    }
    Some(out)
}

fn from_items(items: Option<&Vec<KeyToPath>>) -> std::collections::HashMap<String, String> {
    items
        .into_iter()
        .flatten()
        .map(|i| (i.key.clone(), i.path.clone()))
        .collect()
}

fn from_ephemeral(e: &EphemeralVolumeSource, out: &mut api::Volume) {
    let Some(spec) = e.volume_claim_template.as_ref().map(|t| &t.spec) else {
        return;
    };
    out.storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|q| q.0.clone())
        .unwrap_or_default();
    out.storage_class_name = spec.storage_class_name.clone().unwrap_or_default();
    out.set_access_mode(
        match spec
            .access_modes
            .as_ref()
            .and_then(|m| m.first())
            .map(String::as_str)
        {
            Some("ReadOnlyMany") => AccessMode::Rox,
            Some("ReadWriteMany") => AccessMode::Rwx,
            _ => AccessMode::Rwo,
        },
    );
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec};

    use super::*;

    use crate::convert::fixtures::volumes as every_kind;

    fn template(volumes: &[api::Volume]) -> PodTemplateSpec {
        let (volumes, mounts) = to_volumes(volumes);
        PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "ray-head".into(),
                    volume_mounts: Some(mounts),
                    ..Default::default()
                }],
                volumes: Some(volumes),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn every_kind_becomes_the_volume_kuberay_builds() {
        let t = template(&every_kind());
        let spec = t.spec.unwrap_or_default();
        let vols = spec.volumes.unwrap_or_default();
        let cm = vols[0].config_map.as_ref().unwrap();
        assert_eq!(cm.name, "code-cm");
        assert_eq!(cm.items.as_ref().unwrap()[0].path, "main.py");
        assert_eq!(
            vols[1].secret.as_ref().unwrap().secret_name.as_deref(),
            Some("creds-secret")
        );
        assert_eq!(
            vols[2].empty_dir.as_ref().unwrap().size_limit,
            Some(Quantity("5Gi".into()))
        );
        let host = vols[3].host_path.as_ref().unwrap();
        assert_eq!(
            (host.path.as_str(), host.type_.as_deref()),
            ("/var/log/ray", Some("File"))
        );
        assert_eq!(
            vols[4].persistent_volume_claim.as_ref().unwrap().read_only,
            Some(true)
        );
        let claim = vols[5]
            .ephemeral
            .as_ref()
            .unwrap()
            .volume_claim_template
            .as_ref()
            .unwrap();
        assert_eq!(claim.spec.access_modes, Some(vec!["ReadWriteMany".to_owned()]));
        assert_eq!(claim.spec.storage_class_name.as_deref(), Some("fast"));
        assert_eq!(
            claim.metadata.as_ref().and_then(|m| m.labels.as_ref()).unwrap()[labels::MANAGED_BY],
            labels::MANAGED_BY_VALUE
        );
        let mounts = spec.containers[0].volume_mounts.clone().unwrap_or_default();
        assert_eq!(mounts[0].read_only, Some(true));
        assert_eq!(mounts[3].mount_propagation.as_deref(), Some(HOST_TO_CONTAINER));
        assert_eq!(mounts[4].mount_propagation.as_deref(), Some(BIDIRECTIONAL));
    }

    #[test]
    fn every_kind_round_trips() {
        assert_eq!(from_pod_template(&template(&every_kind())), every_kind());
    }

    #[test]
    fn a_volume_without_mount_reads_back_without_path() {
        let mut t = template(&every_kind()[..1]);
        if let Some(spec) = t.spec.as_mut() {
            spec.containers[0].volume_mounts = None;
        }
        let back = from_pod_template(&t);
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].mount_path, "");
    }
}
