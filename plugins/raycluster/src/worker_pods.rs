//! One worker Pod created or deleted, with its event and scale bookkeeping: the steps both ways of scaling
//! a group share (`scaling` for single-host groups, `multi_host` for groups whose replicas span several
//! hosts).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;
use kuberay_crds::{WorkerGroupSpec, constants::labels, reasons};
use kuberay_plugin_sdk::{Event, Host, Kind};

use crate::{
    batch,
    consts::{action, reason},
    context::{Ctx, Failure},
    pod::worker::{self, Placement},
    pod_state,
};

pub(crate) fn key<H: Host>(ctx: &Ctx<'_, H>, pod: &Pod) -> String {
    format!("{}/{}", ctx.id.namespace, pod_state::name(pod))
}

/// Deletes a worker and records why.
pub fn delete_worker<H: Host>(ctx: &Ctx<'_, H>, pod: &Pod, note: String) -> Result<(), Failure> {
    match ctx.delete(pod) {
        Ok(()) => {
            ctx.event(
                Event::normal(reason::DELETED_WORKER_POD, action::DELETE, note)
                    .about(Kind::of::<Pod>(), pod_state::name(pod)),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_DELETE_WORKER_POD,
                action::DELETE,
                format!("Failed deleting worker Pod {}, {}", key(ctx, pod), e.message()),
            ));
            Err(Failure::replica(reasons::FAILED_DELETE_WORKER_POD, &e))
        }
    }
}

pub(crate) fn create_worker<H: Host>(
    ctx: &Ctx<'_, H>,
    group: &WorkerGroupSpec,
    placement: &Placement,
) -> Result<(), Failure> {
    crate::mtls::ready_for_pods(ctx)?;
    let mut pod = worker::build(&ctx.cluster, &ctx.id, group, placement).map_err(|e| Failure::pause(e.0))?;
    batch::decorate(ctx, &mut pod, &group.group_name);
    match ctx.create(&pod) {
        Ok(created) => {
            ctx.event(
                Event::normal(
                    reason::CREATED_WORKER_POD,
                    action::CREATE,
                    format!("Created worker Pod {}", key(ctx, &created)),
                )
                .about(Kind::of::<Pod>(), pod_state::name(&created)),
            );
            Ok(())
        }
        Err(e) => {
            ctx.event(Event::warning(
                reason::FAILED_TO_CREATE_WORKER_POD,
                action::CREATE,
                format!(
                    "Failed to create worker Pod for the cluster {}, {}",
                    ctx.key(),
                    e.message()
                ),
            ));
            Err(Failure::replica(reasons::FAILED_CREATE_WORKER_POD, &e))
        }
    }
}

pub(crate) fn replica_index(pod: &Pod) -> Option<usize> {
    pod_state::label(pod, labels::RAY_WORKER_GROUP_REPLICA_INDEX).and_then(|i| i.parse().ok())
}

/// The lowest index not in use, which is then taken.
pub(crate) fn take_index(used: &mut BTreeSet<usize>) -> usize {
    let mut index = 0;
    while used.contains(&index) {
        index += 1;
    }
    used.insert(index);
    index
}
