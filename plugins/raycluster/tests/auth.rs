//! Token authentication: the token Secret and the settings on every Ray process.

mod common;

use base64::{Engine, engine::general_purpose::STANDARD};
use common::*;
use kuberay_plugin_sdk::{Kind, serde_json::json, testing::Write};

fn secret_kind() -> Kind {
    Kind::new("", "v1", "Secret")
}

#[test]
fn a_generated_token_reaches_every_ray_process() {
    let mut cluster = sample(1);
    cluster["spec"]["rayVersion"] = json!("2.52.0");
    cluster["spec"]["authOptions"] = json!({"mode": "token"});
    cluster["spec"]["enableInTreeAutoscaling"] = json!(true);
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    let secrets = host.objects(&secret_kind());
    assert_eq!(secrets.len(), 1);
    assert_eq!(name(&secrets[0]), "raycluster-sample");
    assert_eq!(
        secrets[0]["metadata"]["labels"],
        json!({"ray.io/cluster": "raycluster-sample"})
    );
    // The Secret's data is base64 (as the API stores it) of the token, itself base64 of 32 random bytes.
    let data = secrets[0]["data"]["auth_token"].as_str().unwrap_or_default();
    let token = STANDARD.decode(data).unwrap_or_else(|e| panic!("{data}: {e}"));
    assert_eq!(token.len(), 44);
    let random = STANDARD
        .decode(&token)
        .unwrap_or_else(|e| panic!("{token:?}: {e}"));
    assert_eq!(random.len(), 32);

    let token_ref = json!({"secretKeyRef": {"name": "raycluster-sample", "key": "auth_token"}});
    let head = &heads(&host)[0];
    for container in [&head["spec"]["containers"][0], &head["spec"]["containers"][1]] {
        assert_eq!(
            env_value(container, "RAY_AUTH_MODE").map(|e| e["value"].clone()),
            Some(json!("token"))
        );
        assert_eq!(
            env_value(container, "RAY_AUTH_TOKEN").map(|e| e["valueFrom"].clone()),
            Some(token_ref.clone())
        );
    }
    let worker = &workers(&host)[0];
    let init = &worker["spec"]["initContainers"][0];
    assert_eq!(
        env_value(init, "RAY_AUTH_TOKEN").map(|e| e["valueFrom"].clone()),
        Some(token_ref.clone())
    );

    // The token is generated once.
    settle(&host, 3);
    host.clear_writes();
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        !host
            .writes()
            .iter()
            .any(|w| matches!(w, Write::Create(k, _) if *k == secret_kind()))
    );
    assert_eq!(host.objects(&secret_kind()).len(), 1);
}

#[test]
fn a_user_secret_is_used_and_none_is_generated() {
    let mut cluster = sample(0);
    cluster["spec"]["rayVersion"] = json!("2.52.0");
    cluster["spec"]["authOptions"] = json!({"mode": "token", "secretName": "mine"});
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(host.objects(&secret_kind()).is_empty());
    let ray = &heads(&host)[0]["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_AUTH_TOKEN").map(|e| e["valueFrom"].clone()),
        Some(json!({"secretKeyRef": {"name": "mine", "key": "auth_token"}}))
    );
}

#[test]
fn kubernetes_token_auth_mounts_a_projected_service_account_token() {
    let mut cluster = sample(0);
    cluster["spec"]["rayVersion"] = json!("2.55.0");
    cluster["spec"]["authOptions"] = json!({"mode": "token", "enableK8sTokenAuth": true});
    let host = host(cluster);
    reconcile(&host).unwrap_or_else(|e| panic!("{e}"));
    assert!(host.objects(&secret_kind()).is_empty());
    let head = &heads(&host)[0];
    let ray = &head["spec"]["containers"][0];
    assert_eq!(
        env_value(ray, "RAY_ENABLE_K8S_TOKEN_AUTH").map(|e| e["value"].clone()),
        Some(json!("true"))
    );
    assert!(env_value(ray, "RAY_AUTH_TOKEN").is_none());
    assert!(ray["volumeMounts"].as_array().into_iter().flatten().any(|m| m
        == &json!({"name": "ray-token", "mountPath": "/var/run/secrets/ray.io/serviceaccount", "readOnly": true})));
    assert!(head["spec"]["volumes"].as_array().into_iter().flatten().any(|v| v
        == &json!({"name": "ray-token", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}})));
}
