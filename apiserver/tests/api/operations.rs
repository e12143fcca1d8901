//! Running the server: CORS for one origin, Prometheus metrics by route template, method and code, JSON
//! request logs naming the user, route and status, and a graceful stop on SIGTERM (calls in flight finish,
//! new connections are refused, the process exits 0).

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use kube::{Api, api::PostParams};
use kuberay_crds::RayCluster;
use kuberay_testenv::HeadMode;
use serde_json::json;
use tonic::Code;

use crate::{
    calls::{self, Names},
    process::Process,
    support::{Server, User, env, eventually, expect, namespace, server_kubeconfig},
};

const ORIGIN: &str = "https://dashboard.example.com";

async fn preflight(base: &str, path: &str, origin: &str) -> reqwest::Response {
    reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{base}{path}"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization, content-type")
        .send()
        .await
        .unwrap()
}

fn header<'a>(response: &'a reqwest::Response, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test]
async fn cors_answers_the_allowed_origin_only() {
    let env = env().await;
    let ns = namespace(env, "cors", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let path = format!("/apis/v1/namespaces/{}/clusters", ns.name());
    let server = Server::start(env, &[&format!("--cors-allow-origin={ORIGIN}")]).await;
    let base = server.url();

    // A browser's preflight needs no credentials and learns what it may send.
    let allowed = preflight(&base, &path, ORIGIN).await;
    assert!(allowed.status().is_success(), "{allowed:?}");
    assert_eq!(header(&allowed, "access-control-allow-origin"), Some(ORIGIN));
    let methods = header(&allowed, "access-control-allow-methods").unwrap_or_default();
    for method in ["GET", "POST", "PUT", "DELETE"] {
        assert!(methods.contains(method), "allowed methods {methods:?}");
    }
    let headers = header(&allowed, "access-control-allow-headers")
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(
        headers.contains("authorization") && headers.contains("content-type"),
        "allowed headers {headers:?}"
    );
    let other = preflight(&base, &path, "https://evil.example.com").await;
    assert_eq!(header(&other, "access-control-allow-origin"), None, "{other:?}");

    // Real calls from the origin carry the header, errors included (so the page can read them).
    let client = reqwest::Client::new();
    for token in [Some(user.token.as_str()), None] {
        let mut request = client.get(format!("{base}{path}")).header("origin", ORIGIN);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        let expected = if token.is_some() { 200 } else { 401 };
        assert_eq!(response.status().as_u16(), expected);
        assert_eq!(header(&response, "access-control-allow-origin"), Some(ORIGIN));
    }
    let response = client
        .get(format!("{base}{path}"))
        .header("origin", "https://evil.example.com")
        .bearer_auth(&user.token)
        .send()
        .await
        .unwrap();
    assert_eq!(header(&response, "access-control-allow-origin"), None);
    server.stop().await.unwrap();

    // Without the flag there is no CORS at all.
    let server = Server::start(env, &[]).await;
    let response = preflight(&server.url(), &path, ORIGIN).await;
    assert_eq!(
        header(&response, "access-control-allow-origin"),
        None,
        "{response:?}"
    );
    server.stop().await.unwrap();
}

/// One sample of the text exposition format: the metric name, its labels and its value.
type Sample = (String, BTreeMap<String, String>, f64);

fn parse_metrics(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap();
        let Some((name, rest)) = series.split_once('{') else {
            samples.push((series.to_string(), BTreeMap::new(), value));
            continue;
        };
        let rest = rest.strip_suffix('}').unwrap();
        let mut labels = BTreeMap::new();
        let mut chars = rest.chars().peekable();
        while chars.peek().is_some() {
            let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
            assert_eq!(chars.next(), Some('"'), "{line}");
            let mut value = String::new();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.push(chars.next().unwrap()),
                    '"' => break,
                    c => value.push(c),
                }
            }
            labels.insert(key, value);
            if chars.peek() == Some(&',') {
                chars.next();
            }
        }
        samples.push((name.to_string(), labels, value));
    }
    samples
}

