//! The RayCronJob plugin against the SDK's FakeHost, with the clock moved by the tests: first tick,
//! waiting, `lastScheduleTime`, a tick whose RayJob already exists, catching up after downtime, time zones
//! and daylight saving, suspend, and invalid specs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

use std::time::{Duration, SystemTime};

use kuberay_plugin_raycronjob::reconcile::reconcile;
use kuberay_plugin_sdk::{EventType, Kind, Outcome, ReconcileError, testing::FakeHost};
use serde_json::{Value, json};

fn at(text: &str) -> SystemTime {
    let seconds = text.parse::<jiff::Timestamp>().unwrap().as_second();
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap())
}

fn cronjob(schedule: &str, created: &str, extra: Value) -> Value {
    let mut object = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCronJob",
        "metadata": {"name": "nightly", "namespace": "ns", "uid": "cron-uid", "creationTimestamp": created},
        "spec": {"schedule": schedule, "jobTemplate": {"entrypoint": "python job.py"}},
    });
    if let (Some(spec), Some(extra)) = (object["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    object
}

/// One reconcile of whatever the host holds as the RayCronJob (status included), at `now`.
fn run(host: &FakeHost, now: &str) -> Result<Outcome, ReconcileError> {
    host.set_now(at(now));
    reconcile(host, host.request())
}

fn rayjobs(host: &FakeHost) -> Vec<Value> {
    host.objects(&Kind::new("ray.io", "v1", "RayJob"))
}

fn names(host: &FakeHost) -> Vec<String> {
    rayjobs(host)
        .iter()
        .map(|j| j["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

fn last_schedule(host: &FakeHost) -> Value {
    host.primary()["status"]["lastScheduleTime"].clone()
}

fn minutes(text: &str) -> u64 {
    at(text).duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() / 60
}

#[test]
fn the_first_tick_after_creation_creates_one_rayjob_and_records_it() {
    let host = FakeHost::new(cronjob("*/5 * * * *", "2024-01-01T00:00:00Z", json!({})));
    // Before the first tick: wait for it.
    let early = run(&host, "2024-01-01T00:03:00Z").unwrap();
    assert_eq!(early, Outcome::requeue_after(Duration::from_secs(120)));
    assert!(rayjobs(&host).is_empty());

    let due = run(&host, "2024-01-01T00:05:30Z").unwrap();
    // KubeRay's requeue: the next tick minus now.
    assert_eq!(due, Outcome::requeue_after(Duration::from_secs(270)));
    let jobs = rayjobs(&host);
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(
        job["metadata"]["name"],
        format!("nightly-{}", minutes("2024-01-01T00:05:00Z"))
    );
    assert_eq!(job["metadata"]["labels"]["ray.io/cronjob-name"], "nightly");
    assert_eq!(
        job["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"],
        "2024-01-01T00:05:00Z"
    );
    assert_eq!(job["metadata"]["ownerReferences"][0]["uid"], "cron-uid");
    assert_eq!(job["spec"]["entrypoint"], "python job.py");
    assert_eq!(last_schedule(&host), "2024-01-01T00:05:00Z");
    let created: Vec<_> = host
        .events()
        .into_iter()
        .filter(|e| e.reason == "CreatedRayJob")
        .collect();
    assert_eq!(created.len(), 1);

    // The same instant again: nothing more.
    let again = run(&host, "2024-01-01T00:05:31Z").unwrap();
    assert_eq!(again, Outcome::requeue_after(Duration::from_secs(269)));
    assert_eq!(rayjobs(&host).len(), 1);
}

#[test]
fn a_tick_whose_rayjob_exists_is_recorded_without_a_second_rayjob() {
    // As after a restart between the create and the status write, or with a stale cache.
    let host = FakeHost::new(cronjob("* * * * *", "2024-01-01T00:00:10Z", json!({})));
    run(&host, "2024-01-01T00:01:05Z").unwrap();
    let first = names(&host);
    host.set_primary(cronjob("* * * * *", "2024-01-01T00:00:10Z", json!({})));
    let outcome = run(&host, "2024-01-01T00:01:20Z").unwrap();
    assert_eq!(outcome, Outcome::requeue_after(Duration::from_secs(40)));
    assert_eq!(names(&host), first);
    assert_eq!(last_schedule(&host), "2024-01-01T00:01:00Z");
    assert!(host.logs().iter().any(|(_, m)| m.contains("already exists")));
    assert!(host.events().iter().all(|e| e.event_type == EventType::Normal));
}

#[test]
fn ticks_missed_while_the_operator_was_down_are_created_oldest_first_one_per_reconcile() {
    let host = FakeHost::new(cronjob("*/10 * * * *", "2024-01-01T00:00:00Z", json!({})));
    run(&host, "2024-01-01T00:10:01Z").unwrap();
    // Down from 00:10:01 to 00:35:00: 00:20 and 00:30 were missed.
    let first = run(&host, "2024-01-01T00:35:00Z").unwrap();
    assert_eq!(last_schedule(&host), "2024-01-01T00:20:00Z");
    assert!(first.requeue_after.unwrap() < Duration::from_secs(1), "{first:?}");
    let second = run(&host, "2024-01-01T00:35:00Z").unwrap();
    assert_eq!(last_schedule(&host), "2024-01-01T00:30:00Z");
    assert_eq!(second, Outcome::requeue_after(Duration::from_secs(300)));
    let mut expected: Vec<String> = ["00:10", "00:20", "00:30"]
        .iter()
        .map(|t| format!("nightly-{}", minutes(&format!("2024-01-01T{t}:00Z"))))
        .collect();
    expected.sort();
    let mut created = names(&host);
    created.sort();
    assert_eq!(created, expected);
}

#[test]
fn the_time_zone_decides_the_tick_across_daylight_saving() {
    // 09:00 in New York: 14:00Z in winter, 13:00Z once clocks went forward on 2024-03-10.
    let host = FakeHost::new(cronjob(
        "0 9 * * *",
        "2024-03-09T00:00:00Z",
        json!({"timeZone": "America/New_York"}),
    ));
    assert_eq!(
        run(&host, "2024-03-09T13:00:00Z").unwrap(),
        Outcome::requeue_after(Duration::from_secs(3600))
    );
    run(&host, "2024-03-09T14:00:00Z").unwrap();
    assert_eq!(last_schedule(&host), "2024-03-09T14:00:00Z");
    // The next tick is 23 hours later.
    assert_eq!(
        run(&host, "2024-03-09T14:00:01Z").unwrap(),
        Outcome::requeue_after(Duration::from_secs(23 * 3600 - 1))
    );
    run(&host, "2024-03-10T13:00:00Z").unwrap();
    assert_eq!(last_schedule(&host), "2024-03-10T13:00:00Z");
    let job = rayjobs(&host).into_iter().find(|j| {
        j["metadata"]["annotations"]["ray.io/cronjob-scheduled-timestamp"] == "2024-03-10T13:00:00Z"
    });
    assert!(job.is_some(), "{:?}", names(&host));
}

#[test]
fn a_suspended_cronjob_creates_nothing_and_says_so() {
    let host = FakeHost::new(cronjob(
        "* * * * *",
        "2024-01-01T00:00:00Z",
        json!({"suspend": true}),
    ));
    let outcome = run(&host, "2024-01-01T01:00:00Z").unwrap();
    assert_eq!(outcome, Outcome::done());
    assert!(rayjobs(&host).is_empty());
    assert_eq!(last_schedule(&host), Value::Null);
    let events = host.events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reason, "SuspendedRayCronJob");
    assert_eq!(events[0].event_type, EventType::Normal);

    // Resumed: KubeRay creates the missed ticks from the creation on, the oldest first.
    host.set_primary(cronjob(
        "* * * * *",
        "2024-01-01T00:00:00Z",
        json!({"suspend": false}),
    ));
    run(&host, "2024-01-01T01:00:00Z").unwrap();
    assert_eq!(last_schedule(&host), "2024-01-01T00:01:00Z");
}

fn refused(host: &FakeHost, what: &str) {
    let error = run(host, "2024-01-01T01:00:00Z").unwrap_err();
    let ReconcileError::InvalidObject(message) = error else {
        panic!("not an invalid object: {error:?}");
    };
    assert!(message.starts_with("ns/nightly: "), "{message}");
    assert!(message.contains(what), "{message}");
    let events = host.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].reason, "InvalidRayCronJobSpec");
    assert_eq!(events[0].event_type, EventType::Warning);
    assert_eq!(events[0].note, message);
    assert!(rayjobs(host).is_empty());
    assert!(host.writes().is_empty());
}

#[test]
fn an_invalid_schedule_or_time_zone_is_reported_and_waits_for_a_change() {
    refused(
        &FakeHost::new(cronjob("invalid cron string", "2024-01-01T00:00:00Z", json!({}))),
        "invalid cron schedule",
    );
    refused(
        &FakeHost::new(cronjob(
            "CRON_TZ=UTC * * * * *",
            "2024-01-01T00:00:00Z",
            json!({}),
        )),
        "use timeZone field instead",
    );
    refused(
        &FakeHost::new(cronjob(
            "* * * * *",
            "2024-01-01T00:00:00Z",
            json!({"timeZone": "Nowhere/Special"}),
        )),
        "invalid time zone",
    );
    refused(
        &FakeHost::new(cronjob("0 0 30 2 *", "2024-01-01T00:00:00Z", json!({}))),
        "no time after",
    );
    let mut long = cronjob("* * * * *", "2024-01-01T00:00:00Z", json!({}));
    long["metadata"]["name"] = json!("a".repeat(37));
    let host = FakeHost::new(long);
    let error = run(&host, "2024-01-01T01:00:00Z").unwrap_err();
    assert!(matches!(error, ReconcileError::InvalidObject(m) if m.contains("no more than 36 characters")));
}

#[test]
fn the_plugin_asks_only_to_create_rayjobs_and_write_its_status() {
    use kuberay_plugin_sdk::{Plugin, Verb};
    let metadata = kuberay_plugin_raycronjob::RayCronJobPlugin::metadata();
    assert_eq!(metadata.name, "raycronjob");
    assert_eq!(metadata.owns, vec![Kind::new("ray.io", "v1", "RayJob")]);
    let rayjob = metadata
        .capabilities
        .iter()
        .find(|c| c.kind == Kind::new("ray.io", "v1", "RayJob"))
        .unwrap();
    assert_eq!(rayjob.verbs, vec![Verb::Create]);
    assert!(!metadata.uses_ray_head);
}
