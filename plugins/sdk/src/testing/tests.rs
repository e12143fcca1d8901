//! The FakeHost refuses what the operator refuses (the rules are the same code, `crate::ownership`).

use serde_json::json;

use super::*;

const FINALIZER: &str = "ray.io/rayjob-finalizer";

fn host() -> FakeHost {
    FakeHost::new(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "job", "namespace": "ns", "uid": "job-uid"},
    }))
    .with_finalizer(FINALIZER)
}

fn service(name: &str, owners: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "ownerReferences": owners},
    })
}

fn forbidden<T: std::fmt::Debug>(result: Result<T, HostError>) -> String {
    match result {
        Err(HostError::Forbidden(message)) => message,
        other => panic!("expected forbidden, got {other:?}"),
    }
}

#[test]
fn writes_get_the_reconciled_object_as_their_only_controller() {
    let host = host();
    let created = host.create(&service("s", json!([]))).unwrap();
    assert_eq!(created["metadata"]["namespace"], "ns");
    assert_eq!(
        created["metadata"]["ownerReferences"],
        json!([{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": "job-uid",
                "controller": true, "blockOwnerDeletion": true}])
    );
    // A reference the plugin wrote to its own object is replaced by the host's.
    let own = json!([{"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "job", "uid": "job-uid"}]);
    let applied = host.apply(&service("s", own)).unwrap();
    assert_eq!(
        applied["metadata"]["ownerReferences"],
        created["metadata"]["ownerReferences"]
    );
}

#[test]
fn foreign_owners_and_controllers_are_refused() {
    let host = host();
    for foreign in [
        json!([{"kind": "RayCluster", "name": "victim", "uid": "victim-uid", "controller": true}]),
        json!([{"kind": "RayCluster", "name": "victim", "uid": "victim-uid"}]),
    ] {
        let message = forbidden(host.create(&service("s", foreign.clone())));
        assert!(message.contains("RayCluster victim"), "{message}");
        forbidden(host.apply(&service("s", foreign)));
    }
    assert_eq!(host.writes(), []);
}

#[test]
fn applies_never_adopt() {
    let host = host();
    host.insert(service("orphan", json!([])));
    host.insert(service(
        "theirs",
        json!([{"kind": "RayCluster", "name": "c", "uid": "other", "controller": true}]),
    ));
    host.insert_owned(service("ours", json!([])));
    assert!(forbidden(host.apply(&service("orphan", json!([])))).contains("plugins do not adopt"));
    assert!(forbidden(host.apply(&service("theirs", json!([])))).contains("controlled by another"));
    assert!(host.apply(&service("ours", json!([]))).is_ok());
    assert!(matches!(
        host.create(&service("orphan", json!([]))),
        Err(HostError::Conflict(_))
    ));
}

#[test]
fn only_the_declared_finalizer_on_the_reconciled_object() {
    let host = host();
    assert!(host.add_finalizer(FINALIZER).is_ok());
    forbidden(host.add_finalizer("kubernetes.io/pvc-protection"));
    forbidden(host.remove_finalizer("example.com/other"));
    let mut with_finalizer = service("s", json!([]));
    with_finalizer["metadata"]["finalizers"] = json!([FINALIZER]);
    forbidden(host.create(&with_finalizer));
    let undeclared = FakeHost::new(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "job"},
    }));
    forbidden(undeclared.add_finalizer(FINALIZER));
}

#[test]
fn only_controlled_objects_are_deleted() {
    let host = host();
    let service_kind = Kind::new("", "v1", "Service");
    host.insert(service("orphan", json!([])));
    host.insert(service(
        "owned-not-controlled",
        json!([{"kind": "RayJob", "name": "job", "uid": "job-uid"}]),
    ));
    host.insert_owned(service("ours", json!([])));
    forbidden(host.delete(&service_kind, "orphan", None));
    forbidden(host.delete(&service_kind, "owned-not-controlled", None));
    // Another incarnation of the name is left alone, as the host does.
    assert!(host.delete(&service_kind, "ours", Some("old-uid")).is_ok());
    assert_eq!(host.objects(&service_kind).len(), 3);
    assert!(host.delete(&service_kind, "ours", None).is_ok());
    assert_eq!(host.objects(&service_kind).len(), 2);
}

