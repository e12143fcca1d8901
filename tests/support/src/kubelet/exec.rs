//! The container "runtime" for mapped images: `kuberay-testenv pod-exec <spec.json>` is the process the
//! kubelet starts for a container. Being a fresh single-threaded process it can safely enter the Pod's
//! network namespace, make a private mount namespace, bind the Pod's volumes and the image's paths at
//! their mount points, drop to the container's user and `execve` the entrypoint, so the container's process
//! keeps this pid (signals the kubelet sends reach it directly).
//!
//! Mount points that do not exist on the host are never created on the host: the nearest existing parent
//! directory is *shadowed* inside the private namespace by a directory in the Pod's state directory that
//! holds bind mounts of everything the parent held, plus the new (empty) mount points. Outside the
//! namespace nothing changes, and the shadow goes away with the Pod's state directory.

use std::{
    collections::BTreeSet,
    ffi::CString,
    fs::File,
    path::{Component, Path, PathBuf},
};

use nix::{
    mount::{MsFlags, mount},
    sched::{CloneFlags, setns, unshare},
    unistd::{Gid, Uid, chdir, execve, setgid, setgroups, setuid},
};
use serde::{Deserialize, Serialize};

/// Everything `pod-exec` needs to start one container process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ExecSpec {
    /// `/run/netns/<name>` of the Pod's sandbox.
    pub netns: PathBuf,
    pub mounts: Vec<MountSpec>,
    /// Where shadows of parents of missing mount points are built (inside the Pod's state directory).
    pub shadow_dir: PathBuf,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub groups: Vec<u32>,
    /// `argv[0]` is the entrypoint's path inside the container.
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub working_dir: Option<String>,
    /// An entrypoint that is not mounted at its image path: that path, and the host file run for it.
    #[serde(default)]
    pub entrypoint: Option<(String, PathBuf)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MountSpec {
    pub source: PathBuf,
    pub target: PathBuf,
    pub read_only: bool,
}

/// Sets up the container's namespaces and mounts and replaces this process with the entrypoint. Only
/// returns on failure.
pub fn exec(spec: &ExecSpec) -> Result<std::convert::Infallible, String> {
    let netns = File::open(&spec.netns).map_err(|e| format!("opening {}: {e}", spec.netns.display()))?;
    setns(&netns, CloneFlags::CLONE_NEWNET).map_err(|e| format!("entering the pod network: {e}"))?;
    unshare(CloneFlags::CLONE_NEWNS).map_err(|e| format!("creating a mount namespace: {e}"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("making mounts private: {e}"))?;
    let mut points = MountPoints {
        shadow_dir: spec.shadow_dir.clone(),
        ours: BTreeSet::new(),
        shadows: 0,
    };
    for m in &spec.mounts {
        let is_file = !m.source.is_dir();
        points.ensure(&m.target, is_file)?;
        bind(&m.source, &m.target, m.read_only)?;
    }
    drop_privileges(spec)?;
    run(spec, &spec.argv)
}

/// Changes to the container's working directory and replaces this process with `argv`, its program found
/// on the container's `PATH` when it names no path (as a container runtime does).
pub(super) fn run(spec: &ExecSpec, argv: &[String]) -> Result<std::convert::Infallible, String> {
    chdir(spec.working_dir.as_deref().unwrap_or("/")).map_err(|e| format!("changing directory: {e}"))?;
    let cstrings = |items: Vec<String>| -> Result<Vec<CString>, String> {
        items
            .into_iter()
            .map(|s| CString::new(s).map_err(|e| format!("argument with a NUL byte: {e}")))
            .collect()
    };
    let first = argv.first().ok_or("no command")?;
    let program = match &spec.entrypoint {
        Some((path, host)) if path == first => host.clone(),
        _ => find_program(first, &spec.env)?,
    };
    let args = cstrings(argv.to_vec())?;
    let env = cstrings(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect())?;
    let program = CString::new(program.into_os_string().into_encoded_bytes())
        .map_err(|e| format!("program path with a NUL byte: {e}"))?;
    execve(&program, &args, &env).map_err(|e| format!("executing {first}: {e}"))
}

/// `name` itself when it has a `/`, else the first executable file of that name on the environment's `PATH`.
fn find_program(name: &str, env: &[(String, String)]) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map_or("", |(_, v)| v.as_str());
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
        .ok_or_else(|| format!("executable file {name:?} not found in $PATH ({path})"))
}

fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), String> {
    let what = || format!("{} at {}", source.display(), target.display());
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(|e| format!("bind-mounting {}: {e}", what()))?;
    if read_only {
        mount(
            None::<&str>,
            target,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY,
            None::<&str>,
        )
        .map_err(|e| format!("making {} read-only: {e}", what()))?;
    }
    Ok(())
}

pub(super) fn drop_privileges(spec: &ExecSpec) -> Result<(), String> {
    if spec.uid.is_none() && spec.gid.is_none() && spec.groups.is_empty() {
        return Ok(());
    }
    let gid = spec.gid.unwrap_or(0);
    let mut groups: Vec<Gid> = vec![Gid::from_raw(gid)];
    groups.extend(spec.groups.iter().map(|g| Gid::from_raw(*g)));
    setgroups(&groups).map_err(|e| format!("setting groups: {e}"))?;
    setgid(Gid::from_raw(gid)).map_err(|e| format!("setting gid {gid}: {e}"))?;
    if let Some(uid) = spec.uid {
        setuid(Uid::from_raw(uid)).map_err(|e| format!("setting uid {uid}: {e}"))?;
    }
    Ok(())
}

/// Creates missing mount points without touching the host's directories (see the module docs).
struct MountPoints {
    shadow_dir: PathBuf,
    /// Directories (canonical) whose contents live in the Pod's state directory: writing there is safe.
    ours: BTreeSet<PathBuf>,
    shadows: usize,
}

impl MountPoints {
    fn ensure(&mut self, target: &Path, is_file: bool) -> Result<(), String> {
        if target.exists() {
            return Ok(());
        }
        if !target.is_absolute() {
            return Err(format!("mount point {} is not absolute", target.display()));
        }
        let mut parent = PathBuf::from("/");
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
        for component in target.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            if !rest.is_empty() || !parent.join(name).exists() {
                rest.push(name);
                continue;
            }
            parent = parent
                .join(name)
                .canonicalize()
                .map_err(|e| format!("resolving {}: {e}", parent.join(name).display()))?;
        }
        if !self.ours.contains(&parent) {
            self.shadow(&parent)?;
        }
        let mut path = parent;
        for (i, name) in rest.iter().enumerate() {
            path.push(name);
            let last = i + 1 == rest.len();
            if last && is_file {
                File::create(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            } else {
                std::fs::create_dir(&path).map_err(|e| format!("creating {}: {e}", path.display()))?;
                self.ours.insert(path.clone());
            }
        }
        Ok(())
    }

    /// Replaces `dir` (in this mount namespace only) by a directory of ours holding bind mounts of its entries.
    fn shadow(&mut self, dir: &Path) -> Result<(), String> {
        if dir == Path::new("/") {
            return Err(
                "cannot create a mount point directly under /; map a path below an existing directory".into(),
            );
        }
        self.shadows += 1;
        let shadow = self.shadow_dir.join(self.shadows.to_string());
        std::fs::create_dir_all(&shadow).map_err(|e| format!("creating {}: {e}", shadow.display()))?;
        let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let (from, to) = (entry.path(), shadow.join(entry.file_name()));
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_symlink() {
                if let Ok(link) = std::fs::read_link(&from) {
                    let _ = std::os::unix::fs::symlink(link, &to);
                }
                continue;
            }
            let made = if kind.is_dir() {
                std::fs::create_dir(&to).is_ok()
            } else {
                File::create(&to).is_ok()
            };
            if made {
                bind(&from, &to, false)?;
            }
        }
        if let Ok(meta) = std::fs::metadata(dir) {
            let _ = std::fs::set_permissions(&shadow, meta.permissions());
        }
        bind(&shadow, dir, false)?;
        self.ours.insert(dir.to_path_buf());
        Ok(())
    }
}
