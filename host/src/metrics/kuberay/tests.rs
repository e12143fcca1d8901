use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;

/// Objects held as the caches hold them: metadata, and `status` as text.
struct Objects(Vec<(Kind, Value)>);

impl CustomResources for Objects {
    fn each(&self, kind: &Kind, each: &mut dyn FnMut(ObjectView<'_>)) {
        for (k, object) in &self.0 {
            if k == kind {
                let labels: Option<BTreeMap<String, String>> =
                    serde_json::from_value(object["metadata"]["labels"].clone()).ok();
                let status = object.get("status").map(Value::to_string);
                each(view(object, labels.as_ref(), status.as_deref()));
            }
        }
    }
}

fn view<'a>(
    object: &'a Value,
    labels: Option<&'a BTreeMap<String, String>>,
    status: Option<&'a str>,
) -> ObjectView<'a> {
    ObjectView {
        name: object["metadata"]["name"].as_str().unwrap_or_default(),
        namespace: object["metadata"]["namespace"].as_str().unwrap_or_default(),
        uid: object["metadata"]["uid"].as_str().unwrap_or_default(),
        labels,
        created: Some(1_000.0),
        status,
    }
}

fn object(name: &str, uid: &str, labels: Value, status: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": "ns", "uid": uid, "labels": labels}, "status": status})
}

fn encode(metrics: &KubeRayMetrics) -> String {
    let mut registry = Registry::default();
    metrics.register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    text
}

fn lines(text: &str, family: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .map(str::to_string)
        .collect()
}

