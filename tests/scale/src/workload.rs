//! The workload: RayClusters (1 head + 2 workers, no Ray processes) or HTTPMode RayJobs on fake heads,
//! created at a steady rate, and a watch that says when all of them have reached their goal.

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams},
    runtime::watcher::{self, watcher},
};
use serde_json::{Value, json};

/// What one run creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    RayClusters,
    RayJobs,
}

impl Workload {
    pub fn kind(self) -> &'static str {
        match self {
            Workload::RayClusters => "RayCluster",
            Workload::RayJobs => "RayJob",
        }
    }

    fn resource(self) -> ApiResource {
        let gvk = GroupVersionKind::gvk("ray.io", "v1", self.kind());
        ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", self.kind().to_lowercase()))
    }

    /// Whether the object reached the goal, and whether that goal is a failure.
    fn outcome(self, object: &DynamicObject) -> Option<bool> {
        let status = object.data.get("status")?;
        match self {
            Workload::RayClusters => (status["state"] == "ready").then_some(true),
            Workload::RayJobs => match status["jobDeploymentStatus"].as_str()? {
                "Complete" => Some(true),
                "Failed" => Some(false),
                _ => None,
            },
        }
    }

    fn manifest(self, index: usize) -> Value {
        let head = json!({
            "rayStartParams": {},
            "template": {"spec": {"containers": [{
                "name": "ray-head", "image": "rayproject/ray:2.52.0",
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
                "ports": [{"containerPort": 6379, "name": "gcs-server"}, {"containerPort": 8265, "name": "dashboard"},
                          {"containerPort": 10001, "name": "client"}],
            }]}},
        });
        match self {
            Workload::RayClusters => json!({
                "apiVersion": "ray.io/v1", "kind": "RayCluster",
                "metadata": {"name": format!("scale-{index:05}")},
                "spec": {"rayVersion": "2.52.0", "headGroupSpec": head, "workerGroupSpecs": [{
                    "groupName": "workergroup", "replicas": 2, "minReplicas": 2, "maxReplicas": 5,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [{
                        "name": "ray-worker", "image": "rayproject/ray:2.52.0",
                        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
                    }]}},
                }]},
            }),
            Workload::RayJobs => json!({
                "apiVersion": "ray.io/v1", "kind": "RayJob",
                "metadata": {"name": format!("job-{index:05}")},
                "spec": {"submissionMode": "HTTPMode", "entrypoint": "python -c \"print(42)\"",
                         "rayClusterSpec": {"rayVersion": "2.52.0", "headGroupSpec": head}},
            }),
        }
    }
}

/// When a workload was created and done.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// From the first create to the last object reaching its goal.
    pub first_create_to_done: Duration,
    /// Objects that ended failed (RayJobs).
    pub failed: usize,
}

/// Creates `n` objects at `rate` per second and waits (watching) until every one reaches its goal.
pub async fn run(
    client: &Client,
    namespace: &str,
    workload: Workload,
    n: usize,
    rate: f64,
    timeout: Duration,
) -> Result<Timing> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &workload.resource());
    let outcomes: Arc<tokio::sync::Mutex<HashMap<String, bool>>> = Arc::default();
    let (done_tx, mut done_rx) = tokio::sync::watch::channel(0usize);
    let watch_api = api.clone();
    let watch_outcomes = outcomes.clone();
    let watching = tokio::spawn(async move {
        let mut events = watcher(watch_api, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let object = match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "watch failed; retrying");
                    continue;
                }
            };
            if let (Some(name), Some(ok)) = (object.metadata.name.clone(), workload.outcome(&object)) {
                let mut map = watch_outcomes.lock().await;
                map.entry(name).or_insert(ok);
                done_tx.send_replace(map.len());
            }
        }
    });
    let start = Instant::now();
    let interval = Duration::from_secs_f64(1.0 / rate.max(0.1));
    let mut tick = tokio::time::interval(interval);
    let mut creates = futures::stream::FuturesUnordered::new();
    for index in 0..n {
        tick.tick().await;
        let api = api.clone();
        let object: DynamicObject = serde_json::from_value(workload.manifest(index))?;
        creates.push(async move { api.create(&PostParams::default(), &object).await });
    }
    while let Some(created) = creates.next().await {
        created.context("creating an object")?;
    }
    tracing::info!(
        workload = workload.kind(),
        n,
        secs = start.elapsed().as_secs_f64(),
        "all created"
    );
    let waited = tokio::time::timeout(timeout, done_rx.wait_for(|done| *done >= n)).await;
    let elapsed = start.elapsed();
    watching.abort();
    let done = outcomes.lock().await;
    if waited.is_err() {
        bail!(
            "{} of {n} {}s reached their goal within {timeout:?}",
            done.len(),
            workload.kind()
        );
    }
    Ok(Timing {
        first_create_to_done: elapsed,
        failed: done.values().filter(|ok| !**ok).count(),
    })
}

/// Deletes the namespace and waits until it and its Pods are gone; the time taken, or an error naming the Pods
/// left (and their phase) after `timeout`.
pub async fn delete_namespace(client: &Client, namespace: &str, timeout: Duration) -> Result<Duration> {
    let start = Instant::now();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete(namespace, &Default::default()).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    loop {
        let gone = namespaces.get_opt(namespace).await?.is_none();
        if gone {
            return Ok(start.elapsed());
        }
        if start.elapsed() > timeout {
            let left = pods.list(&ListParams::default()).await?;
            let names: Vec<String> = left
                .items
                .iter()
                .take(10)
                .map(|p| {
                    format!(
                        "{} (deletionTimestamp {:?}, phase {:?})",
                        p.metadata.name.clone().unwrap_or_default(),
                        p.metadata.deletion_timestamp.as_ref().map(|t| t.0.to_string()),
                        p.status.as_ref().and_then(|s| s.phase.clone())
                    )
                })
                .collect();
            bail!(
                "namespace {namespace} still exists {timeout:?} after its deletion, with {} Pods: {}",
                left.items.len(),
                names.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
