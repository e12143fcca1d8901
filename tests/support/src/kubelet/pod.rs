//! One Pod's life on the simulated node: start-up delay, init containers, a sandbox and a workload,
//! readiness, container exits and restarts as `restartPolicy` says, injected faults, and graceful deletion.

use std::{
    net::Ipv4Addr,
    sync::Arc,
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::{Container, Pod};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, Preconditions},
};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::{
    Shared,
    directives::{Directives, HeadMode},
    status::{Phase, PodModel},
    volumes::PodVolumes,
};
use crate::{
    images::ImageSpec,
    network::Sandbox,
    workloads::{
        Workload,
        echo::EchoServers,
        fake_ray::{FakeHead, FakeOptions, ListenOn, RayPorts},
        process::ProcessPod,
        real_ray::{RealRayConfig, RealRayHead},
    },
};

const TICK: Duration = Duration::from_millis(500);
const RESTART_BACKOFF: Duration = Duration::from_secs(1);
/// First and longest wait before creating a Pod's containers again after an error.
const START_RETRY_MIN: Duration = Duration::from_secs(1);
const START_RETRY_MAX: Duration = Duration::from_secs(10);
/// Consecutive failed health checks before a running container is reported not ready.
const FAILURES_BEFORE_UNREADY: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Simulated,
    Echo,
    FakeRay,
    RealRay,
    /// Runs for a while, then exits (Pods of batch Jobs).
    Completion,
    /// Containers of mapped images run as real processes (see [`crate::images`]).
    Mapped,
}

pub struct PodRunner {
    shared: Arc<Shared>,
    pod: Arc<Pod>,
    plan: Plan,
    /// The containers whose image is mapped, and what stands in for it.
    mapped: Vec<(Container, ImageSpec)>,
    volumes: Option<PodVolumes>,
    model: PodModel,
    reported: Option<Value>,
    sandbox: Option<Sandbox>,
    ip: Option<Ipv4Addr>,
    workload: Option<Workload>,
    directives: Directives,
    handled_kill: Option<String>,
    frozen: bool,
    finish_at: Option<Instant>,
    restart_at: Option<Instant>,
    failed_checks: u32,
    deleting: bool,
    /// The final delete went through (or the Pod was already gone).
    removed: bool,
}

impl PodRunner {
    pub async fn new(shared: Arc<Shared>, pod: Arc<Pod>) -> Self {
        let directives = Directives::of(&pod);
        let mut mapped = super::mapped::mapped_containers(&shared, &pod);
        // Only a submitter Pod costs the Namespace lookup of the head mode.
        if mapped.is_empty()
            && directives.run_for.is_none()
            && directives.exit_code.is_none()
            && super::mapped::is_submitter_pod(&pod)
            && head_mode(&shared, &pod, &directives).await == HeadMode::Real
        {
            mapped = super::mapped::ray_submitters(&shared, &pod);
        }
        let plan = if mapped.is_empty() {
            plan_for(&shared, &pod, &directives).await
        } else {
            Plan::Mapped
        };
        let model = PodModel::new(&pod, shared.network.host_ip());
        // A kill annotation present at creation is history, not a request.
        let handled_kill = directives.kill.clone();
        Self {
            shared,
            pod,
            plan,
            mapped,
            volumes: None,
            model,
            reported: None,
            sandbox: None,
            ip: None,
            workload: None,
            directives,
            handled_kill,
            frozen: false,
            finish_at: None,
            restart_at: None,
            failed_checks: 0,
            deleting: false,
            removed: false,
        }
    }

    fn name(&self) -> String {
        format!(
            "{}/{}",
            self.pod.namespace().unwrap_or_default(),
            self.pod.name_any()
        )
    }

