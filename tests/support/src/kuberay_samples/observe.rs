//! Watching the namespaces of many samples at once until each graph settles: one list of every recorded kind
//! per round for all of them, so that a hundred namespaces cost what one does.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use kube::{
    Api, Client,
    api::{DynamicObject, ListParams},
};
use serde_json::Value;
use tokio::time::Instant;

use super::{
    AppliedObject, Sample,
    graph::{self, Graph},
};
use crate::error::{Error, Result};

/// One sample applied into its namespace.
#[derive(Debug, Clone)]
pub struct Target {
    pub sample: Sample,
    pub namespace: String,
    pub applied: BTreeSet<AppliedObject>,
}

/// When a graph counts as settled.
#[derive(Debug, Clone)]
pub struct Settle {
    /// Time between two rounds.
    pub interval: Duration,
    /// A graph unchanged this long has settled.
    pub quiet: Duration,
    /// A graph the caller accepts ([`observe`]'s `accept`) must stay accepted this long,
    pub confirm: Duration,
    /// and is not accepted before this much time passed (a graph in which the operator did nothing yet may
    /// equal the expected one).
    pub accept_after: Duration,
    /// Longest wait for any graph.
    pub deadline: Duration,
}

/// Why watching a sample stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The caller accepted the graph for [`Settle::confirm`].
    Accepted,
    /// The graph did not change for [`Settle::quiet`].
    Quiet,
    /// [`Settle::deadline`] passed while it still changed.
    Deadline,
}

/// The last graph of a sample and why watching it stopped.
#[derive(Debug, Clone)]
pub struct Observed {
    pub graph: Graph,
    pub ended: Ended,
    /// From the start of [`observe`] to the end.
    pub after: Duration,
}

struct State {
    graph: Option<Graph>,
    changed: Instant,
    accepted_since: Option<Instant>,
    done: Option<(Ended, Duration)>,
}

/// How long the graph of a sample with a RayCronJob that fires every minute must stay unchanged once its
/// first RayJob exists: short enough to settle before the next minute's RayJob.
const TICK_QUIET: Duration = Duration::from_secs(10);

/// Whether the sample has a RayCronJob that fires every minute (`ray-cronjob.sample.yaml`): its graph has not
/// settled before the first tick's RayJob exists, and settles before the second's.
fn every_minute(sample: &Sample) -> bool {
    sample.documents.iter().any(|d| {
        d["kind"] == "RayCronJob"
            && d["spec"]["suspend"] != true
            && d["spec"]["schedule"]
                .as_str()
                .is_some_and(|s| s.split_whitespace().collect::<Vec<_>>() == ["*", "*", "*", "*", "*"])
    })
}

/// Lists the objects of every recorded kind in `namespaces`, by namespace.
pub async fn list(client: &Client, namespaces: &BTreeSet<&str>) -> Result<BTreeMap<String, Vec<Value>>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for resource in graph::resources() {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let list = api.list(&ListParams::default()).await.map_err(|e| match &e {
            kube::Error::Api(status) if status.code == 404 => Error::Other(format!(
                "{} is not served by the API server ({e}); the Gateway API CRDs come from `make gateway-api`, \
                 the PodGroup CRDs from `make batch-schedulers`",
                resource.api_version
            )),
            _ => Error::Kube(e),
        })?;
        for item in list.items {
            let Some(ns) = item.metadata.namespace.clone() else {
                continue;
            };
            if !namespaces.contains(ns.as_str()) {
                continue;
            }
            let mut value = serde_json::to_value(&item).map_err(|e| Error::Other(e.to_string()))?;
            value["apiVersion"] = Value::from(resource.api_version.clone());
            value["kind"] = Value::from(resource.kind.clone());
            out.entry(ns).or_default().push(value);
        }
    }
    Ok(out)
}

/// Watches every target until its graph settles: `accept(index, graph)` held for [`Settle::confirm`], or
/// unchanged for [`Settle::quiet`] (see [`every_minute`] for the exception), or [`Settle::deadline`]. Returns the last graph of each, in `targets`'
/// order. `progress` is told how many are done after every round.
pub async fn observe(
    client: &Client,
    targets: &[Target],
    settle: &Settle,
    mut accept: impl FnMut(usize, &Graph) -> bool,
    mut progress: impl FnMut(usize, usize),
) -> Result<Vec<Observed>> {
    let start = Instant::now();
    let namespaces: BTreeSet<&str> = targets.iter().map(|t| t.namespace.as_str()).collect();
    let mut states: Vec<State> = targets
        .iter()
        .map(|_| State {
            graph: None,
            changed: start,
            accepted_since: None,
            done: None,
        })
        .collect();
    let mut failures = 0;
    loop {
        let round = Instant::now();
        let objects = match list(client, &namespaces).await {
            Ok(objects) => {
                failures = 0;
                Some(objects)
            }
            // A busy API server may time out a list now and then; give up only when it keeps failing.
            Err(e) if failures < 5 && !matches!(&e, Error::Other(_)) => {
                failures += 1;
                tracing::warn!(error = %e, "listing the samples' objects failed; trying again");
                None
            }
            Err(e) => return Err(e),
        };
        let now = Instant::now();
        if let Some(objects) = objects {
            for (i, (target, state)) in targets.iter().zip(states.iter_mut()).enumerate() {
                if state.done.is_some() {
                    continue;
                }
                let empty = Vec::new();
                let graph = graph::normalize(
                    &target.sample.path,
                    &target.namespace,
                    &target.applied,
                    objects.get(&target.namespace).unwrap_or(&empty),
                );
                let ticking = every_minute(&target.sample);
                if state.graph.as_ref() != Some(&graph)
                    || (ticking && !graph.created.iter().any(|e| e.kind == "RayJob"))
                {
                    state.changed = now;
                }
                let quiet = if ticking {
                    settle.quiet.min(TICK_QUIET)
                } else {
                    settle.quiet
                };
                if now - start >= settle.accept_after && accept(i, &graph) {
                    let since = *state.accepted_since.get_or_insert(now);
                    if now - since >= settle.confirm {
                        state.done = Some((Ended::Accepted, now - start));
                    }
                } else {
                    state.accepted_since = None;
                }
                if state.done.is_none() && now - state.changed >= quiet {
                    state.done = Some((Ended::Quiet, now - start));
                }
                state.graph = Some(graph);
            }
        }
        if now - start >= settle.deadline {
            for state in &mut states {
                state.done.get_or_insert((Ended::Deadline, now - start));
            }
        }
        let done = states.iter().filter(|s| s.done.is_some()).count();
        progress(done, states.len());
        if done == states.len() {
            break;
        }
        tokio::time::sleep(settle.interval.saturating_sub(round.elapsed())).await;
    }
    Ok(targets
        .iter()
        .zip(states)
        .map(|(target, state)| {
            let (ended, after) = state.done.unwrap_or((Ended::Deadline, start.elapsed()));
            Observed {
                graph: state.graph.unwrap_or_else(|| Graph {
                    sample: target.sample.path.clone(),
                    applied: Vec::new(),
                    created: Vec::new(),
                }),
                ended,
                after,
            }
        })
        .collect())
}
