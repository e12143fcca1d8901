//! The loop that keeps what serves in step with the `ReconcilePlugin` resources (see the module doc).

use std::{
    collections::{BTreeSet, HashMap, VecDeque},
    sync::Arc,
    time::{Duration, Instant},
};

use futures::StreamExt as _;
use k8s_openapi::{
    api::core::v1::Secret,
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
};
use kube::{
    Api, Client, Resource as _, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{
        WatchStreamExt as _,
        events::{Event, EventType, Recorder, Reporter},
        reflector, watcher,
    },
};
use kuberay_plugin_sdk::Kind;
use oci_client::{Reference, secrets::RegistryAuth};
use tokio::sync::watch;

use super::{
    ResourceOptions,
    artifact::{self, Registry},
    credentials,
    resource::{ReconcilePlugin, ReconcilePluginSpec, ReconcilePluginStatus, short},
    signature::{self, PublicKey},
};
use crate::{
    metrics::Metrics,
    policy::{PolicyError, file::parse_kind},
    sandbox::{LoadError, Sandbox},
    server::Readiness,
};

/// Pulled components kept in memory by manifest digest, so that a rollback needs no pull.
const BLOBS_KEPT: usize = 8;
/// Signature checks that passed, kept so that a rollback to a version verified with the same key needs no
/// registry either.
const VERIFIED_KEPT: usize = 32;
/// How often the loop looks again without a change (retries, a leadership change).
const TICK: Duration = Duration::from_secs(2);
const FIRST_RETRY: Duration = Duration::from_secs(5);
const LAST_RETRY: Duration = Duration::from_secs(300);
/// The field manager of the status, which is applied whole.
const STATUS_MANAGER: &str = "kuberay-wasm-plugins";
/// How often at most a replica writes over a status another operator installation wrote.
const CONTESTED_WRITES: Duration = Duration::from_secs(60);
/// How long an outcome's Event is still published by a replica that did not lead when it happened (or whose
/// publication failed), even if the status already shows the outcome: a status written by a leader that went
/// does not prove its Event was recorded, and a duplicate Event is merged by the API server's event series.
const ANNOUNCE_WINDOW: Duration = Duration::from_secs(60);

/// What the loop needs from the operator.
pub(crate) struct Context {
    pub(crate) client: Client,
    pub(crate) sandbox: Arc<Sandbox>,
    pub(crate) kinds: watch::Sender<BTreeSet<Kind>>,
    pub(crate) readiness: Arc<Readiness>,
    pub(crate) metrics: Metrics,
    pub(crate) instance: Option<String>,
    /// This installation's name in the status (`operator`): its Lease as `namespace/name`.
    pub(crate) operator: String,
    pub(crate) options: ResourceOptions,
}

/// Why a version does not serve.
#[derive(Debug, Clone, PartialEq)]
struct Failure {
    /// UpperCamelCase, for conditions and Events.
    reason: &'static str,
    message: String,
    /// Worth trying again without a change of the spec.
    transient: bool,
}

impl Failure {
    fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
            transient: false,
        }
    }

    fn transient(mut self) -> Self {
        self.transient = true;
        self
    }
}

/// A version serving.
#[derive(Debug, Clone, PartialEq)]
struct Serving {
    digest: String,
    kind: Kind,
    version: String,
}

/// What this replica knows of one resource.
#[derive(Debug, Default)]
struct Tracked {
    serving: Option<Serving>,
    previous: Option<String>,
    /// The spec last tried (without `paused`), as JSON.
    attempted: Option<String>,
    failure: Option<Failure>,
    retry: Option<(Instant, Duration)>,
    generation: Option<i64>,
    /// When this replica last wrote over a status another installation had written.
    contested: Option<Instant>,
    /// The Event of the last outcome this replica did not record (it did not lead, or the publication failed),
    /// and when the outcome happened: published once it leads if the outcome is recent ([`ANNOUNCE_WINDOW`]) or
    /// the status does not show it.
    unannounced: Option<(Instant, OutcomeEvent)>,
}

