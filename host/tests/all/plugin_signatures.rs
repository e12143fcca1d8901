//! Cosign signatures of plugin artifacts, against the test environment's registry (TLS, a user and password):
//! what `kuberay-wasm plugin push --sign-key` writes verifies with cosign (`.local/bin/cosign`, built by `make
//! cosign` from `tests/cosign/go.mod`) and what `cosign sign` writes verifies with `kuberay-wasm plugin verify`,
//! both offline (a key, no transparency log); and a `ReconcilePlugin` with `spec.verification` serves only
//! versions signed with its key, the blob cache notwithstanding.
//!
//! The resource is cluster-scoped and named after the plugin, so the second test owns the name `rayjob`.

use std::{
    path::Path,
    process::{Command, Output},
    time::Duration,
};

use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use kuberay_testenv::{paths::Layout, registry::Registry as TestRegistry};
use kuberay_wasm::{
    policy::Policy,
    reconcileplugin::{
        ResourceOptions,
        artifact::{Registry, RegistryOptions},
        resource::ReconcilePlugin,
        signature::{self, SigningKey},
    },
};
use oci_client::secrets::RegistryAuth;
use serde_json::{Value, json};

use crate::{
    reconcileplugin::{Setup, pull_secret, registry_options, setup},
    support::{OperatorOptions, env, start_operator},
};

/// What cosign v3 needs to sign in its classic layout without any Sigstore service: a key, no transparency
/// log, no signing config fetched, and the `.sig` tag rather than a Sigstore bundle.
const COSIGN_SIGN_OFFLINE: [&str; 4] = [
    "--tlog-upload=false",
    "--use-signing-config=false",
    "--new-bundle-format=false",
    "--yes",
];

/// Runs the operator's binary, trusting the registry's CA and logging in to it.
fn kuberay_wasm(args: &[&str], registry: &TestRegistry) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
        .args(["--log-format", "text"])
        .args(args)
        .args(["--ca-file", &registry.ca_path.to_string_lossy()])
        .env("KUBERAY_WASM_REGISTRY_USERNAME", &registry.username)
        .env("KUBERAY_WASM_REGISTRY_PASSWORD", &registry.password)
        .output()
        .unwrap()
}

/// `kuberay-wasm plugin keygen --out dir`.
fn keygen(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kuberay-wasm"))
        .args(["--log-format", "text", "plugin", "keygen", "--out"])
        .arg(dir)
        .output()
        .unwrap()
}

/// Runs cosign in `home` (its own `~/.sigstore`), trusting the registry's CA and logging in to it.
fn cosign(home: &Path, registry: &TestRegistry, args: &[&str]) -> Output {
    let binary = Layout::discover()
        .binary("cosign")
        .unwrap_or_else(|e| panic!("{e} (build it with `make cosign`)"));
    let docker = home.join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    std::fs::write(
        docker.join("config.json"),
        registry.docker_config_json(&registry.host_port),
    )
    .unwrap();
    Command::new(binary)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("DOCKER_CONFIG", &docker)
        .env("SSL_CERT_FILE", &registry.ca_path)
        .env("COSIGN_PASSWORD", "test")
        .output()
        .unwrap()
}

