//! [`RayHeads::send`] and [`ApiLookup`] against an in-memory lookup, a fake API server and a local head.

use std::{
    collections::BTreeMap,
    convert::Infallible,
    sync::{Arc, Mutex},
};

use kube::client::Body;
use kuberay_plugin_sdk::{Kind, PortRole, RayTarget};
use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpListener,
};

use super::*;

/// Objects by (kind, name), all in one namespace.
#[derive(Default)]
struct Objects(BTreeMap<(String, String), Value>);

impl Objects {
    fn with(mut self, object: Value) -> Self {
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.0.insert((kind, name), object);
        self
    }
}

impl ObjectLookup for Objects {
    async fn get(&self, kind: &Kind, _: &str, name: &str) -> HostResult<Option<Value>> {
        Ok(self.0.get(&(kind.kind.clone(), name.to_string())).cloned())
    }

    async fn list(&self, kind: &Kind, _: &str, label_selector: &str) -> HostResult<Vec<Value>> {
        let wanted: Vec<(&str, &str)> = label_selector
            .split(',')
            .filter_map(|l| l.split_once('='))
            .collect();
        Ok(self
            .0
            .iter()
            .filter(|((k, _), object)| {
                *k == kind.kind
                    && wanted
                        .iter()
                        .all(|(key, value)| object["metadata"]["labels"][*key] == *value)
            })
            .map(|(_, object)| object.clone())
            .collect())
    }
}

/// A controller owner reference to the object with `uid`.
fn controlled(uid: &str) -> Value {
    json!([{"apiVersion": "v1", "kind": "Owner", "name": "owner", "uid": uid, "controller": true}])
}

fn cluster(auth: bool) -> Value {
    let mut cluster = json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "c-uid"},
        "status": {"head": {"podName": "c-head-x"}},
    });
    if auth {
        cluster["spec"] = json!({"authOptions": {"mode": "token"}});
    }
    cluster
}

fn head_service(port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "c-head-svc", "uid": "svc-uid", "ownerReferences": controlled("c-uid")},
        "spec": {"ports": [{"name": "dashboard", "port": port}], "selector": {"ray.io/cluster": "c"}},
    })
}

fn endpoints(port: u16) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "c-head-svc-abcde", "labels": {"kubernetes.io/service-name": "c-head-svc"},
                     "ownerReferences": controlled("svc-uid")},
        "ports": [{"name": "dashboard", "port": port}],
        "endpoints": [
            {"addresses": ["127.0.0.2"], "conditions": {"ready": false}},
            {"addresses": ["127.0.0.1"], "conditions": {"ready": true}},
        ],
    })
}

fn head_pod(port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "c-head-x", "labels": {"ray.io/cluster": "c", "ray.io/node-type": "head"},
                     "ownerReferences": controlled("c-uid")},
        "spec": {"containers": [{"ports": [{"name": "dashboard", "containerPort": port}]}]},
        "status": {"podIP": "127.0.0.1"},
    })
}

fn token_secret() -> Value {
    // "secret-token"
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c", "ownerReferences": controlled("c-uid")},
           "data": {"auth_token": "c2VjcmV0LXRva2Vu"}})
}

fn request(target: RayTarget, path: &str) -> RayRequest {
    RayRequest {
        cluster: "c".into(),
        role: PortRole::Dashboard,
        target,
        method: "GET".into(),
        path: path.into(),
        // (A request that sets Authorization itself is refused before sending: see `send.rs`.)
        headers: vec![("Accept".into(), "application/json".into())],
        body: Vec::new(),
    }
}

/// A head answering one request with `answer`; returns its port and the request it received.
async fn one_shot_head(answer: &'static str) -> (u16, tokio::task::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut received = Vec::new();
        let mut buffer = [0; 4096];
        while !received.ends_with(b"\r\n\r\n") {
            let n = stream.read(&mut buffer).await.unwrap();
            assert_ne!(n, 0, "the client hung up");
            received.extend_from_slice(&buffer[..n]);
        }
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        );
        stream.write_all(response.as_bytes()).await.unwrap();
        String::from_utf8(received).unwrap().to_ascii_lowercase()
    });
    (port, served)
}

