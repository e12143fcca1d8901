//! Every call of the API, enumerated from its own definition rather than a hand-written list: the REST
//! operations of the OpenAPI document a running server serves (`/openapi.json`: the gateway's routes and
//! the `ray.io/v1` pass-through) and every method of the gRPC services in the descriptor set the server is
//! built from. Path parameters and request fields are filled with one set of names, and a request body
//! with a minimal *valid* message of its type, so that a call gets past validation and reaches Kubernetes
//! (where RBAC decides) unless authentication stops it first.

use std::{collections::BTreeSet, time::Duration};

use bytes::{Buf, BufMut};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, Kind};
use serde_json::{Value, json};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

/// The names calls are made with.
#[derive(Debug, Clone)]
pub struct Names {
    pub namespace: String,
    /// Objects (clusters, templates, jobs, services, pass-through objects).
    pub name: String,
    /// `{clustername}` of job submissions.
    pub cluster: String,
    /// `{submissionid}` of job submissions.
    pub submission: String,
    /// The compute template bodies refer to.
    pub template: String,
    /// `{service}` of the Services proxy.
    pub service: String,
    /// `{path}` of the Services proxy: the path on the Service.
    pub service_path: String,
}

impl Names {
    pub fn in_namespace(namespace: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            name: "some-name".into(),
            cluster: "some-cluster".into(),
            submission: "some-submission".into(),
            template: "some-template".into(),
            service: "http:some-cluster-head-svc:8265".into(),
            service_path: "api/version".into(),
        }
    }

    /// The value of a path parameter or request field named `field`, if it is one of the names.
    fn field(&self, field: &str) -> Option<&str> {
        Some(match field {
            "namespace" => &self.namespace,
            "name" => &self.name,
            "clustername" => &self.cluster,
            "submissionid" => &self.submission,
            _ => return None,
        })
    }

    /// The value of a path parameter named `name` (the request fields' names, and the Services proxy's).
    fn path_parameter(&self, name: &str) -> Option<&str> {
        match name {
            "service" => Some(&self.service),
            "path" => Some(&self.service_path),
            other => self.field(other),
        }
    }
}

/// A minimal valid message of the API's body types (by proto message name); `None` for any other type.
pub fn sample_body(message: &str, names: &Names) -> Option<Value> {
    let spec = json!({
        "headGroupSpec": {"computeTemplate": names.template, "rayStartParams": {"dashboard-host": "0.0.0.0"}},
    });
    let name = &names.name;
    Some(match message {
        "proto.ComputeTemplate" => json!({"name": name, "cpu": 1, "memory": 1}),
        "proto.Cluster" => json!({"name": name, "user": "u", "version": "2.9.0", "clusterSpec": spec}),
        "proto.RayJob" => json!({
            "name": name, "user": "u", "version": "2.9.0", "entrypoint": "python -c 'print(1)'",
            "clusterSpec": spec,
        }),
        "proto.RayJobSubmission" => json!({"entrypoint": "echo hello"}),
        "proto.RayService" => json!({
            "name": name, "user": "u", "version": "2.9.0", "clusterSpec": spec,
            "serveConfigV2": "applications:\n- name: app\n  import_path: app:deployment\n",
        }),
        _ => return None,
    })
}

/// One REST operation of the document, ready to send.
#[derive(Debug, Clone)]
pub struct RestCall {
    /// `GET /apis/v1/namespaces/{namespace}/clusters`.
    pub label: String,
    pub method: reqwest::Method,
    /// The path with its parameters filled.
    pub path: String,
    /// The path template.
    pub template: String,
    pub body: Option<(String, &'static str)>,
    /// The operation declares `security: []`: it answers without credentials.
    pub public: bool,
}

impl RestCall {
    /// Whether the operation is about one namespace (its path has `{namespace}`).
    pub fn namespaced(&self) -> bool {
        self.template.contains("{namespace}")
    }