#[test]
fn info_and_condition_families_list_every_cached_object_at_a_scrape() {
    let metrics = KubeRayMetrics::default();
    assert!(
        lines(&encode(&metrics), "kuberay_cluster_info").is_empty(),
        "no controllers, no objects"
    );
    metrics.list_from(Some(Arc::new(Objects(vec![
        (
            ray_kind("RayCluster"),
            object(
                "a",
                "u1",
                json!({"ray.io/originated-from-crd": "RayJob"}),
                json!({"conditions": [{"type": "RayClusterProvisioned", "status": "True"}]}),
            ),
        ),
        (ray_kind("RayCluster"), object("b", "u2", json!({}), json!({}))),
        (
            ray_kind("RayJob"),
            object("j", "u3", json!({}), json!({"jobDeploymentStatus": "Running"})),
        ),
        (
            ray_kind("RayService"),
            object(
                "s",
                "u4",
                json!({}),
                json!({"conditions": [{"type": "Ready", "status": "True"}]}),
            ),
        ),
    ]))));
    let text = encode(&metrics);
    assert_eq!(
        lines(&text, "kuberay_cluster_info"),
        [
            r#"kuberay_cluster_info{name="a",namespace="ns",uid="u1",owner_kind="RayJob"} 1"#,
            r#"kuberay_cluster_info{name="b",namespace="ns",uid="u2",owner_kind="None"} 1"#,
        ]
    );
    assert_eq!(
        lines(&text, "kuberay_cluster_condition_provisioned"),
        [
            r#"kuberay_cluster_condition_provisioned{name="a",namespace="ns",uid="u1",condition="true"} 1"#,
            r#"kuberay_cluster_condition_provisioned{name="b",namespace="ns",uid="u2",condition="false"} 1"#,
        ]
    );
    assert_eq!(
        lines(&text, "kuberay_job_info"),
        [r#"kuberay_job_info{name="j",namespace="ns",uid="u3"} 1"#]
    );
    assert_eq!(
        lines(&text, "kuberay_job_deployment_status"),
        [r#"kuberay_job_deployment_status{name="j",namespace="ns",uid="u3",deployment_status="Running"} 1"#]
    );
    assert_eq!(
        lines(&text, "kuberay_service_condition_ready"),
        [r#"kuberay_service_condition_ready{name="s",namespace="ns",uid="u4",condition="true"} 1"#]
    );
    assert_eq!(
        lines(&text, "kuberay_service_condition_upgrade_in_progress"),
        [
            r#"kuberay_service_condition_upgrade_in_progress{name="s",namespace="ns",uid="u4",condition="false"} 1"#
        ]
    );
    metrics.list_from(None);
    assert!(
        lines(&encode(&metrics), "kuberay_service_info").is_empty(),
        "stopped controllers list nothing"
    );
}

fn status_view(object: &Value) -> (String, ObjectView<'_>) {
    let status = object["status"].to_string();
    // The view borrows the status text; hand both back.
    (status, view(object, None, None))
}

fn changed(metrics: &KubeRayMetrics, kind: &str, before: Option<Seen>, object: &Value) -> Seen {
    let (status, mut view) = status_view(object);
    view.status = Some(&status);
    metrics.changed(kind, before, &view)
}

#[test]
fn provisioned_duration_is_set_when_the_condition_turns_true_and_dropped_with_the_cluster() {
    let metrics = KubeRayMetrics::default();
    let pending = object("a", "u1", json!({}), json!({}));
    let provisioned = object(
        "a",
        "u1",
        json!({}),
        json!({"conditions": [{"type": "RayClusterProvisioned", "status": "True",
                               "lastTransitionTime": "1970-01-01T00:16:52Z"}]}),
    );
    let seen = changed(&metrics, "RayCluster", None, &pending);
    let seen = changed(&metrics, "RayCluster", Some(seen), &provisioned);
    // 16:52 is 1,012 s after the epoch; the cluster was created at 1,000 s.
    assert_eq!(
        lines(&encode(&metrics), "kuberay_cluster_provisioned_duration_seconds"),
        [r#"kuberay_cluster_provisioned_duration_seconds{name="a",namespace="ns",uid="u1"} 12.0"#]
    );
    // Seen again, still provisioned: no new transition.
    let seen = changed(&metrics, "RayCluster", Some(seen), &provisioned);
    metrics.forget(seen);
    assert!(lines(&encode(&metrics), "kuberay_cluster_provisioned_duration_seconds").is_empty());

    // A cluster first seen provisioned (before this operator started) is not reported.
    let (status, mut view) = status_view(&provisioned);
    view.status = Some(&status);
    let seen = Seen::of(&view);
    changed(&metrics, "RayCluster", Some(seen), &provisioned);
    assert!(lines(&encode(&metrics), "kuberay_cluster_provisioned_duration_seconds").is_empty());
}

#[test]
fn execution_duration_is_set_on_retrying_and_terminal_states_with_the_retry_count() {
    let metrics = KubeRayMetrics::default();
    let running = |failed: i64| {
        object(
            "j",
            "u1",
            json!({}),
            json!({"jobDeploymentStatus": "Running", "failed": failed,
                                           "startTime": "1970-01-01T00:16:40Z"}),
        )
    };
    let with = |state: &str, failed: i64| {
        object(
            "j",
            "u1",
            json!({}),
            json!({"jobDeploymentStatus": state, "failed": failed,
                                           "startTime": "1970-01-01T00:16:40Z"}),
        )
    };
    let seen = changed(&metrics, "RayJob", None, &running(0));
    let seen = changed(&metrics, "RayJob", Some(seen), &with("Retrying", 1));
    let seen = changed(&metrics, "RayJob", Some(seen), &running(1));
    let seen = changed(&metrics, "RayJob", Some(seen), &with("Failed", 2));
    let seen = changed(&metrics, "RayJob", Some(seen), &with("Failed", 2));
    let text = encode(&metrics);
    let found = lines(&text, "kuberay_job_execution_duration_seconds");
    let mut labels: Vec<&str> = found.iter().filter_map(|l| l.split(' ').next()).collect();
    labels.sort_unstable();
    assert_eq!(
        labels,
        [
            r#"kuberay_job_execution_duration_seconds{name="j",namespace="ns",uid="u1",job_deployment_status="Failed",retry_count="1"}"#,
            r#"kuberay_job_execution_duration_seconds{name="j",namespace="ns",uid="u1",job_deployment_status="Retrying",retry_count="0"}"#,
        ],
        "{text}"
    );
    assert_eq!(found.len(), 2, "{text}");
    // Seconds since the job's start (1,000 s after the epoch): about now.
    let value: f64 = found[0].rsplit(' ').next().unwrap().parse().unwrap();
    assert!((value - (now() - 1_000.0)).abs() < 60.0, "{value}");

    // Recreated under the same name: the old job's durations go.
    changed(
        &metrics,
        "RayJob",
        Some(seen),
        &object("j", "u2", json!({}), json!({})),
    );
    assert!(lines(&encode(&metrics), "kuberay_job_execution_duration_seconds").is_empty());
}

/// `object` seen through `Followed` (the view borrows the status text).
fn follow(followed: &mut Followed, object: &Value, remember: bool) {
    let (status, mut view) = status_view(object);
    view.status = Some(&status);
    if remember {
        followed.remember(&view);
    } else {
        followed.changed(&view);
    }
}

#[test]
fn a_followed_watch_drops_its_durations_when_an_object_goes_and_when_it_ends() {
    let metrics = KubeRayMetrics::default();
    let family = "kuberay_cluster_provisioned_duration_seconds";
    let provisioned = |name: &str| {
        object(
            name,
            &format!("uid-{name}"),
            json!({}),
            json!({"conditions": [{"type": "RayClusterProvisioned", "status": "True",
                                   "lastTransitionTime": "1970-01-01T00:16:52Z"}]}),
        )
    };
    let pending = |name: &str| object(name, &format!("uid-{name}"), json!({}), json!({}));
    let mut followed = Followed::new(metrics.clone(), "RayCluster".to_string());
    // Cached before the watch started, already provisioned: remembered, never reported.
    follow(&mut followed, &provisioned("old"), true);
    follow(&mut followed, &provisioned("old"), false);
    for name in ["a", "b"] {
        follow(&mut followed, &pending(name), false);
        follow(&mut followed, &provisioned(name), false);
    }
    assert_eq!(lines(&encode(&metrics), family).len(), 2, "{}", encode(&metrics));

    followed.gone("ns", "a");
    let left = lines(&encode(&metrics), family);
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains(r#"name="b""#), "{left:?}");

    // The watch ends (this replica stops leading): what it set goes with it.
    drop(followed);
    assert!(
        lines(&encode(&metrics), family).is_empty(),
        "{}",
        encode(&metrics)
    );
}
