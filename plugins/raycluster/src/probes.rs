//! Liveness and readiness probes of the Ray container. Without them a crashed raylet or GCS goes unnoticed,
//! and `HeadPodReady`, `state: ready` and Service endpoints all follow Pod readiness. KubeRay injects them
//! only where the user left them unset; Ray 2.53 and later answer one HTTP health endpoint, older Ray is
//! probed with `wget` from inside the container.

use k8s_openapi::{
    api::core::v1::{Container, ExecAction, HTTPGetAction, Probe},
    apimachinery::pkg::util::intstr::IntOrString,
};

use crate::{
    cluster::Creator,
    consts::{
        DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_DASHBOARD_PORT, DEFAULT_SERVING_PORT, SERVING_PORT_NAME,
    },
    ray_start::{NodeType, Params},
    version::ray_version_at_least,
};

const HEALTH_PATH: &str = "/api/healthz";
const RAYLET_HEALTH_PATH: &str = "api/local_raylet_healthz";
const GCS_HEALTH_PATH: &str = "api/gcs_healthz";
const SERVE_PROXY_HEALTH_PATH: &str = "-/healthz";

fn wget(timeout: i32, port: i32, path: &str) -> String {
    format!("wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path} | grep success")
}

fn port_param(params: &Params, key: &str, default: i32) -> i32 {
    params.get(key).and_then(|p| p.parse().ok()).unwrap_or(default)
}

fn container_port(container: &Container, name: &str, default: i32) -> i32 {
    container
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(name))
        .map_or(default, |p| p.container_port)
}

/// Sets the Ray container's probes that the user did not set.
pub fn inject(
    container: &mut Container,
    node: NodeType,
    creator: Creator,
    params: &Params,
    ray_version: &str,
) {
    let agent_port = port_param(
        params,
        "dashboard-agent-listen-port",
        DEFAULT_DASHBOARD_AGENT_LISTEN_PORT,
    );
    let http = ray_version_at_least(ray_version, &[2, 53, 0]);
    let http_get = || HTTPGetAction {
        path: Some(HEALTH_PATH.to_string()),
        port: IntOrString::Int(agent_port),
        ..HTTPGetAction::default()
    };
    // KubeRay's quirk: the GCS check's wget timeout is the readiness failure threshold (10 s).
    let mut commands = vec![wget(2, agent_port, RAYLET_HEALTH_PATH)];
    if node == NodeType::Head {
        let dashboard_port = port_param(params, "dashboard-port", DEFAULT_DASHBOARD_PORT);
        commands.push(wget(10, dashboard_port, GCS_HEALTH_PATH));
    }
    let exec = |commands: &[String]| ExecAction {
        command: Some(vec!["bash".into(), "-c".into(), commands.join(" && ")]),
    };
    let timeout = if node == NodeType::Head { 5 } else { 2 };

    if container.liveness_probe.is_none() {
        container.liveness_probe = Some(Probe {
            initial_delay_seconds: Some(30),
            timeout_seconds: Some(timeout),
            period_seconds: Some(5),
            success_threshold: Some(1),
            failure_threshold: Some(120),
            http_get: http.then(http_get),
            exec: (!http).then(|| exec(&commands)),
            ..Probe::default()
        });
    }
    if container.readiness_probe.is_none() {
        let mut probe = Probe {
            initial_delay_seconds: Some(10),
            timeout_seconds: Some(timeout),
            period_seconds: Some(5),
            success_threshold: Some(1),
            failure_threshold: Some(10),
            http_get: http.then(http_get),
            exec: (!http).then(|| exec(&commands)),
            ..Probe::default()
        };
        // Workers of a RayService only take traffic while their Serve proxy is healthy; the head's proxy is
        // checked by the RayService controller instead.
        if creator == Creator::RayService && node == NodeType::Worker {
            let serve_port = container_port(container, SERVING_PORT_NAME, DEFAULT_SERVING_PORT);
            commands.push(wget(10, serve_port, SERVE_PROXY_HEALTH_PATH));
            probe.failure_threshold = Some(1);
            probe.http_get = None;
            probe.exec = Some(exec(&commands));
        }
        container.readiness_probe = Some(probe);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec_line(probe: Option<&Probe>) -> String {
        probe
            .and_then(|p| p.exec.as_ref())
            .and_then(|e| e.command.as_ref())
            .map(|c| c.join(" "))
            .unwrap_or_default()
    }

    #[test]
    fn old_ray_gets_exec_probes_with_kuberay_commands() {
        let mut c = Container::default();
        inject(
            &mut c,
            NodeType::Head,
            Creator::RayCluster,
            &Params::new(),
            "2.46.0",
        );
        let live = c.liveness_probe.as_ref();
        assert_eq!(
            exec_line(live),
            "bash -c wget --tries 1 -T 2 -q -O- http://localhost:52365/api/local_raylet_healthz | grep success \
             && wget --tries 1 -T 10 -q -O- http://localhost:8265/api/gcs_healthz | grep success"
        );
        let live = live.cloned().unwrap_or_default();
        assert_eq!(
            (
                live.initial_delay_seconds,
                live.timeout_seconds,
                live.period_seconds,
                live.failure_threshold
            ),
            (Some(30), Some(5), Some(5), Some(120))
        );
        let ready = c.readiness_probe.clone().unwrap_or_default();
        assert_eq!(
            (
                ready.initial_delay_seconds,
                ready.timeout_seconds,
                ready.failure_threshold
            ),
            (Some(10), Some(5), Some(10))
        );
    }

    #[test]
    fn new_ray_gets_http_probes_and_custom_ports() {
        let mut c = Container::default();
        let params = Params::from([("dashboard-agent-listen-port".to_string(), "9000".to_string())]);
        inject(&mut c, NodeType::Worker, Creator::RayCluster, &params, "2.53.0");
        let get = c.liveness_probe.and_then(|p| p.http_get).unwrap_or_default();
        assert_eq!(get.path.as_deref(), Some("/api/healthz"));
        assert_eq!(get.port, IntOrString::Int(9000));
        assert_eq!(c.readiness_probe.and_then(|p| p.timeout_seconds), Some(2));
    }

    #[test]
    fn user_probes_are_kept_and_serve_workers_check_the_proxy() {
        let user = Probe {
            period_seconds: Some(99),
            ..Probe::default()
        };
        let mut c = Container {
            liveness_probe: Some(user.clone()),
            ..Container::default()
        };
        inject(
            &mut c,
            NodeType::Worker,
            Creator::RayService,
            &Params::new(),
            "2.53.0",
        );
        assert_eq!(c.liveness_probe, Some(user));
        let ready = c.readiness_probe.as_ref();
        assert!(exec_line(ready).ends_with("http://localhost:8000/-/healthz | grep success"));
        assert_eq!(ready.and_then(|p| p.failure_threshold), Some(1));
    }
}
