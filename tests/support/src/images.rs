//! Image mapping: which container images the simulated kubelet runs for real, as a host process.
//!
//! A Pod container whose `image` is mapped runs the mapped host executable in place of the image's
//! ENTRYPOINT (the container's `args` are its arguments), in the Pod's network namespace and in a private
//! mount namespace where host paths stand in for the image's files. Pods whose images are not mapped keep
//! the simulated behaviour.
//!
//! Tests hand a map to a running environment with [`crate::TestEnv::map_images`]; `kuberay-testenv up`
//! reads the YAML file named by [`IMAGES_ENV`]:
//!
//! ```yaml
//! kuberay-wasm:0.1.0:
//!   entrypoint: /work/main/target/debug/kuberay-wasm
//!   entrypointPath: /usr/local/bin/kuberay-wasm   # default: /usr/local/bin/<file name>
//!   paths:
//!     /opt/kuberay-wasm/plugins: /work/main/.local/plugins
//! curlimages/curl:latest:
//!   entrypoint: /usr/bin/curl
//!   hostCommands: true      # `command: ["sleep", "infinity"]` runs the host's sleep
//! ```

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The environment variable naming the image-map file `kuberay-testenv up`/`run` reads.
pub const IMAGES_ENV: &str = "KUBERAY_TESTENV_IMAGES";

/// The directory of an environment's state dir where [`crate::TestEnv::map_images`] drops maps.
pub const IMAGES_DIR: &str = "images.d";

/// Image references (exact strings, such as `kuberay-wasm:0.1.0`) and what stands in for each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ImageMap {
    pub images: BTreeMap<String, ImageSpec>,
}

/// What stands in for one image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImageSpec {
    /// The host executable that runs as the image's ENTRYPOINT.
    pub entrypoint: PathBuf,
    /// Where the entrypoint appears inside the container (it is bind-mounted there and run from there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_path: Option<String>,
    /// Image paths (absolute) and the host files or directories bind-mounted (read-only) there.
    #[serde(default)]
    pub paths: BTreeMap<String, PathBuf>,
    /// Whether a container's `command` may name other programs, found in the container's view of the host's
    /// files (for tool images such as `curlimages/curl`, whose Pods run `sleep infinity`). Without it, only
    /// the entrypoint may be named.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_commands: bool,
    /// The image's `ENV` (`PATH` replaces the default search path); the container's `env` overrides it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl ImageSpec {
    pub fn new(entrypoint: impl Into<PathBuf>) -> Self {
        Self {
            entrypoint: entrypoint.into(),
            entrypoint_path: None,
            paths: BTreeMap::new(),
            host_commands: false,
            env: BTreeMap::new(),
        }
    }

    /// Sets a variable of the image's `ENV`.
    pub fn with_env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_string(), value.to_string());
        self
    }

    /// Lets containers run other programs of the host with `command` (see [`ImageSpec::host_commands`]).
    pub fn with_host_commands(mut self) -> Self {
        self.host_commands = true;
        self
    }

    /// Also bind-mounts `host` at `image_path`.
    pub fn with_path(mut self, image_path: &str, host: impl Into<PathBuf>) -> Self {
        self.paths.insert(image_path.to_string(), host.into());
        self
    }

    /// Puts the entrypoint at `image_path` inside the container.
    pub fn at(mut self, image_path: &str) -> Self {
        self.entrypoint_path = Some(image_path.to_string());
        self
    }

    /// The entrypoint's path inside the container.
    pub fn entrypoint_in_container(&self) -> String {
        self.entrypoint_path.clone().unwrap_or_else(|| {
            let name = self
                .entrypoint
                .file_name()
                .map_or_else(|| "entrypoint".into(), |n| n.to_string_lossy().into_owned());
            format!("/usr/local/bin/{name}")
        })
    }
}

impl ImageMap {
    /// A map of one image.
    pub fn one(image: &str, spec: ImageSpec) -> Self {
        let mut map = Self::default();
        map.images.insert(image.to_string(), spec);
        map
    }

    pub fn get(&self, image: &str) -> Option<&ImageSpec> {
        self.images.get(image)
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(Error::io(format!("reading {}", path.display())))?;
        serde_yaml::from_str(&text).map_err(|e| Error::Other(format!("image map {}: {e}", path.display())))
    }

    pub fn to_yaml(&self) -> Result<String> {
        serde_yaml::to_string(self).map_err(|e| Error::Other(e.to_string()))
    }

    /// Every map the kubelet knows now: the `KUBERAY_TESTENV_IMAGES` file, then the files tests dropped in
    /// `<state dir>/images.d` (later files win). Unreadable files are skipped with a warning.
    pub fn load(env_file: Option<&Path>, state_dir: &Path) -> Self {
        let mut files: Vec<PathBuf> = env_file.map(Path::to_path_buf).into_iter().collect();
        let mut dropped: Vec<PathBuf> = std::fs::read_dir(state_dir.join(IMAGES_DIR))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        dropped.sort();
        files.extend(dropped);
        let mut map = Self::default();
        for file in files {
            match Self::read(&file) {
                Ok(more) => map.images.extend(more.images),
                Err(e) => tracing::warn!(error = %e, "ignoring an image map"),
            }
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_maps_read_as_documented() {
        let yaml = "kuberay-wasm:0.1.0:\n  entrypoint: /bin/true\n  paths:\n    /opt/p: /tmp/p\n";
        let map: ImageMap = serde_yaml::from_str(yaml).unwrap_or_default();
        let spec = map.get("kuberay-wasm:0.1.0").cloned();
        assert_eq!(
            spec,
            Some(ImageSpec::new("/bin/true").with_path("/opt/p", "/tmp/p"))
        );
        assert_eq!(
            ImageSpec::new("/x/kuberay-wasm").entrypoint_in_container(),
            "/usr/local/bin/kuberay-wasm"
        );
    }
}