/// An Event's type, reason and note.
type OutcomeEvent = (EventType, &'static str, String);

impl Tracked {
    /// Whether `status` shows what this replica serves and why the last version does not, if it does not.
    fn recorded_in(&self, status: Option<&ReconcilePluginStatus>) -> bool {
        status.is_some_and(|s| {
            s.digest.as_deref() == self.serving.as_ref().map(|v| v.digest.as_str())
                && s.last_error.as_deref() == self.failure.as_ref().map(|f| f.message.as_str())
        })
    }
}

/// Runs until the operator stops: watches the resources and serves what they name.
pub(crate) async fn run(ctx: Context) {
    let registry = match Registry::new(&ctx.options.registry) {
        Ok(registry) => registry,
        Err(e) => {
            tracing::error!(error = %e, "ReconcilePlugin resources are not served: the registry client could not be set up");
            return std::future::pending().await;
        }
    };
    let api: Api<ReconcilePlugin> = Api::all(ctx.client.clone());
    let (reader, writer) = reflector::store();
    let mut config = watcher::Config::default();
    if let Some(selector) = &ctx.options.selector {
        config = config.labels(selector);
    }
    let stream = reflector(writer, watcher(api.clone(), config).default_backoff());
    let mut stream = std::pin::pin!(stream);
    let mut loop_state = Loop {
        ctx: &ctx,
        registry,
        api,
        recorder: Recorder::new(
            ctx.client.clone(),
            Reporter {
                controller: "kuberay-wasm-plugins".into(),
                instance: ctx.instance.clone(),
            },
        ),
        tracked: HashMap::new(),
        blobs: VecDeque::new(),
        verified: Verified::default(),
    };
    let mut tick = tokio::time::interval(TICK);
    let mut listed = false;
    // Not ready until what the resources listed at start name has been tried; a list that fails (no CRD, no
    // rights) does not hold readiness: the directory's plugins serve meanwhile.
    ctx.readiness.set_resources_tried(false);
    loop {
        tokio::select! {
            event = stream.next() => match event {
                Some(Ok(watcher::Event::InitDone)) => listed = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "watching ReconcilePlugin resources (is the CRD installed and the operator allowed to list them?)");
                    ctx.readiness.set_resources_tried(true);
                }
                None => return,
            },
            _ = tick.tick() => {}
        }
        if listed {
            let resources: Vec<Arc<ReconcilePlugin>> = reader.state();
            loop_state.sync(&resources).await;
            ctx.readiness.set_resources_tried(true);
        }
    }
}

struct Loop<'a> {
    ctx: &'a Context,
    registry: Registry,
    api: Api<ReconcilePlugin>,
    recorder: Recorder,
    tracked: HashMap<String, Tracked>,
    blobs: VecDeque<(String, Arc<Vec<u8>>)>,
    verified: Verified,
}

/// The signature checks that passed, by repository, manifest digest and key: a version the blob cache holds is
/// served without a pull, but never without a check of its signature with the key the resource names now.
#[derive(Debug, Default)]
struct Verified(VecDeque<(String, String, String)>);

impl Verified {
    fn entry(reference: &Reference, digest: &str, key: &PublicKey) -> (String, String, String) {
        (
            format!("{}/{}", reference.registry(), reference.repository()),
            digest.to_string(),
            key.fingerprint().to_string(),
        )
    }

    fn contains(&self, reference: &Reference, digest: &str, key: &PublicKey) -> bool {
        self.0.contains(&Self::entry(reference, digest, key))
    }

    fn insert(&mut self, reference: &Reference, digest: &str, key: &PublicKey) {
        let entry = Self::entry(reference, digest, key);
        if self.0.contains(&entry) {
            return;
        }
        if self.0.len() == VERIFIED_KEPT {
            self.0.pop_front();
        }
        self.0.push_back(entry);
    }
}

/// The key a resource's versions must be signed with, if it names one; checked before anything is pulled.
fn verification_key(spec: &ReconcilePluginSpec) -> Result<Option<PublicKey>, Failure> {
    spec.verification
        .as_ref()
        .map(|v| PublicKey::from_pem(&v.public_key))
        .transpose()
        .map_err(|e| Failure::new(e.reason(), format!("spec.verification.publicKey: {e}")))
}

