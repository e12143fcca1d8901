//! `kuberay-testenv pod-enter`: runs a command in a running container of a mapped image, as a container
//! runtime does for `kubectl exec`. The command joins the network and mount namespaces of the container's
//! process (so it sees the Pod's address and the container's volumes and image paths), takes the container's
//! user, groups, environment and working directory, and replaces this process, whose standard streams are
//! the exec session's.
//!
//! The kubelet keeps, per Pod, a link `<state dir>/pods/by-name/<namespace>_<pod>` to the Pod's directory,
//! which holds each running container's spec (`container-<name>.json`) and process id (`container-<name>.pid`).

use std::{
    fs::File,
    path::{Path, PathBuf},
};

use nix::sched::{CloneFlags, setns};

use super::exec::{ExecSpec, drop_privileges, run};

/// The directory of links from `<namespace>_<pod>` to Pod directories.
const BY_NAME: &str = "pods/by-name";

/// The link to a Pod's directory.
pub(crate) fn pod_link(state_dir: &Path, namespace: &str, pod: &str) -> PathBuf {
    state_dir.join(BY_NAME).join(format!("{namespace}_{pod}"))
}

/// The spec and process id of `container` of `pod` (`<namespace>/<name>`).
pub fn locate(state_dir: &Path, pod: &str, container: &str) -> Result<(ExecSpec, i32), String> {
    let (namespace, name) = pod
        .split_once('/')
        .ok_or_else(|| format!("pod {pod:?} is not <namespace>/<name>"))?;
    let dir = pod_link(state_dir, namespace, name);
    let missing = || {
        format!(
            "container {container} of pod {pod} is not running a mapped image on this node (only containers \
             of mapped images run for real, so only they can run commands)"
        )
    };
    let spec = std::fs::read(dir.join(format!("container-{container}.json"))).map_err(|_| missing())?;
    let spec: ExecSpec = serde_json::from_slice(&spec).map_err(|e| format!("container spec: {e}"))?;
    let pid =
        std::fs::read_to_string(dir.join(format!("container-{container}.pid"))).map_err(|_| missing())?;
    let pid: i32 = pid
        .trim()
        .parse()
        .map_err(|e| format!("container process id {pid:?}: {e}"))?;
    Ok((spec, pid))
}

/// Joins the container's namespaces and identity and runs `command`. Only returns on failure.
pub fn enter(spec: &ExecSpec, pid: i32, command: &[String]) -> Result<std::convert::Infallible, String> {
    let open = |kind: &str| {
        let path = format!("/proc/{pid}/ns/{kind}");
        File::open(&path).map_err(|e| format!("the container's process is gone ({path}: {e})"))
    };
    // Both handles are opened first: once in the mount namespace, /proc may be another.
    let (net, mnt) = (open("net")?, open("mnt")?);
    setns(&net, CloneFlags::CLONE_NEWNET).map_err(|e| format!("entering the pod network: {e}"))?;
    setns(&mnt, CloneFlags::CLONE_NEWNS).map_err(|e| format!("entering the container's mounts: {e}"))?;
    drop_privileges(spec)?;
    run(spec, command)
}
