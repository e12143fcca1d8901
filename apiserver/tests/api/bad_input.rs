//! Bad input gets a 4xx with a message that says what was wrong, never a 5xx, and leaves nothing behind;
//! bodies over `--max-request-bytes` are refused (413 on REST whatever the framing, RESOURCE_EXHAUSTED on
//! gRPC); an API server that is down or does not answer makes calls fail fast with 503 while the server
//! keeps serving.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::ListParams};
use kuberay_crds::{RayCluster, RayJob, RayService};
use kuberay_testenv::HeadMode;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};
use tonic::Code;

use crate::{
    calls,
    support::{
        Server, User, cluster, env, eventually, expect, kubeconfig_with_token, namespace, server_kubeconfig,
        service_account_token, template,
    },
};

/// One bad request: what is sent, and a word the error message must contain.
struct Bad {
    what: &'static str,
    method: &'static str,
    path: String,
    body: Option<String>,
    status: u16,
    says: &'static str,
}

fn bad(
    what: &'static str,
    method: &'static str,
    path: String,
    body: Option<String>,
    says: &'static str,
) -> Bad {
    Bad {
        what,
        method,
        path,
        body,
        status: 400,
        says,
    }
}

/// Sends a raw body (whatever it holds) with `Content-Type: application/json`.
async fn send_raw(rest: &crate::support::Rest, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = rest.client.request(method, format!("{}{path}", rest.base));
    if let Some(token) = &rest.token {
        request = request.bearer_auth(token);
    }
    if let Some(body) = body {
        request = request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[tokio::test]
async fn bad_requests_get_a_clear_4xx_and_leave_nothing_behind() {
    let env = env().await;
    let ns = namespace(env, "bad-input", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    let server = Server::start(env, &[]).await;
    let rest = server.rest(Some(&user.token));
    let base = format!("/apis/v1/namespaces/{}", ns.name());
    expect(
        rest.post(&format!("{base}/compute_templates"), &template("small", 1))
            .await,
        200,
    );
    let clusters = format!("{base}/clusters");
    let with = |change: &dyn Fn(&mut Value)| {
        let mut body = cluster("c", "u", "small", 1);
        change(&mut body);
        Some(body.to_string())
    };
    let cases = vec![
        bad("malformed JSON", "POST", clusters.clone(), Some(r#"{"name": "c", "#.into()), "not valid JSON"),
        bad("not an object", "POST", clusters.clone(), Some("[1, 2]".into()), "JSON object"),
        bad("a number for a name", "POST", clusters.clone(), with(&|b| b["name"] = json!(5)), "name"),
        bad("a string for replicas", "POST", clusters.clone(),
            with(&|b| b["clusterSpec"]["workerGroupSpec"][0]["replicas"] = json!("many")), "replicas"),
        bad("a list for the spec", "POST", clusters.clone(), with(&|b| b["clusterSpec"] = json!([])), "clusterSpec"),
        bad("an unknown environment", "POST", clusters.clone(),
            with(&|b| b["environment"] = json!(42)), "environment"),
        bad("no cluster spec", "POST", clusters.clone(),
            with(&|b| drop(b.as_object_mut().unwrap().remove("clusterSpec"))), "clusterSpec"),
        bad("no name", "POST", clusters.clone(),
            with(&|b| drop(b.as_object_mut().unwrap().remove("name"))), "name"),
        bad("no head template", "POST", clusters.clone(),
            with(&|b| b["clusterSpec"]["headGroupSpec"]["computeTemplate"] = json!("")), "computeTemplate"),
        bad("an empty body", "POST", clusters.clone(), None, "cluster"),
        bad("the body's namespace differs from the path's", "POST", clusters.clone(),
            with(&|b| b["namespace"] = json!("elsewhere")), "differs"),
        bad("an upper-case name", "POST", clusters.clone(), with(&|b| b["name"] = json!("Not_A_Name")), "not a valid"),
        bad("a name too long", "POST", clusters.clone(), with(&|b| b["name"] = json!("c".repeat(60))), "not a valid"),
        bad("a name starting with a digit", "POST", clusters.clone(),
            with(&|b| b["name"] = json!("1c")), "not a valid"),
        bad("an invalid namespace in the path", "GET", "/apis/v1/namespaces/Not_A_Namespace/clusters".into(),
            None, "namespace"),
        bad("an unknown head template", "POST", clusters.clone(),
            with(&|b| b["clusterSpec"]["headGroupSpec"]["computeTemplate"] = json!("missing")), "missing"),
        bad("an unknown worker template", "POST", clusters.clone(),
            with(&|b| b["clusterSpec"]["workerGroupSpec"][0]["computeTemplate"] = json!("missing")), "missing"),
        bad("a job of an unknown template", "POST", format!("{base}/jobs"), Some(json!({
            "name": "j", "user": "u", "version": "2.9.0", "entrypoint": "python -c 'print(1)'",
            "clusterSpec": {"headGroupSpec": {"computeTemplate": "missing", "rayStartParams": {"a": "b"}}},
        }).to_string()), "missing"),
        bad("a service of an unknown template", "POST", format!("{base}/services"), Some(json!({
            "name": "s", "user": "u", "version": "2.9.0", "serveConfigV2": "applications: []\n",
            "clusterSpec": {"headGroupSpec": {"computeTemplate": "missing", "rayStartParams": {"a": "b"}}},
        }).to_string()), "missing"),
        bad("a template of no CPU", "POST", format!("{base}/compute_templates"),
            Some(json!({"name": "t", "memory": 1}).to_string()), "cpu"),
        bad("a template of text memory", "POST", format!("{base}/compute_templates"),
            Some(json!({"name": "t", "cpu": 1, "memory": "lots"}).to_string()), "memory"),
        bad("a negative page size", "GET", format!("{clusters}?limit=-1"), None, "limit"),
        bad("a page size that is not a number", "GET", format!("{clusters}?limit=ten"), None, "limit"),
        bad("a submission without an entrypoint", "POST", format!("{base}/jobsubmissions/c"),
            Some("{}".into()), "entrypoint"),
        Bad {
            status: 404,
            ..bad("an empty path segment", "GET", "/apis/v1/namespaces//clusters".into(), None, "Not Found")
        },
        // An empty last segment is the object named "", as KubeRay's gateway reads it: its 400 and message.
        bad("get of an empty cluster name", "GET", format!("{clusters}/"), None,
            "Cluster name is empty. Please specify a valid value."),
        bad("delete of an empty cluster name", "DELETE", format!("{clusters}/"), None,
            "Cluster name is empty. Please specify a valid value."),
        bad("get of an empty template name", "GET", format!("{base}/compute_templates/"), None,
            "Compute template name is empty. Please specify a valid value."),
        bad("delete of an empty template name", "DELETE", format!("{base}/compute_templates/"), None,
            "Compute template name is empty. Please specify a valid value."),
        bad("get of an empty job name", "GET", format!("{base}/jobs/"), None,
            "job name is empty. Please specify a valid value."),
        bad("delete of an empty job name", "DELETE", format!("{base}/jobs/"), None,
            "job name is empty. Please specify a valid value."),
        bad("get of an empty service name", "GET", format!("{base}/services/"), None,
            "ray service name is empty. Please specify a valid value."),
        bad("delete of an empty service name", "DELETE", format!("{base}/services/"), None,
            "ray service name is empty. Please specify a valid value."),
        bad("job submissions of an empty cluster name", "GET", format!("{base}/jobsubmissions/"), None,
            "Cluster name is empty. Please specify a valid value."),
        Bad {
            status: 405,
            ..bad("a method the route lacks", "PATCH", format!("{clusters}/c"), None, "Method Not Allowed")
        },
    ];
    let mut failures = Vec::new();
    for case in &cases {
        let (status, answer) = send_raw(&rest, case.method, &case.path, case.body.as_deref()).await;
        let message = answer["message"].as_str().unwrap_or_default();
        if status != case.status || !message.contains(case.says) || answer["code"].as_i64().is_none() {
            failures.push(format!(
                "{}: {} {} answered {status} {answer} (expected {} saying {:?})",
                case.what, case.method, case.path, case.status, case.says
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // A replacement whose body names another object than its path.
    let service = json!({
        "name": "other", "user": "u", "version": "2.9.0", "serveConfigV2": "applications: []\n",
        "clusterSpec": {"headGroupSpec": {"computeTemplate": "small", "rayStartParams": {"a": "b"}}},
    });
    let (status, answer) = rest.put(&format!("{base}/services/s"), &service).await;
    assert!(
        status == 400 && answer["message"].as_str().is_some_and(|m| m.contains("differs")),
        "a service replaced under another name: {status} {answer}"
    );

    // KubeRay's Swagger 2.0 documents at its paths; an unknown one is a 404 naming those there are.
    let swagger = expect(rest.get("/swagger/cluster.swagger.json").await, 200);
    assert_eq!(swagger["swagger"], "2.0", "{swagger}");
    assert!(swagger["paths"]["/apis/v1/namespaces/{namespace}/clusters"]["post"].is_object());
    let all = expect(rest.get("/swagger/kuberay_api.swagger.json").await, 200);
    assert!(all["paths"]["/apis/v1/namespaces/{namespace}/jobs"].is_object());
    let missing = expect(rest.get("/swagger/nothing.swagger.json").await, 404);
    assert!(
        missing
            .as_str()
            .is_some_and(|m| m.contains("cluster.swagger.json")),
        "{missing}"
    );

    // Nothing was created by any of them: no Ray object, and no ConfigMap but the template.
    let admin = env.client().await.unwrap();
    let everything = ListParams::default();
    let clusters = Api::<RayCluster>::namespaced(admin.clone(), ns.name());
    assert!(clusters.list(&everything).await.unwrap().items.is_empty());
    let jobs = Api::<RayJob>::namespaced(admin.clone(), ns.name());
    assert!(jobs.list(&everything).await.unwrap().items.is_empty());
    let services = Api::<RayService>::namespaced(admin.clone(), ns.name());
    assert!(services.list(&everything).await.unwrap().items.is_empty());
    let config_maps = Api::<ConfigMap>::namespaced(admin, ns.name());
    let mut names: Vec<String> = config_maps
        .list(&everything)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, ["kube-root-ca.crt", "small"]);
    // And the server is as good as before.
    expect(
        rest.post(&format!("{base}/clusters"), &cluster("c", "u", "small", 1))
            .await,
        200,
    );
    server.stop().await.unwrap();
}

/// Writes a raw HTTP/1.1 request with a chunked body of `size` bytes and reads the whole answer; the
/// server may answer (and stop reading) before the body ends.
async fn chunked_request(address: SocketAddr, path: &str, token: &str, size: usize) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let chunk = vec![b' '; 8192];
    let mut sent = 0;
    while sent < size {
        let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
        frame.extend_from_slice(&chunk);
        frame.extend_from_slice(b"\r\n");
        if stream.write_all(&frame).await.is_err() {
            break;
        }
        sent += chunk.len();
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer);
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    // The body itself may be chunked: take the JSON between the first `{` and the last `}`.
    let json = match (body.find('{'), body.rfind('}')) {
        (Some(start), Some(end)) => &body[start..=end],
        _ => "",
    };
    (
        status,
        serde_json::from_str(json).unwrap_or(Value::String(body.to_string())),
    )
}

#[tokio::test]
async fn bodies_over_the_limit_are_refused_whatever_their_framing() {
    let env = env().await;
    let ns = namespace(env, "oversized", HeadMode::None).await;
    let user = User::service_account(env, ns.name(), "ray-user").await;
    user.grant(env, ns.name()).await;
    const LIMIT: usize = 16 * 1024;
    let server = Server::start(env, &[&format!("--max-request-bytes={LIMIT}")]).await;
    let rest = server.rest(Some(&user.token));
    let templates = format!("/apis/v1/namespaces/{}/compute_templates", ns.name());
    let pass_through = format!("/apis/ray.io/v1/namespaces/{}/rayclusters", ns.name());
    // A valid template padded with whitespace past the limit.
    let padded = format!("{}{}", template("big", 1), " ".repeat(LIMIT + 1));

    for path in [&templates, &pass_through] {
        // With Content-Length: refused before it is read.
        let (status, answer) = send_raw(&rest, "POST", path, Some(&padded)).await;
        assert_eq!(status, 413, "{path} with Content-Length: {answer}");
        let message = answer["message"].as_str().unwrap_or_default();
        assert!(message.contains(&LIMIT.to_string()), "{answer}");
        // Chunked: refused once it has read past the limit.
        let (status, answer) = chunked_request(server.http, path, &user.token, LIMIT * 4).await;
        assert_eq!(status, 413, "{path} chunked: {answer}");
        assert!(answer["message"].as_str().is_some(), "{answer}");
    }
    // The REST API's errors have the gRPC status body; the pass-through's are Kubernetes Status objects.
    let (_, answer) = send_raw(&rest, "POST", &templates, Some(&padded)).await;
    assert_eq!(answer["code"], 8, "{answer}");
    assert_eq!(answer["details"], json!([]), "{answer}");
    let (_, answer) = send_raw(&rest, "POST", &pass_through, Some(&padded)).await;
    assert_eq!(
        (&answer["kind"], &answer["code"]),
        (&json!("Status"), &json!(413)),
        "{answer}"
    );

    // Just under the limit is fine.
    let fits = format!("{}{}", template("fits", 1), " ".repeat(LIMIT - 200));
    let (status, answer) = send_raw(&rest, "POST", &templates, Some(&fits)).await;
    assert_eq!(status, 200, "{answer}");

    // gRPC: tonic refuses a message over the limit before the service sees it, naming the limit (with
    // OUT_OF_RANGE; gRPC's own implementations say RESOURCE_EXHAUSTED, either is a client error).
    let names = calls::Names::in_namespace(ns.name());
    let channel = calls::channel(server.grpc).await;
    let create = "/proto.ComputeTemplateService/CreateComputeTemplate";
    let mut request = kuberay_apiserver::api::CreateComputeTemplateRequest {
        namespace: names.namespace.clone(),
        compute_template: Some(kuberay_apiserver::api::ComputeTemplate {
            name: "huge".into(),
            cpu: 1,
            memory: 1,
            gpu_accelerator: "x".repeat(LIMIT + 1),
            ..Default::default()
        }),
    };
    let answer = calls::unary(
        &channel,
        create,
        prost::Message::encode_to_vec(&request),
        Some(&user.token),
    )
    .await;
    assert!(
        matches!(&answer, Err(s) if matches!(s.code(), Code::OutOfRange | Code::ResourceExhausted)
            && s.message().contains(&LIMIT.to_string())),
        "a gRPC message over the limit: {answer:?}"
    );
    // Under it, the same call is judged on its content.
    if let Some(t) = request.compute_template.as_mut() {
        t.gpu_accelerator = "x/y/z".into();
    }
    let answer = calls::unary(
        &channel,
        create,
        prost::Message::encode_to_vec(&request),
        Some(&user.token),
    )
    .await;
    assert!(
        matches!(&answer, Err(s) if s.code() == Code::InvalidArgument && s.message().contains("gpuAccelerator")),
        "{answer:?}"
    );
    server.stop().await.unwrap();
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_api_server_is_503_and_the_server_stays_alive() {
    let env = env().await;
    let user = User::named(env, "alice");
    let token = server_token(env).await;
    let kubeconfig = kubeconfig_with_token(
        env,
        &token,
        Some(&format!("https://127.0.0.1:{}", closed_port().await)),
        "down",
    );
    let server = Server::start_with_kubeconfig(&kubeconfig, &["--request-timeout=5s"]).await;
    let rest = server.rest(Some(&user.token));
    for path in [
        "/apis/v1/namespaces/default/clusters",
        "/apis/v1/compute_templates",
        "/apis/ray.io/v1/namespaces/default/rayclusters",
    ] {
        let started = Instant::now();
        let (status, answer) = rest.get(path).await;
        assert_eq!(status, 503, "{path}: {answer}");
        assert!(
            answer["message"]
                .as_str()
                .is_some_and(|m| m.contains("unreachable")),
            "{path}: {answer}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{path} took {:?}",
            started.elapsed()
        );
    }
    let channel = calls::channel(server.grpc).await;
    let list = calls::grpc_calls(&calls::Names::in_namespace("default"))
        .into_iter()
        .find(|c| c.path == "/proto.ClusterService/ListCluster")
        .unwrap();
    let answer = calls::unary(&channel, &list.path, list.message, Some(&user.token)).await;
    assert!(
        matches!(&answer, Err(s) if s.code() == Code::Unavailable),
        "{answer:?}"
    );

    let (status, reason) = eventually("/readyz to say why", Duration::from_secs(15), || {
        let rest = rest.clone();
        async move {
            let answer = rest.get("/readyz").await;
            answer
                .1
                .as_str()
                .is_some_and(|r| r.contains("not reachable"))
                .then_some(answer)
        }
    })
    .await;
    assert_eq!(status, 503, "{reason}");
    expect(rest.get("/healthz").await, 200);
    expect(rest.get("/openapi.json").await, 200);
    server.stop().await.unwrap();
}

/// A token of the server's own ServiceAccount.
async fn server_token(env: &kuberay_testenv::TestEnv) -> String {
    // The account and its rights are those of every other test's server.
    server_kubeconfig(env).await;
    service_account_token(env, "kuberay-system", "kuberay-apiserver").await
}

#[tokio::test]
async fn a_silent_api_server_is_503_within_the_request_timeout_and_others_are_served_meanwhile() {
    let env = env().await;
    // Over TLS the handshake never completes; in plain HTTP the request is sent and never answered.
    for scheme in ["https", "http"] {
        silent_api_server(env, scheme).await;
    }
}

async fn silent_api_server(env: &kuberay_testenv::TestEnv, scheme: &str) {
    // Accepts connections and never answers (holding them open).
    let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = silent.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let token = server_token(env).await;
    let kubeconfig = kubeconfig_with_token(
        env,
        &token,
        Some(&format!("{scheme}://{address}")),
        &format!("silent-{scheme}"),
    );
    let server = Server::start_with_kubeconfig(&kubeconfig, &["--request-timeout=3s"]).await;
    let user = User::named(env, "alice");
    let rest = server.rest(Some(&user.token));

    let slow = {
        let rest = rest.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let answer = rest.get("/apis/v1/namespaces/default/clusters").await;
            (answer, started.elapsed())
        })
    };
    // While that call waits on the API server, others are answered at once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for path in ["/healthz", "/openapi.json", "/metrics"] {
        let started = Instant::now();
        expect(rest.get(path).await, 200);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{path} took {:?}",
            started.elapsed()
        );
    }
    assert!(
        !slow.is_finished(),
        "the call to a silent API server did not wait"
    );
    let ((status, answer), took) = slow.await.unwrap();
    // The server's Kubernetes client gives up at 80% of the request timeout, so the call fails as
    // UNAVAILABLE (503) with what happened, before the call's own deadline (504) would cut it off.
    assert_eq!(status, 503, "{scheme}: {answer}");
    assert!(
        answer["message"]
            .as_str()
            .is_some_and(|m| m.contains("did not answer in time") || m.contains("unreachable")),
        "{scheme}: {answer}"
    );
    assert!(took < Duration::from_secs(4), "{scheme}: the call took {took:?}");
    eprintln!("a call to a silent API server ({scheme}): {status} after {took:?}: {answer}");
    // And again, after the failure.
    let started = Instant::now();
    let (status, answer) = rest.get("/apis/v1/compute_templates").await;
    assert_eq!(status, 503, "{answer}");
    assert!(started.elapsed() < Duration::from_secs(4));
    expect(rest.get("/healthz").await, 200);
    server.stop().await.unwrap();
    holder.abort();
}
