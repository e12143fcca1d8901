//! An HTTP echo server on every port a Pod's containers declare: the smallest real workload at a pod's
//! address, used to prove that the API server's proxy subresources reach pods.

use std::{net::Ipv4Addr, sync::Arc};

use axum::{Json, Router, extract::Request, response::IntoResponse};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::{error::Result, network::bind_in_netns};

pub struct EchoServers {
    tasks: Vec<JoinHandle<()>>,
}

impl EchoServers {
    pub async fn start(netns: &str, ip: Ipv4Addr, pod: &str, ports: &[u16]) -> Result<Self> {
        let mut tasks = Vec::new();
        for &port in ports {
            let listener = bind_in_netns(netns, (ip, port).into()).await?;
            let pod: Arc<str> = pod.into();
            let router = Router::new().fallback(move |request: Request| {
                let pod = pod.clone();
                async move {
                    Json(json!({
                        "pod": &*pod,
                        "ip": ip.to_string(),
                        "port": port,
                        "method": request.method().as_str(),
                        "path": request.uri().path(),
                        "query": request.uri().query(),
                        "headers": request
                            .headers()
                            .iter()
                            .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                            .collect::<std::collections::BTreeMap<_, _>>(),
                    }))
                    .into_response()
                }
            });
            tasks.push(tokio::spawn(async move {
                let _ = axum::serve(listener, router).await;
            }));
        }
        Ok(Self { tasks })
    }

    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for EchoServers {
    fn drop(&mut self) {
        self.stop();
    }
}
