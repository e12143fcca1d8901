//! The gateway end to end, in-process: REST requests through [`Gateway::handle`] to real tonic services
//! (small in-memory fakes of the generated traits, mounted with `tonic::service::Routes`).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use serde_json::{Value, json};
use tonic::{Response, Status};

use super::{Gateway, MatchedRoute};
use crate::api::{
    self, Cluster, ComputeTemplate, cluster_service_server::ClusterService,
    compute_template_service_server::ComputeTemplateService,
};

/// A request extension, as the TLS layer would add one.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClientIdentity(String);

/// What the fakes saw of each call: metadata and extensions.
#[derive(Debug, Default, Clone)]
struct Seen {
    authorization: Option<String>,
    request_id: Option<String>,
    identity: Option<ClientIdentity>,
}

#[derive(Default, Clone)]
struct Fake {
    templates: Arc<Mutex<BTreeMap<(String, String), ComputeTemplate>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    fn record<T>(&self, request: &tonic::Request<T>) {
        let text = |name: &str| {
            request
                .metadata()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let seen = Seen {
            authorization: text("authorization"),
            request_id: text("x-request-id"),
            identity: request.extensions().get::<ClientIdentity>().cloned(),
        };
        self.seen.lock().unwrap().push(seen);
    }

    fn last_seen(&self) -> Seen {
        self.seen.lock().unwrap().last().cloned().unwrap_or_default()
    }
}

#[tonic::async_trait]
impl ComputeTemplateService for Fake {
    async fn create_compute_template(
        &self,
        request: tonic::Request<api::CreateComputeTemplateRequest>,
    ) -> Result<Response<ComputeTemplate>, Status> {
        self.record(&request);
        let request = request.into_inner();
        let mut template = request
            .compute_template
            .ok_or_else(|| Status::invalid_argument("compute template is empty"))?;
        template.namespace = request.namespace;
        let key = (template.namespace.clone(), template.name.clone());
        let mut templates = self.templates.lock().unwrap();
        if templates.contains_key(&key) {
            return Err(Status::already_exists(format!(
                "compute template {} exists",
                template.name
            )));
        }
        templates.insert(key, template.clone());
        Ok(Response::new(template))
    }

    async fn get_compute_template(
        &self,
        request: tonic::Request<api::GetComputeTemplateRequest>,
    ) -> Result<Response<ComputeTemplate>, Status> {
        self.record(&request);
        let request = request.into_inner();
        let templates = self.templates.lock().unwrap();
        templates
            .get(&(request.namespace, request.name.clone()))
            .cloned()
            .map(Response::new)
            .ok_or_else(|| Status::not_found(format!("compute template {:?} not found", request.name)))
    }

    async fn list_compute_templates(
        &self,
        request: tonic::Request<api::ListComputeTemplatesRequest>,
    ) -> Result<Response<api::ListComputeTemplatesResponse>, Status> {
        self.record(&request);
        let namespace = request.into_inner().namespace;
        let templates = self.templates.lock().unwrap();
        let compute_templates = templates
            .iter()
            .filter(|((ns, _), _)| *ns == namespace)
            .map(|(_, t)| t.clone())
            .collect();
        Ok(Response::new(api::ListComputeTemplatesResponse {
            compute_templates,
        }))
    }

    async fn list_all_compute_templates(
        &self,
        request: tonic::Request<api::ListAllComputeTemplatesRequest>,
    ) -> Result<Response<api::ListAllComputeTemplatesResponse>, Status> {
        self.record(&request);
        let compute_templates = self.templates.lock().unwrap().values().cloned().collect();
        Ok(Response::new(api::ListAllComputeTemplatesResponse {
            compute_templates,
        }))
    }