    /// Sends the call with `token` (none when `None`): the status and the body.
    pub async fn send(&self, base: &str, token: Option<&str>) -> (u16, String) {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let mut request = client.request(self.method.clone(), format!("{base}{}", self.path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some((body, content_type)) = &self.body {
            request = request
                .header(reqwest::header::CONTENT_TYPE, *content_type)
                .body(body.clone());
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", self.label));
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

/// Every operation of an OpenAPI document, its path parameters filled from `names` (an unknown parameter
/// fails the test: teach [`Names`] about it) and a body where it takes one.
pub fn rest_calls(document: &Value, names: &Names) -> Vec<RestCall> {
    let global_security = &document["security"];
    let mut calls = Vec::new();
    for (template, item) in document["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                .unwrap_or_else(|_| panic!("{method} {template}: not an HTTP method"));
            let label = format!("{method} {template}");
            let mut path = template.clone();
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                if parameter["in"] != "path" {
                    continue;
                }
                let name = parameter["name"].as_str().expect("a parameter name");
                let value = names
                    .path_parameter(name)
                    .unwrap_or_else(|| panic!("{label}: no value for the path parameter {name:?}"));
                path = path.replace(&format!("{{{name}}}"), value);
            }
            assert!(!path.contains('{'), "{label}: unfilled path parameters in {path}");
            let body = operation
                .get("requestBody")
                .map(|body| request_body(&label, template, body, names));
            let security = operation.get("security").unwrap_or(global_security);
            calls.push(RestCall {
                label,
                method,
                path,
                template: template.clone(),
                body,
                public: security == &json!([]),
            });
        }
    }
    calls
}

/// A body for an operation: the sample of the API message its schema names, or for the pass-through
/// (free-form Kubernetes objects) a minimal object of the path's kind.
fn request_body(label: &str, template: &str, body: &Value, names: &Names) -> (String, &'static str) {
    let content = &body["content"];
    if content.get("application/octet-stream").is_some() {
        // The Services proxy: whatever the Service takes.
        return (String::new(), "application/octet-stream");
    }
    let json_schema = &content["application/json"]["schema"];
    if let Some(reference) = json_schema["$ref"].as_str() {
        let message = reference
            .trim_start_matches("#/components/schemas/")
            .trim_end_matches("-Input");
        let sample = sample_body(message, names)
            .unwrap_or_else(|| panic!("{label}: no sample body of {message}; add one to sample_body"));
        return (sample.to_string(), "application/json");
    }
    assert_eq!(
        json_schema["type"], "object",
        "{label}: a body schema that is neither a message nor a Kubernetes object: {body}"
    );
    let kind = ["RayCluster", "RayJob", "RayService", "RayCronJob"]
        .into_iter()
        .find(|kind| template.contains(&format!("/{}s", kind.to_ascii_lowercase())))
        .unwrap_or_else(|| panic!("{label}: which ray.io/v1 kind?"));
    let object = json!({"apiVersion": "ray.io/v1", "kind": kind, "metadata": {"name": names.name}});
    let content_type = if label.starts_with("PATCH") && content.get("application/merge-patch+json").is_some()
    {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    (object.to_string(), content_type)
}

/// One gRPC method with its request message.
#[derive(Debug, Clone)]
pub struct GrpcCall {
    /// `/proto.ClusterService/GetCluster`.
    pub path: String,
    pub message: Vec<u8>,
    /// The request has a `namespace` field.
    pub namespaced: bool,
}

/// The API's gRPC services (package `proto`), from the descriptor set the server is built from.
pub fn api_services() -> BTreeSet<String> {
    let pool = DescriptorPool::decode(kuberay_apiserver::api::FILE_DESCRIPTOR_SET).unwrap();
    pool.services()
        .filter(|s| s.package_name() == "proto")
        .map(|s| s.full_name().to_string())
        .collect()
}

/// Every method of every API service, its request's name fields filled from `names` and its message
/// fields of a body type (cluster, job, ...) with the sample of that type.
pub fn grpc_calls(names: &Names) -> Vec<GrpcCall> {
    let pool = DescriptorPool::decode(kuberay_apiserver::api::FILE_DESCRIPTOR_SET).unwrap();
    let mut calls = Vec::new();
    for service in pool.services().filter(|s| s.package_name() == "proto") {
        for method in service.methods() {
            let input = method.input();
            let mut json = serde_json::Map::new();
            for field in input.fields() {
                if let Some(value) = names.field(field.name()) {
                    json.insert(field.name().into(), value.into());
                } else if let Kind::Message(message) = field.kind()
                    && let Some(sample) = sample_body(message.full_name(), names)
                {
                    json.insert(field.name().into(), sample);
                }
            }
            let namespaced = json.contains_key("namespace");
            let message = DynamicMessage::deserialize(input.clone(), Value::Object(json))
                .unwrap_or_else(|e| panic!("{}: {e}", method.full_name()));
            calls.push(GrpcCall {
                path: format!("/{}/{}", service.full_name(), method.name()),
                message: message.encode_to_vec(),
                namespaced,
            });
        }
    }
    calls
}

/// A gRPC channel to `address` (plain text).
pub async fn channel(address: std::net::SocketAddr) -> tonic::transport::Channel {
    tonic::transport::Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .timeout(Duration::from_secs(30))
        .connect()
        .await
        .unwrap()
}

/// A unary call of `path` with an encoded request, as `token` (none when `None`); the encoded answer.
pub async fn unary(
    channel: &tonic::transport::Channel,
    path: &str,
    message: Vec<u8>,
    token: Option<&str>,
) -> Result<Vec<u8>, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let mut request = tonic::Request::new(message);
    if let Some(token) = token {
        request
            .metadata_mut()
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
    }
    let path = http::uri::PathAndQuery::try_from(path).unwrap();
    grpc.unary(request, path, RawCodec)
        .await
        .map(tonic::Response::into_inner)
}

/// Passes encoded messages through unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Self;
    type Decoder = Self;

    fn encoder(&mut self) -> Self {
        Self
    }

    fn decoder(&mut self) -> Self {
        Self
    }
}

impl Encoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let length = src.remaining();
        Ok(Some(src.copy_to_bytes(length).to_vec()))
    }
}