fn controlled(kind: &str, name: &str, uid: &str) -> Value {
    json!([{"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, "controller": true}])
}

/// A cluster the job controls and its head Pod (controlled by the cluster), and a Pod of another cluster.
fn grandchildren(host: &FakeHost) {
    host.insert_owned(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "c", "uid": "c-uid"}}));
    host.insert(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c-head",
        "labels": {"ray.io/cluster": "c"}, "ownerReferences": controlled("RayCluster", "c", "c-uid")},
        "spec": {"containers": []}}),
    );
    host.insert(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "v-head",
        "ownerReferences": controlled("RayCluster", "v", "v-uid")}}),
    );
}

fn label(pod: &str, key: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "labels": {key: "true"}}})
}

#[test]
fn listed_labels_of_a_grandchild_are_merged_without_taking_it_over() {
    let host = host().with_grandchild_labels(&["ray.io/serve"]);
    grandchildren(&host);
    let applied = host.apply(&label("c-head", "ray.io/serve")).unwrap();
    assert_eq!(
        applied["metadata"]["labels"],
        json!({"ray.io/cluster": "c", "ray.io/serve": "true"})
    );
    assert_eq!(
        applied["metadata"]["ownerReferences"],
        controlled("RayCluster", "c", "c-uid")
    );
    assert_eq!(applied["spec"], json!({"containers": []}));
}

#[test]
fn grandchildren_get_nothing_but_listed_labels_and_others_nothing_at_all() {
    let host = host().with_grandchild_labels(&["ray.io/serve"]);
    grandchildren(&host);
    assert!(forbidden(host.apply(&label("c-head", "ray.io/cluster"))).contains("grandchildLabels"));
    let mut with_spec = label("c-head", "ray.io/serve");
    with_spec["spec"] = json!({"containers": []});
    assert!(forbidden(host.apply(&with_spec)).contains("may not set spec"));
    forbidden(host.apply(&label("v-head", "ray.io/serve")));
    let unlisted = self::host();
    grandchildren(&unlisted);
    assert!(forbidden(unlisted.apply(&label("c-head", "ray.io/serve"))).contains("grandchildLabels"));
}

#[test]
fn refused_writes_fail_with_the_api_servers_error_until_accepted_again() {
    let host = host();
    let kind = Kind::new("", "v1", "Service");
    let refusal = HostError::Invalid("services \"s\" is forbidden: exceeded quota".into());
    host.refuse_writes(kind.clone(), Some(refusal.clone()));
    assert_eq!(host.create(&service("s", json!([]))), Err(refusal.clone()));
    assert_eq!(host.apply(&service("s", json!([]))), Err(refusal));
    assert!(host.objects(&kind).is_empty());
    assert!(host.writes().is_empty());
    // The host's own rules still come first.
    let foreign = json!([{"kind": "RayCluster", "name": "victim", "uid": "victim-uid"}]);
    forbidden(host.create(&service("s", foreign)));
    host.refuse_writes(kind.clone(), None);
    assert!(host.create(&service("s", json!([]))).is_ok());
    assert_eq!(host.objects(&kind).len(), 1);
}

/// A plugin that declares reading and applying Services, and events on its RayJobs.
struct Declares;

impl Plugin for Declares {
    fn metadata() -> crate::PluginMetadata {
        crate::PluginMetadata {
            name: "declares".into(),
            version: "1".into(),
            reconciles: Kind::new("ray.io", "v1", "RayJob"),
            owns: vec![Kind::new("", "v1", "Service")],
            capabilities: vec![
                crate::Capability::new(Kind::new("", "v1", "Service"), &[Verb::Get, Verb::Apply]),
                crate::Capability::new(Kind::new("ray.io", "v1", "RayJob"), &[Verb::RecordEvent]),
            ],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    fn reconcile(_: &impl Host, _: Request) -> Result<crate::Outcome, crate::ReconcileError> {
        Ok(crate::Outcome::done())
    }
}

#[test]
fn a_plugins_host_refuses_the_verbs_it_did_not_declare_as_the_operator_does() {
    let host = FakeHost::for_plugin::<Declares>(json!({
        "apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "job", "namespace": "ns", "uid": "job-uid"},
    }));
    host.apply(&service("s", json!([]))).unwrap();
    assert!(host.get(&Kind::new("", "v1", "Service"), "s").unwrap().is_some());
    host.record_event(&Event::normal("Made", "Apply", "made s"))
        .unwrap();

    let message = forbidden(host.create(&service("t", json!([]))));
    assert!(message.contains("not granted create on v1/Service"), "{message}");
    let message = forbidden(host.list(&Kind::new("", "v1", "Service"), ""));
    assert!(message.contains("not granted list on v1/Service"), "{message}");
    let message = forbidden(host.delete(&Kind::new("", "v1", "Service"), "s", None));
    assert!(message.contains("not granted delete"), "{message}");
    forbidden(host.apply_status(&json!({})));
    forbidden(host.get(&Kind::new("", "v1", "Secret"), "token"));
    // A FakeHost made without a plugin checks no verbs.
    assert!(
        FakeHost::new(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}))
            .list(&Kind::new("", "v1", "Service"), "")
            .is_ok()
    );
}

