//! The Serve REST API (`/api/serve/applications/`) and the Serve HTTP proxy (`/-/healthz`, `/-/routes`).
//!
//! Like a real head, the proxy port answers nothing until a config has been deployed. Applications report
//! DEPLOYING for half a second after a PUT (ten seconds if any `import_path` contains `slow`, a test's way
//! to hold a deploy open) and then RUNNING, or DEPLOY_FAILED if their `import_path` contains `fail` (a
//! test's way to script a broken app).

use std::time::Duration;

use axum::{
    Json,
    extract::{Query, State},
    http::{StatusCode, Uri},
    response::{IntoResponse, Response},
};
use serde_json::{Map, Value, json};

use super::{FakeHead, jobs::now_ms, text};

const DEPLOYING_FOR: Duration = Duration::from_millis(500);
const SLOW_DEPLOYING_FOR: Duration = Duration::from_secs(10);

/// The last config deployed, and when; how many deploys the head took; whether the Serve proxy answers
/// its health check (a test switches it with `PUT /testenv/serve-proxy-health`).
pub struct ServeState {
    pub config: Option<Value>,
    pub deployed_ms: u64,
    pub deploys: u64,
    pub proxy_healthy: bool,
}

impl Default for ServeState {
    fn default() -> Self {
        Self {
            config: None,
            deployed_ms: 0,
            deploys: 0,
            proxy_healthy: true,
        }
    }
}

pub async fn details(
    State(head): State<FakeHead>,
    Query(query): Query<std::collections::BTreeMap<String, String>>,
) -> Response {
    if let Some(api_type) = query.get("api_type")
        && !matches!(
            api_type.to_ascii_lowercase().as_str(),
            "imperative" | "declarative"
        )
    {
        return text(
            StatusCode::BAD_REQUEST,
            format!("Invalid 'api_type' value: '{api_type}'. Must be one of: imperative, declarative"),
        );
    }
    let serve = head.lock_serve();
    let Some(config) = &serve.config else {
        return Json(
            json!({"controller_info": {}, "proxies": {}, "applications": {}, "target_capacity": null}),
        )
        .into_response();
    };
    let apps = config
        .get("applications")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let slow = apps.iter().any(|a| {
        a.get("import_path")
            .and_then(Value::as_str)
            .is_some_and(|p| p.contains("slow"))
    });
    let deploying_for = if slow { SLOW_DEPLOYING_FOR } else { DEPLOYING_FOR };
    let deployed = now_ms().saturating_sub(serve.deployed_ms) >= deploying_for.as_millis() as u64;
    let mut applications = Map::new();
    for app in apps {
        let name = app.get("name").and_then(Value::as_str).unwrap_or("default");
        let import_path = app.get("import_path").and_then(Value::as_str).unwrap_or_default();
        let failed = import_path.contains("fail");
        let (status, deployment_status) = match (deployed, failed) {
            (false, _) => ("DEPLOYING", "UPDATING"),
            (true, false) => ("RUNNING", "HEALTHY"),
            (true, true) => ("DEPLOY_FAILED", "UNHEALTHY"),
        };
        let message = if failed && deployed {
            format!("Failed to import '{import_path}'.")
        } else {
            String::new()
        };
        let mut deployments = Map::new();
        for deployment in deployment_names(app) {
            deployments.insert(
                deployment.clone(),
                json!({
                    "name": deployment,
                    "status": deployment_status,
                    "status_trigger": "CONFIG_UPDATE_STARTED",
                    "message": "",
                    "deployment_config": {"name": deployment},
                    "target_num_replicas": 1,
                    "required_resources": {"CPU": 1},
                    "replicas": [],
                }),
            );
        }
        applications.insert(
            name.to_string(),
            json!({
                "name": name,
                "route_prefix": app.get("route_prefix").and_then(Value::as_str).unwrap_or("/"),
                "docs_path": null,
                "status": status,
                "message": message,
                "last_deployed_time_s": serve.deployed_ms as f64 / 1000.0,
                "deployed_app_config": app,
                "source": "declarative",
                "deployments": deployments,
            }),
        );
    }
    Json(json!({
        "controller_info": {"node_id": "fake", "node_ip": "fake", "actor_id": "fake", "actor_name": "SERVE_CONTROLLER_ACTOR"},
        "proxy_location": config.get("proxy_location").cloned().unwrap_or(json!("EveryNode")),
        "http_options": config.get("http_options").cloned().unwrap_or(json!({"host": "0.0.0.0", "port": 8000})),
        "proxies": {"fake": {"status": "HEALTHY"}},
        "applications": applications,
        "target_capacity": config.get("target_capacity").cloned().unwrap_or(Value::Null),
    }))
    .into_response()
}

