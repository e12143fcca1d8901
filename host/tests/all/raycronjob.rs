//! The RayCronJob plugin on the real control plane, in one short test that waits for a single minute
//! boundary: a `* * * * *` RayCronJob creates one RayJob for the tick (name, label, annotation, owner,
//! `lastScheduleTime`) that the RayJob plugin then reconciles; a suspended one created alongside creates
//! nothing at that tick; invalid schedules and time zones are reported as Warning events while the operator
//! keeps working; and an operator restarted after losing the record of the tick (as if it had stopped
//! between creating the RayJob and writing the status) does not create the tick's RayJob again.

use std::time::Duration;

use k8s_openapi::api::core::v1::Event as CoreEvent;
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, Patch, PatchParams},
};
use kuberay_testenv::TestNamespace;
use serde_json::{Value, json};

use crate::support::{OperatorOptions, apply, env, eventually, logged, namespace, ray_api, start_operator};

fn options() -> OperatorOptions {
    OperatorOptions {
        plugins: vec![
            kuberay_plugin_artifacts::RAYCLUSTER,
            kuberay_plugin_artifacts::RAYJOB,
            kuberay_plugin_artifacts::RAYCRONJOB,
        ],
        ..OperatorOptions::default()
    }
}

/// A RayCronJob whose RayJobs run `echo` in HTTPMode on a small cluster with a fake head.
fn cronjob(name: &str, schedule: &str, extra: Value) -> Value {
    let mut object = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, "jobTemplate": {
            "submissionMode": "HTTPMode", "entrypoint": "echo tick",
            "rayClusterSpec": {"rayVersion": "2.52.0", "headGroupSpec": {"rayStartParams": {}, "template": {
                "spec": {"containers": [{
                    "name": "ray-head", "image": "rayproject/ray:2.52.0",
                    "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                    "ports": [{"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265}],
                }]},
            }}},
        }},
    });
    if let (Some(spec), Some(extra)) = (object["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    object
}

/// The RayJobs a RayCronJob created, as JSON.
async fn rayjobs_of(client: &Client, ns: &TestNamespace, cronjob: &str) -> Vec<Value> {
    let params = ListParams::default().labels(&format!("ray.io/cronjob-name={cronjob}"));
    let list = ray_api(client, ns, "RayJob", "rayjobs")
        .list(&params)
        .await
        .unwrap();
    list.items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

async fn get(api: &Api<DynamicObject>, name: &str) -> Value {
    serde_json::to_value(api.get(name).await.unwrap()).unwrap()
}

/// Waits for a Warning event with `reason` about `name` whose note contains `text`.
async fn warned(client: &Client, ns: &TestNamespace, name: &str, reason: &str, text: &str) {
    let events: Api<CoreEvent> = Api::namespaced(client.clone(), ns.name());
    eventually(
        &format!("a {reason} event about {name}"),
        Duration::from_secs(30),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items
                .iter()
                .any(|e| {
                    e.involved_object.name.as_deref() == Some(name)
                        && e.reason.as_deref() == Some(reason)
                        && e.message.as_deref().is_some_and(|m| m.contains(text))
                })
                .then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn a_cronjob_creates_one_rayjob_per_tick_across_restarts_and_honours_suspend() {
    let env = env().await;
    let client = env.client().await.unwrap();
    let ns = namespace(env, "raycronjob").await;
    let operator = start_operator(env, &ns, options()).await;
    let api = ray_api(&client, &ns, "RayCronJob", "raycronjobs");
    apply(
        &api,
        &cronjob("tick", "* * * * *", json!({"timeZone": "Europe/Berlin"})),
    )
    .await;
    apply(&api, &cronjob("paused", "* * * * *", json!({"suspend": true}))).await;
    apply(&api, &cronjob("broken", "61 * * * *", json!({}))).await;
    apply(
        &api,
        &cronjob("nowhere", "* * * * *", json!({"timeZone": "Mars/Olympus_Mons"})),
    )
    .await;

    warned(
        &client,
        &ns,
        "broken",
        "InvalidRayCronJobSpec",
        "invalid cron schedule",
    )
    .await;
    warned(
        &client,
        &ns,
        "nowhere",
        "InvalidRayCronJobSpec",
        "invalid time zone",
    )
    .await;
    warned(&client, &ns, "paused", "SuspendedRayCronJob", "no new RayJobs").await;

    // The next minute boundary.
    let job = eventually(
        "the RayJob of the first tick",
        Duration::from_secs(90),
        || async { rayjobs_of(&client, &ns, "tick").await.into_iter().next() },
    )
    .await;
    let tick = get(&api, "tick").await;
    let scheduled = job["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"]
        .as_str()
        .unwrap()
        .to_string();
    let at: k8s_openapi::jiff::Timestamp = scheduled.parse().unwrap();
    assert_eq!(at.as_second() % 60, 0, "{scheduled} is not on a minute");
    assert_eq!(job["metadata"]["name"], format!("tick-{}", at.as_second() / 60));
    assert_eq!(job["metadata"]["labels"]["ray.io/cronjob-name"], "tick");
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["controller"].as_bool()),
        (Some("RayCronJob"), Some(true))
    );
    assert_eq!(owner["uid"], tick["metadata"]["uid"]);
    assert_eq!(job["spec"]["entrypoint"], "echo tick");
    let last = eventually("lastScheduleTime", Duration::from_secs(10), || async {
        get(&api, "tick").await["status"]["lastScheduleTime"]
            .as_str()
            .map(str::to_string)
    })
    .await;
    assert_eq!(last, scheduled);
    // The suspended RayCronJob existed at that tick and created nothing.
    let paused = get(&api, "paused").await;
    let created: k8s_openapi::jiff::Timestamp = paused["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        created < at,
        "the suspended RayCronJob was created after the tick"
    );
    // The RayJob plugin reconciles the RayJob.
    let jobs = ray_api(&client, &ns, "RayJob", "rayjobs");
    let job_name = job["metadata"]["name"].as_str().unwrap().to_string();
    eventually("the RayJob to be reconciled", Duration::from_secs(60), || async {
        get(&jobs, &job_name).await["status"]["jobDeploymentStatus"]
            .as_str()
            .map(str::to_string)
    })
    .await;
    assert!(rayjobs_of(&client, &ns, "paused").await.is_empty());

    // The operator stops as if between creating the RayJob and recording the tick, and starts again.
    operator.stop().await;
    api.patch_status(
        "tick",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"lastScheduleTime": null}})),
    )
    .await
    .unwrap();
    let operator = start_operator(env, &ns, options()).await;
    logged(&["RayJob for this tick already exists", &job_name]).await;
    let restored = eventually("lastScheduleTime restored", Duration::from_secs(30), || async {
        get(&api, "tick").await["status"]["lastScheduleTime"]
            .as_str()
            .map(str::to_string)
    })
    .await;
    // Restored to the tick, or already past it if the restart crossed the next minute boundary.
    assert!(restored >= scheduled, "{restored} < {scheduled}");
    let jobs_now = rayjobs_of(&client, &ns, "tick").await;
    let mut ticks: Vec<&str> = jobs_now
        .iter()
        .filter_map(|j| j["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"].as_str())
        .collect();
    let all = ticks.len();
    ticks.sort_unstable();
    ticks.dedup();
    assert_eq!(ticks.len(), all, "a tick got two RayJobs: {ticks:?}");
    assert_eq!(
        jobs_now
            .iter()
            .filter(|j| j["metadata"]["name"] == job_name.as_str())
            .count(),
        1
    );
    assert!(rayjobs_of(&client, &ns, "paused").await.is_empty());
    operator.stop().await;
}