/// A plugin of a custom kind (no entry in the built-in policy: it gets what it asks for under the policy's
/// defaults, as in the operator with a `ReconcilePlugin` granting exactly that).
struct Widgets;

fn widgets() -> Kind {
    Kind::new("example.com", "v1", "Widget")
}

fn pods() -> Kind {
    Kind::new("", "v1", "Pod")
}

impl Plugin for Widgets {
    fn metadata() -> crate::PluginMetadata {
        let (services, secrets) = (Kind::new("", "v1", "Service"), Kind::new("", "v1", "Secret"));
        crate::PluginMetadata {
            name: "widgets".into(),
            version: "1".into(),
            reconciles: widgets(),
            owns: vec![pods(), services.clone(), secrets.clone()],
            capabilities: vec![
                crate::Capability::new(pods(), &[Verb::Get, Verb::List, Verb::Create, Verb::Apply]),
                crate::Capability::new(services, &[Verb::Apply]),
                crate::Capability::new(secrets, &[Verb::Get]),
                crate::Capability::new(widgets(), &[Verb::ApplyStatus, Verb::RecordEvent]),
            ],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    fn reconcile(_: &impl Host, _: Request) -> Result<crate::Outcome, crate::ReconcileError> {
        Ok(crate::Outcome::done())
    }
}

fn widget(spec: Value) -> FakeHost {
    FakeHost::for_plugin::<Widgets>(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "uid": "w-uid"}, "spec": spec,
    }))
}

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

#[test]
fn a_plugins_writes_are_judged_by_the_operators_admission() {
    let host = widget(json!({}));
    let plain = pod("plain", json!({"containers": [{"name": "c", "image": "i"}]}));
    host.create(&plain).unwrap();

    // A Secret the user never named, a privileged container, a Service type the policy does not allow and
    // another namespace: each refused with the operator's message, nothing written.
    let secret = pod(
        "secret",
        json!({"containers": [{"name": "c", "image": "i"}],
               "volumes": [{"name": "v", "secret": {"secretName": "db-password"}}]}),
    );
    let message = forbidden(host.create(&secret));
    assert!(message.contains("db-password"), "{message}");
    let privileged = pod(
        "privileged",
        json!({"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}),
    );
    let message = forbidden(host.apply(&privileged));
    assert!(message.contains("privileged"), "{message}");
    let node_port = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                           "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    let message = forbidden(host.apply(&node_port));
    assert!(message.contains("NodePort"), "{message}");
    let mut elsewhere = plain.clone();
    elsewhere["metadata"]["name"] = json!("elsewhere");
    elsewhere["metadata"]["namespace"] = json!("kube-system");
    forbidden(host.create(&elsewhere));
    let names: Vec<Value> = host
        .objects(&pods())
        .iter()
        .map(|p| p["metadata"]["name"].clone())
        .collect();
    assert_eq!(names, vec![json!("plain")]);

    // The user's request names the Secret: now the Pod may mount it.
    let host = widget(json!({"template": {"spec": {
        "volumes": [{"name": "v", "secret": {"secretName": "db-password"}}]}}}));
    host.create(&secret).unwrap();
}

#[test]
fn a_plugins_reads_of_secrets_and_its_call_budget_are_the_operators() {
    // The policy's defaults withhold Secrets; the built-in RayCluster entry lets its plugin read the ones
    // its cluster controls, and only those.
    let secrets = Kind::new("", "v1", "Secret");
    let host = widget(json!({}));
    let message = forbidden(host.get(&secrets, "other"));
    assert!(message.contains("not granted get on v1/Secret"), "{message}");
    let host = FakeHost::for_plugin::<ReadsSecrets>(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "c", "namespace": "ns", "uid": "c-uid"}, "spec": {},
    }));
    let secret = |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    host.insert(secret("other"));
    host.insert_owned(secret("token"));
    let message = forbidden(host.get(&secrets, "other"));
    assert!(
        message.contains("Secret other is neither controlled by"),
        "{message}"
    );
    assert!(host.get(&secrets, "token").unwrap().is_some());

    let host = widget(json!({}));

    // 100 events per call by default; the next fails as the operator fails it, until the next call.
    let event = Event::normal("Made", "Apply", "made it");
    let _ = host.request();
    for _ in 0..100 {
        host.record_event(&event).unwrap();
    }
    let error = host.record_event(&event).unwrap_err();
    assert!(
        matches!(&error, HostError::Invalid(m) if m.contains("more than 100 events")),
        "{error}"
    );
    let _ = host.request();
    host.record_event(&event).unwrap();
    // So does an object larger than the API server takes.
    let huge = pod(
        "huge",
        json!({"containers": [{"name": "c", "image": "x".repeat(2 << 20)}]}),
    );
    let error = host.create(&huge).unwrap_err();
    assert!(
        matches!(&error, HostError::Invalid(m) if m.contains("larger than the limit")),
        "{error}"
    );
}