    async fn delete_compute_template(
        &self,
        request: tonic::Request<api::DeleteComputeTemplateRequest>,
    ) -> Result<Response<()>, Status> {
        self.record(&request);
        let request = request.into_inner();
        let removed = self
            .templates
            .lock()
            .unwrap()
            .remove(&(request.namespace, request.name));
        removed
            .map(|_| Response::new(()))
            .ok_or_else(|| Status::not_found("no such compute template"))
    }
}

/// Clusters: `GetCluster` answers a fixed cluster (or errors for some names), `ListCluster` tells what
/// the query string gave it, `CreateCluster` echoes the request.
#[tonic::async_trait]
impl ClusterService for Fake {
    async fn create_cluster(
        &self,
        request: tonic::Request<api::CreateClusterRequest>,
    ) -> Result<Response<Cluster>, Status> {
        self.record(&request);
        let request = request.into_inner();
        let mut cluster = request.cluster.unwrap_or_default();
        cluster.namespace = request.namespace;
        Ok(Response::new(cluster))
    }

    async fn get_cluster(
        &self,
        request: tonic::Request<api::GetClusterRequest>,
    ) -> Result<Response<Cluster>, Status> {
        self.record(&request);
        let request = request.into_inner();
        match request.name.as_str() {
            "missing" => return Err(Status::not_found("cluster \"missing\" not found")),
            "forbidden" => {
                return Err(Status::permission_denied(
                    "rayclusters.ray.io \"forbidden\" is forbidden: User \"ålice\" cannot get: 100% sure\nreally",
                ));
            }
            _ => {}
        }
        Ok(Response::new(Cluster {
            name: request.name,
            namespace: request.namespace,
            user: "alice".into(),
            environment: api::cluster::Environment::Production as i32,
            created_at: Some(prost_types::Timestamp {
                seconds: 1_700_000_000,
                nanos: 0,
            }),
            cluster_state: "ready".into(),
            ..Cluster::default()
        }))
    }

    async fn list_cluster(
        &self,
        request: tonic::Request<api::ListClustersRequest>,
    ) -> Result<Response<api::ListClustersResponse>, Status> {
        self.record(&request);
        let request = request.into_inner();
        Ok(Response::new(api::ListClustersResponse {
            clusters: vec![],
            r#continue: format!(
                "ns={} limit={} continue={}",
                request.namespace, request.limit, request.r#continue
            ),
        }))
    }

    async fn list_all_clusters(
        &self,
        request: tonic::Request<api::ListAllClustersRequest>,
    ) -> Result<Response<api::ListAllClustersResponse>, Status> {
        self.record(&request);
        Ok(Response::new(api::ListAllClustersResponse::default()))
    }

    async fn delete_cluster(
        &self,
        request: tonic::Request<api::DeleteClusterRequest>,
    ) -> Result<Response<()>, Status> {
        self.record(&request);
        Ok(Response::new(()))
    }
}

fn routes(fake: &Fake) -> tonic::service::Routes {
    tonic::service::Routes::new(
        api::compute_template_service_server::ComputeTemplateServiceServer::new(fake.clone()),
    )
    .add_service(api::cluster_service_server::ClusterServiceServer::new(
        fake.clone(),
    ))
}

struct Answer {
    status: StatusCode,
    content_type: Option<String>,
    route: Option<MatchedRoute>,
    json: Value,
}

async fn send(gateway: &Gateway, fake: &Fake, request: Request<Body>) -> Answer {
    let response = gateway.handle(routes(fake), request).await;
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string());
    let route = response.extensions().get::<MatchedRoute>().cloned();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let json = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
    Answer {
        status,
        content_type,
        route,
        json,
    }
}