fn text(output: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Pushes `wasm` with `kuberay-wasm plugin push` (signed with `sign_key` if given) and returns the pinned
/// reference it prints.
fn push(registry: &TestRegistry, wasm: &Path, reference: &str, sign_key: Option<&Path>) -> String {
    let mut args = vec!["plugin", "push", wasm.to_str().unwrap(), reference];
    if let Some(key) = sign_key {
        args.extend(["--sign-key", key.to_str().unwrap()]);
    }
    let output = kuberay_wasm(&args, registry);
    assert!(output.status.success(), "{}", text(&output));
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs cosign, which takes 7 minutes to build and is kept out of `make test`: run `make cosign-interop`"]
async fn our_signatures_verify_with_cosign_and_cosigns_with_ours() {
    let registry = env()
        .await
        .registry()
        .expect("the test environment's registry")
        .clone();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let wasm = home.join("plugin.wasm");
    std::fs::write(&wasm, std::fs::read(kuberay_plugin_artifacts::RAYJOB).unwrap()).unwrap();
    let repository = format!("{}/signatures/interop", registry.host_port);

    // Our key pair; cosign's (its private key encrypted with COSIGN_PASSWORD, as cosign always writes it).
    let ours = home.join("ours");
    let output = keygen(&ours);
    assert!(output.status.success(), "{}", text(&output));
    let (our_key, our_pub) = (ours.join("plugin.key"), ours.join("plugin.pub"));
    for file in [&our_key, &our_pub] {
        assert!(file.exists(), "{} written", file.display());
    }
    // It never overwrites a key.
    let output = keygen(&ours);
    assert!(!output.status.success(), "{}", text(&output));
    let output = cosign(home, &registry, &["generate-key-pair"]);
    assert!(output.status.success(), "{}", text(&output));
    let cosign_pub = home.join("cosign.pub");

    // Pushed and signed by us: cosign verifies it with our public key, offline, and not with its own.
    let signed_by_us = push(&registry, &wasm, &format!("{repository}:ours"), Some(&our_key));
    let verify = |key: &Path, reference: &str| {
        cosign(
            home,
            &registry,
            &[
                "verify",
                "--key",
                key.to_str().unwrap(),
                "--insecure-ignore-tlog=true",
                reference,
            ],
        )
    };
    let output = verify(&our_pub, &signed_by_us);
    assert!(output.status.success(), "{}", text(&output));
    let digest = signed_by_us.rsplit_once('@').unwrap().1;
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(digest),
        "{}",
        text(&output)
    );
    let output = verify(&cosign_pub, &signed_by_us);
    assert!(!output.status.success(), "{}", text(&output));

    // Another version, pushed unsigned and signed by cosign: we verify it with cosign's public key, and not
    // with ours.
    let variant = home.join("variant.wasm");
    let mut bytes = std::fs::read(&wasm).unwrap();
    bytes.extend_from_slice(b"\0\x05\x04test"); // a custom section: another digest
    std::fs::write(&variant, bytes).unwrap();
    let signed_by_cosign = push(&registry, &variant, &format!("{repository}:cosign"), None);
    let unsigned = kuberay_wasm(
        &[
            "plugin",
            "verify",
            &signed_by_cosign,
            "--key",
            cosign_pub.to_str().unwrap(),
        ],
        &registry,
    );
    assert!(!unsigned.status.success());
    assert!(
        String::from_utf8_lossy(&unsigned.stderr).contains("is not signed"),
        "{}",
        text(&unsigned)
    );
    let mut args = vec!["sign", "--key", "cosign.key"];
    args.extend(COSIGN_SIGN_OFFLINE);
    args.push(&signed_by_cosign);
    let output = cosign(home, &registry, &args);
    assert!(output.status.success(), "{}", text(&output));
    let ours_verify = |reference: &str, key: &Path| {
        kuberay_wasm(
            &["plugin", "verify", reference, "--key", key.to_str().unwrap()],
            &registry,
        )
    };
    let output = ours_verify(&signed_by_cosign, &cosign_pub);
    assert!(output.status.success(), "{}", text(&output));
    let output = ours_verify(&signed_by_cosign, &our_pub);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("does not verify with the key"),
        "{}",
        text(&output)
    );

    // Both sign one version: cosign appends to our signature image and we to its; each tool then accepts
    // either key.
    let mut args = vec!["sign", "--key", "cosign.key"];
    args.extend(COSIGN_SIGN_OFFLINE);
    args.push(&signed_by_us);
    let output = cosign(home, &registry, &args);
    assert!(output.status.success(), "{}", text(&output));
    let oci = Registry::new(&RegistryOptions {
        extra_roots: vec![std::fs::read(&registry.ca_path).unwrap()],
        timeout: Duration::from_secs(30),
    })
    .unwrap();
    let auth = RegistryAuth::Basic(registry.username.clone(), registry.password.clone());
    let key = SigningKey::from_pem(&std::fs::read_to_string(&our_key).unwrap()).unwrap();
    let reference = signed_by_cosign.parse().unwrap();
    let digest = signed_by_cosign.rsplit_once('@').unwrap().1;
    signature::sign(&oci, &reference, &auth, digest, &key)
        .await
        .unwrap();
    for reference in [&signed_by_us, &signed_by_cosign] {
        for key in [&cosign_pub, &our_pub] {
            let output = verify(key, reference);
            assert!(
                output.status.success(),
                "cosign, {reference}, {}: {}",
                key.display(),
                text(&output)
            );
            let output = ours_verify(reference, key);
            assert!(
                output.status.success(),
                "ours, {reference}, {}: {}",
                key.display(),
                text(&output)
            );
        }
    }
}

/// Waits until the `rayjob` resource's status satisfies `check`, and returns it.
async fn until(api: &Api<ReconcilePlugin>, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    crate::reconcileplugin::until_named(api, "rayjob", what, check).await
}

