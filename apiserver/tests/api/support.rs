//! What the end-to-end tests of the server share: the environment (CRDs, the server's shipped RBAC, the
//! user role), a kubeconfig of the server's own ServiceAccount (which holds nothing but reviews and
//! impersonation), servers started in this test's runtime, users with tokens, and a small REST client.

use std::path::{Path, PathBuf};

use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::{Api, Client, api::PostParams};
use kuberay_apiserver::{config::Config, server};
pub use kuberay_testenv::fixtures::eventually;
use kuberay_testenv::{HeadMode, TestEnv, TestNamespace};
use serde_json::{Value, json};
use tokio::sync::{OnceCell, oneshot};

/// The shared environment with the CRDs, the server's RBAC and the user role installed.
pub async fn env() -> &'static TestEnv {
    static READY: OnceCell<()> = OnceCell::const_new();
    let env = TestEnv::shared().await.expect("test environment");
    READY
        .get_or_init(|| async {
            env.install_crds().await.expect("installing the CRDs");
            let admin = env.client().await.expect("admin client");
            let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
            apply_manifest(&admin, &deploy.join("rbac.yaml")).await;
            apply_manifest(&admin, &deploy.join("user-role.yaml")).await;
        })
        .await;
    env
}

/// Server-side applies a manifest whose objects name their own namespaces (or are cluster-scoped).
pub async fn apply_manifest(client: &Client, path: &Path) {
    kuberay_testenv::identities::apply_manifest(client, path)
        .await
        .unwrap();
}

/// A token of a ServiceAccount (created if missing), as a Pod would get it.
pub async fn service_account_token(env: &TestEnv, namespace: &str, name: &str) -> String {
    env.service_account_token(namespace, name).await.unwrap()
}

/// A kubeconfig for `token` on the environment's API server at `server` (the admin's when `None`).
pub fn kubeconfig_with_token(env: &TestEnv, token: &str, server: Option<&str>, name: &str) -> PathBuf {
    env.kubeconfig_with_token(&format!("apiserver-{name}"), token, server)
        .unwrap()
}

/// The kubeconfig of the server's own ServiceAccount `kuberay-system/kuberay-apiserver`.
pub async fn server_kubeconfig(env: &TestEnv) -> PathBuf {
    static PATH: OnceCell<PathBuf> = OnceCell::const_new();
    PATH.get_or_init(|| async {
        let token = service_account_token(env, "kuberay-system", "kuberay-apiserver").await;
        kubeconfig_with_token(env, &token, None, "server")
    })
    .await
    .clone()
}

/// A user of the API: a name for messages and the bearer token that proves it.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub token: String,
}

impl User {
    /// `alice` or `bob`: static users of the environment without any rights.
    pub fn named(env: &TestEnv, who: &str) -> Self {
        let identities = &env.info().identities;
        let identity = match who {
            "alice" => &identities.alice,
            "bob" => &identities.bob,
            other => panic!("no static user {other}"),
        };
        Self {
            name: identity.user.clone(),
            token: identity.token.clone(),
        }
    }

    /// A ServiceAccount `name` of `namespace`, with no rights of its own.
    pub async fn service_account(env: &TestEnv, namespace: &str, name: &str) -> Self {
        let token = service_account_token(env, namespace, name).await;
        Self {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            token,
        }
    }

    /// Grants the shipped user role (`deploy/user-role.yaml`) in `namespace`.
    pub async fn grant(&self, env: &TestEnv, namespace: &str) {
        let admin = env.client().await.unwrap();
        let subject = match self.name.strip_prefix("system:serviceaccount:") {
            Some(rest) => {
                let (ns, name) = rest.split_once(':').unwrap();
                json!({"kind": "ServiceAccount", "name": name, "namespace": ns})
            }
            None => json!({"kind": "User", "name": self.name, "apiGroup": "rbac.authorization.k8s.io"}),
        };
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": format!("ray-user-{}", self.name.replace(':', "-"))},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kuberay-apiserver-user"},
            "subjects": [subject],
        }))
        .unwrap();
        let api: Api<RoleBinding> = Api::namespaced(admin, namespace);
        api.create(&PostParams::default(), &binding).await.unwrap();
    }
}

