//! Authorization is the API server's, for the caller: every call of the API (every REST operation of the
//! served OpenAPI document, pass-through included, and every gRPC method of the descriptor set) refuses
//! `alice` (no rights) with 401 without a token and 403 with hers, refuses a user with rights in namespace
//! A with 403 in namespace B, and names the caller in the refusal. A server whose own ServiceAccount is
//! cluster-admin lends none of its rights; only `--auth none` acts as the server (KubeRay's behaviour).
//! Job submissions reach a Ray head only if the caller holds `services/proxy`, in both routing modes.

use std::{collections::BTreeSet, path::PathBuf, time::Duration};

use k8s_openapi::api::{
    authentication::v1::TokenReview,
    core::v1::{ConfigMap, Service},
    rbac::v1::{ClusterRoleBinding, Role, RoleBinding},
};
use kube::{
    Api, Client,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kuberay_crds::RayCluster;
use kuberay_testenv::{HeadMode, TestEnv, TestNamespace};
use serde_json::json;
use tonic::Code;

use crate::{
    calls::{self, Names},
    support::{
        Server, User, env, eventually, expect, kubeconfig_with_token, namespace, service_account_token,
        template,
    },
};

/// Two namespaces, alice, and a user with the shipped user role in namespace A only.
struct Scene {
    a: TestNamespace,
    b: TestNamespace,
    alice: User,
    user_a: User,
}

impl Scene {
    async fn new(env: &TestEnv, prefix: &str) -> Self {
        let a = namespace(env, &format!("{prefix}-a"), HeadMode::None).await;
        let b = namespace(env, &format!("{prefix}-b"), HeadMode::None).await;
        let user_a = User::service_account(env, a.name(), "ray-user").await;
        user_a.grant(env, a.name()).await;
        Self {
            a,
            b,
            alice: User::named(env, "alice"),
            user_a,
        }
    }
}

/// The operations that answer without credentials: the probes and the discovery documents, which are the
/// same for everyone.
const PUBLIC: &[&str] = &["GET /api", "GET /apis", "GET /healthz", "GET /readyz"];

/// Pass-through operations that the shipped user role covers (every `ray.io/v1` kind, not their `status`
/// subresources, which are the operator's), for the check that a user with rights is not refused.
fn user_role_covers_pass_through(template: &str) -> bool {
    ["rayclusters", "rayjobs", "rayservices", "raycronjobs"]
        .iter()
        .any(|plural| {
            let collection = format!("/apis/ray.io/v1/namespaces/{{namespace}}/{plural}");
            template == collection || template == format!("{collection}/{{name}}")
        })
}

/// What [`every_call`] found: each call that broke a rule, and how many calls need credentials.
struct Report {
    failures: Vec<String>,
    protected: usize,
}

impl Report {
    #[track_caller]
    fn assert_clean(&self) {
        assert!(
            self.failures.is_empty(),
            "{} calls broke the rules:\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// Calls everything as nobody, as alice and as the namespace-A user in B, and the namespaced calls as the
/// namespace-A user in A.
async fn every_call(server: &Server, scene: &Scene) -> Report {
    let document = expect(server.rest(None).get("/openapi.json").await, 200);
    let (in_a, in_b) = (
        Names::in_namespace(scene.a.name()),
        Names::in_namespace(scene.b.name()),
    );
    let base = server.url();
    let mut failures = Vec::new();

    let rest_b = calls::rest_calls(&document, &in_b);
    let public: BTreeSet<&str> = rest_b
        .iter()
        .filter(|c| c.public)
        .map(|c| c.label.as_str())
        .collect();
    assert_eq!(
        public,
        PUBLIC.iter().copied().collect(),
        "operations without security"
    );
    let gateway = rest_b
        .iter()
        .filter(|c| c.template.starts_with("/apis/v1/"))
        .count();
    // 5 cluster, 5 compute-template, 5 job, 6 job-submission and 6 service operations.
    assert_eq!(gateway, 27, "the gateway's operations in the document");
    assert!(
        rest_b.len() > gateway + PUBLIC.len(),
        "no pass-through operations"
    );
    let user_a_name = &scene.user_a.name;
    let mut protected = 0;
    for call in &rest_b {
        if call.public {
            let (status, body) = call.send(&base, None).await;
            // `/readyz` may still say 503 before the first check of the API server; never 401.
            if status == 401 || (status != 200 && call.label != "GET /readyz") {
                failures.push(format!("{} without a token: {status} {body}", call.label));
            }
            continue;
        }
        protected += 1;
        let (status, body) = call.send(&base, None).await;
        if status != 401 {
            failures.push(format!("{} without a token: {status} {body}", call.label));
        }
        let (status, body) = call.send(&base, Some(&scene.alice.token)).await;
        if status != 403 || !body.contains("alice") {
            failures.push(format!("{} as alice: {status} {body}", call.label));
        }
        let (status, body) = call.send(&base, Some(&scene.user_a.token)).await;
        if status != 403 || !body.contains(user_a_name.as_str()) {
            failures.push(format!("{} as {user_a_name} (in B): {status} {body}", call.label));
        }
    }
    // The same user is not refused in the namespace of their rights: the refusals above are RBAC's.
    let rest_a = calls::rest_calls(&document, &in_a);
    for call in rest_a.iter().filter(|c| {
        !c.public
            && c.namespaced()
            && (c.template.starts_with("/apis/v1/") || user_role_covers_pass_through(&c.template))
    }) {
        let (status, body) = call.send(&base, Some(&scene.user_a.token)).await;
        if matches!(status, 401 | 403) || status >= 500 {
            failures.push(format!("{} as {user_a_name} (in A): {status} {body}", call.label));
        }
    }

    let channel = calls::channel(server.grpc).await;
    let grpc_b = calls::grpc_calls(&in_b);
    assert_eq!(grpc_b.len(), 27, "the API's gRPC methods");
    for call in &grpc_b {
        protected += 1;
        let as_nobody = calls::unary(&channel, &call.path, call.message.clone(), None).await;
        if as_nobody.as_ref().err().map(tonic::Status::code) != Some(Code::Unauthenticated) {
            failures.push(format!("{} without a token: {as_nobody:?}", call.path));
        }
        let token = Some(scene.alice.token.as_str());
        let as_alice = calls::unary(&channel, &call.path, call.message.clone(), token).await;
        if !matches!(&as_alice, Err(s) if s.code() == Code::PermissionDenied && s.message().contains("alice"))
        {
            failures.push(format!("{} as alice: {as_alice:?}", call.path));
        }
        let token = Some(scene.user_a.token.as_str());
        let as_user = calls::unary(&channel, &call.path, call.message.clone(), token).await;
        if !matches!(&as_user, Err(s) if s.code() == Code::PermissionDenied && s.message().contains(user_a_name.as_str()))
        {
            failures.push(format!("{} as {user_a_name} (in B): {as_user:?}", call.path));
        }
    }
    for call in calls::grpc_calls(&in_a).iter().filter(|c| c.namespaced) {
        let token = Some(scene.user_a.token.as_str());
        let answer = calls::unary(&channel, &call.path, call.message.clone(), token).await;
        let code = answer.as_ref().err().map(tonic::Status::code);
        if matches!(
            code,
            Some(
                Code::Unauthenticated
                    | Code::PermissionDenied
                    | Code::Internal
                    | Code::Unknown
                    | Code::Unavailable
            )
        ) {
            failures.push(format!("{} as {user_a_name} (in A): {answer:?}", call.path));
        }
    }
    Report { failures, protected }
}

#[tokio::test]
async fn every_call_is_authenticated_and_authorized_as_the_caller() {
    let env = env().await;
    let scene = Scene::new(env, "rbac").await;
    let server = Server::start(env, &[]).await;
    every_call(&server, &scene).await.assert_clean();
    server.stop().await.unwrap();
}

/// A ServiceAccount with the server's own role plus cluster-admin, made for one test (the shared
/// `kuberay-apiserver` account keeps its rights: other tests run at the same time); its kubeconfig, and
/// the bindings to delete afterwards.
async fn powerful_account(env: &TestEnv, home: &TestNamespace) -> (PathBuf, Vec<String>) {
    let admin = env.client().await.unwrap();
    let token = service_account_token(env, home.name(), "powerful").await;
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let mut names = Vec::new();
    for role in ["kuberay-apiserver", "cluster-admin"] {
        let name = format!("{}-{role}", home.name());
        let binding: ClusterRoleBinding = serde_json::from_value(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": "powerful", "namespace": home.name()}],
        }))
        .unwrap();
        bindings.create(&PostParams::default(), &binding).await.unwrap();
        names.push(name);
    }
    let kubeconfig = kubeconfig_with_token(env, &token, None, &format!("powerful-{}", home.name()));
    // Wait until the bindings are in force: the account can read Secrets anywhere and review tokens.
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let powerful = Client::try_from(config).unwrap();
    eventually("the powerful account's bindings", Duration::from_secs(30), || {
        let powerful = powerful.clone();
        async move {
            let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::all(powerful.clone());
            let reviews: Api<TokenReview> = Api::all(powerful);
            let review: TokenReview = serde_json::from_value(json!({"spec": {"token": "x"}})).unwrap();
            let can_read = secrets.list(&Default::default()).await.is_ok();
            let can_review = reviews.create(&PostParams::default(), &review).await.is_ok();
            (can_read && can_review).then_some(())
        }
    })
    .await;
    (kubeconfig, names)
}

async fn delete_bindings(env: &TestEnv, names: &[String]) {
    let bindings: Api<ClusterRoleBinding> = Api::all(env.client().await.unwrap());
    for name in names {
        let _ = bindings.delete(name, &DeleteParams::default()).await;
    }
}

#[tokio::test]
async fn a_cluster_admin_server_account_lends_its_rights_to_no_caller() {
    let env = env().await;
    let scene = Scene::new(env, "rbac-powerful").await;
    let home = namespace(env, "rbac-server", HeadMode::None).await;
    let (kubeconfig, bindings) = powerful_account(env, &home).await;

    let server = Server::start_with_kubeconfig(&kubeconfig, &[]).await;
    let guarded = every_call(&server, &scene).await;
    server.stop().await.unwrap();

    // The contrast: `--auth none` authenticates nobody and acts as the server itself, so anyone (with or
    // without a token, which is not even looked at) gets the server's rights: the same check finds every
    // call answering without credentials.
    let open = Server::start_with_kubeconfig(&kubeconfig, &["--auth=none"]).await;
    let opened = every_call(&open, &scene).await;
    let in_b = format!("/apis/v1/namespaces/{}", scene.b.name());
    let created = open
        .rest(None)
        .post(&format!("{in_b}/compute_templates"), &template("opened", 1))
        .await;
    let listed = open
        .rest(Some(&scene.alice.token))
        .get(&format!("{in_b}/compute_templates"))
        .await;
    open.stop().await.unwrap();
    // The account's cluster-admin binding goes before anything is asserted.
    delete_bindings(env, &bindings).await;

    guarded.assert_clean();
    let unauthenticated = opened
        .failures
        .iter()
        .filter(|f| f.contains(" without a token: "))
        .count();
    assert_eq!(
        unauthenticated,
        opened.protected,
        "with --auth none every call should answer without a token:\n{}",
        opened.failures.join("\n")
    );
    expect(created, 200);
    let listed = expect(listed, 200);
    let names: Vec<&str> = listed["computeTemplates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"opened"), "{listed}");
    let config_maps: Api<ConfigMap> = Api::namespaced(env.client().await.unwrap(), scene.b.name());
    assert!(config_maps.get_opt("opened").await.unwrap().is_some());
}

/// A ready RayCluster `name` with its head Service (port `dashboard`) and no Pods, made by the admin.
async fn ready_cluster(admin: &Client, namespace: &str, name: &str) {
    let clusters: Api<RayCluster> = Api::namespaced(admin.clone(), namespace);
    let cluster: RayCluster = serde_json::from_value(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"},
        ]}}}},
    }))
    .unwrap();
    let created = clusters.create(&PostParams::default(), &cluster).await.unwrap();
    let uid = created.metadata.uid.unwrap();
    clusters
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"state": "ready"}})),
        )
        .await
        .unwrap();
    let services: Api<Service> = Api::namespaced(admin.clone(), namespace);
    let service: Service = serde_json::from_value(json!({
        // Controlled by the cluster, as the operator makes it: heads are reached only through those.
        "metadata": {"name": format!("{name}-head-svc"), "ownerReferences": [{"apiVersion": "ray.io/v1",
            "kind": "RayCluster", "name": name, "uid": uid, "controller": true}]},
        "spec": {"ports": [{"name": "dashboard", "port": 8265}], "selector": {"ray.io/cluster": name}},
    }))
    .unwrap();
    services.create(&PostParams::default(), &service).await.unwrap();
}

