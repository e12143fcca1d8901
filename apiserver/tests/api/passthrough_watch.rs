//! Watches through the `ray.io/v1` pass-through last as long as the watch asks, however long nothing
//! changes: the server's read timeout toward the Kubernetes API server (a share of `--request-timeout`, so
//! that ordinary calls fail in time) must not cut a silent watch.

use std::time::Duration;

use kuberay_testenv::HeadMode;
use serde_json::{Value, json};

use crate::{
    flows::{Tenant, merge_patch},
    support::{Server, env, expect},
};

/// The events of a watch response, one JSON document a line.
struct Events {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl Events {
    /// The next event, `Ok(None)` when the stream ended cleanly, `Err` when it broke.
    async fn next(&mut self) -> Result<Option<Value>, String> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                return serde_json::from_slice(&line)
                    .map(Some)
                    .map_err(|e| format!("not an event: {e}: {}", String::from_utf8_lossy(&line)));
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk),
                Ok(None) => return Ok(None),
                Err(e) => return Err(format!("the watch broke: {e:?}")),
            }
        }
    }

    /// The next event within `timeout`.
    async fn within(&mut self, timeout: Duration) -> Result<Option<Value>, String> {
        tokio::time::timeout(timeout, self.next())
            .await
            .map_err(|_| format!("no event within {timeout:?}"))?
    }
}

#[tokio::test]
async fn a_watch_through_the_pass_through_outlives_the_request_timeout() {
    let env = env().await;
    let tenant = Tenant::new(env, "watch", HeadMode::Fake).await;
    // Calls to the Kubernetes API server time out after 4 s of silence.
    let server = Server::start(env, &["--request-timeout=5s"]).await;
    let rest = server.rest(Some(&tenant.user.token));
    let collection = format!("/apis/ray.io/v1/namespaces/{}/rayclusters", tenant.name());
    let cluster = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "watched"},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}}}},
    });
    expect(rest.post(&collection, &cluster).await, 201);

    let response = rest
        .client
        .get(format!("{}{collection}?watch=true&timeoutSeconds=14", rest.base))
        .bearer_auth(&tenant.user.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = Events {
        response,
        buffer: Vec::new(),
    };
    let added = events.within(Duration::from_secs(10)).await.unwrap().unwrap();
    assert_eq!(added["type"], "ADDED", "{added}");

    // Longer than the read timeout without a word from the API server, then a change.
    tokio::time::sleep(Duration::from_secs(7)).await;
    expect(
        merge_patch(
            &rest,
            &format!("{collection}/watched"),
            &json!({"metadata": {"labels": {"watched": "yes"}}}),
        )
        .await,
        200,
    );
    let modified = events.within(Duration::from_secs(10)).await;
    let modified = modified.unwrap().expect("the watch ended before the change");
    assert_eq!(modified["type"], "MODIFIED", "{modified}");
    assert_eq!(modified["object"]["metadata"]["labels"]["watched"], "yes");

    // The API server ends the watch at its timeoutSeconds, and the end comes through cleanly.
    assert_eq!(events.within(Duration::from_secs(20)).await, Ok(None));

    server.stop().await.unwrap();
    tenant.remove(env).await;
}