fn degraded_reason(status: &Value) -> Option<&str> {
    status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Degraded" && c["status"] == "True")?["reason"]
        .as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_with_a_key_serves_only_versions_signed_with_it() {
    let Setup {
        env,
        client,
        ns,
        registry,
    } = setup("rpsign").await;
    let client_options = registry_options(registry);
    let oci = Registry::new(&client_options).unwrap();
    let auth = RegistryAuth::Basic(registry.username.clone(), registry.password.clone());
    let repository = format!("{}/{}/rayjob", registry.host_port, ns.name());

    // v1 signed with A, v2 signed with B, v3 unsigned: one plugin, three digests.
    let (a, b) = (SigningKey::generate().unwrap(), SigningKey::generate().unwrap());
    let wasm = std::fs::read(kuberay_plugin_artifacts::RAYJOB).unwrap();
    let mut pinned = Vec::new();
    for (tag, key) in [("v1", Some(&a)), ("v2", Some(&b)), ("v3", None)] {
        let mut bytes = wasm.clone();
        bytes.extend_from_slice(&[0, 3, 2, b'v', tag.as_bytes()[1]]); // a custom section named "v<n>"
        let reference = format!("{repository}:{tag}").parse().unwrap();
        let digest = oci.push(&reference, &auth, bytes).await.unwrap();
        if let Some(key) = key {
            signature::sign(&oci, &reference, &auth, &digest, key)
                .await
                .unwrap();
        }
        pinned.push((format!("{repository}@{digest}"), digest));
    }
    let [(v1, d1), (v2, d2), (v3, _)] = <[(String, String); 3]>::try_from(pinned).unwrap();
    let pem = |key: &SigningKey| key.public_key().to_pem().unwrap();

    pull_secret(&client, &ns, registry).await;

    let selector = format!("kuberay-wasm-test={}", ns.name());
    let operator = start_operator(
        env,
        &ns,
        OperatorOptions {
            plugins: vec![],
            policy: Some(Policy::builtin().without(&["rayjob".into()]).unwrap()),
            resources: Some(ResourceOptions {
                namespace: Some(ns.name().to_string()),
                selector: Some(selector),
                allow_tags: false,
                registry: client_options,
            }),
            ..OperatorOptions::default()
        },
    )
    .await;

    let api: Api<ReconcilePlugin> = Api::all(client.clone());
    let _ = api.delete("rayjob", &DeleteParams::default()).await;
    let resource: ReconcilePlugin = serde_json::from_value(json!({
        "apiVersion": "plugins.kuberay-wasm.io/v1alpha1", "kind": "ReconcilePlugin",
        "metadata": {"name": "rayjob", "labels": {"kuberay-wasm-test": ns.name()}},
        "spec": {
            "artifact": v1, "reconciles": "ray.io/v1/RayJob", "pullSecret": "regcred",
            "verification": {"publicKey": pem(&a)},
            "grant": {
                "owns": ["ray.io/v1/RayCluster", "v1/Service", "batch/v1/Job"],
                "verbs": {
                    "ray.io/v1/RayJob": ["apply-status", "finalize", "record-event", "delete"],
                    "v1/Pod": ["list"],
                    "ray.io/v1/RayCluster": ["get", "create", "apply", "delete"],
                    "v1/Service": ["get", "apply"],
                    "batch/v1/Job": ["get", "create", "delete"],
                },
                "rayHeads": true,
                "finalizer": "ray.io/rayjob-finalizer",
            },
        },
    }))
    .unwrap();
    api.create(&PostParams::default(), &resource).await.unwrap();
    let first = until(&api, "v1, signed with A, to serve", |s| {
        s["digest"] == d1.as_str() && degraded_reason(s).is_none()
    })
    .await;
    assert!(first["version"].is_string(), "{first}");

    // Each refused while v1 keeps serving: unsigned; signed with another key; and v1 itself once the key is
    // B, although its blob is in memory and passed with A.
    for (spec, reason) in [
        (json!({"artifact": v3}), "SignatureMissing"),
        (json!({"artifact": v2}), "SignatureInvalid"),
        (
            json!({"artifact": v1, "verification": {"publicKey": pem(&b)}}),
            "SignatureInvalid",
        ),
        (
            json!({"verification": {"publicKey": "not a key"}}),
            "InvalidPublicKey",
        ),
    ] {
        api.patch(
            "rayjob",
            &PatchParams::default(),
            &Patch::Merge(&json!({ "spec": spec })),
        )
        .await
        .unwrap();
        let refused = until(&api, &format!("{reason} for {spec}"), |s| {
            s["digest"] == d1.as_str() && degraded_reason(s) == Some(reason)
        })
        .await;
        assert!(
            refused["lastError"].as_str().is_some_and(|e| !e.is_empty()),
            "{refused}"
        );
    }

    // v2 with B's key serves.
    let spec = json!({"artifact": v2, "verification": {"publicKey": pem(&b)}});
    api.patch(
        "rayjob",
        &PatchParams::default(),
        &Patch::Merge(&json!({ "spec": spec })),
    )
    .await
    .unwrap();
    let served = until(&api, "v2, signed with B, to serve", |s| {
        s["digest"] == d2.as_str() && degraded_reason(s).is_none()
    })
    .await;
    assert_eq!(served["previousDigest"], d1.as_str(), "{served}");

    api.delete("rayjob", &DeleteParams::default()).await.unwrap();
    operator.stop().await;
}
