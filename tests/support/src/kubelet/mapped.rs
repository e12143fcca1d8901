//! Pods whose containers use mapped images ([`crate::images`]): which containers run for real, and how each
//! is launched (argv, environment, user, and the mounts of its volumes and image paths).

use std::{
    net::Ipv4Addr,
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::ResourceExt;

use super::{Shared, container_env, exec::ExecSpec, exec::MountSpec, volumes::PodVolumes};
use crate::{images::ImageSpec, network::Sandbox, workloads::process::ContainerLaunch};

/// The Pod's containers whose image is mapped, with what stands in for the image.
pub fn mapped_containers(shared: &Shared, pod: &Pod) -> Vec<(Container, ImageSpec)> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let images =
        crate::images::ImageMap::load(shared.config.images_file.as_deref(), &shared.config.state_dir);
    spec.containers
        .iter()
        .filter_map(|c| {
            let image = images.get(c.image.as_deref()?)?;
            Some((c.clone(), image.clone()))
        })
        .collect()
}

/// Whether the Pod may be a RayJob's submitter: a Job's Pod that is not a Ray node.
pub fn is_submitter_pod(pod: &Pod) -> bool {
    pod.owner_references().iter().any(|o| o.kind == "Job") && !pod.labels().contains_key("ray.io/node-type")
}

/// The containers of a submitter Pod ([`is_submitter_pod`]) in a namespace with real Ray heads that run for
/// real, so that the submission reaches the real head by its Service name: those of a Ray image (KubeRay's
/// default submitter script), as the Ray image with the project's virtualenv first on `PATH` (`ray`,
/// `python`), and those of KubeRay's light-weight submitter image (`quay.io/kuberay/submitter`), as KubeRay's
/// `/submitter` built from its Go module. Elsewhere submitter Pods stay simulated (they complete at once).
pub fn ray_submitters(shared: &Shared, pod: &Pod) -> Vec<(Container, ImageSpec)> {
    let ray = shared
        .config
        .ray_cli
        .as_deref()
        .and_then(Path::parent)
        .map(|bin| {
            ImageSpec::new("/bin/bash")
                .at("/bin/bash")
                .with_host_commands()
                .with_env(
                    "PATH",
                    &format!("{}:{}", bin.display(), container_env::DEFAULT_PATH),
                )
        });
    let light = shared
        .config
        .light_submitter
        .as_ref()
        .map(|bin| ImageSpec::new(bin).at("/submitter"));
    pod.spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter_map(|c| {
            let image = c.image.as_deref()?;
            let spec = if is_ray_image(image) {
                ray.clone()
            } else if repository(image).ends_with("kuberay/submitter") {
                light.clone()
            } else {
                None
            };
            Some((c.clone(), spec?))
        })
        .collect()
}

/// An image reference without its tag and digest.
fn repository(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or_default();
    match without_digest.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => without_digest,
    }
}

/// Whether an image reference names one of Ray's images (`rayproject/ray`, `ray-ml`, `ray-llm`, from any
/// registry, with any tag or digest).
pub fn is_ray_image(image: &str) -> bool {
    let name = repository(image).rsplit('/').next().unwrap_or_default();
    matches!(name, "ray" | "ray-ml" | "ray-llm")
}

/// The Pod's state directory (volumes, container specs, mount shadows).
pub fn pod_dir(shared: &Shared, pod: &Pod) -> PathBuf {
    shared
        .config
        .state_dir
        .join("pods")
        .join(pod.uid().unwrap_or_else(|| pod.name_any()))
}

/// Links `<state dir>/pods/by-name/<namespace>_<pod>` to the Pod's directory, where `pod-enter` finds its
/// containers (a newer Pod of the same name takes the link over).
pub fn link_by_name(shared: &Shared, pod: &Pod) -> Result<(), String> {
    let link = by_name(shared, pod);
    let parent = link.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(pod_dir(shared, pod), &link)
        .map_err(|e| format!("linking {}: {e}", link.display()))
}

/// Removes the Pod's link unless a newer Pod of the same name has taken it over.
pub fn unlink_by_name(shared: &Shared, pod: &Pod) {
    let link = by_name(shared, pod);
    if std::fs::read_link(&link).is_ok_and(|target| target == pod_dir(shared, pod)) {
        let _ = std::fs::remove_file(&link);
    }
}

fn by_name(shared: &Shared, pod: &Pod) -> PathBuf {
    super::enter::pod_link(
        &shared.config.state_dir,
        &pod.namespace().unwrap_or_default(),
        &pod.name_any(),
    )
}

/// Where a container's output goes: `<state dir>/logs/pods/<namespace>_<pod>_<container>.log`.
pub fn log_path(state_dir: &Path, pod: &Pod, container: &str) -> PathBuf {
    state_dir.join("logs/pods").join(format!(
        "{}_{}_{container}.log",
        pod.namespace().unwrap_or_default(),
        pod.name_any()
    ))
}

/// The grace period of a deletion (or of the Pod's spec).
pub fn grace_period(pod: &Pod) -> Duration {
    let seconds = pod
        .metadata
        .deletion_grace_period_seconds
        .or_else(|| pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds))
        .unwrap_or(30);
    Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
}

/// How to start each mapped container; an error is the message of a `CreateContainerError`.
pub async fn launches(
    shared: &Shared,
    pod: &Pod,
    volumes: &PodVolumes,
    sandbox: &Sandbox,
    mapped: &[(Container, ImageSpec)],
) -> Result<Vec<ContainerLaunch>, String> {
    let mut out = Vec::new();
    for (container, image) in mapped {
        out.push(launch(shared, pod, volumes, sandbox.ip, &sandbox.netns, container, image).await?);
    }
    Ok(out)
}

