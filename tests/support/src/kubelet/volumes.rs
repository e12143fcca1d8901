//! A Pod's volumes on the host, as a kubelet prepares them before starting containers: `emptyDir`,
//! `hostPath`, `configMap`, `secret`, `downwardAPI` and `projected` (ServiceAccount token, ConfigMap,
//! Secret and downward API sources — what the ServiceAccount admission plugin's `kube-api-access-*` volume
//! uses). Each lives under the Pod's state directory and is removed with it; projected ServiceAccount tokens
//! are refreshed at 80% of their lifetime, as a kubelet rotates them.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use k8s_openapi::{
    NamespaceResourceScope,
    api::core::v1::{ConfigMap, DownwardAPIVolumeFile, KeyToPath, Pod, Secret, Volume, VolumeProjection},
};
use kube::{Api, Client, ResourceExt};
use tokio::task::JoinHandle;

use super::atomic_writer::{self, Owner, VolumeFile};

const DEFAULT_MODE: i32 = 0o644;
const DEFAULT_TOKEN_SECONDS: i64 = 3600;

/// The host directories of a Pod's volumes, by volume name.
pub struct PodVolumes {
    pub dir: PathBuf,
    pub paths: BTreeMap<String, PathBuf>,
    refresher: Option<JoinHandle<()>>,
}

impl Drop for PodVolumes {
    fn drop(&mut self) {
        if let Some(task) = self.refresher.take() {
            task.abort();
        }
    }
}

impl PodVolumes {
    /// Prepares every volume of `pod` under `dir` (the Pod's state directory), reading ConfigMaps, Secrets
    /// and tokens as the node (`client`).
    pub async fn prepare(client: &Client, pod: &Arc<Pod>, dir: &Path) -> Result<Self, String> {
        let owner = owner_of(pod);
        let mut paths = BTreeMap::new();
        let mut shortest_token: Option<i64> = None;
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            let path = prepare_one(client, pod, dir, volume, owner).await?;
            if let Some(seconds) = token_lifetime(volume) {
                shortest_token = Some(shortest_token.map_or(seconds, |s| s.min(seconds)));
            }
            paths.insert(volume.name.clone(), path);
        }
        let refresher = shortest_token.map(|seconds| {
            tokio::spawn(refresh_tokens(
                client.clone(),
                pod.clone(),
                dir.to_path_buf(),
                owner,
                seconds,
            ))
        });
        Ok(Self {
            dir: dir.to_path_buf(),
            paths,
            refresher,
        })
    }

    /// Removes the volumes (the Pod is gone from the node).
    pub fn remove(mut self) {
        if let Some(task) = self.refresher.take() {
            task.abort();
        }
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            tracing::warn!(dir = %self.dir.display(), error = %e, "could not remove a pod's volumes");
        }
    }
}

async fn prepare_one(
    client: &Client,
    pod: &Pod,
    dir: &Path,
    volume: &Volume,
    owner: Owner,
) -> Result<PathBuf, String> {
    let path = dir.join("volumes").join(&volume.name);
    let write = |files: BTreeMap<String, VolumeFile>| {
        atomic_writer::write(&path, &files, owner).map_err(|e| format!("writing volume {}: {e}", volume.name))
    };
    if volume.empty_dir.is_some() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(&path).map_err(|e| format!("creating emptyDir {}: {e}", volume.name))?;
        // A kubelet makes emptyDirs world-writable so any container user can use them.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))
            .map_err(|e| format!("emptyDir {}: {e}", volume.name))?;
    } else if let Some(host) = &volume.host_path {
        let host_dir = PathBuf::from(&host.path);
        if host.type_.as_deref() == Some("DirectoryOrCreate") {
            std::fs::create_dir_all(&host_dir).map_err(|e| format!("hostPath {}: {e}", host.path))?;
        }
        return Ok(host_dir);
    } else if let Some(cm) = &volume.config_map {
        let mode = cm.default_mode.unwrap_or(DEFAULT_MODE);
        let data = config_map_data(client, pod, &cm.name, cm.optional.unwrap_or(false)).await?;
        write(select(&data, cm.items.as_deref(), mode)?)?;
    } else if let Some(secret) = &volume.secret {
        let mode = secret.default_mode.unwrap_or(DEFAULT_MODE);
        let name = secret.secret_name.clone().unwrap_or_default();
        let data = secret_data(client, pod, &name, secret.optional.unwrap_or(false)).await?;
        write(select(&data, secret.items.as_deref(), mode)?)?;
    } else if let Some(downward) = &volume.downward_api {
        let mode = downward.default_mode.unwrap_or(DEFAULT_MODE);
        write(downward_files(
            pod,
            downward.items.as_deref().unwrap_or_default(),
            mode,
        )?)?;
    } else if let Some(projected) = &volume.projected {
        let mode = projected.default_mode.unwrap_or(DEFAULT_MODE);
        let sources = projected.sources.as_deref().unwrap_or_default();
        write(projected_files(client, pod, sources, mode, owner).await?)?;
    } else {
        return Err(format!(
            "volume {} has a type the simulated kubelet does not support",
            volume.name
        ));
    }
    Ok(path)
}

/// Who gets the files: the fsGroup if the Pod has one; else the Pod's user (a kubelet gives the token to
/// the Pod's non-root user so it can read it with mode 0600).
fn owner_of(pod: &Pod) -> Owner {
    let ctx = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let fs_group = ctx.and_then(|c| c.fs_group).and_then(|g| u32::try_from(g).ok());
    let container_user = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .find_map(|c| c.security_context.as_ref().and_then(|c| c.run_as_user));
    let user = container_user
        .or_else(|| ctx.and_then(|c| c.run_as_user))
        .and_then(|u| u32::try_from(u).ok());
    match fs_group {
        Some(gid) => Owner {
            uid: None,
            gid: Some(gid),
        },
        None => Owner { uid: user, gid: None },
    }
}