/// A Kubernetes client whose API server is `answer`, recording what it was asked.
fn fake_api(
    answer: impl Fn(&http::Request<Body>) -> (u16, String) + Send + Sync + 'static,
) -> (kube::Client, Arc<Mutex<Vec<http::Request<Body>>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let answer = Arc::new(answer);
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let (status, body) = answer(&request);
        recorded.lock().unwrap().push(request);
        async move {
            Ok::<_, Infallible>(
                http::Response::builder()
                    .status(status)
                    .header("content-type", "application/json")
                    .body(Body::from(body.into_bytes()))
                    .unwrap(),
            )
        }
    });
    (kube::Client::new(service, "default"), seen)
}

fn unused_api() -> kube::Client {
    fake_api(|_| (500, "unused".into())).0
}

fn status(code: u16, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message, "code": code})
        .to_string()
}

fn direct() -> RayHeads {
    RayHeads::new(
        RoutingMode::Direct {
            cluster_domain: "cluster.local".into(),
        },
        None,
    )
}

#[tokio::test]
async fn direct_service_route_goes_to_a_ready_endpoint_with_the_service_name_and_token() {
    let (port, served) = one_shot_head(r#"{"jobs":[]}"#).await;
    let objects = Objects::default()
        .with(head_service(8265))
        .with(endpoints(port))
        .with(token_secret());
    let sent = direct()
        .send(
            &objects,
            &unused_api(),
            "ns",
            &cluster(true),
            &request(RayTarget::Cluster, "/api/jobs/"),
        )
        .await;
    assert_eq!(sent.route, Some("direct-service"));
    assert_eq!(sent.outcome(), "ok");
    assert_eq!(sent.result.unwrap().body, br#"{"jobs":[]}"#);
    let received = served.await.unwrap();
    assert!(received.starts_with("get /api/jobs/ http/1.1\r\n"), "{received}");
    assert!(
        received.contains("host: c-head-svc.ns.svc.cluster.local:8265\r\n"),
        "{received}"
    );
    assert!(
        received.contains("x-ray-authorization: bearer secret-token\r\n"),
        "{received}"
    );
    assert!(received.contains("accept: application/json\r\n"), "{received}");
}

#[tokio::test]
async fn an_empty_custom_head_service_name_means_the_default_as_in_the_plugins() {
    let (port, served) = one_shot_head(r#"{"jobs":[]}"#).await;
    let objects = Objects::default().with(head_service(8265)).with(endpoints(port));
    let mut cluster = cluster(false);
    cluster["spec"] = json!({"headGroupSpec": {"headService": {"metadata": {"name": ""}}}});
    assert_eq!(head_service_name(&cluster), "c-head-svc");
    let sent = direct()
        .send(
            &objects,
            &unused_api(),
            "ns",
            &cluster,
            &request(RayTarget::Cluster, "/api/jobs/"),
        )
        .await;
    assert_eq!(sent.outcome(), "ok");
    let received = served.await.unwrap();
    assert!(
        received.contains("host: c-head-svc.ns.svc.cluster.local:8265\r\n"),
        "{received}"
    );
}

#[tokio::test]
async fn direct_pod_route_goes_to_the_pod_address() {
    let (port, served) = one_shot_head("{}").await;
    let objects = Objects::default().with(head_pod(port));
    let sent = direct()
        .send(
            &objects,
            &unused_api(),
            "ns",
            &cluster(false),
            &request(RayTarget::HeadPod, "/api/version"),
        )
        .await;
    assert_eq!((sent.route, sent.outcome()), (Some("direct-pod"), "ok"));
    let received = served.await.unwrap();
    assert!(
        received.contains(&format!("host: 127.0.0.1:{port}\r\n")),
        "{received}"
    );
    assert!(!received.contains("x-ray-authorization"), "{received}");
}

#[tokio::test]
async fn proxy_routes_use_the_clients_api_server_and_tell_its_status_from_rays_answer() {
    let proxy = RayHeads::new(RoutingMode::KubernetesProxy, None);
    assert_eq!(proxy.timeout(), PROXY_TIMEOUT);
    let objects = Objects::default()
        .with(head_service(8265))
        .with(head_pod(8265))
        .with(token_secret());
    let (api, seen) = fake_api(|request| match request.uri().path() {
        "/api/v1/namespaces/ns/services/c-head-svc:dashboard/proxy/api/jobs/" => (200, "[]".into()),
        "/api/v1/namespaces/ns/pods/c-head-x:8265/proxy/api/jobs/missing" => {
            (404, "Job missing does not exist".into())
        }
        _ => (
            503,
            status(503, "no endpoints available for service \"c-head-svc\""),
        ),
    });

    let sent = proxy
        .send(
            &objects,
            &api,
            "ns",
            &cluster(true),
            &request(RayTarget::Cluster, "/api/jobs/"),
        )
        .await;
    assert_eq!((sent.route, sent.outcome()), (Some("proxy-service"), "ok"));
    let sent = proxy
        .send(
            &objects,
            &api,
            "ns",
            &cluster(true),
            &request(RayTarget::HeadPod, "/api/jobs/missing"),
        )
        .await;
    assert_eq!((sent.route, sent.outcome()), (Some("proxy-pod"), "http-error"));
    assert_eq!(sent.result.unwrap().status, 404);
    let sent = proxy
        .send(
            &objects,
            &api,
            "ns",
            &cluster(true),
            &request(RayTarget::Cluster, "/api/version"),
        )
        .await;
    assert_eq!(
        (sent.route, sent.outcome()),
        (Some("proxy-service"), "unavailable")
    );
    assert!(
        matches!(&sent.result, Err(HostError::Unavailable(m)) if m.contains("no endpoints")),
        "{sent:?}"
    );

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    for request in seen.iter() {
        assert_eq!(request.headers()["x-ray-authorization"], "Bearer secret-token");
        assert!(request.headers().get("authorization").is_none());
    }
}

#[tokio::test]
async fn requests_without_a_route_or_with_an_escaping_path_fail_before_sending() {
    let heads = direct();
    let empty = Objects::default();
    let sent = heads
        .send(
            &empty,
            &unused_api(),
            "ns",
            &cluster(false),
            &request(RayTarget::Cluster, "/api/jobs/"),
        )
        .await;
    assert_eq!((sent.route, sent.outcome()), (Some("unresolved"), "unavailable"));
    assert!(matches!(&sent.result, Err(HostError::Unavailable(m)) if m.contains("no head Service")));

    let no_endpoints = Objects::default().with(head_service(8265));
    let sent = heads
        .send(
            &no_endpoints,
            &unused_api(),
            "ns",
            &cluster(false),
            &request(RayTarget::Cluster, "/"),
        )
        .await;
    assert_eq!(sent.route, Some("unresolved"));
    assert!(matches!(&sent.result, Err(HostError::Unavailable(m)) if m.contains("no endpoints")));

    let sent = heads
        .send(
            &empty,
            &unused_api(),
            "ns",
            &cluster(false),
            &request(RayTarget::Cluster, "/api/../x"),
        )
        .await;
    assert_eq!(sent.route, None);
    assert!(matches!(sent.result, Err(HostError::Forbidden(_))));

    // A method outside the allow-list is refused as such even before the head has a route.
    let mut trace = request(RayTarget::Cluster, "/api/jobs/");
    trace.method = "TRACE".into();
    let sent = heads
        .send(&empty, &unused_api(), "ns", &cluster(false), &trace)
        .await;
    assert_eq!((sent.route, sent.refused), (None, true));
    assert!(matches!(&sent.result, Err(HostError::Forbidden(m)) if m.contains("TRACE")));

    let no_token = Objects::default().with(head_pod(8265));
    let sent = heads
        .send(
            &no_token,
            &unused_api(),
            "ns",
            &cluster(true),
            &request(RayTarget::HeadPod, "/"),
        )
        .await;
    assert_eq!(sent.route, None);
    assert!(matches!(&sent.result, Err(HostError::Unavailable(m)) if m.contains("auth token")));
}

#[tokio::test]
async fn api_lookup_reads_with_the_clients_identity_and_keeps_the_api_servers_verdict() {
    let (api, seen) = fake_api(|request| match request.uri().path() {
        "/api/v1/namespaces/ns/services/c-head-svc" => (200, head_service(8265).to_string()),
        "/api/v1/namespaces/ns/secrets/c" => (
            403,
            status(
                403,
                "secrets \"c\" is forbidden: User \"alice\" cannot get resource \"secrets\"",
            ),
        ),
        "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices" => (
            200,
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSliceList", "metadata": {},
                   "items": [endpoints(8265)]})
            .to_string(),
        ),
        "/api/v1/namespaces/ns/pods" => (500, status(500, "etcd is down")),
        _ => (404, status(404, "not found")),
    });
    let lookup = ApiLookup::new(api);
    let service = lookup
        .get(&Kind::new("", "v1", "Service"), "ns", "c-head-svc")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(service["spec"]["ports"][0]["port"], 8265);
    assert_eq!(
        lookup.get(&Kind::new("", "v1", "Pod"), "ns", "gone").await,
        Ok(None)
    );
    assert_eq!(
        lookup.get(&Kind::new("", "v1", "Secret"), "ns", "c").await,
        Err(HostError::Forbidden(
            "secrets \"c\" is forbidden: User \"alice\" cannot get resource \"secrets\"".into()
        ))
    );
    let slices = lookup
        .list(
            &Kind::new("discovery.k8s.io", "v1", "EndpointSlice"),
            "ns",
            "kubernetes.io/service-name=c-head-svc",
        )
        .await
        .unwrap();
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0]["ports"][0]["name"], "dashboard");
    assert!(matches!(
        lookup.list(&Kind::new("", "v1", "Pod"), "ns", "").await,
        Err(HostError::Unavailable(m)) if m == "etcd is down"
    ));
    let queries: Vec<Option<String>> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.uri().query().map(str::to_string))
        .collect();
    assert!(
        queries
            .iter()
            .flatten()
            .any(|q| q.contains("labelSelector=kubernetes.io%2Fservice-name%3Dc-head-svc")),
        "{queries:?}"
    );
}