    /// Runs until the Pod object is gone from the API server (the sender side of `updates` is dropped).
    pub async fn run(mut self, mut updates: watch::Receiver<Arc<Pod>>) {
        tracing::info!(pod = %self.name(), plan = ?self.plan, "pod assigned to the simulated node");
        let mut start_at = Instant::now() + self.directives.start_delay;
        let mut retry = START_RETRY_MIN;
        let mut started = false;
        // A Pod already being deleted when the node first sees it (its namespace went while the kubelet was
        // catching up) gets no further update: nothing would delete it.
        if self.pod.metadata.deletion_timestamp.is_some() {
            self.delete().await;
        }
        loop {
            if !started && !self.deleting && Instant::now() >= start_at {
                // As the kubelet does, a Pod whose container could not be created (a ConfigMap its volume
                // reads not there yet) is tried again with a growing back-off.
                started = self.start().await;
                start_at = Instant::now() + retry;
                retry = (retry * 2).min(START_RETRY_MAX);
            }
            self.sync_status().await;
            tokio::select! {
                changed = updates.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    self.pod = updates.borrow_and_update().clone();
                    self.on_update().await;
                }
                () = tokio::time::sleep(TICK) => self.on_tick().await,
            }
        }
        self.teardown().await;
        tracing::info!(pod = %self.name(), "pod removed from the simulated node");
    }

    /// Starts the Pod's containers; false when they could not be created (the error is in the status).
    async fn start(&mut self) -> bool {
        if let Err(message) = self.start_workload().await {
            tracing::warn!(pod = %self.name(), %message, "could not start the pod's workload");
            for c in &mut self.model.containers {
                c.state = super::status::State::Waiting {
                    reason: "CreateContainerError".into(),
                    message: Some(message.clone()),
                };
            }
            self.model.message = Some(message);
            return false;
        }
        self.model.message = None;
        self.model.sandbox_ready = true;
        self.model.pod_ip = self.sandbox.as_ref().map(|s| s.ip).or(self.ip);
        for c in &mut self.model.init_containers {
            c.start();
            c.terminate(0);
        }
        for c in &mut self.model.containers {
            c.start();
        }
        self.model.phase = Phase::Running;
        self.finish_at = (self.plan == Plan::Completion)
            .then(|| Instant::now() + self.directives.run_for.unwrap_or(Duration::from_secs(1)));
        self.apply_directives().await;
        self.update_readiness().await;
        true
    }

    /// Creates the sandbox (for workloads that listen) and starts the workload in it.
    async fn start_workload(&mut self) -> Result<(), String> {
        let needs_sandbox = matches!(
            self.plan,
            Plan::Echo | Plan::FakeRay | Plan::RealRay | Plan::Mapped
        );
        if needs_sandbox && self.sandbox.is_none() {
            self.sandbox = Some(
                self.shared
                    .network
                    .create_sandbox()
                    .await
                    .map_err(|e| e.to_string())?,
            );
        } else if !needs_sandbox && self.ip.is_none() {
            self.ip = Some(self.shared.network.allocate_ip().map_err(|e| e.to_string())?);
        }
        if self.plan == Plan::Mapped && self.volumes.is_none() {
            let dir = super::mapped::pod_dir(&self.shared, &self.pod);
            self.volumes = Some(PodVolumes::prepare(&self.shared.kubelet, &self.pod, &dir).await?);
            super::mapped::link_by_name(&self.shared, &self.pod)?;
        }
        self.workload = Some(self.new_workload().await?);
        Ok(())
    }

    async fn new_workload(&self) -> Result<Workload, String> {
        let sandbox = self.sandbox.as_ref();
        Ok(match (self.plan, sandbox) {
            (Plan::Echo, Some(sb)) => Workload::Echo(
                EchoServers::start(
                    &sb.netns,
                    sb.ip,
                    &self.pod.name_any(),
                    &container_ports(&self.pod),
                )
                .await
                .map_err(|e| e.to_string())?,
            ),
            (Plan::FakeRay, Some(sb)) => Workload::FakeRay(
                FakeHead::start(
                    ListenOn::Netns {
                        netns: sb.netns.clone(),
                        ip: sb.ip,
                    },
                    ray_ports(&self.pod),
                    FakeOptions {
                        submit_delay: self.directives.fake_submit_delay,
                    },
                )
                .await
                .map_err(|e| e.to_string())?,
            ),
            (Plan::RealRay, Some(sb)) => {
                let ray_cli = self.shared.config.ray_cli.as_deref().ok_or(
                    "a real Ray head was requested but the project's virtualenv has no `ray`; run `make ray`",
                )?;
                let key = sb.netns.rsplit('-').next().unwrap_or("0");
                let config = RealRayConfig {
                    ray_cli,
                    python_path: self.shared.config.ray_python_path.as_deref(),
                    netns: &sb.netns,
                    ip: sb.ip,
                    ports: ray_ports(&self.pod),
                    gcs_port: named_port(&self.pod, &["gcs-server", "gcs"]),
                    resource_flags: crate::workloads::real_ray::resource_flags(
                        generated_command(&self.pod).as_deref(),
                    ),
                    temp_dir: &self.shared.config.state_dir.join(format!("ray/{key}")),
                    log: &self.shared.config.state_dir.join(format!(
                        "logs/ray-{}-{}.log",
                        self.pod.namespace().unwrap_or_default(),
                        self.pod.name_any()
                    )),
                };
                Workload::RealRay(RealRayHead::start(&config).map_err(|e| e.to_string())?)
            }
            (Plan::Mapped, Some(sb)) => Workload::Processes(self.start_processes(sb).await?),
            _ => Workload::Simulated,
        })
    }

    async fn start_processes(&self, sandbox: &Sandbox) -> Result<ProcessPod, String> {
        let volumes = self
            .volumes
            .as_ref()
            .ok_or("the pod's volumes are not prepared")?;
        let helper = self
            .shared
            .config
            .exec_helper
            .as_deref()
            .ok_or("this kubelet has no `kuberay-testenv pod-exec` helper to run containers with")?;
        let launches =
            super::mapped::launches(&self.shared, &self.pod, volumes, sandbox, &self.mapped).await?;
        let grace = super::mapped::grace_period(&self.pod);
        ProcessPod::start(helper, &launches, sandbox.ip, grace).map_err(|e| e.to_string())
    }

    async fn on_update(&mut self) {
        if self.pod.metadata.deletion_timestamp.is_some() {
            self.delete().await;
            return;
        }
        self.directives = Directives::of(&self.pod);
        if self.model.phase == Phase::Running {
            self.apply_directives().await;
        }
    }

    /// Injected faults, read from the Pod's annotations.
    async fn apply_directives(&mut self) {
        let d = self.directives.clone();
        self.model.not_ready = d.not_ready;
        if let Some(message) = d.fail {
            tracing::info!(pod = %self.name(), %message, "failing the pod on request");
            self.stop_workload().await;
            for c in self.model.containers.iter_mut().filter(|c| c.is_running()) {
                c.terminate(1);
            }
            self.model.phase = Phase::Failed;
            self.model.reason = Some("TestenvInjectedFailure".into());
            self.model.message = Some(message);
            return;
        }
        if d.kill.is_some() && d.kill != self.handled_kill {
            self.handled_kill = d.kill.clone();
            tracing::info!(pod = %self.name(), "killing the pod's processes on request");
            self.stop_workload().await;
            self.on_exit(137);
            return;
        }
        if d.freeze != self.frozen {
            self.frozen = d.freeze;
            if let Some(w) = &self.workload {
                w.set_frozen(self.sandbox.as_ref(), d.freeze).await;
            }
        }
    }

    async fn on_tick(&mut self) {
        if self.deleting {
            if !self.removed {
                self.remove_object().await;
            }
            return;
        }
        if matches!(self.model.phase, Phase::Succeeded | Phase::Failed) {
            // A finished Pod keeps its status (address included) but no longer holds a sandbox.
            self.release_sandbox().await;
            return;
        }
        if self.model.phase != Phase::Running {
            return;
        }
        if let Some(at) = self.restart_at
            && Instant::now() >= at
        {
            self.restart().await;
            return;
        }
        if self.finish_at.is_some_and(|at| Instant::now() >= at) {
            self.finish_at = None;
            self.on_exit(self.directives.exit_code.unwrap_or(0));
            return;
        }
        if let Some(code) = self.workload.as_mut().and_then(Workload::exited) {
            tracing::info!(pod = %self.name(), code, "the pod's process exited");
            self.stop_workload().await;
            self.on_exit(code);
            return;
        }
        self.update_readiness().await;
    }

    async fn update_readiness(&mut self) {
        if self.restart_at.is_some() {
            return;
        }
        let healthy = !self.frozen && matches!(&self.workload, Some(w) if w.healthy().await);
        if self.plan == Plan::Mapped {
            // The containers' own probes, with their periods and thresholds, decide.
            for c in self.model.containers.iter_mut().filter(|c| c.is_running()) {
                c.ready = healthy;
            }
            return;
        }
        self.failed_checks = if healthy { 0 } else { self.failed_checks + 1 };
        for c in self.model.containers.iter_mut().filter(|c| c.is_running()) {
            if healthy {
                c.ready = true;
            } else if self.failed_checks >= FAILURES_BEFORE_UNREADY || self.frozen {
                c.ready = false;
            }
        }
    }

    /// The containers' main process ended with `code`: restart or finish, as `restartPolicy` says.
    fn on_exit(&mut self, code: i32) {
        for c in self.model.containers.iter_mut().filter(|c| c.is_running()) {
            c.terminate(code);
        }
        let policy = self
            .pod
            .spec
            .as_ref()
            .and_then(|s| s.restart_policy.as_deref())
            .unwrap_or("Always");
        let restart = match policy {
            "Never" => false,
            "OnFailure" => code != 0,
            _ => true,
        };
        if restart {
            self.restart_at = Some(Instant::now() + RESTART_BACKOFF);
        } else {
            let all_ok = self.model.containers.iter().all(|c| c.exit_code() == Some(0));
            self.model.phase = if all_ok { Phase::Succeeded } else { Phase::Failed };
        }
    }

    async fn restart(&mut self) {
        self.restart_at = None;
        self.failed_checks = 0;
        match self.new_workload().await {
            Ok(workload) => self.workload = Some(workload),
            Err(message) => {
                tracing::warn!(pod = %self.name(), %message, "could not restart the pod's workload");
                self.restart_at = Some(Instant::now() + RESTART_BACKOFF * 5);
                return;
            }
        }
        for c in &mut self.model.containers {
            c.restart();
        }
        if self.plan == Plan::Completion {
            self.finish_at = Some(Instant::now() + self.directives.run_for.unwrap_or(Duration::from_secs(1)));
        }
        self.update_readiness().await;
    }

    /// Graceful deletion: stop everything, report the containers terminated, then remove the Pod object.
    async fn delete(&mut self) {
        if self.deleting {
            return;
        }
        self.deleting = true;
        let mut codes = Vec::new();
        if let Some(Workload::Processes(processes)) = self.workload.as_mut() {
            codes = processes.terminate(super::mapped::grace_period(&self.pod)).await;
        }
        self.stop_workload().await;
        for c in self.model.containers.iter_mut().filter(|c| c.is_running()) {
            let code = codes
                .iter()
                .find(|(n, _)| *n == c.name)
                .map_or(0, |(_, code)| *code);
            c.terminate(code);
        }
        self.sync_status().await;
        self.remove_object().await;
    }

    /// The kubelet's final delete (grace period 0) of the Pod object. Retried at every tick until the API
    /// server takes it or says the Pod is gone: when thousands of Pods go at once the API server sheds load
    /// (429) or times out, and a Pod whose final delete is lost stays `Terminating` for good.
    async fn remove_object(&mut self) {
        let api: Api<Pod> = Api::namespaced(
            self.shared.kubelet.clone(),
            &self.pod.namespace().unwrap_or_default(),
        );
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: self.pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&self.pod.name_any(), &params).await {
            Ok(_) => self.removed = true,
            // Gone, or another Pod of the same name now (the uid precondition failed): nothing left to do.
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => self.removed = true,
            Err(e) => {
                tracing::warn!(pod = %self.name(), error = %e, "final delete of the pod failed; will retry")
            }
        }
    }

    async fn stop_workload(&mut self) {
        if let Some(mut workload) = self.workload.take() {
            workload.stop(self.sandbox.as_ref()).await;
        }
    }

    async fn teardown(&mut self) {
        self.release_sandbox().await;
    }

    async fn release_sandbox(&mut self) {
        self.stop_workload().await;
        if let Some(sandbox) = self.sandbox.take() {
            self.shared.network.destroy_sandbox(&sandbox).await;
        }
        if let Some(ip) = self.ip.take() {
            self.shared.network.release_ip(ip);
        }
        if let Some(volumes) = self.volumes.take() {
            super::mapped::unlink_by_name(&self.shared, &self.pod);
            volumes.remove();
        }
    }

    async fn sync_status(&mut self) {
        let status = self.model.to_status(&self.pod);
        if self.reported.as_ref() == Some(&status) {
            return;
        }
        let api: Api<Pod> = Api::namespaced(
            self.shared.kubelet.clone(),
            &self.pod.namespace().unwrap_or_default(),
        );
        let patch = Patch::Merge(json!({ "status": status }));
        match api
            .patch_status(&self.pod.name_any(), &PatchParams::default(), &patch)
            .await
        {
            Ok(_) => self.reported = Some(status),
            Err(kube::Error::Api(e)) if e.code == 404 => self.reported = Some(status),
            Err(e) => {
                tracing::warn!(pod = %self.name(), error = %e, "could not write pod status; will retry")
            }
        }
    }
}

