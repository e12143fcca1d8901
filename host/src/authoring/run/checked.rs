//! [`CheckedHost`]: the in-memory host for a plugin's native unit tests that judges every call as the
//! operator does, with the operator's own code: each call passes the sandbox's gate (sizes, call budget,
//! written bytes, the grant, and the refusal logged and counted as the operator does) and the operator's
//! admission (names, ownership, provenance, content rules, Pod Security) against the in-memory cluster
//! `plugin run` uses, which commits writes as the API server would (resource versions, preconditions,
//! finalizers holding a delete). The SDK's `FakeHost::for_plugin` applies the same grant, budget and
//! admission (the `kuberay-admission` crate) without this crate's dependencies (wasmtime, kube); this host
//! adds `--grant` files, the operator's own gate and that API server model.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use kuberay_admission::strip_host_condition;
use kuberay_plugin_sdk::{
    Document, Event, Host, HostError, Kind, LogLevel, Plugin, RayRequest, RayResponse, Request,
};
use serde_json::{Map, Value};

use super::{
    CallResult, HostCall, RunError,
    cluster::MemoryCluster,
    grant,
    host::{Journal, OfflineHost},
};
use crate::{
    admission::{Admission, Cluster as _, Primary},
    metrics::Metrics,
    policy::{Policy, grant::grant_for_entry},
    sandbox::{
        CallBudget, LoadError, TokenBucket, default_base_config,
        gate::{CallContext, Gate},
        log_guard::LogRate,
    },
};

/// What names a plugin compiled natively in errors (it has no file).
const NATIVE: &str = "(the plugin, compiled natively)";

/// An in-memory cluster holding one object a plugin reconciles, with every host call judged by the
/// operator's rules. Build it with [`CheckedHost::new`]; hand the plugin [`CheckedHost::request`]; read what
/// happened with [`CheckedHost::calls`], [`CheckedHost::refusals`], [`CheckedHost::objects`] and
/// [`CheckedHost::events`]. Not for use inside an async runtime (each call blocks on the operator's code).
pub struct CheckedHost {
    gate: Mutex<Gate>,
    ctx: CallContext,
    runtime: tokio::runtime::Runtime,
    cluster: Arc<MemoryCluster>,
    journal: Arc<Mutex<Journal>>,
    primary: Primary,
    config: Map<String, Value>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn input(message: impl Into<String>) -> RunError {
    RunError::Input {
        path: NATIVE.into(),
        message: message.into(),
    }
}

impl CheckedHost {
    /// `object` (status included, as the operator would hand it over), reconciled by `P` under the built-in
    /// policy's entry named like `P` (else what `P` asks for under the policy's defaults), with `objects`
    /// (YAML-parsed or `json!` values) existing besides it, each in the object's namespace unless it names one.
    pub fn new<P: Plugin>(object: Value, objects: Vec<Value>) -> Result<Self, RunError> {
        Self::with_grant::<P>(object, objects, &Policy::builtin(), None)
    }