/// Deployment names from the config, else one named after the object the import path points at.
fn deployment_names(app: &Value) -> Vec<String> {
    let listed: Vec<String> = app
        .get("deployments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    if !listed.is_empty() {
        return listed;
    }
    let import_path = app.get("import_path").and_then(Value::as_str).unwrap_or("app");
    let object = import_path.rsplit([':', '.']).next().unwrap_or(import_path);
    vec![object.to_string()]
}

pub async fn deploy(State(head): State<FakeHead>, body: axum::body::Bytes) -> Response {
    let config: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return text(StatusCode::BAD_REQUEST, format!("Invalid JSON: {e}")),
    };
    let Some(apps) = config.get("applications").and_then(Value::as_array) else {
        return text(
            StatusCode::BAD_REQUEST,
            "1 validation error for ServeDeploySchema\napplications\n  field required",
        );
    };
    if let Some(i) = apps
        .iter()
        .position(|a| a.get("import_path").and_then(Value::as_str).is_none())
    {
        return text(
            StatusCode::BAD_REQUEST,
            format!(
                "1 validation error for ServeDeploySchema\napplications -> {i} -> import_path\n  field required"
            ),
        );
    }
    {
        let mut serve = head.lock_serve();
        serve.config = Some(config);
        serve.deployed_ms = now_ms();
        serve.deploys += 1;
    }
    head.start_serve_proxy().await;
    StatusCode::OK.into_response()
}

pub async fn shutdown(State(head): State<FakeHead>) -> Response {
    head.lock_serve().config = None;
    StatusCode::OK.into_response()
}

/// `/-/healthz`: 200 `success`, or 503 while a test has made the proxy unhealthy (Ray answers 503 while the
/// proxy is draining or its controller is unreachable).
pub async fn proxy_healthz(State(head): State<FakeHead>) -> Response {
    if head.lock_serve().proxy_healthy {
        text(StatusCode::OK, "success")
    } else {
        text(StatusCode::SERVICE_UNAVAILABLE, "This node is being drained.")
    }
}

/// `GET /testenv/serve`: how many configs the head took and whether its proxy is healthy.
pub async fn testenv_state(State(head): State<FakeHead>) -> Response {
    let serve = head.lock_serve();
    Json(json!({"deploys": serve.deploys, "proxyHealthy": serve.proxy_healthy})).into_response()
}

/// `PUT /testenv/serve-proxy-health` with body `healthy` or `unhealthy` (bare or as a JSON string): what
/// `/-/healthz` answers from now.
pub async fn set_proxy_health(State(head): State<FakeHead>, body: String) -> Response {
    let healthy = match body.trim().trim_matches('"') {
        "healthy" => true,
        "unhealthy" => false,
        other => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("expected `healthy` or `unhealthy`, got {other:?}"),
            );
        }
    };
    head.lock_serve().proxy_healthy = healthy;
    StatusCode::OK.into_response()
}

pub async fn proxy_routes(State(head): State<FakeHead>) -> Response {
    let serve = head.lock_serve();
    let mut routes = Map::new();
    for app in serve
        .config
        .iter()
        .filter_map(|c| c.get("applications"))
        .filter_map(Value::as_array)
        .flatten()
    {
        let name = app.get("name").and_then(Value::as_str).unwrap_or("default");
        let prefix = app.get("route_prefix").and_then(Value::as_str).unwrap_or("/");
        routes.insert(prefix.to_string(), json!(name));
    }
    Json(Value::Object(routes)).into_response()
}

/// Any other path on the proxy port: the application whose route prefix matches answers with its name.
pub async fn proxy_request(State(head): State<FakeHead>, uri: Uri) -> Response {
    let serve = head.lock_serve();
    let apps = serve
        .config
        .iter()
        .filter_map(|c| c.get("applications"))
        .filter_map(Value::as_array)
        .flatten();
    let best = apps
        .filter_map(|app| {
            let prefix = app.get("route_prefix").and_then(Value::as_str).unwrap_or("/");
            uri.path()
                .starts_with(prefix)
                .then(|| (prefix.len(), app.get("name").and_then(Value::as_str)))
        })
        .max_by_key(|(len, _)| *len);
    match best {
        Some((_, name)) => text(
            StatusCode::OK,
            format!("fake response from application {}", name.unwrap_or("default")),
        ),
        None => text(
            StatusCode::NOT_FOUND,
            format!(
                "Path '{}' not found. Ping http://.../-/routes for available routes.",
                uri.path()
            ),
        ),
    }
}