#[tokio::test]
async fn a_forbidden_endpoint_list_stays_forbidden() {
    let (api, _) = fake_api(|request| match request.uri().path() {
        "/api/v1/namespaces/ns/services/c-head-svc" => (200, head_service(8265).to_string()),
        _ => (403, status(403, "endpointslices.discovery.k8s.io is forbidden")),
    });
    let sent = direct()
        .send(
            &ApiLookup::new(api),
            &unused_api(),
            "ns",
            &cluster(false),
            &request(RayTarget::Cluster, "/"),
        )
        .await;
    assert_eq!(sent.route, Some("unresolved"));
    assert!(matches!(&sent.result, Err(HostError::Forbidden(m)) if m.contains("endpointslices")));
}

/// Objects of the victim cluster `v` (uid `v-uid`), whose head listens on `port`.
fn victim_objects(port: u16) -> Objects {
    let mut service = head_service(port);
    service["metadata"] =
        json!({"name": "v-head-svc", "uid": "v-svc-uid", "ownerReferences": controlled("v-uid")});
    service["spec"]["selector"] = json!({"ray.io/cluster": "v"});
    let mut slice = endpoints(port);
    slice["metadata"] = json!({"name": "v-head-svc-xyz", "labels": {"kubernetes.io/service-name": "v-head-svc"},
                               "ownerReferences": controlled("v-svc-uid")});
    let mut pod = head_pod(port);
    pod["metadata"] = json!({"name": "v-head", "labels": {"ray.io/cluster": "v", "ray.io/node-type": "head"},
                             "ownerReferences": controlled("v-uid")});
    let mut secret = token_secret();
    secret["metadata"] = json!({"name": "v", "ownerReferences": controlled("v-uid")});
    Objects::default()
        .with(service)
        .with(slice)
        .with(pod)
        .with(secret)
}