    /// [`CheckedHost::new`] within `policy`, and with `grant` (a policy entry, a `ReconcilePlugin` or its
    /// `grant`, or a whole policy file, as `plugin run --grant` takes it) if given.
    pub fn with_grant<P: Plugin>(
        object: Value,
        objects: Vec<Value>,
        policy: &Policy,
        grant: Option<&str>,
    ) -> Result<Self, RunError> {
        let metadata = P::metadata();
        let chosen = grant::choose(
            policy,
            "the policy",
            &metadata,
            None,
            grant.map(|g| ("the grant", g)),
        )?;
        let entry = chosen
            .policy
            .entry_named(&chosen.name)
            .ok_or_else(|| input(format!("no policy entry named {:?}", chosen.name)))?;
        let refused = |source| RunError::Load {
            path: NATIVE.into(),
            source,
        };
        let granted = grant_for_entry(&chosen.policy, entry, &metadata, CallBudget::default())
            .map_err(|e| refused(LoadError::Refused(e)))?;
        let mut config = default_base_config();
        config.extend(entry.config.clone());
        P::check_config(&config)
            .map_err(|m| refused(LoadError::Metadata(format!("configuration refused: {m}"))))?;

        let kind = Kind::of_object(&object).ok_or_else(|| input("the object has no apiVersion and kind"))?;
        if kind != metadata.reconciles {
            return Err(input(format!(
                "a {kind}; the plugin reconciles {}",
                metadata.reconciles
            )));
        }
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or_else(|| input("the object has no metadata.name"))?
            .to_string();
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        let cluster = MemoryCluster::new(objects, &namespace, BTreeMap::new()).map_err(input)?;
        let inserted = cluster.insert(object, &namespace).map_err(input)?;
        let cluster = Arc::new(cluster);
        let primary = Primary {
            kind: kind.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
            uid: inserted
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        };
        let granted = Arc::new(granted);
        let admission = Admission::new(
            cluster.clone(),
            primary.clone(),
            granted.clone(),
            &chosen.name,
            granted.finalizer.clone(),
        );
        let journal = Arc::new(Mutex::new(Journal::default()));
        let host = OfflineHost::new(admission, cluster.clone(), granted.clone(), journal.clone());
        let rates = granted.budget.rates;
        let ctx = CallContext {
            plugin: chosen.name.as_str().into(),
            primary_kind: kind,
            grant: granted,
            object: format!("{namespace}/{name}"),
            host: Arc::new(host),
            metrics: Metrics::new(),
            log_rate: Arc::new(LogRate::default()),
            write_rate: Arc::new(TokenBucket::new(
                rates.write_bytes_burst,
                rates.write_bytes_per_second,
            )),
            config: Value::Object(config.clone()).to_string().into(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| input(format!("a runtime for the host's calls: {e}")))?;
        Ok(Self {
            gate: Mutex::new(Gate::new(ctx.clone())),
            ctx,
            runtime,
            cluster,
            journal,
            primary,
            config,
        })
    }

    /// The object as the operator hands it to the plugin now (its status as the plugin last wrote it, the
    /// host's own condition removed), and the start of a new call: budgets count from zero again.
    pub fn request(&self) -> Result<Request, HostError> {
        let Primary {
            kind,
            namespace,
            name,
            ..
        } = &self.primary;
        let current = self
            .runtime
            .block_on(self.cluster.read(kind, namespace, name))?
            .ok_or_else(|| HostError::NotFound(format!("{kind} {namespace}/{name} is gone")))?;
        let mut object = current;
        strip_host_condition(&mut object);
        *lock(&self.gate) = Gate::new(self.ctx.clone());
        Ok(Request {
            object: Document::Value(object),
            attempt: 0,
        })
    }

    /// Every host call so far, in order, with what became of it.
    pub fn calls(&self) -> Vec<HostCall> {
        lock(&self.journal).calls.clone()
    }

    /// The operator's messages for the calls it refused.
    pub fn refusals(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .filter_map(|call| match call.result {
                CallResult::Refused(message) => Some(message),
                _ => None,
            })
            .collect()
    }

    /// Every object of the cluster as it is now.
    pub fn objects(&self) -> Vec<Value> {
        self.cluster.snapshot().into_values().collect()
    }

    /// The events recorded, as `Type Reason (Action): note`.
    pub fn events(&self) -> Vec<String> {
        lock(&self.journal).events.clone()
    }

    fn call<T>(&self, run: impl AsyncFnOnce(&mut Gate) -> Result<T, HostError>) -> Result<T, HostError> {
        let mut gate = lock(&self.gate);
        self.runtime.block_on(run(&mut gate))
    }
}

impl Host for CheckedHost {
    fn get(&self, kind: &Kind, name: &str) -> Result<Option<Value>, HostError> {
        self.call(async |gate| gate.get(kind.clone(), name.to_string()).await)
    }

    fn list(&self, kind: &Kind, label_selector: &str) -> Result<Vec<Value>, HostError> {
        self.call(async |gate| gate.list(kind.clone(), label_selector.to_string()).await)
    }

    // Objects cross as the JSON text a plugin would pass, so their sizes are charged as in the operator.
    fn create(&self, object: &Value) -> Result<Value, HostError> {
        self.call(async |gate| gate.create(&object.to_string()).await)
    }

    fn apply(&self, object: &Value) -> Result<Value, HostError> {
        self.call(async |gate| gate.apply(&object.to_string()).await)
    }

    fn apply_status(&self, status: &Value) -> Result<(), HostError> {
        self.call(async |gate| gate.apply_status(&status.to_string()).await)
    }

    fn delete(&self, kind: &Kind, name: &str, uid: Option<&str>) -> Result<(), HostError> {
        self.call(async |gate| {
            gate.delete(kind.clone(), name.to_string(), uid.map(str::to_string))
                .await
        })
    }

    fn add_finalizer(&self, finalizer: &str) -> Result<(), HostError> {
        self.call(async |gate| gate.finalizer(finalizer.to_string(), true).await)
    }

    fn remove_finalizer(&self, finalizer: &str) -> Result<(), HostError> {
        self.call(async |gate| gate.finalizer(finalizer.to_string(), false).await)
    }

    fn record_event(&self, event: &Event) -> Result<(), HostError> {
        self.call(async |gate| gate.record_event(event.clone()).await)
    }

    fn log(&self, level: LogLevel, message: &str, fields: &[(&str, &str)]) {
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        lock(&self.gate).log(level, message, &fields);
    }

    fn ray(&self, request: &RayRequest) -> Result<RayResponse, HostError> {
        self.call(async |gate| gate.ray(request.clone()).await)
    }

    fn config(&self) -> Map<String, Value> {
        self.config.clone()
    }
}

#[cfg(test)]
mod tests {
    use kuberay_plugin_raycluster::RayClusterPlugin;
    use kuberay_plugin_sdk::{Capability, Outcome, PluginMetadata, ReconcileError, Verb, testing::FakeHost};
    use serde::Deserialize as _;
    use serde_json::json;

    use super::*;

