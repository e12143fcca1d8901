//! One term of the controllers: a fresh Kubernetes bridge (watch caches, discovery, event recorders) whose
//! writes pass the term's fence, one controller per reconciled kind (more as plugins for new kinds load),
//! readiness once the caches of the kinds loaded at the start have synced, and an orderly stop. Without
//! leader election there is one term, from start-up to shutdown; with it, one per leadership.

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use kube::Client;
use kuberay_plugin_sdk::Kind;
use tokio::{
    sync::{oneshot, watch},
    task::JoinSet,
};

use super::stopped;
use crate::{
    controller::{self, Failures, Permits, Shared},
    kubernetes::{KubeBridge, WatchScope},
    leadership::Fence,
    metrics::Metrics,
    raybridge::RayBridge,
    sandbox::Sandbox,
    server::Readiness,
};

/// What every term is built from.
pub(super) struct TermContext {
    pub sandbox: Arc<Sandbox>,
    pub ray: Arc<RayBridge>,
    pub client: Client,
    pub scope: WatchScope,
    pub instance: Option<String>,
    pub metrics: Metrics,
    pub queue: controller::QueueConfig,
    pub readiness: Arc<Readiness>,
}

/// The first wait before retrying a controller whose kind the API server does not serve; later waits grow
/// linearly to six times this.
const CONTROLLER_START_RETRY: Duration = Duration::from_secs(5);

/// How long running reconciles may take to finish when a term stops.
const DRAIN: Duration = Duration::from_secs(30);

/// Runs controllers for every kind in `kinds` (and those added to it) until `stop` resolves, then stops
/// them, letting running reconciles finish (within [`DRAIN`]), publishes queued events and drops the caches.
pub(super) async fn run(
    context: &TermContext,
    fence: Fence,
    mut kinds: watch::Receiver<BTreeSet<Kind>>,
    stop: impl Future<Output = ()>,
) {
    let bridge = KubeBridge::new(
        context.client.clone(),
        context.scope.clone(),
        context.instance.clone(),
        context.metrics.clone(),
        fence,
    );
    context.metrics.kuberay.list_from(Some(bridge.clone()));
    let shared = Arc::new(Shared {
        sandbox: context.sandbox.clone(),
        bridge: bridge.clone(),
        ray: context.ray.clone(),
        permits: Permits::new(usize::from(context.queue.concurrency)),
        failures: Failures::default(),
        conditionless: Default::default(),
        metrics: context.metrics.clone(),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut running = kinds.borrow_and_update().clone();
    let registrations: Vec<_> = running
        .iter()
        .map(|kind| start(kind.clone(), &shared, context.queue, &stop_rx, &mut tasks))
        .collect();
    {
        let (bridge, readiness) = (bridge.clone(), context.readiness.clone());
        tasks.spawn(async move {
            for registered in registrations {
                let _ = registered.await;
            }
            bridge.caches.wait_ready().await;
            readiness.set_synced(true);
            tracing::info!("caches synced; ready");
        });
    }
    let added = async {
        while kinds.changed().await.is_ok() {
            let now = kinds.borrow_and_update().clone();
            for kind in now.difference(&running) {
                drop(start(kind.clone(), &shared, context.queue, &stop_rx, &mut tasks));
            }
            running = now;
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = stop => {}
        () = added => {}
    }
    tracing::info!("stopping the controllers: letting running reconciles finish");
    context.readiness.set_synced(false);
    let _ = stop_tx.send(true);
    if tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} })
        .await
        .is_err()
    {
        tracing::warn!("some tasks did not stop within {DRAIN:?}");
    }
    bridge.events.flush(Duration::from_secs(5)).await;
    context.metrics.kuberay.list_from(None);
    bridge.caches.shutdown();
}

/// Starts `kind`'s controller; the receiver hears when it has registered its caches (or failed its first
/// start), so that readiness waits for exactly the caches of the kinds loaded when the term began.
fn start(
    kind: Kind,
    shared: &Arc<Shared>,
    queue: controller::QueueConfig,
    stop: &watch::Receiver<bool>,
    tasks: &mut JoinSet<()>,
) -> oneshot::Receiver<()> {
    let (shared, stop) = (shared.clone(), stop.clone());
    let (registered_tx, registered_rx) = oneshot::channel();
    tasks.spawn(async move {
        // A kind whose CRD is not installed yet (or not yet in discovery, right after it was applied) is
        // retried rather than given up: the operator must not need a restart once the CRD is there.
        let mut attempt: u32 = 0;
        let mut registered = Some(registered_tx);
        loop {
            let run = controller::run(kind.clone(), shared.clone(), queue, stopped(stop.clone()), &mut registered);
            let Err(e) = run.await else {
                break;
            };
            registered = None;
            attempt = attempt.saturating_add(1);
            let retry_in = CONTROLLER_START_RETRY.saturating_mul(attempt.min(6));
            tracing::warn!(%kind, error = %e, ?retry_in, "controller could not start; is the kind's CRD installed?");
            tokio::select! {
                () = tokio::time::sleep(retry_in) => {}
                () = stopped(stop.clone()) => return,
            }
        }
    });
    registered_rx
}