/// A user with every rule of the shipped user role except `services/proxy`.
async fn user_without_proxy(env: &TestEnv, namespace: &str) -> User {
    let admin = env.client().await.unwrap();
    let user = User::service_account(env, namespace, "no-proxy").await;
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "ray-without-proxy"},
        "rules": [
            {"apiGroups": ["ray.io"], "resources": ["rayclusters", "rayjobs", "rayservices"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "create", "delete"]},
            {"apiGroups": [""], "resources": ["services"], "verbs": ["get"]},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list"]},
        ],
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "no-proxy"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "ray-without-proxy"},
        "subjects": [{"kind": "ServiceAccount", "name": "no-proxy", "namespace": namespace}],
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(admin, namespace)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    user
}

#[tokio::test]
async fn job_submissions_need_services_proxy_in_both_routing_modes() {
    let env = env().await;
    let ns = namespace(env, "rbac-proxy", HeadMode::None).await;
    let admin = env.client().await.unwrap();
    ready_cluster(&admin, ns.name(), "c").await;
    let refused = user_without_proxy(env, ns.name()).await;
    let allowed = User::service_account(env, ns.name(), "ray-user").await;
    allowed.grant(env, ns.name()).await;
    let submissions = format!("/apis/v1/namespaces/{}/jobsubmissions/c", ns.name());
    let submission = json!({"entrypoint": "echo hello"});
    let names = Names {
        cluster: "c".into(),
        ..Names::in_namespace(ns.name())
    };
    let submit = calls::grpc_calls(&names)
        .into_iter()
        .find(|c| c.path == "/proto.RayJobSubmissionService/SubmitRayJob")
        .unwrap();

    for flags in [&[][..], &["--use-kubernetes-proxy"][..]] {
        let mode = if flags.is_empty() { "direct" } else { "proxy" };
        let server = Server::start(env, flags).await;
        let rest = server.rest(Some(&refused.token));
        // The user may read the cluster (the refusal is not about that).
        expect(
            rest.get(&format!("/apis/v1/namespaces/{}/clusters", ns.name()))
                .await,
            200,
        );
        for (method, path, verb) in [
            ("POST", submissions.clone(), "create"),
            ("GET", submissions.clone(), "get"),
            ("DELETE", format!("{submissions}/s1"), "delete"),
        ] {
            let body = (method == "POST").then_some(&submission);
            let (status, answer) = rest.call(method, &path, body).await;
            let message = answer["message"].as_str().unwrap_or_default();
            assert!(
                status == 403
                    && message.contains("services/proxy")
                    && message.contains(&refused.name)
                    && message.contains(verb),
                "{mode}: {method} {path} without services/proxy: {status} {answer}"
            );
        }
        let channel = calls::channel(server.grpc).await;
        let answer = calls::unary(
            &channel,
            &submit.path,
            submit.message.clone(),
            Some(&refused.token),
        )
        .await;
        assert!(
            matches!(&answer, Err(s) if s.code() == Code::PermissionDenied && s.message().contains("services/proxy")),
            "{mode}: gRPC SubmitRayJob without services/proxy: {answer:?}"
        );
        // With services/proxy the same call gets past authorization (and finds no Ray head: 503).
        let (status, answer) = server
            .rest(Some(&allowed.token))
            .post(&submissions, &submission)
            .await;
        assert_eq!(status, 503, "{mode}: submitting with services/proxy: {answer}");
        server.stop().await.unwrap();
    }
}