async fn launch(
    shared: &Shared,
    pod: &Pod,
    volumes: &PodVolumes,
    ip: Ipv4Addr,
    netns: &str,
    container: &Container,
    image: &ImageSpec,
) -> Result<ContainerLaunch, String> {
    let name = &container.name;
    let env = container_env::build(
        &shared.kubelet,
        pod,
        container,
        &image.env,
        Some(ip),
        shared.config.api_service,
    )
    .await?;
    let entrypoint = image.entrypoint_in_container();
    let expand =
        |items: &[String]| -> Vec<String> { items.iter().map(|a| container_env::expand(a, &env)).collect() };
    let mut argv = match container.command.as_deref().unwrap_or_default() {
        [] => vec![entrypoint.clone()],
        // The image's own entrypoint named as the command (`command: ["/submitter"]`).
        [first, ..] if *first == entrypoint => expand(container.command.as_deref().unwrap_or_default()),
        command if image.host_commands => expand(command),
        _ => {
            return Err(format!(
                "container {name}: `command` is not supported for the mapped image {:?}: its entrypoint is \
                 the mapped executable at {entrypoint}, and the image map does not allow other commands \
                 (`hostCommands`); pass `args` only or name {entrypoint}",
                container.image.as_deref().unwrap_or_default()
            ));
        }
    };
    argv.extend(expand(container.args.as_deref().unwrap_or_default()));
    // The entrypoint is bind-mounted where the image has it, unless that is directly under `/` (KubeRay's
    // `/submitter`), where no mount point can be made without touching the host: it then runs from the host
    // path under its image path's name.
    let top_level = Path::new(&entrypoint).parent() == Some(Path::new("/"));
    let mut mounts = Vec::new();
    if !top_level {
        mounts.push(MountSpec {
            source: image.entrypoint.clone(),
            target: entrypoint.clone().into(),
            read_only: true,
        });
    }
    mounts.extend(image.paths.iter().map(|(target, source)| MountSpec {
        source: source.clone(),
        target: target.into(),
        read_only: true,
    }));
    for m in container.volume_mounts.iter().flatten() {
        let base = volumes
            .paths
            .get(&m.name)
            .ok_or_else(|| format!("container {name}: volume {} is not defined", m.name))?;
        let source = match m.sub_path.as_deref().filter(|s| !s.is_empty()) {
            Some(sub) => base.join(sub),
            None => base.clone(),
        };
        mounts.push(MountSpec {
            source,
            target: m.mount_path.clone().into(),
            read_only: m.read_only.unwrap_or(false),
        });
    }
    let (uid, gid, groups) = identity(pod, container)?;
    let dir = pod_dir(shared, pod);
    if let Some(text) = super::resolv::resolv_conf(pod, shared.config.cluster_dns) {
        let file = dir.join("resolv.conf");
        std::fs::write(&file, text).map_err(|e| format!("writing {}: {e}", file.display()))?;
        mounts.push(MountSpec {
            source: file,
            target: "/etc/resolv.conf".into(),
            read_only: false,
        });
    }
    Ok(ContainerLaunch {
        container: container.clone(),
        spec: ExecSpec {
            netns: PathBuf::from(format!("/run/netns/{netns}")),
            mounts,
            shadow_dir: dir.join("shadow").join(name),
            uid,
            gid,
            groups,
            argv,
            env,
            working_dir: container.working_dir.clone(),
            entrypoint: top_level.then(|| (entrypoint, image.entrypoint.clone())),
        },
        spec_file: dir.join(format!("container-{name}.json")),
        log: log_path(&shared.config.state_dir, pod, name),
    })
}

type Identity = (Option<u32>, Option<u32>, Vec<u32>);

/// The user, group and supplementary groups of a container (its securityContext over the Pod's).
fn identity(pod: &Pod, container: &Container) -> Result<Identity, String> {
    let pod_ctx = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let ctx = container.security_context.as_ref();
    let id = |v: Option<i64>| v.and_then(|n| u32::try_from(n).ok());
    let uid = id(ctx
        .and_then(|c| c.run_as_user)
        .or_else(|| pod_ctx.and_then(|c| c.run_as_user)));
    let gid = id(ctx
        .and_then(|c| c.run_as_group)
        .or_else(|| pod_ctx.and_then(|c| c.run_as_group)));
    let non_root = ctx
        .and_then(|c| c.run_as_non_root)
        .or_else(|| pod_ctx.and_then(|c| c.run_as_non_root))
        .unwrap_or(false);
    if non_root && uid.unwrap_or(0) == 0 {
        return Err(format!(
            "container {} has runAsNonRoot but would run as root: set runAsUser",
            container.name
        ));
    }
    let mut groups: Vec<u32> = pod_ctx
        .and_then(|c| c.fs_group)
        .and_then(|g| u32::try_from(g).ok())
        .into_iter()
        .collect();
    groups.extend(
        pod_ctx
            .and_then(|c| c.supplemental_groups.clone())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|g| u32::try_from(g).ok()),
    );
    Ok((uid, gid.or(uid.map(|_| 0)), groups))
}

#[cfg(test)]
mod tests {
    use super::is_ray_image;

    #[test]
    fn ray_images_are_known_by_their_repository_name() {
        for image in [
            "rayproject/ray:2.46.0",
            "rayproject/ray:2.46.0-py310",
            "docker.io/rayproject/ray-ml:latest",
            "localhost:5000/team/ray@sha256:abc",
            "rayproject/ray-llm",
        ] {
            assert!(is_ray_image(image), "{image}");
        }
        for image in [
            "quay.io/kuberay/submitter:v1.5.1",
            "busybox",
            "ray-registry:5000/tools:1",
            "my/raytools",
        ] {
            assert!(!is_ray_image(image), "{image}");
        }
    }
}
