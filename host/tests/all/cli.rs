//! The binary's start-up, without a cluster: flag checks of the leader election, fatal bind errors, the log
//! format on a pipe (JSON by default, text without escape codes on request), KubeRay's flags and its
//! environment toggles.

use std::{net::TcpListener, process::Output};

fn operator(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"));
    let plugins = std::env::temp_dir().join("kuberay-wasm-cli-test-no-plugins");
    command
        .arg("operator")
        .arg("--plugins")
        .arg(plugins)
        .args(["--kubeconfig", "/nonexistent/kubeconfig", "--no-cache"])
        .args(args)
        .env_remove("POD_NAMESPACE")
        .env_remove("RUST_LOG");
    command
}

fn run(mut command: std::process::Command) -> (Output, String) {
    let output = command.output().expect("running kuberay-wasm");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

fn free_ports() -> [String; 2] {
    [(); 2].map(|()| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    })
}

#[test]
fn leader_election_without_a_namespace_is_a_start_up_error() {
    if std::path::Path::new(kuberay_wasm::leadership::SERVICE_ACCOUNT_NAMESPACE_FILE).exists() {
        return; // In a Pod, the ServiceAccount's namespace is the default.
    }
    let (output, stderr) = run(operator(&["--enable-leader-election"]));
    assert!(!output.status.success());
    assert!(stderr.contains("--leader-election-namespace"), "{stderr}");
    assert!(stderr.contains("POD_NAMESPACE"), "{stderr}");
}

#[test]
fn a_renew_deadline_not_shorter_than_the_lease_is_refused() {
    let (output, stderr) = run(operator(&[
        "--enable-leader-election",
        "--leader-election-namespace=ns",
        "--leader-election-lease-duration=10s",
        "--leader-election-renew-deadline=10s",
    ]));
    assert!(!output.status.success());
    assert!(
        stderr.contains("--leader-election-renew-deadline (10s) must be shorter than --leader-election-lease-duration (10s)"),
        "{stderr}"
    );
    let (output, stderr) = run(operator(&[
        "--enable-leader-election",
        "--leader-election-lease-duration=soon",
    ]));
    assert!(!output.status.success());
    assert!(stderr.contains("--leader-election-lease-duration"), "{stderr}");
}

#[test]
fn an_address_in_use_is_fatal_and_named() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    let [free, _] = free_ports();
    for (metrics, health, flag) in [
        (&taken_addr, &free, "--metrics-bind-address"),
        (&free, &taken_addr, "--health-probe-bind-address"),
    ] {
        let (output, stderr) = run(operator(&[
            "--metrics-bind-address",
            metrics,
            "--health-probe-bind-address",
            health,
        ]));
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!("cannot listen on {taken_addr} ({flag})")),
            "{stderr}"
        );
    }
}

#[test]
fn logs_on_a_pipe_are_json_lines_by_default_and_text_on_request_without_escape_codes() {
    let [metrics, health] = free_ports();
    let addrs = [
        "--metrics-bind-address",
        &metrics,
        "--health-probe-bind-address",
        &health,
    ];
    // It serves its endpoints, then fails on the missing kubeconfig: both are logged.
    let (output, stderr) = run(operator(&addrs));
    assert!(!output.status.success());
    assert!(!stderr.contains('\u{1b}'), "escape codes: {stderr:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(lines.len() >= 2, "{stderr}");
    for line in &lines {
        let record: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(record["level"].is_string(), "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"level\":\"ERROR\"") && l.contains("kubeconfig")),
        "{stderr}"
    );

    let mut text = operator(&addrs);
    text.args(["--log-format", "text"]);
    let (output, stderr) = run(text);
    assert!(!output.status.success());
    assert!(!stderr.contains('\u{1b}'), "escape codes: {stderr:?}");
    assert!(
        stderr.contains(" INFO ") && stderr.contains("serving /metrics"),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_err())
    );
}

/// KubeRay v1.7's chart writes its flags as `--name=value`, booleans included, and its addresses in Go's
/// `:PORT` form: the operator takes them all and gets as far as the (missing) kubeconfig.
#[test]
fn kuberays_flags_in_its_charts_forms_are_taken() {
    let port = |addr: &str| format!(":{}", addr.rsplit(':').next().unwrap_or_default());
    let [metrics, health] = free_ports().map(|a| port(&a));
    let (output, stderr) = run(operator(&[
        &format!("--metrics-addr={metrics}"),
        &format!("--health-probe-bind-address={health}"),
        "--enable-leader-election=false",
        "--use-kubernetes-proxy=false",
        "--reconcile-concurrency=1",
        "--watch-namespace=",
        "--qps=50",
        "--burst=100",
        // KubeRay v1.7 chart's default gates, as it renders them.
        "--feature-gates=RayClusterStatusConditions=true,RayJobDeletionPolicy=true,RayMultiHostIndexing=true,\
         RayServiceIncrementalUpgrade=true,RayCronJob=false,RayClusterMTLS=false,RayClusterNetworkPolicy=false,\
         RayClusterHistoryServer=false",
        "--enable-metrics=true",
        "--forced-cluster-upgrade=false",
        "--log-stdout-encoder=console",
        "--log-file-encoder=json",
        "--batch-scheduler=volcano",
    ]));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    // --log-stdout-encoder=console: text lines, not JSON.
    assert!(
        stderr.contains(" INFO ") && stderr.contains("serving /metrics"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("0.0.0.0{metrics}")), "{stderr}");
    assert!(stderr.contains("--enable-metrics"), "{stderr}");
    assert!(
        stderr.contains("not served: their feature gate is off"),
        "{stderr}"
    );
    assert!(stderr.contains("kubeconfig"), "{stderr}");
}

