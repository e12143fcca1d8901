//! HTTP to a Pod or Service through the API server's proxy subresources, returning the status code and body
//! as the backend sent them (the API server's own errors come back as `Status` JSON with their code).

use http::{Method, Request, StatusCode};
use kube::Client;

use crate::error::{Error, Result};

/// A target behind `/api/v1/namespaces/{ns}/{services|pods}/{name}:{port}/proxy`.
#[derive(Clone)]
pub struct ProxyHttp {
    client: Client,
    base: String,
}

/// A response as received.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_str(&self.body)
            .map_err(|e| Error::Other(format!("expected JSON, got {} {:?}: {e}", self.status, self.body)))
    }
}

impl ProxyHttp {
    /// A Service port (by name or number): `services/{service}:{port}/proxy`.
    pub fn service(client: Client, namespace: &str, service: &str, port: &str) -> Self {
        Self {
            client,
            base: format!("/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy"),
        }
    }

    /// A Pod port: `pods/{pod}:{port}/proxy`.
    pub fn pod(client: Client, namespace: &str, pod: &str, port: u16) -> Self {
        Self {
            client,
            base: format!("/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy"),
        }
    }

    pub async fn get(&self, path: &str) -> Result<Reply> {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Option<&serde_json::Value>) -> Result<Reply> {
        self.send(Method::POST, path, body).await
    }

    pub async fn put(&self, path: &str, body: &serde_json::Value) -> Result<Reply> {
        self.send(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Result<Reply> {
        self.send(Method::DELETE, path, None).await
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<&serde_json::Value>) -> Result<Reply> {
        let uri = format!("{}{path}", self.base);
        let mut builder = Request::builder().method(method).uri(&uri);
        let bytes = match body {
            Some(body) => {
                builder = builder.header(http::header::CONTENT_TYPE, "application/json");
                serde_json::to_vec(body).map_err(|e| Error::Other(e.to_string()))?
            }
            None => Vec::new(),
        };
        let request = builder
            .body(kube::client::Body::from(bytes))
            .map_err(|e| Error::Other(e.to_string()))?;
        let response = self.client.send(request).await?;
        let status = response.status();
        let body = response.into_body().collect_bytes().await?;
        Ok(Reply {
            status,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}
