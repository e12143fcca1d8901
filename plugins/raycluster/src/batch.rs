//! The batch scheduler the operator was configured with (`batchScheduler`, KubeRay's `--batch-scheduler`):
//! its PodGroup, kept before the Pods are reconciled, and what it adds to every Pod created. The rules are
//! `kuberay_rules::batch_scheduler`'s.

use k8s_openapi::api::core::v1::Pod;
use kuberay_plugin_sdk::Host;
use kuberay_rules::batch_scheduler::{
    BatchScheduler, Parent, scheduler_plugins,
    volcano::{self, SyncError},
};

use crate::{
    cluster::Creator,
    context::{Ctx, Failure},
};

/// KubeRay's `DoBatchSchedulingOnSubmission` for a RayCluster: Volcano's PodGroup (not for a RayJob's
/// cluster, which its RayJob's covers) created or resized, scheduler-plugins' created once for a gang.
pub fn submit<H: Host>(ctx: &Ctx<'_, H>) -> Result<(), Failure> {
    let cluster = &ctx.cluster;
    let wrote = match ctx.id.batch_scheduler {
        Some(BatchScheduler::Volcano) if Creator::of(cluster) != Creator::RayJob => {
            let size = volcano::cluster_size(&cluster.spec);
            volcano::sync(ctx.host, Parent::Cluster(cluster), &size).map_err(|e| match e {
                SyncError::Host(e) => Failure::from(e),
                SyncError::Invalid(message) => Failure::error(message),
            })?
        }
        Some(BatchScheduler::SchedulerPlugins) => scheduler_plugins::ensure(ctx.host, cluster)?,
        _ => false,
    };
    if wrote {
        ctx.mark_written();
    }
    Ok(())
}

/// KubeRay's `AddMetadataToChildResource` on a Pod of `group` (`headgroup` or a worker group's name).
pub fn decorate<H: Host>(ctx: &Ctx<'_, H>, pod: &mut Pod, group: &str) {
    if let Some(scheduler) = ctx.id.batch_scheduler {
        scheduler
            .decoration(Parent::Cluster(&ctx.cluster), group)
            .apply_to_pod(pod);
    }
}