fn request(method: Method, uri: &str, body: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn call(method: Method, uri: &str, body: &str) -> (Answer, Fake) {
    let fake = Fake::default();
    let answer = send(&Gateway::new().unwrap(), &fake, request(method, uri, body)).await;
    (answer, fake)
}

const TEMPLATES: &str = "/apis/v1/namespaces/ns/compute_templates";

#[tokio::test]
async fn compute_templates_round_trip_with_metadata_and_extensions() {
    let gateway = Gateway::new().unwrap();
    let fake = Fake::default();
    // Snake-case names, a number as a string, and keys the API does not know.
    let body = r#"{"name":"small","cpu":"2","memory":4,"memory_unit":"Gi","gpuAccelerator":"x/gpu",
                   "extended_resources":{"vpc.amazonaws.com/efa":1},"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","color":"red"}],
                   "unknownKey":{"deep":[1,2,3]}}"#;
    let mut create = request(Method::POST, TEMPLATES, body);
    create
        .headers_mut()
        .insert(header::AUTHORIZATION, "Bearer token-1".parse().unwrap());
    create
        .headers_mut()
        .insert("x-request-id", "req-7".parse().unwrap());
    create.extensions_mut().insert(ClientIdentity("CN=alice".into()));
    let answer = send(&gateway, &fake, create).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    assert_eq!(answer.content_type.as_deref(), Some("application/json"));
    assert_eq!(
        answer.json,
        json!({"name":"small","namespace":"ns","cpu":2,"memory":4,"gpuAccelerator":"x/gpu",
               "tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule"}],
               "extendedResources":{"vpc.amazonaws.com/efa":1},"memoryUnit":"Gi"})
    );
    assert_eq!(
        answer.route.map(|r| r.label().to_string()).as_deref(),
        Some("POST /apis/v1/namespaces/{namespace}/compute_templates")
    );
    let seen = fake.last_seen();
    assert_eq!(seen.authorization.as_deref(), Some("Bearer token-1"));
    assert_eq!(seen.request_id.as_deref(), Some("req-7"));
    assert_eq!(seen.identity, Some(ClientIdentity("CN=alice".into())));

    let answer = send(
        &gateway,
        &fake,
        request(Method::GET, &format!("{TEMPLATES}/small"), ""),
    )
    .await;
    assert_eq!(
        (answer.status, answer.json["cpu"].clone()),
        (StatusCode::OK, json!(2))
    );
    assert_eq!(fake.last_seen().authorization, None);

    let again = send(
        &gateway,
        &fake,
        request(Method::POST, TEMPLATES, r#"{"name":"small","cpu":1}"#),
    )
    .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.json["code"], 6);

    let list = send(
        &gateway,
        &fake,
        request(Method::GET, "/apis/v1/compute_templates", ""),
    )
    .await;
    assert_eq!(list.json["computeTemplates"][0]["name"], "small");

    let delete = send(
        &gateway,
        &fake,
        request(Method::DELETE, &format!("{TEMPLATES}/small"), ""),
    )
    .await;
    assert_eq!((delete.status, delete.json), (StatusCode::OK, json!({})));
    let empty = send(&gateway, &fake, request(Method::GET, TEMPLATES, "")).await;
    assert_eq!((empty.status, empty.json), (StatusCode::OK, json!({})));
}

#[tokio::test]
async fn service_errors_become_http_statuses_with_the_status_body() {
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces/ns/clusters/missing", "").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer.json,
        json!({"code":5,"message":"cluster \"missing\" not found","details":[]})
    );
    assert!(answer.route.is_some());
    // grpc-message is percent-encoded on the wire; the client reads the original text.
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces/ns/clusters/forbidden", "").await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert_eq!(
        answer.json["message"],
        "rayclusters.ray.io \"forbidden\" is forbidden: User \"ålice\" cannot get: 100% sure\nreally"
    );
    let (answer, _) = call(Method::GET, &format!("{TEMPLATES}/nope"), "").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.json["message"], "compute template \"nope\" not found");
}

#[tokio::test]
async fn unregistered_services_are_unimplemented() {
    // RayJobService has routes but no service is mounted in this test.
    let (answer, _) = call(Method::GET, "/apis/v1/jobs", "").await;
    assert_eq!(answer.status, StatusCode::NOT_IMPLEMENTED);
    assert_eq!(answer.json["code"], 12);
}

#[tokio::test]
async fn unknown_paths_and_methods() {
    let (answer, _) = call(Method::GET, "/apis/v1/nothing/here", "").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(answer.json, json!({"code":5,"message":"Not Found","details":[]}));
    assert!(answer.route.is_none());
    let (answer, _) = call(Method::PATCH, "/apis/v1/namespaces/ns/clusters/c", "").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        answer.json,
        json!({"code":12,"message":"Method Not Allowed","details":[]})
    );
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces//clusters", "").await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces/ns/clusters/%FF", "").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn responses_use_camel_case_enum_numbers_and_rfc3339() {
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces/my%20ns/clusters/c1/", "").await;
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(
        answer.json,
        json!({"name":"c1","namespace":"my ns","user":"alice","environment":3,
               "createdAt":"2023-11-14T22:13:20Z","clusterState":"ready"})
    );
}