async fn plan_for(shared: &Shared, pod: &Pod, directives: &Directives) -> Plan {
    let owned_by_job = pod.owner_references().iter().any(|o| o.kind == "Job");
    if owned_by_job || directives.run_for.is_some() || directives.exit_code.is_some() {
        return Plan::Completion;
    }
    if directives.http_echo {
        return Plan::Echo;
    }
    let is_head = pod.labels().get("ray.io/node-type").is_some_and(|t| t == "head");
    if !is_head {
        return Plan::Simulated;
    }
    match head_mode(shared, pod, directives).await {
        HeadMode::Real => Plan::RealRay,
        HeadMode::Fake => Plan::FakeRay,
        HeadMode::None => Plan::Simulated,
    }
}

/// What Ray heads of the Pod's namespace run: the Pod's annotation, the Namespace's, or the kubelet's default.
async fn head_mode(shared: &Shared, pod: &Pod, directives: &Directives) -> HeadMode {
    match directives.head_mode {
        Some(mode) => mode,
        None => shared
            .namespace_head_mode(&pod.namespace().unwrap_or_default())
            .await
            .unwrap_or(shared.config.default_head),
    }
}

/// The Ray container's generated `ray start` command (KubeRay exports it as `KUBERAY_GEN_RAY_START_CMD`).
fn generated_command(pod: &Pod) -> Option<String> {
    let container = pod.spec.as_ref()?.containers.first()?;
    container
        .env
        .iter()
        .flatten()
        .find(|e| e.name == "KUBERAY_GEN_RAY_START_CMD")
        .and_then(|e| e.value.clone())
}

fn container_ports(pod: &Pod) -> Vec<u16> {
    let mut ports: Vec<u16> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .flat_map(|c| c.ports.iter().flatten())
        .filter(|p| p.protocol.as_deref().unwrap_or("TCP") == "TCP")
        .filter_map(|p| u16::try_from(p.container_port).ok())
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// The port the Ray container declares under one of `names`.
fn named_port(pod: &Pod, names: &[&str]) -> Option<u16> {
    let container = pod.spec.as_ref()?.containers.first()?;
    container
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref().is_some_and(|n| names.contains(&n)))
        .and_then(|p| u16::try_from(p.container_port).ok())
}

fn ray_ports(pod: &Pod) -> RayPorts {
    let defaults = RayPorts::default();
    RayPorts {
        dashboard: named_port(pod, &["dashboard"]).unwrap_or(defaults.dashboard),
        agent: named_port(pod, &["dashboard-agent", "agent"]).unwrap_or(defaults.agent),
        serve: named_port(pod, &["serve"]).unwrap_or(defaults.serve),
    }
}