#[test]
fn kuberay_flags_we_cannot_honour_refuse_to_start_with_the_reason() {
    for (flag, reason) in [
        ("--feature-gates=RayClusterNope=true", "unrecognized feature gate"),
        (
            "--feature-gates=KubernetesWAS=true",
            "KubernetesWAS is not implemented",
        ),
        (
            "--feature-gates=RayClusterStatusConditions=false",
            "RayClusterStatusConditions cannot be turned off",
        ),
        (
            "--batch-scheduler=slurm",
            "scheduler is not supported, name=slurm",
        ),
        (
            "--enable-batch-scheduler=true --batch-scheduler=yunikorn",
            "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set",
        ),
        (
            "--config=/etc/kuberay/config.yaml",
            "--config /etc/kuberay/config.yaml",
        ),
        ("--log-file-path=/tmp/ray-operator.log", "--log-file-path"),
    ] {
        let args: Vec<&str> = flag.split(' ').collect();
        let (output, stderr) = run(operator(&args));
        assert_eq!(output.status.code(), Some(1), "{flag}: {stderr}");
        assert!(stderr.contains(reason), "{flag}: {stderr}");
        assert!(!stderr.contains("serving /metrics"), "{flag} started: {stderr}");
    }
    // A boolean that is not one is clap's usage error.
    let (output, stderr) = run(operator(&["--enable-leader-election=maybe"]));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is not a boolean"), "{stderr}");
}

#[test]
fn kuberays_environment_toggles_are_checked_at_start() {
    for (name, value, reason) in [
        ("ENABLE_WEBHOOKS", "true", "no webhooks"),
        ("ENABLE_PROBES_INJECTION", "0", "must be true or false"),
        (
            "RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV",
            "5m",
            "whole number of seconds",
        ),
    ] {
        let mut command = operator(&[]);
        command.env(name, value);
        let (output, stderr) = run(command);
        assert_eq!(output.status.code(), Some(1), "{name}={value}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains(reason),
            "{name}={value}: {stderr}"
        );
        assert!(
            !stderr.contains("serving /metrics"),
            "{name}={value} started: {stderr}"
        );
    }
    // Honoured toggles are taken and logged; the start then fails later for want of a cluster.
    let [metrics, health] = free_ports();
    let mut command = operator(&[
        &format!("--metrics-bind-address={metrics}"),
        &format!("--health-probe-bind-address={health}"),
    ]);
    command
        .env("ENABLE_PROBES_INJECTION", "FALSE")
        .env("CLUSTER_DOMAIN", "corp.example");
    let (_, stderr) = run(command);
    assert!(
        stderr.contains("ENABLE_PROBES_INJECTION") && stderr.contains("false"),
        "{stderr}"
    );
    assert!(stderr.contains("serving /metrics"), "{stderr}");
    // KubeRay's CLUSTER_DOMAIN is --cluster-domain's variable.
    assert!(stderr.contains("corp.example"), "{stderr}");
}

#[test]
fn kuberays_configuration_file_replaces_the_flags_it_has_fields_for() {
    let dir = std::env::temp_dir().join(format!("kuberay-wasm-cli-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let [metrics, health] = free_ports();
    let port = |addr: &str| addr.rsplit(':').next().unwrap_or_default().to_string();
    let file = dir.join("config.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nmetricsAddr: 127.0.0.1:{}\n\
             probeAddr: 127.0.0.1:{}\nenableLeaderElection: false\nreconcileConcurrency: 2\n\
             defaultPodLabels: {{team: platform}}\n",
            port(&metrics),
            port(&health)
        ),
    )
    .unwrap();
    // The flags the file has fields for are ignored, as by KubeRay: this one would not even parse there.
    let (_, stderr) = run(operator(&[
        &format!("--config={}", file.display()),
        "--metrics-addr=:1",
    ]));
    assert!(
        stderr.contains("KubeRay's Configuration file replaces the flags"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("127.0.0.1:{}", port(&metrics))),
        "{stderr}"
    );
    assert!(!stderr.contains("0.0.0.0:1"), "{stderr}");

    std::fs::write(
        &file,
        "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nmetricAddr: :9090\n",
    )
    .unwrap();
    let (output, stderr) = run(operator(&[&format!("--config={}", file.display())]));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("unknown field `metricAddr`"), "{stderr}");
    assert!(!stderr.contains("serving /metrics"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