#[tokio::test]
async fn query_strings_fill_the_remaining_fields() {
    let uri = "/apis/v1/namespaces/ns/clusters?limit=2&continue=tok%20en&namespace=other&unknown=1";
    let (answer, _) = call(Method::GET, uri, "").await;
    assert_eq!(
        answer.json["continue"], "ns=ns limit=2 continue=tok en",
        "{}",
        answer.json
    );
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces/ns/clusters?limit=abc", "").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    let message = answer.json["message"].as_str().unwrap();
    assert!(
        message.contains("\"limit\"") && message.contains("\"abc\""),
        "{message}"
    );
    assert_eq!(answer.json["code"], 3);
    let (answer, _) = call(Method::GET, "/apis/v1/namespaces/ns/clusters?limit=1&limit=2", "").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn bodies_accept_both_name_forms_and_enums_by_name_or_number() {
    let uri = "/apis/v1/namespaces/ns/clusters";
    let body = r#"{"name":"c","environment":"STAGING","cluster_spec":{"headGroupSpec":{"compute_template":"t",
                   "rayStartParams":{"a":"b"}}},"envs":{"valuesFrom":{"X":{"source":"SECRET"}}}}"#;
    let (answer, _) = call(Method::POST, uri, body).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.json);
    assert_eq!(answer.json["environment"], 2);
    assert_eq!(answer.json["namespace"], "ns");
    assert_eq!(
        answer.json["clusterSpec"]["headGroupSpec"]["computeTemplate"],
        "t"
    );
    assert_eq!(answer.json["envs"]["valuesFrom"]["X"]["source"], 1);
    let (answer, _) = call(Method::POST, uri, r#"{"name":"c","environment":1}"#).await;
    assert_eq!(answer.json["environment"], 1);
    // An empty body is an empty cluster.
    let (answer, _) = call(Method::POST, uri, "").await;
    assert_eq!(
        (answer.status, answer.json),
        (StatusCode::OK, json!({"namespace":"ns"}))
    );
}

#[tokio::test]
async fn bad_bodies_are_400_naming_the_field() {
    let uri = "/apis/v1/namespaces/ns/clusters";
    let cases = [
        (r#"{"name":"c","#, "not valid JSON"),
        (r#"["a"]"#, "must be a JSON object"),
        (r#""text""#, "must be a JSON object"),
        (r#"{"name":5}"#, "name"),
        (
            r#"{"clusterSpec":{"headGroupSpec":{"rayStartParams":"x"}}}"#,
            "clusterSpec.headGroupSpec.rayStartParams",
        ),
        (r#"{"createdAt":"yesterday"}"#, "createdAt"),
    ];
    for (body, expected) in cases {
        let (answer, _) = call(Method::POST, uri, body).await;
        assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{body}: {}", answer.json);
        assert_eq!(answer.json["code"], 3, "{body}");
        let message = answer.json["message"].as_str().unwrap();
        assert!(message.contains(expected), "{body}: {message}");
    }
    let (answer, _) = call(Method::POST, TEMPLATES, r#"{"cpu":-1}"#).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST, "{}", answer.json);
    assert!(
        answer.json["message"].as_str().unwrap().contains("cpu"),
        "{}",
        answer.json
    );
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let fake = Fake::default();
    let gateway = Gateway::new().unwrap().with_body_limit(64);
    let body = format!(r#"{{"name":"{}"}}"#, "x".repeat(100));
    let answer = send(&gateway, &fake, request(Method::POST, TEMPLATES, &body)).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(answer.json["code"], 8);
    // A limit set by an outer layer (the body already wrapped in http_body_util::Limited) is 413 too.
    let limited = http_body_util::Limited::new(Body::from(body), 10);
    let request = Request::builder()
        .method(Method::POST)
        .uri(TEMPLATES)
        .body(Body::new(limited))
        .unwrap();
    let answer = send(&Gateway::new().unwrap(), &fake, request).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[test]
fn the_handle_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let gateway = Gateway::new().unwrap();
    let fake = Fake::default();
    let future = gateway.handle(routes(&fake), request(Method::GET, "/", ""));
    assert_send(&future);
}