/// A plugin under the built-in policy's `raycluster` entry that reads Secrets.
struct ReadsSecrets;

impl Plugin for ReadsSecrets {
    fn metadata() -> crate::PluginMetadata {
        let clusters = Kind::new("ray.io", "v1", "RayCluster");
        crate::PluginMetadata {
            name: "raycluster".into(),
            version: "1".into(),
            reconciles: clusters,
            owns: vec![Kind::new("", "v1", "Secret")],
            capabilities: vec![crate::Capability::new(
                Kind::new("", "v1", "Secret"),
                &[Verb::Get],
            )],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    fn reconcile(_: &impl Host, _: Request) -> Result<crate::Outcome, crate::ReconcileError> {
        Ok(crate::Outcome::done())
    }
}

/// A plugin the operator refuses to load: it reconciles a built-in kind.
struct ReconcilesPods;

impl Plugin for ReconcilesPods {
    fn metadata() -> crate::PluginMetadata {
        crate::PluginMetadata {
            name: "pods".into(),
            version: "1".into(),
            reconciles: pods(),
            owns: vec![],
            capabilities: vec![crate::Capability::new(pods(), &[Verb::Get])],
            finalizer: None,
            uses_ray_head: false,
        }
    }

    fn reconcile(_: &impl Host, _: Request) -> Result<crate::Outcome, crate::ReconcileError> {
        Ok(crate::Outcome::done())
    }
}

#[test]
fn a_plugin_the_operator_would_not_load_gets_nothing() {
    let host = FakeHost::for_plugin::<ReconcilesPods>(pod("p", json!({})));
    let message = forbidden(host.get(&pods(), "p"));
    assert!(message.contains("would not load"), "{message}");
    assert!(
        message.contains("plugins may only reconcile custom resources"),
        "{message}"
    );
}

#[test]
fn a_policy_of_ones_own_judges_instead_of_the_built_in_one() {
    let policy = "defaults: {podSecurity: privileged}\n\
                  plugins:\n- {name: widgets, file: widgets.wasm, reconciles: example.com/v1/Widget,\n   \
                  owns: [v1/Pod], verbs: {v1/Pod: [create]}}\n";
    let privileged = pod(
        "privileged",
        json!({"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}),
    );
    let object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns", "uid": "w-uid"}, "spec": {},
    });
    // The built-in defaults hold a plugin's own settings to baseline; this policy lets them be privileged.
    forbidden(FakeHost::for_plugin::<Widgets>(object.clone()).create(&privileged));
    let host = FakeHost::for_plugin::<Widgets>(object.clone()).with_policy::<Widgets>(policy);
    host.create(&privileged).unwrap();
    // Its entry grants no Services, whatever the plugin asks for.
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                         "spec": {"ports": [{"port": 80}]}});
    let message = forbidden(host.apply(&service));
    assert!(message.contains("not granted apply on v1/Service"), "{message}");
    // A policy the operator would not start with refuses everything, saying why.
    let host = FakeHost::for_plugin::<Widgets>(object).with_policy::<Widgets>("plugins: 3");
    let message = forbidden(host.create(&privileged));
    assert!(message.contains("plugins"), "{message}");
}