/// The value of the sample `name` whose labels include `labels`; `None` when there is none.
fn sample(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, v)| *v)
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_method_and_code_and_time_them() {
    let env = env().await;
    let ns = namespace(env, "metrics", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&user.token));
    let clusters = format!("/apis/v1/namespaces/{}/clusters", ns.name());
    expect(rest.get(&clusters).await, 200);
    expect(rest.get(&clusters).await, 200);
    expect(rest.get(&format!("{clusters}/nope")).await, 404);
    expect(server.rest(None).get(&clusters).await, 401);
    expect(rest.get("/no/such/route").await, 404);
    expect(
        rest.get(&format!("/apis/ray.io/v1/namespaces/{}/rayclusters", ns.name()))
            .await,
        200,
    );
    let channel = calls::channel(server.grpc).await;
    let list = calls::grpc_calls(&Names::in_namespace(ns.name()))
        .into_iter()
        .find(|c| c.path == "/proto.ClusterService/ListCluster")
        .unwrap();
    calls::unary(&channel, &list.path, list.message.clone(), Some(&user.token))
        .await
        .unwrap();
    let answer = calls::unary(&channel, &list.path, list.message, None).await;
    assert_eq!(answer.err().map(|s| s.code()), Some(Code::Unauthenticated));

    let text = expect(server.rest(None).get("/metrics").await, 200);
    let text = text.as_str().unwrap();
    let samples = parse_metrics(text);
    let requests = "kuberay_apiserver_requests_total";
    let list_route = "GET /apis/v1/namespaces/{namespace}/clusters";
    let cases: &[(&[(&str, &str)], f64)] = &[
        (
            &[
                ("protocol", "rest"),
                ("route", list_route),
                ("method", "GET"),
                ("code", "200"),
            ],
            2.0,
        ),
        (
            &[
                ("protocol", "rest"),
                ("route", list_route),
                ("method", "GET"),
                ("code", "401"),
            ],
            1.0,
        ),
        (
            &[
                ("protocol", "rest"),
                ("route", "GET /apis/v1/namespaces/{namespace}/clusters/{name}"),
                ("code", "404"),
            ],
            1.0,
        ),
        (
            &[("protocol", "rest"), ("route", "unmatched"), ("code", "404")],
            1.0,
        ),
        (
            &[
                ("protocol", "rest"),
                ("route", "/apis/ray.io/v1/*"),
                ("code", "200"),
            ],
            1.0,
        ),
        (
            &[
                ("protocol", "grpc"),
                ("route", "/proto.ClusterService/ListCluster"),
                ("method", "POST"),
                ("code", "Ok"),
            ],
            1.0,
        ),
        (
            &[
                ("protocol", "grpc"),
                ("route", "/proto.ClusterService/ListCluster"),
                ("code", "Unauthenticated"),
            ],
            1.0,
        ),
    ];
    for (labels, count) in cases {
        assert_eq!(
            sample(&samples, requests, labels),
            Some(*count),
            "{requests}{labels:?} in\n{text}"
        );
    }
    let durations = "kuberay_apiserver_request_duration_seconds";
    let labels = [("protocol", "rest"), ("route", list_route), ("method", "GET")];
    assert_eq!(
        sample(&samples, &format!("{durations}_count"), &labels),
        Some(3.0),
        "{text}"
    );
    let sum = sample(&samples, &format!("{durations}_sum"), &labels).unwrap();
    assert!(sum > 0.0 && sum < 30.0, "{sum}");
    let mut bucket = labels.to_vec();
    bucket.push(("le", "+Inf"));
    assert_eq!(
        sample(&samples, &format!("{durations}_bucket"), &bucket),
        Some(3.0),
        "{text}"
    );
    // Labels are templates: no request path (with its namespace) ever becomes one.
    assert!(!text.contains(ns.name()), "a raw path in the metrics:\n{text}");
    assert!(
        sample(
            &samples,
            "kuberay_apiserver_authentications_total",
            &[("outcome", "rejected")]
        )
        .is_some(),
        "{text}"
    );
    server.stop().await.unwrap();
}

