//! The dashboard's Serve API in its multi-application ("declarative") form: read what is deployed and how it
//! is doing, and deploy a config. Deployment is asynchronous in Ray: a successful PUT only means the config
//! was accepted, so callers poll [`RayHead::serve_details`] for the applications' status.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{
    RayError, RayHead, RayTransport,
    wire::{decode, is_success, null_as_default, status_error},
};

/// KubeRay's `?api_type=declarative` asks for the applications deployed from a config (older Ray ignores it).
const DETAILS: &str = "/api/serve/applications/?api_type=declarative";
const DEPLOY: &str = "/api/serve/applications/";

/// What is deployed (Ray's `ServeInstanceDetails`, the parts a controller reads).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ServeDetails {
    /// By application name. Empty when Serve is not running.
    #[serde(default, deserialize_with = "null_as_default")]
    pub applications: BTreeMap<String, ServeApplicationDetails>,
    /// Only older Ray versions report it.
    #[serde(default)]
    pub deploy_mode: Option<String>,
}

impl ServeDetails {
    /// KubeRay's readiness rule for a cluster that serves: at least one application, and all `RUNNING`.
    pub fn all_running(&self) -> bool {
        !self.applications.is_empty()
            && self
                .applications
                .values()
                .all(|a| a.status == ApplicationStatus::RUNNING)
    }
}

/// Application status values (Ray's `ApplicationStatus`); kept as text because the set is open.
pub struct ApplicationStatus;

impl ApplicationStatus {
    pub const NOT_STARTED: &str = "NOT_STARTED";
    pub const DEPLOYING: &str = "DEPLOYING";
    pub const RUNNING: &str = "RUNNING";
    pub const DEPLOY_FAILED: &str = "DEPLOY_FAILED";
    pub const DELETING: &str = "DELETING";
    pub const UNHEALTHY: &str = "UNHEALTHY";
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ServeApplicationDetails {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub route_prefix: Option<String>,
    #[serde(default)]
    pub docs_path: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub deployments: BTreeMap<String, ServeDeploymentDetails>,
    /// The application's part of the config last deployed, as Ray keeps it (fields the config set; Ray 2.x
    /// reports it, older versions do not). Lets a controller tell whether a config is already deployed
    /// without remembering what it sent.
    #[serde(default)]
    pub deployed_app_config: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct ServeDeploymentDetails {
    #[serde(default)]
    pub name: Option<String>,
    /// `UPDATING`, `HEALTHY`, `UNHEALTHY`, and on newer Ray `UPSCALING`, `DOWNSCALING`, `DEPLOY_FAILED`.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
}

impl<T: RayTransport + ?Sized> RayHead<'_, T> {
    /// `GET /api/serve/applications/?api_type=declarative`.
    pub fn serve_details(&self) -> Result<ServeDetails, RayError> {
        let response = self.dashboard("GET", DETAILS.to_string(), None)?;
        decode("GetServeDetails", &response)
    }

    /// `PUT /api/serve/applications/` with a Serve config (Ray's `ServeDeploySchema` as JSON).
    pub fn deploy_serve(&self, config: &Value) -> Result<(), RayError> {
        let body = serde_json::to_vec(config).map_err(|e| RayError::Request(e.to_string()))?;
        let response = self.dashboard("PUT", DEPLOY.to_string(), Some(body))?;
        if is_success(response.status) {
            Ok(())
        } else {
            Err(status_error("UpdateDeployments", &response))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{
        RayResponse,
        ray::{RayError, RayHead},
        testing::FakeHost,
    };

    fn host() -> FakeHost {
        FakeHost::new(json!({"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": {"name": "svc"}}))
    }

    fn answer(status: u16, body: &str) -> RayResponse {
        RayResponse {
            status,
            headers: vec![],
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn details_ask_for_declarative_applications_and_read_nulls() {
        let host = host();
        host.on_ray(|request| {
            assert_eq!(request.method, "GET");
            assert_eq!(request.path, "/api/serve/applications/?api_type=declarative");
            Ok(answer(
                200,
                r#"{"controller_info": {}, "applications": {"app1": {"name": "app1", "route_prefix": "/",
                    "docs_path": null, "status": "RUNNING", "message": "", "last_deployed_time_s": 1.5,
                    "deployments": {"D": {"name": "D", "status": "HEALTHY", "message": "",
                    "replicas": []}}}}, "target_capacity": null}"#,
            ))
        });
        let details = RayHead::new(&host, "c").serve_details().unwrap();
        assert!(details.all_running());
        let app = &details.applications["app1"];
        assert_eq!(app.docs_path, None);
        assert_eq!(app.deployments["D"].status, "HEALTHY");
    }

    #[test]
    fn serve_not_running_has_no_applications() {
        let host = host();
        host.on_ray(|_| {
            Ok(answer(
                200,
                r#"{"applications": {}, "proxies": {}, "target_capacity": null}"#,
            ))
        });
        let details = RayHead::new(&host, "c").serve_details().unwrap();
        assert!(details.applications.is_empty());
        assert!(!details.all_running());
    }

    #[test]
    fn errors_are_checked_before_decoding() {
        let host = host();
        host.on_ray(|_| Ok(answer(503, "Failed to get a response from the controller.")));
        let err = RayHead::new(&host, "c").serve_details().unwrap_err();
        assert!(matches!(err, RayError::Status { status: 503, .. }), "{err}");
    }

    #[test]
    fn deploy_puts_the_config() {
        let host = host();
        host.on_ray(|request| {
            assert_eq!(
                (request.method.as_str(), request.path.as_str()),
                ("PUT", "/api/serve/applications/")
            );
            assert!(
                request
                    .headers
                    .contains(&("Content-Type".into(), "application/json".into()))
            );
            let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
            if body["applications"][0]["import_path"].is_string() {
                Ok(answer(200, ""))
            } else {
                Ok(answer(400, "1 validation error for ServeDeploySchema"))
            }
        });
        let head = RayHead::new(&host, "c");
        let config = json!({"applications": [{"name": "a", "import_path": "m:app"}]});
        assert_eq!(head.deploy_serve(&config), Ok(()));
        let err = head.deploy_serve(&json!({"applications": [{}]})).unwrap_err();
        assert_eq!(
            err.to_string(),
            "UpdateDeployments failed: HTTP 400: 1 validation error for ServeDeploySchema"
        );
    }
}
