//! KubeRay's `SidecarSubmitterRestart` gate on the real API server: KubeRay's `ray-job.sidecar-mode.yaml`,
//! applied unchanged, gets a head Pod whose submitter container restarts on its own on failure (its
//! `restartPolicy: OnFailure`, which the API server keeps: Kubernetes 1.35's container restart rules) while the
//! Pod stays `Never`, and whose script checks for an earlier submission before submitting.

use std::time::Duration;

use crate::support::{
    OperatorOptions, apply_manifest, env, eventually, namespace, pods, sample, start_operator,
};

#[tokio::test]
async fn a_sidecar_submitter_restarts_on_failure_with_the_gate() {
    let env = env().await;
    let ns = namespace(env, "sidecar-restart").await;
    let client = env.client().await.unwrap();
    let _operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![
                kuberay_plugin_artifacts::RAYCLUSTER,
                kuberay_plugin_artifacts::RAYJOB,
            ],
            feature_gates: Some(
                kuberay_wasm::kuberay_flags::FeatureGates::parse("SidecarSubmitterRestart=true").unwrap(),
            ),
            ..OperatorOptions::default()
        },
    )
    .await;
    apply_manifest(&client, &ns, &sample("ray-job.sidecar-mode.yaml")).await;
    let head = eventually("the head Pod", Duration::from_secs(90), || async {
        pods(&client, &ns, "ray.io/node-type=head")
            .await
            .into_iter()
            .next()
    })
    .await;
    let spec = head.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
    let submitter = spec
        .containers
        .iter()
        .find(|c| c.name == "ray-job-submitter")
        .unwrap();
    assert_eq!(submitter.restart_policy.as_deref(), Some("OnFailure"));
    let script = &submitter.args.as_ref().unwrap()[0];
    assert!(
        script.contains("if ! ray job status --address http://127.0.0.1:8265 "),
        "{script}"
    );
    assert!(
        script.contains("; fi ; ray job logs --address http://127.0.0.1:8265 --follow "),
        "{script}"
    );
}