impl Loop<'_> {
    async fn sync(&mut self, resources: &[Arc<ReconcilePlugin>]) {
        let present: BTreeSet<String> = resources.iter().map(|r| r.name_any()).collect();
        let gone: Vec<String> = self
            .tracked
            .keys()
            .filter(|name| !present.contains(*name))
            .cloned()
            .collect();
        for name in gone {
            let kind = self.tracked.remove(&name).and_then(|t| t.serving).map(|s| s.kind);
            let reason = format!("the ReconcilePlugin {name} was deleted");
            self.ctx.sandbox.withdraw(&name, kind.as_ref(), reason);
        }
        for resource in resources {
            self.sync_one(resource).await;
        }
    }

    async fn sync_one(&mut self, resource: &ReconcilePlugin) {
        let name = resource.name_any();
        let spec = &resource.spec;
        let key = desired_key(spec);
        let now = Instant::now();
        let tracked = self.tracked.entry(name.clone()).or_default();
        let due = tracked.attempted.as_deref() != Some(key.as_str())
            || tracked.retry.is_some_and(|(at, _)| at <= now);
        let leading = self.ctx.readiness.leading();
        if due && !spec.paused {
            let attempt = tracked.retry.map(|(_, wait)| wait);
            let outcome = self.roll_out(&name, spec).await;
            let tracked = self.tracked.entry(name.clone()).or_default();
            tracked.attempted = Some(key);
            tracked.generation = resource.metadata.generation;
            let event = match outcome {
                Ok(serving) => {
                    let rolled_back = tracked.previous.as_deref() == Some(serving.digest.as_str());
                    if tracked
                        .serving
                        .as_ref()
                        .is_some_and(|s| s.digest != serving.digest)
                    {
                        tracked.previous = tracked.serving.as_ref().map(|s| s.digest.clone());
                    }
                    let note = format!("serving {} (plugin version {})", serving.digest, serving.version);
                    tracked.serving = Some(serving);
                    tracked.failure = None;
                    tracked.retry = None;
                    let reason = if rolled_back {
                        "PluginRolledBack"
                    } else {
                        "PluginLoaded"
                    };
                    (EventType::Normal, reason, note)
                }
                Err(failure) => {
                    tracing::error!(
                        reconcileplugin = %name, reason = failure.reason, serving = ?tracked.serving.as_ref().map(|s| &s.digest),
                        "plugin version refused; the serving version (if any) stays: {}", failure.message
                    );
                    self.ctx.metrics.plugin_refused(&name, failure.reason);
                    tracked.retry = failure.transient.then(|| {
                        let wait = attempt.map_or(FIRST_RETRY, |w| (w * 2).min(LAST_RETRY));
                        (now + wait, wait)
                    });
                    let event = (EventType::Warning, failure.reason, failure.message.clone());
                    tracked.failure = Some(failure);
                    event
                }
            };
            tracked.unannounced = Some((now, event));
        } else if !spec.paused {
            // A change that decides nothing (only `paused` back to false) is in effect as it is.
            tracked.generation = resource.metadata.generation;
        }
        if leading {
            let tracked = self.tracked.entry(name.clone()).or_default();
            let recorded = tracked.recorded_in(resource.status.as_ref());
            let unannounced = tracked
                .unannounced
                .take()
                .filter(|(at, _)| at.elapsed() < ANNOUNCE_WINDOW || !recorded);
            if let Some((at, event)) = unannounced
                && !self.event(resource, event.clone()).await
                && at.elapsed() < ANNOUNCE_WINDOW
            {
                // Tried again at the next tick while recent.
                if let Some(tracked) = self.tracked.get_mut(&name) {
                    tracked.unannounced = Some((at, event));
                }
            }
            self.write_status(resource).await;
        }
    }

    /// Pulls, verifies, loads and serves the version `spec` names.
    async fn roll_out(&mut self, name: &str, spec: &ReconcilePluginSpec) -> Result<Serving, Failure> {
        let reference = artifact::parse_reference(&spec.artifact, self.ctx.options.allow_tags)
            .map_err(|e| Failure::new(e.reason(), e.to_string()))?;
        let key = verification_key(spec)?;
        parse_kind(&spec.reconciles)
            .map_err(|e| Failure::new("InvalidGrant", format!("spec.reconciles: {e}")))?;
        let policy = self
            .ctx
            .sandbox
            .policy()
            .with_resource(name, &spec.reconciles, &spec.grant, spec.config.as_ref())
            .map_err(|e| match e {
                PolicyError::Clash(m) => Failure::new("PluginClash", m),
                other => Failure::new("InvalidGrant", other.to_string()),
            })?;
        let pulling = Instant::now();
        let (digest, wasm, auth) = self.component(&reference, spec).await?;
        if let Some(key) = &key {
            self.verify(&reference, spec, &digest, key, auth).await?;
        }
        // The pull and the signature check.
        let pulled = pulling.elapsed();
        let loading = Instant::now();
        let plugin = self
            .ctx
            .sandbox
            .load_artifact(&policy, name, wasm.to_vec(), &spec.artifact)
            .await
            .map_err(|e| load_failure(&e))?;
        let serving = Serving {
            digest,
            kind: plugin.metadata.reconciles.clone(),
            version: plugin.metadata.version.clone(),
        };
        tracing::info!(
            reconcileplugin = %name, digest = %serving.digest, pull_ms = pulled.as_millis() as u64,
            load_ms = loading.elapsed().as_millis() as u64, "plugin version verified; serving it"
        );
        let replaced = self
            .tracked
            .get(name)
            .and_then(|t| t.serving.as_ref())
            .map(|s| s.kind.clone());
        if self.ctx.sandbox.serve(Arc::new(policy), plugin, &spec.artifact) {
            let kind = serving.kind.clone();
            self.ctx.kinds.send_modify(|kinds| {
                kinds.insert(kind);
            });
        }
        if let Some(old) = replaced.filter(|old| *old != serving.kind) {
            let reason = format!("the ReconcilePlugin {name} now reconciles {}", serving.kind);
            self.ctx.sandbox.unserve(&old, name, reason);
        }
        Ok(serving)
    }

    /// The component `reference` names, from memory or the registry, with the credentials it was pulled with
    /// (none when it came from memory).
    async fn component(
        &mut self,
        reference: &Reference,
        spec: &ReconcilePluginSpec,
    ) -> Result<(String, Arc<Vec<u8>>, Option<RegistryAuth>), Failure> {
        if let Some(digest) = reference.digest()
            && let Some((_, wasm)) = self.blobs.iter().find(|(d, _)| d == digest)
        {
            return Ok((digest.to_string(), wasm.clone(), None));
        }
        let auth = self.credentials(reference, spec).await?;
        let pulled = self.registry.pull(reference, &auth).await.map_err(|e| {
            let transient = matches!(
                e,
                artifact::ArtifactError::Unreachable(_)
                    | artifact::ArtifactError::NotFound(_)
                    | artifact::ArtifactError::Unauthorized(_)
            );
            let failure = Failure::new(e.reason(), e.to_string());
            if transient { failure.transient() } else { failure }
        })?;
        let wasm = Arc::new(pulled.wasm);
        if self.blobs.len() == BLOBS_KEPT {
            self.blobs.pop_front();
        }
        self.blobs
            .push_back((pulled.manifest_digest.clone(), wasm.clone()));
        Ok((pulled.manifest_digest, wasm, Some(auth)))
    }

    /// Refuses the version `digest` unless its repository holds a cosign signature of it that `key` verifies
    /// (`signature.rs`); a pass is remembered for that repository, digest and key.
    async fn verify(
        &mut self,
        reference: &Reference,
        spec: &ReconcilePluginSpec,
        digest: &str,
        key: &PublicKey,
        auth: Option<RegistryAuth>,
    ) -> Result<(), Failure> {
        if self.verified.contains(reference, digest, key) {
            return Ok(());
        }
        let auth = match auth {
            Some(auth) => auth,
            None => self.credentials(reference, spec).await?,
        };
        signature::verify(&self.registry, reference, &auth, digest, key)
            .await
            .map_err(|e| {
                let failure = Failure::new(e.reason(), e.to_string());
                if e.transient() {
                    failure.transient()
                } else {
                    failure
                }
            })?;
        tracing::info!(artifact = %spec.artifact, %digest, key = key.fingerprint(), "signature verified");
        self.verified.insert(reference, digest, key);
        Ok(())
    }

    async fn credentials(
        &self,
        reference: &Reference,
        spec: &ReconcilePluginSpec,
    ) -> Result<RegistryAuth, Failure> {
        let Some(secret) = &spec.pull_secret else {
            return Ok(RegistryAuth::Anonymous);
        };
        let unavailable = |m: String| Failure::new("PullSecretUnavailable", m).transient();
        let Some(namespace) = &self.ctx.options.namespace else {
            return Err(Failure::new(
                "PullSecretUnavailable",
                format!(
                    "spec.pullSecret {secret} cannot be read: the operator's namespace is unknown (set POD_NAMESPACE or --operator-namespace)"
                ),
            ));
        };
        let api: Api<Secret> = Api::namespaced(self.ctx.client.clone(), namespace);
        let found = api
            .get_opt(secret)
            .await
            .map_err(|e| unavailable(format!("reading the Secret {namespace}/{secret}: {e}")))?
            .ok_or_else(|| unavailable(format!("the Secret {namespace}/{secret} does not exist")))?;
        let json = found
            .data
            .as_ref()
            .and_then(|d| d.get(".dockerconfigjson"))
            .map(|b| b.0.as_slice())
            .unwrap_or_default();
        if json.is_empty() {
            return Err(unavailable(
                credentials::CredentialsError::Missing(format!("{namespace}/{secret}")).to_string(),
            ));
        }
        credentials::from_docker_config(
            &format!("{namespace}/{secret}"),
            json,
            reference.resolve_registry(),
        )
        .map_err(|e| unavailable(e.to_string()))
    }

    /// Records an Event of `resource`; whether the API server took it.
    async fn event(&self, resource: &ReconcilePlugin, (type_, reason, note): OutcomeEvent) -> bool {
        let event = Event {
            type_,
            reason: reason.into(),
            note: Some(bounded_note(note)),
            action: "Load".into(),
            secondary: None,
        };
        match self.recorder.publish(&event, &resource.object_ref(&())).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(reconcileplugin = %resource.name_any(), error = %e, "could not record an event");
                false
            }
        }
    }

    /// Writes the status this replica sees, if it differs from the one recorded.
    async fn write_status(&mut self, resource: &ReconcilePlugin) {
        let name = resource.name_any();
        let Some(tracked) = self.tracked.get_mut(&name) else {
            return;
        };
        let current = resource.status.clone().unwrap_or_default();
        let status = status(tracked, resource, &current, &self.ctx.operator);
        if status == current {
            return;
        }
        if let Some(other) = current.operator.as_deref().filter(|o| *o != self.ctx.operator) {
            // Two installations would otherwise overwrite each other at every tick.
            if tracked
                .contested
                .is_some_and(|at| at.elapsed() < CONTESTED_WRITES)
            {
                return;
            }
            tracked.contested = Some(Instant::now());
            tracing::warn!(
                reconcileplugin = %name, other_operator = other, operator = %self.ctx.operator,
                "another operator installation serves this resource too and writes its status; give each \
                 installation its own --plugin-resource-selector"
            );
        }
        // Applied whole, so that no field another writer left behind (a digest beside a refusal) survives.
        let patch = serde_json::json!({
            "apiVersion": ReconcilePlugin::api_version(&()),
            "kind": ReconcilePlugin::kind(&()),
            "status": status,
        });
        let params = PatchParams::apply(STATUS_MANAGER).force();
        let result = self.api.patch_status(&name, &params, &Patch::Apply(&patch)).await;
        if let Err(e) = result {
            tracing::warn!(reconcileplugin = %name, error = %e, "could not write the status");
        }
    }
}

