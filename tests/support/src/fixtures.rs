//! Small helpers the test suites of every crate share: polling for a condition, a Pod's readiness, and the
//! smallest RayCluster spec the operator turns into a head Pod.

use std::{future::Future, time::Duration};

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// How often [`eventually`] and [`poll_until`] look again.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// Polls `check` until it returns `Some` and returns that value; fails the test after `timeout`, naming
/// `what` it waited for.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    match poll_until(timeout, check).await {
        Some(value) => value,
        None => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Polls `check` until it returns `Some`, or gives `None` once `timeout` has passed (for a test that says
/// more than [`eventually`] about what it saw when it gives up).
pub async fn poll_until<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Whether the Pod reports the `Ready` condition as `True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The spec of a RayCluster of one head (Ray 2.52.0, its GCS and dashboard ports) and no workers.
pub fn small_cluster() -> Value {
    json!({
        "rayVersion": "2.52.0",
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{
            "name": "ray-head", "image": "rayproject/ray:2.52.0",
            "ports": [{"name": "gcs-server", "containerPort": 6379}, {"name": "dashboard", "containerPort": 8265}],
        }]}}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn poll_until_gives_the_first_value_and_none_after_the_timeout() {
        let mut calls = 0;
        let third = poll_until(Duration::from_secs(5), || {
            calls += 1;
            let value = (calls == 3).then_some(calls);
            async move { value }
        })
        .await;
        assert_eq!(third, Some(3));
        let never: Option<()> = poll_until(Duration::from_millis(300), || async { None }).await;
        assert_eq!(never, None);
    }

    #[test]
    fn a_pod_is_ready_only_with_a_true_ready_condition() {
        let pod = |conditions: Value| -> Pod {
            serde_json::from_value(json!({"status": {"conditions": conditions}})).unwrap()
        };
        assert!(is_ready(&pod(json!([{"type": "Ready", "status": "True"}]))));
        assert!(!is_ready(&pod(json!([{"type": "Ready", "status": "False"}]))));
        assert!(!is_ready(&pod(
            json!([{"type": "ContainersReady", "status": "True"}])
        )));
        assert!(!is_ready(&Pod::default()));
    }
}