#[tokio::test]
async fn json_logs_name_the_user_route_and_status_of_each_request() {
    let env = env().await;
    let ns = namespace(env, "logs", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let mut process = Process::start(&server_kubeconfig(env).await, &[]).await;
    let client = reqwest::Client::new();
    let clusters = format!("{}/apis/v1/namespaces/{}/clusters", process.url(), ns.name());
    let route = "GET /apis/v1/namespaces/{namespace}/clusters";
    let response = client
        .get(&clusters)
        .bearer_auth(&user.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let line = process
        .log_line("the listing's request line", Duration::from_secs(10), |l| {
            l["message"] == "request" && l["route"] == route
        })
        .await;
    assert_eq!(line["user"], json!(user.name), "{line}");
    assert_eq!(line["code"], "200", "{line}");
    assert_eq!(line["method"], "GET", "{line}");
    assert_eq!(line["protocol"], "rest", "{line}");
    assert_eq!(line["level"], "INFO", "{line}");
    assert!(
        line["path"].as_str().is_some_and(|p| p.contains(ns.name())),
        "{line}"
    );
    assert!(line["millis"].is_number(), "{line}");

    let response = client.get(&clusters).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let line = process
        .log_line("the refused request's line", Duration::from_secs(10), |l| {
            l["message"] == "request" && l["code"] == "401"
        })
        .await;
    assert_eq!(
        (&line["route"], &line["user"]),
        (&json!(route), &json!("-")),
        "{line}"
    );

    let channel = calls::channel(process.grpc).await;
    let list = calls::grpc_calls(&Names::in_namespace(ns.name()))
        .into_iter()
        .find(|c| c.path == "/proto.ClusterService/ListCluster")
        .unwrap();
    calls::unary(&channel, &list.path, list.message, Some(&user.token))
        .await
        .unwrap();
    let line = process
        .log_line("the gRPC call's line", Duration::from_secs(10), |l| {
            l["message"] == "request" && l["protocol"] == "grpc"
        })
        .await;
    assert_eq!(line["route"], "/proto.ClusterService/ListCluster", "{line}");
    assert_eq!(
        (&line["code"], &line["user"]),
        (&json!("Ok"), &json!(user.name)),
        "{line}"
    );
    process.terminate();
    assert!(process.wait(Duration::from_secs(20)).await.success());
}

/// Whether a TCP connection to `address` is refused (nothing listens there any more).
async fn refused(address: std::net::SocketAddr) -> bool {
    matches!(
        tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(address)).await,
        Ok(Err(_))
    )
}

#[tokio::test]
async fn sigterm_lets_calls_in_flight_finish_and_refuses_new_connections() {
    let env = env().await;
    let ns = namespace(env, "shutdown", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let mut process = Process::start(&server_kubeconfig(env).await, &["--shutdown-timeout=20s"]).await;
    // A call that lasts: a watch through the pass-through, which the API server ends after 4 s.
    let watch_seconds = 4;
    let started = Instant::now();
    let mut watch = reqwest::Client::new()
        .get(format!(
            "{}/apis/ray.io/v1/namespaces/{}/rayclusters?watch=true&timeoutSeconds={watch_seconds}",
            process.url(),
            ns.name()
        ))
        .bearer_auth(&user.token)
        .send()
        .await
        .unwrap();
    assert_eq!(watch.status().as_u16(), 200);

    process.terminate();
    process
        .log_line("shutting down", Duration::from_secs(5), |l| {
            l["message"] == "shutting down"
        })
        .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !(refused(process.http).await && refused(process.grpc).await) {
        assert!(
            Instant::now() < deadline,
            "new connections are still accepted during shutdown"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The watch still works: it sees a cluster created now, then ends as the API server ends it.
    let clusters: Api<RayCluster> = Api::namespaced(env.client().await.unwrap(), ns.name());
    let cluster: RayCluster = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "late"},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"},
        ]}}}},
    }))
    .unwrap();
    clusters.create(&PostParams::default(), &cluster).await.unwrap();
    let mut events = String::new();
    while let Some(chunk) = watch.chunk().await.expect("the watch was cut off") {
        events.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        events.contains("\"ADDED\"") && events.contains("\"late\""),
        "the watch did not see the cluster: {events}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(watch_seconds),
        "the watch ended early"
    );
    let status = process.wait(Duration::from_secs(20)).await;
    assert!(status.success(), "{status}");
    process
        .log_line("stopped", Duration::from_secs(5), |l| l["message"] == "stopped")
        .await;
}

#[tokio::test]
async fn sigterm_turns_health_not_serving_and_drops_calls_that_outlive_the_grace_period() {
    use tonic_health::pb::{
        HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient,
    };
    let env = env().await;
    let grace = Duration::from_secs(2);
    let mut process = Process::start(
        &server_kubeconfig(env).await,
        &[&format!("--shutdown-timeout={}s", grace.as_secs())],
    )
    .await;
    let mut health = HealthClient::new(calls::channel(process.grpc).await);
    let request = HealthCheckRequest {
        service: "proto.ClusterService".into(),
    };
    let mut watch = health.watch(request).await.unwrap().into_inner();
    let first = watch.message().await.unwrap().unwrap();
    assert_eq!(first.status(), ServingStatus::Serving);
    let readyz = format!("{}/readyz", process.url());
    eventually("/readyz to be 200", Duration::from_secs(10), || {
        let readyz = readyz.clone();
        async move {
            let status = reqwest::get(&readyz).await.ok()?.status().as_u16();
            (status == 200).then_some(())
        }
    })
    .await;

    // A health watch never ends by itself: it sees the server stop serving, and is cut off once the grace
    // period is over (the process does not wait for it any longer).
    process.terminate();
    let stopping = Instant::now();
    let next = tokio::time::timeout(Duration::from_secs(5), watch.message())
        .await
        .expect("no health update after SIGTERM")
        .unwrap()
        .unwrap();
    assert_eq!(next.status(), ServingStatus::NotServing);
    let end = tokio::time::timeout(grace + Duration::from_secs(5), watch.message())
        .await
        .expect("the watch outlived the grace period");
    assert!(!matches!(end, Ok(Some(_))), "more health updates: {end:?}");
    let status = process.wait(Duration::from_secs(10)).await;
    let took = stopping.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        took >= grace && took < grace + Duration::from_secs(5),
        "the process stopped {took:?} after SIGTERM (grace {grace:?})"
    );
}