async fn send_as(objects: &Objects, cluster: &Value, target: RayTarget) -> Sent {
    direct()
        .send(
            objects,
            &unused_api(),
            "ns",
            cluster,
            &request(target, "/api/version"),
        )
        .await
}

#[tokio::test]
async fn a_cluster_whose_fields_name_another_clusters_objects_reaches_nothing_of_it() {
    let victim = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = victim.local_addr().unwrap().port();
    let refused = |sent: &Sent, needle: &str| {
        assert!(sent.refused, "{sent:?}");
        assert_eq!(sent.route, None);
        assert!(
            matches!(&sent.result, Err(HostError::Forbidden(m)) if m.contains(needle)),
            "{sent:?}"
        );
    };

    // The spec names the victim's head Service.
    let mut named = cluster(false);
    named["spec"] = json!({"headGroupSpec": {"headService": {"metadata": {"name": "v-head-svc"}}}});
    let sent = send_as(&victim_objects(port), &named, RayTarget::Cluster).await;
    refused(&sent, "Service v-head-svc is not controlled by RayCluster c");

    // Its own Service, selecting the victim's Pods.
    let mut selecting = head_service(port);
    selecting["spec"]["selector"] = json!({"ray.io/cluster": "v"});
    let objects = victim_objects(port).with(selecting);
    let sent = send_as(&objects, &cluster(false), RayTarget::Cluster).await;
    refused(&sent, "does not select the Pods of RayCluster c");

    // A slice that only carries the label of its Service is passed over.
    let mut forged = endpoints(port);
    forged["metadata"]["ownerReferences"] = controlled("v-svc-uid");
    let objects = victim_objects(port).with(head_service(port)).with(forged);
    let sent = send_as(&objects, &cluster(false), RayTarget::Cluster).await;
    assert_eq!(sent.route, Some("unresolved"));
    assert!(matches!(&sent.result, Err(HostError::Unavailable(m)) if m.contains("no endpoints")));

    // The status names the victim's head Pod; a Pod labelled as its head that it does not control.
    let mut status = cluster(false);
    status["status"]["head"]["podName"] = json!("v-head");
    let sent = send_as(&victim_objects(port), &status, RayTarget::HeadPod).await;
    refused(&sent, "Pod v-head is not controlled by RayCluster c");
    let mut labelled = head_pod(port);
    labelled["metadata"]["ownerReferences"] = controlled("v-uid");
    let objects = victim_objects(port).with(labelled);
    let mut no_status = cluster(false);
    no_status["status"] = json!({});
    let sent = send_as(&objects, &no_status, RayTarget::HeadPod).await;
    assert!(matches!(&sent.result, Err(HostError::Unavailable(m)) if m.contains("no head Pod")));

    // The victim's generated token; a user's own Secret (no controller) is fine.
    let mut borrowing = cluster(true);
    borrowing["spec"]["authOptions"]["secretName"] = json!("v");
    let objects = victim_objects(port).with(head_pod(port));
    let sent = send_as(&objects, &borrowing, RayTarget::HeadPod).await;
    refused(&sent, "the auth token Secret v is not controlled by RayCluster c");
    let mut own = token_secret();
    own["metadata"] = json!({"name": "c"});
    let objects = victim_objects(port).with(head_pod(port)).with(own);
    let sent = send_as(&objects, &cluster(true), RayTarget::HeadPod).await;
    refused(&sent, "the auth token Secret c is not controlled");

    // The victim's head saw none of it.
    let accepted = tokio::time::timeout(Duration::from_millis(200), victim.accept()).await;
    assert!(accepted.is_err(), "the victim's head was contacted");

    // A user's Secret that no object controls, named by secretName, carries the token to the cluster's own head.
    let (own_port, served) = one_shot_head("{}").await;
    let mut users = token_secret();
    users["metadata"] = json!({"name": "user-token"});
    let mut with_users = cluster(true);
    with_users["spec"]["authOptions"]["secretName"] = json!("user-token");
    let objects = Objects::default().with(head_pod(own_port)).with(users);
    let sent = send_as(&objects, &with_users, RayTarget::HeadPod).await;
    assert_eq!(
        (sent.route, sent.outcome(), sent.refused),
        (Some("direct-pod"), "ok", false)
    );
    assert!(
        served
            .await
            .unwrap()
            .contains("x-ray-authorization: bearer secret-token")
    );
}
