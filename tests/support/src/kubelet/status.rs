//! The simulated kubelet's model of one Pod, and the `status` it reports for it: phase, conditions,
//! addresses and container statuses in the shape a real kubelet writes them.

use std::net::Ipv4Addr;

use k8s_openapi::{api::core::v1::Pod, jiff::Timestamp};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq)]
pub enum State {
    Waiting {
        reason: String,
        message: Option<String>,
    },
    Running {
        started_at: String,
    },
    Terminated {
        exit_code: i32,
        reason: String,
        started_at: String,
        finished_at: String,
        container_id: String,
    },
}

impl State {
    fn to_json(&self) -> Value {
        match self {
            Self::Waiting { reason, message } => {
                json!({"waiting": {"reason": reason, "message": message}})
            }
            Self::Running { started_at } => json!({"running": {"startedAt": started_at}}),
            Self::Terminated {
                exit_code,
                reason,
                started_at,
                finished_at,
                container_id,
            } => json!({"terminated": {
                "exitCode": exit_code,
                "reason": reason,
                "startedAt": started_at,
                "finishedAt": finished_at,
                "containerID": container_id,
            }}),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Container {
    pub name: String,
    pub image: String,
    pub state: State,
    pub last_state: Option<State>,
    pub ready: bool,
    pub restart_count: i32,
    uid: String,
}

impl Container {
    fn new(uid: &str, name: &str, image: &str) -> Self {
        Self {
            name: name.to_string(),
            image: image.to_string(),
            state: State::Waiting {
                reason: "ContainerCreating".into(),
                message: None,
            },
            last_state: None,
            ready: false,
            restart_count: 0,
            uid: uid.to_string(),
        }
    }

    fn container_id(&self) -> String {
        format!("testenv://{}-{}-{}", self.uid, self.name, self.restart_count)
    }

    pub fn start(&mut self) {
        self.state = State::Running { started_at: now() };
    }

    /// Ends the current run with `exit_code`.
    pub fn terminate(&mut self, exit_code: i32) {
        let started_at = match &self.state {
            State::Running { started_at } => started_at.clone(),
            _ => now(),
        };
        let reason = if exit_code == 0 { "Completed" } else { "Error" };
        let container_id = self.container_id();
        self.state = State::Terminated {
            exit_code,
            reason: reason.into(),
            started_at,
            finished_at: now(),
            container_id,
        };
        self.ready = false;
    }

    /// Starts the container again after it terminated, as `restartPolicy` asks.
    pub fn restart(&mut self) {
        self.last_state = Some(self.state.clone());
        self.restart_count += 1;
        self.start();
    }

    pub fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    pub fn exit_code(&self) -> Option<i32> {
        match self.state {
            State::Terminated { exit_code, .. } => Some(exit_code),
            _ => None,
        }
    }

    fn to_json(&self) -> Value {
        let id = self.container_id();
        let mut status = json!({
            "name": self.name,
            "image": self.image,
            "imageID": format!("testenv://{}", self.image),
            "ready": self.ready,
            "started": self.is_running(),
            "restartCount": self.restart_count,
            "state": self.state.to_json(),
            "lastState": self.last_state.as_ref().map_or(json!({}), State::to_json),
        });
        if !matches!(self.state, State::Waiting { .. }) {
            status["containerID"] = json!(id);
        }
        status
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl Phase {
    fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PodModel {
    pub phase: Phase,
    pub pod_ip: Option<Ipv4Addr>,
    pub host_ip: Ipv4Addr,
    pub start_time: String,
    pub sandbox_ready: bool,
    pub init_containers: Vec<Container>,
    pub containers: Vec<Container>,
    pub not_ready: bool,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl PodModel {
    pub fn new(pod: &Pod, host_ip: Ipv4Addr) -> Self {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let spec = pod.spec.as_ref();
        let containers = |list: Option<&Vec<k8s_openapi::api::core::v1::Container>>| -> Vec<Container> {
            list.into_iter()
                .flatten()
                .map(|c| Container::new(&uid, &c.name, c.image.as_deref().unwrap_or_default()))
                .collect()
        };
        Self {
            phase: Phase::Pending,
            pod_ip: None,
            host_ip,
            start_time: now(),
            sandbox_ready: false,
            init_containers: containers(spec.and_then(|s| s.init_containers.as_ref())),
            containers: containers(spec.map(|s| &s.containers)),
            not_ready: false,
            reason: None,
            message: None,
        }
    }

    pub fn initialized(&self) -> bool {
        self.init_containers.iter().all(|c| c.exit_code() == Some(0))
    }

    pub fn containers_ready(&self) -> bool {
        !self.not_ready && !self.containers.is_empty() && self.containers.iter().all(|c| c.ready)
    }

    /// The `status` object, keeping the `PodScheduled` condition the binding wrote.
    pub fn to_status(&self, current: &Pod) -> Value {
        let condition =
            |type_: &str, ok: bool| json!({"type": type_, "status": if ok { "True" } else { "False" }});
        let mut conditions: Vec<Value> = current
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .filter(|c| c.type_ == "PodScheduled")
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect();
        let ready = self.containers_ready() && self.phase == Phase::Running;
        conditions.extend([
            condition("PodReadyToStartContainers", self.sandbox_ready),
            condition("Initialized", self.initialized()),
            condition("ContainersReady", ready),
            condition("Ready", ready),
        ]);
        let keep_transition_times = |mut c: Value| {
            let previous = current
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| {
                    cs.iter().find(|p| {
                        Some(p.type_.as_str()) == c["type"].as_str()
                            && Some(p.status.as_str()) == c["status"].as_str()
                    })
                });
            let time = previous
                .and_then(|p| p.last_transition_time.as_ref())
                .and_then(|t| serde_json::to_value(t).ok())
                .unwrap_or_else(|| json!(now()));
            if c.get("lastTransitionTime").is_none() {
                c["lastTransitionTime"] = time;
                c["lastProbeTime"] = Value::Null;
            }
            c
        };
        let conditions: Vec<Value> = conditions.into_iter().map(keep_transition_times).collect();
        let ips = |ip: Option<Ipv4Addr>| ip.map_or(json!([]), |ip| json!([{"ip": ip.to_string()}]));
        json!({
            "phase": self.phase.as_str(),
            "conditions": conditions,
            "hostIP": self.host_ip.to_string(),
            "hostIPs": ips(Some(self.host_ip)),
            "podIP": self.pod_ip.map(|ip| ip.to_string()),
            "podIPs": ips(self.pod_ip),
            "startTime": self.start_time,
            "reason": self.reason,
            "message": self.message,
            "initContainerStatuses": self.init_containers.iter().map(Container::to_json).collect::<Vec<_>>(),
            "containerStatuses": self.containers.iter().map(Container::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Now, in the second-precision RFC 3339 form Kubernetes stores.
pub fn now() -> String {
    let ts = Timestamp::now();
    Timestamp::from_second(ts.as_second()).unwrap_or(ts).to_string()
}