/// `note` cut to what the API server takes in an Event's note (the status keeps the whole message).
fn bounded_note(mut note: String) -> String {
    const MAX: usize = crate::sandbox::MAX_EVENT_NOTE_BYTES;
    if note.len() > MAX {
        let mut end = MAX - '…'.len_utf8();
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push('…');
    }
    note
}

/// The spec that decides what serves: everything but `paused`.
fn desired_key(spec: &ReconcilePluginSpec) -> String {
    let mut spec = spec.clone();
    spec.paused = false;
    serde_json::to_string(&spec).unwrap_or_default()
}

fn load_failure(error: &LoadError) -> Failure {
    let reason = match error {
        LoadError::Read { .. } | LoadError::Component(_) => "NotAComponent",
        LoadError::World(_) => "WrongWorld",
        LoadError::Metadata(_) | LoadError::InvalidMetadata(_) => "InvalidMetadata",
        LoadError::Refused(_) => "GrantRefused",
        LoadError::Limit(_) => "CompileLimit",
    };
    Failure::new(reason, error.to_string())
}

/// The status of `resource` as `tracked` says, keeping transition times of conditions that did not change.
fn status(
    tracked: &Tracked,
    resource: &ReconcilePlugin,
    current: &ReconcilePluginStatus,
    operator: &str,
) -> ReconcilePluginStatus {
    let paused_behind =
        resource.spec.paused && tracked.attempted.as_deref() != Some(desired_key(&resource.spec).as_str());
    let ready = match (&tracked.serving, &tracked.failure) {
        (Some(s), _) => (
            "True",
            "Serving",
            format!("serving {} (plugin version {})", s.digest, s.version),
        ),
        (None, Some(f)) => ("False", f.reason, f.message.clone()),
        (None, None) if resource.spec.paused => {
            ("False", "Paused", "paused before any version served".into())
        }
        (None, None) => ("False", "Pending", "not loaded yet".into()),
    };
    let degraded = match &tracked.failure {
        Some(f) => ("True", f.reason, f.message.clone()),
        None if paused_behind => (
            "True",
            "Paused",
            "changes of the spec are not rolled out while paused".into(),
        ),
        None => ("False", "AsRequested", "the version asked for serves".into()),
    };
    let generation = resource.metadata.generation;
    let condition = |type_: &str, (status, reason, message): (&str, &str, String)| {
        let previous = current.conditions.iter().find(|c| c.type_ == type_);
        let since = previous
            .filter(|c| c.status == status)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now()));
        Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            last_transition_time: since,
            observed_generation: generation,
        }
    };
    let serving = tracked.serving.as_ref();
    ReconcilePluginStatus {
        conditions: vec![condition("Ready", ready), condition("Degraded", degraded)],
        digest: serving.map(|s| s.digest.clone()),
        short_digest: serving.map(|s| short(&s.digest)),
        previous_digest: tracked.previous.clone(),
        version: serving.map(|s| s.version.clone()),
        last_error: tracked.failure.as_ref().map(|f| f.message.clone()),
        observed_generation: if paused_behind {
            current.observed_generation
        } else {
            tracked.generation.or(generation)
        },
        operator: Some(operator.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcileplugin::{resource::Verification, signature::SigningKey};

    #[test]
    fn a_signature_check_is_remembered_per_repository_digest_and_key() {
        let (key, other_key) = (
            SigningKey::generate().unwrap().public_key(),
            SigningKey::generate().unwrap().public_key(),
        );
        let digest = artifact::sha256_digest(b"manifest");
        let reference: Reference = format!("127.0.0.1:5000/plugins/rc@{digest}").parse().unwrap();
        let mirror: Reference = format!("127.0.0.1:5000/mirror/rc@{digest}").parse().unwrap();
        let mut verified = Verified::default();
        assert!(!verified.contains(&reference, &digest, &key));
        verified.insert(&reference, &digest, &key);
        verified.insert(&reference, &digest, &key);
        assert_eq!(verified.0.len(), 1);
        assert!(verified.contains(&reference, &digest, &key));
        // The key changed: the cached version is checked again, as is the same digest elsewhere.
        assert!(!verified.contains(&reference, &digest, &other_key));
        assert!(!verified.contains(&mirror, &digest, &key));
        assert!(!verified.contains(&reference, &artifact::sha256_digest(b"other"), &key));
        // Bounded: the oldest goes first.
        for i in 0..VERIFIED_KEPT {
            verified.insert(&reference, &artifact::sha256_digest(&i.to_le_bytes()), &key);
        }
        assert_eq!(verified.0.len(), VERIFIED_KEPT);
        assert!(!verified.contains(&reference, &digest, &key));
    }

    #[test]
    fn event_notes_fit_the_api_servers_bound() {
        assert_eq!(bounded_note("short".into()), "short");
        let long = bounded_note("é".repeat(1000));
        assert!(long.len() <= 1024 && long.ends_with('…'), "{}", long.len());
    }

    #[test]
    fn the_key_is_read_before_anything_is_pulled() {
        let mut spec = ReconcilePluginSpec::default();
        assert_eq!(verification_key(&spec), Ok(None));
        let key = SigningKey::generate().unwrap().public_key();
        spec.verification = Some(Verification {
            public_key: key.to_pem().unwrap(),
        });
        assert_eq!(verification_key(&spec), Ok(Some(key)));
        for bad in ["", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"] {
            spec.verification = Some(Verification {
                public_key: bad.into(),
            });
            let failure = verification_key(&spec).unwrap_err();
            assert_eq!(failure.reason, "InvalidPublicKey");
            assert!(!failure.transient);
            assert!(
                failure.message.starts_with("spec.verification.publicKey: "),
                "{}",
                failure.message
            );
        }
    }
}