/// A namespace whose Ray heads are of `head`.
pub async fn namespace(env: &TestEnv, prefix: &str, head: HeadMode) -> TestNamespace {
    env.namespace_with(prefix, Some(head))
        .await
        .expect("a test namespace")
}

/// A server running in this test's runtime.
pub struct Server {
    pub grpc: std::net::SocketAddr,
    pub http: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

impl Server {
    /// A server as the server's own ServiceAccount, with `flags` added to the defaults.
    pub async fn start(env: &TestEnv, flags: &[&str]) -> Self {
        let kubeconfig = server_kubeconfig(env).await;
        Self::start_with_kubeconfig(&kubeconfig, flags).await
    }

    /// A server with `kubeconfig` as its own identity.
    pub async fn start_with_kubeconfig(kubeconfig: &Path, flags: &[&str]) -> Self {
        let mut args = vec![
            "kuberay-apiserver".to_string(),
            "--grpc-bind-address=127.0.0.1:0".into(),
            "--http-bind-address=127.0.0.1:0".into(),
            format!("--kubeconfig={}", kubeconfig.display()),
        ];
        args.extend(flags.iter().map(|f| f.to_string()));
        let config = <Config as clap::Parser>::try_parse_from(args).expect("server flags");
        let (stop, stopped) = oneshot::channel::<()>();
        let (bound_tx, bound_rx) = oneshot::channel();
        let task = tokio::spawn(server::run(
            config,
            async {
                let _ = stopped.await;
            },
            move |bound| {
                let _ = bound_tx.send(bound);
            },
        ));
        let bound = bound_rx.await.expect("the server did not start");
        Self {
            grpc: bound.grpc,
            http: bound.http,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// `http://<REST address>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.http)
    }

    /// A REST client of this server acting with `token` (none when `None`).
    pub fn rest(&self, token: Option<&str>) -> Rest {
        Rest {
            base: self.url(),
            token: token.map(str::to_string),
            client: reqwest::Client::new(),
        }
    }

    /// Stops the server gracefully and returns how it ended.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.expect("the server task panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A REST client: every call returns the status and the body as JSON (`Value::Null` for an empty body,
/// a string for one that is not JSON).
#[derive(Clone)]
pub struct Rest {
    pub base: String,
    pub token: Option<String>,
    pub client: reqwest::Client,
}

impl Rest {
    pub async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.expect("the server answers");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.call("POST", path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        self.call("PUT", path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.call("DELETE", path, None).await
    }
}

/// Asserts `status` with a body, printing the body when it is not.
#[track_caller]
pub fn expect(answer: (u16, Value), status: u16) -> Value {
    assert_eq!(answer.0, status, "unexpected answer: {}", answer.1);
    answer.1
}

/// A compute template of `cpu` cores and 1 GiB (small enough for the simulated node).
pub fn template(name: &str, cpu: u32) -> Value {
    json!({"name": name, "cpu": cpu, "memory": 1})
}

/// A cluster of one head and `workers` workers, all of template `template`.
pub fn cluster(name: &str, user: &str, template: &str, workers: i32) -> Value {
    let mut spec = json!({
        "headGroupSpec": {"computeTemplate": template, "rayStartParams": {"dashboard-host": "0.0.0.0"}},
    });
    if workers > 0 {
        spec["workerGroupSpec"] = json!([{
            "groupName": "small", "computeTemplate": template, "replicas": workers,
            "minReplicas": 0, "maxReplicas": workers, "rayStartParams": {},
        }]);
    }
    json!({"name": name, "user": user, "version": "2.9.0", "clusterSpec": spec})
}