    fn sample() -> Value {
        let text = include_str!("../../../../tests/fixtures/kuberay-samples/ray-cluster.sample.yaml");
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn a_kuberay_sample_reconciles_with_nothing_refused() {
        let host = CheckedHost::new::<RayClusterPlugin>(sample(), vec![]).unwrap();
        for _ in 0..3 {
            let request = host.request().unwrap();
            RayClusterPlugin::reconcile(&host, request).unwrap();
        }
        assert_eq!(host.refusals(), Vec::<String>::new());
        let kinds: Vec<String> = host
            .objects()
            .iter()
            .filter_map(|o| o["kind"].as_str().map(str::to_string))
            .collect();
        assert!(kinds.iter().any(|k| k == "Pod"), "{kinds:?}");
        assert!(kinds.iter().any(|k| k == "Service"), "{kinds:?}");
        // The status the plugin wrote is what the next call reads.
        let request = host.request().unwrap();
        let object = request.object.into_value().unwrap();
        assert_eq!(
            object.pointer("/status/desiredWorkerReplicas"),
            Some(&json!(1)),
            "{object}"
        );
    }

    /// Every RayCluster sample of KubeRay's, with the other objects of its file, as the operator's end-to-end
    /// sample test runs them: nothing refused.
    #[test]
    fn every_kuberay_raycluster_sample_reconciles_with_nothing_refused() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kuberay-samples");
        let mut tried = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().to_string();
            if !file.starts_with("ray-cluster") || !file.ends_with(".yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let documents: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
                .filter_map(|d| Value::deserialize(d).ok())
                .filter(|d| d.is_object())
                .collect();
            let (clusters, others): (Vec<Value>, Vec<Value>) =
                documents.into_iter().partition(|d| d["kind"] == "RayCluster");
            for cluster in clusters {
                let host = CheckedHost::new::<RayClusterPlugin>(cluster, others.clone()).unwrap();
                for _ in 0..3 {
                    let request = host.request().unwrap();
                    let _ = RayClusterPlugin::reconcile(&host, request);
                }
                assert_eq!(host.refusals(), Vec::<String>::new(), "{file}");
                tried += 1;
            }
        }
        assert!(tried > 20, "only {tried} samples");
    }

    /// A plugin that writes what its user never asked for, and a kind it was never granted.
    struct Overreaching;

    impl Plugin for Overreaching {
        fn metadata() -> PluginMetadata {
            let services = Kind::new("", "v1", "Service");
            PluginMetadata {
                name: "overreaching".into(),
                version: "0.1.0".into(),
                reconciles: Kind::new("example.com", "v1", "Widget"),
                owns: vec![services.clone()],
                capabilities: vec![Capability::new(services, &[Verb::Get, Verb::Apply])],
                finalizer: None,
                uses_ray_head: false,
            }
        }

        fn reconcile(host: &impl Host, _: Request) -> Result<Outcome, ReconcileError> {
            let node_port = json!({
                "apiVersion": "v1", "kind": "Service", "metadata": {"name": "published"},
                "spec": {"type": "NodePort", "ports": [{"port": 8265}]},
            });
            let config_map = json!({
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-granted"},
            });
            for object in [node_port, config_map] {
                host.apply(&object)
                    .map_err(|e| ReconcileError::Transient(e.to_string()))?;
            }
            Ok(Outcome::done())
        }
    }

    #[test]
    fn fake_host_and_checked_host_refuse_what_the_operator_refuses() {
        let widget = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "team"}, "spec": {},
        });
        // Both judge with the operator's admission: the NodePort Service nobody asked for is refused first,
        // with the same message, and nothing is written.
        let fake = FakeHost::for_plugin::<Overreaching>(widget.clone());
        let fake_error = Overreaching::reconcile(&fake, fake.request()).unwrap_err();
        assert!(fake_error.to_string().contains("NodePort"), "{fake_error}");
        assert!(fake.objects(&Kind::new("", "v1", "Service")).is_empty());

        let checked = CheckedHost::new::<Overreaching>(widget, vec![]).unwrap();
        let error = Overreaching::reconcile(&checked, checked.request().unwrap()).unwrap_err();
        assert_eq!(error, fake_error);
        let refusals = checked.refusals();
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert!(
            !checked.objects().iter().any(|o| o["kind"] == "Service"),
            "nothing refused was written"
        );
    }

    #[test]
    fn a_kind_never_granted_is_refused_by_the_grant_check() {
        let widget = json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {},
        });
        let checked = CheckedHost::new::<Overreaching>(widget, vec![]).unwrap();
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        let error = checked.apply(&config_map).unwrap_err();
        assert!(
            matches!(&error, HostError::Forbidden(m) if m.contains("not granted apply on v1/ConfigMap")),
            "{error}"
        );
    }

    #[test]
    fn a_configuration_the_plugin_refuses_is_a_load_refusal() {
        let policy = Policy::parse(
            "plugins:\n- {name: raycluster, file: raycluster.wasm, reconciles: ray.io/v1/RayCluster,\n   \
             owns: [v1/Pod], config: {clusterDomain: Not A Domain}}\n",
        )
        .unwrap();
        let error = CheckedHost::with_grant::<RayClusterPlugin>(sample(), vec![], &policy, None)
            .err()
            .unwrap();
        let text = format!("{error:#}");
        assert!(matches!(error, RunError::Load { .. }), "{text}");
    }
}