fn token_lifetime(volume: &Volume) -> Option<i64> {
    let sources = volume.projected.as_ref()?.sources.as_ref()?;
    sources
        .iter()
        .filter_map(|s| s.service_account_token.as_ref())
        .map(|t| t.expiration_seconds.unwrap_or(DEFAULT_TOKEN_SECONDS))
        .min()
}

async fn refresh_tokens(client: Client, pod: Arc<Pod>, dir: PathBuf, owner: Owner, seconds: i64) {
    let period = Duration::from_secs_f64(seconds.max(10) as f64 * 0.8);
    loop {
        tokio::time::sleep(period).await;
        for volume in pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()) {
            if token_lifetime(volume).is_none() {
                continue;
            }
            match prepare_one(&client, &pod, &dir, volume, owner).await {
                Ok(_) => {
                    tracing::info!(pod = %pod.name_any(), volume = %volume.name, "service account token refreshed")
                }
                Err(e) => tracing::warn!(pod = %pod.name_any(), error = %e, "could not refresh a token"),
            }
        }
    }
}

fn file(contents: impl Into<Vec<u8>>, mode: i32) -> VolumeFile {
    VolumeFile {
        contents: contents.into(),
        mode: u32::try_from(mode).unwrap_or(0o644) & 0o7777,
    }
}

/// All keys, or the listed items (each to its path, with its mode).
fn select(
    data: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    mode: i32,
) -> Result<BTreeMap<String, VolumeFile>, String> {
    let Some(items) = items else {
        return Ok(data
            .iter()
            .map(|(k, v)| (k.clone(), file(v.clone(), mode)))
            .collect());
    };
    items
        .iter()
        .map(|item| {
            let value = data
                .get(&item.key)
                .ok_or_else(|| format!("key {} not found", item.key))?;
            Ok((item.path.clone(), file(value.clone(), item.mode.unwrap_or(mode))))
        })
        .collect()
}

/// The keys and values of the ConfigMap or Secret `name` in the Pod's namespace (`what` names the kind in
/// errors); an empty map if it is missing and `optional`.
async fn keyed_data<K>(
    client: &Client,
    pod: &Pod,
    name: &str,
    optional: bool,
    what: &str,
    data: impl FnOnce(K) -> BTreeMap<String, Vec<u8>>,
) -> Result<BTreeMap<String, Vec<u8>>, String>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), &pod.namespace().unwrap_or_default());
    match api.get_opt(name).await {
        Ok(Some(object)) => Ok(data(object)),
        Ok(None) if optional => Ok(BTreeMap::new()),
        Ok(None) => Err(format!("{what} {name:?} not found")),
        Err(e) => Err(format!("reading {what} {name:?}: {e}")),
    }
}

async fn config_map_data(
    client: &Client,
    pod: &Pod,
    name: &str,
    optional: bool,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    keyed_data(client, pod, name, optional, "configmap", |cm: ConfigMap| {
        let text = cm
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()));
        let binary = cm
            .binary_data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0));
        text.chain(binary).collect()
    })
    .await
}

async fn secret_data(
    client: &Client,
    pod: &Pod,
    name: &str,
    optional: bool,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    keyed_data(client, pod, name, optional, "secret", |secret: Secret| {
        let binary = secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0));
        let text = secret
            .string_data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.into_bytes()));
        binary.chain(text).collect()
    })
    .await
}

fn downward_files(
    pod: &Pod,
    items: &[DownwardAPIVolumeFile],
    mode: i32,
) -> Result<BTreeMap<String, VolumeFile>, String> {
    items
        .iter()
        .map(|item| {
            let field = item
                .field_ref
                .as_ref()
                .ok_or_else(|| format!("downward API item {} has no fieldRef", item.path))?;
            let value = super::container_env::field_value(pod, &field.field_path, None)?;
            Ok((item.path.clone(), file(value, item.mode.unwrap_or(mode))))
        })
        .collect()
}

async fn projected_files(
    client: &Client,
    pod: &Pod,
    sources: &[VolumeProjection],
    mode: i32,
    owner: Owner,
) -> Result<BTreeMap<String, VolumeFile>, String> {
    let mut files = BTreeMap::new();
    for source in sources {
        if let Some(token) = &source.service_account_token {
            let seconds = token.expiration_seconds.unwrap_or(DEFAULT_TOKEN_SECONDS);
            let value = super::token::request(client, pod, token.audience.as_deref(), seconds).await?;
            // The Pod's own user gets the token privately; others read it through the group or mode.
            let token_mode = if owner.uid.is_some() { 0o600 } else { mode };
            files.insert(token.path.clone(), file(value, token_mode));
        }
        if let Some(cm) = &source.config_map {
            let data = config_map_data(client, pod, &cm.name, cm.optional.unwrap_or(false)).await?;
            files.extend(select(&data, cm.items.as_deref(), mode)?);
        }
        if let Some(secret) = &source.secret {
            let data = secret_data(client, pod, &secret.name, secret.optional.unwrap_or(false)).await?;
            files.extend(select(&data, secret.items.as_deref(), mode)?);
        }
        if let Some(downward) = &source.downward_api {
            files.extend(downward_files(
                pod,
                downward.items.as_deref().unwrap_or_default(),
                mode,
            )?);
        }
    }
    Ok(files)
}
