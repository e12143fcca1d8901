use std::collections::HashMap;

use http::Method;
use serde_json::{Value, json};

use super::*;
use crate::api::PodToleration;

fn template() -> ComputeTemplate {
    ComputeTemplate {
        name: "gpu-small".into(),
        namespace: "ns".into(),
        cpu: 2,
        memory: 4,
        gpu: 1,
        gpu_accelerator: String::new(),
        memory_unit: "Gi".into(),
        extended_resources: HashMap::from([("custom.io/special".to_string(), 2)]),
        tolerations: vec![PodToleration {
            key: "ray.io/node-type".into(),
            operator: "Equal".into(),
            value: "worker".into(),
            effect: "NoSchedule".into(),
        }],
    }
}

fn group(container: &str, template: Option<&str>) -> Value {
    let mut group = json!({
        "template": {"spec": {
            "containers": [{"name": container, "image": "rayproject/ray:2.52.0"}, {"name": "sidecar"}],
            "tolerations": [{"key": "own", "operator": "Exists"}],
        }},
    });
    if let Some(name) = template {
        group["computeTemplate"] = json!(name);
    }
    group
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn creates_and_replacements_of_the_three_kinds_go_through_it() {
    let base = "/apis/ray.io/v1/namespaces/ns";
    for plural in ["rayclusters", "rayjobs", "rayservices"] {
        assert_eq!(applies_to(&Method::POST, &format!("{base}/{plural}")), Some("ns"));
        assert_eq!(
            applies_to(&Method::PUT, &format!("{base}/{plural}/x")),
            Some("ns")
        );
        assert_eq!(applies_to(&Method::PATCH, &format!("{base}/{plural}/x")), None);
        assert_eq!(applies_to(&Method::POST, &format!("{base}/{plural}/x")), None);
        assert_eq!(
            applies_to(&Method::PUT, &format!("{base}/{plural}/x/status")),
            None
        );
        assert_eq!(applies_to(&Method::GET, &format!("{base}/{plural}")), None);
    }
    assert_eq!(applies_to(&Method::POST, &format!("{base}/raycronjobs")), None);
    assert_eq!(applies_to(&Method::POST, "/apis/ray.io/v1/rayclusters"), None);
}

#[test]
fn a_cluster_gets_the_templates_sizing_in_each_group_that_names_one() {
    let mut cluster = object(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"},
        "spec": {
            "headGroupSpec": group("ray-head", Some("gpu-small")),
            "workerGroupSpecs": [group("ray-worker", None), group("ray-worker", Some("gpu-small"))],
        },
    }));
    let requested = requested(&mut cluster);
    assert_eq!(
        requested,
        [
            (Group::Head, "gpu-small".to_string()),
            (Group::Worker(1), "gpu-small".to_string())
        ]
    );
    for (group, _) in requested {
        apply(&mut cluster, group, &template());
    }
    let head = &cluster["spec"]["headGroupSpec"]["template"];
    assert_eq!(
        head["metadata"]["annotations"]["ray.io/compute-template"],
        "gpu-small"
    );
    let sized = json!({"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1, "custom.io/special": 2});
    assert_eq!(head["spec"]["containers"][0]["resources"]["limits"], sized);
    assert_eq!(head["spec"]["containers"][0]["resources"]["requests"], sized);
    // Other containers get CPU and memory only.
    assert_eq!(
        head["spec"]["containers"][1]["resources"]["limits"],
        json!({"cpu": "2", "memory": "4Gi"})
    );
    assert_eq!(
        head["spec"]["tolerations"],
        json!([
            {"key": "own", "operator": "Exists"},
            {"key": "ray.io/node-type", "operator": "Equal", "value": "worker", "effect": "NoSchedule"},
        ])
    );
    // The worker group without a template is untouched; the one with it is sized on ray-worker.
    assert_eq!(cluster["spec"]["workerGroupSpecs"][0], group("ray-worker", None));
    let worker = &cluster["spec"]["workerGroupSpecs"][1]["template"];
    assert_eq!(worker["spec"]["containers"][0]["resources"]["limits"], sized);
    // The field itself stays for the API server to prune.
    assert_eq!(cluster["spec"]["headGroupSpec"]["computeTemplate"], "gpu-small");
}

#[test]
fn a_ray_container_of_the_other_role_gets_no_accelerators() {
    let mut cluster = object(json!({"spec": {"headGroupSpec": group("ray-worker", Some("t"))}}));
    apply(&mut cluster, Group::Head, &template());
    let limits =
        &cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
    assert_eq!(limits, &json!({"cpu": "2", "memory": "4Gi"}));
}

#[test]
fn jobs_and_services_keep_their_groups_where_their_kind_does() {
    for key in ["rayClusterSpec", "rayClusterConfig"] {
        let mut body = object(json!({"spec": {
            "entrypoint": "python x.py",
            key: {"headGroupSpec": group("ray-head", Some("t")), "workerGroupSpecs": [group("ray-worker", Some("t"))]},
        }}));
        let requested = requested(&mut body);
        assert_eq!(requested.len(), 2, "{key}");
        for (group, _) in requested {
            apply(&mut body, group, &template());
        }
        let head = &body["spec"][key]["headGroupSpec"]["template"];
        assert_eq!(
            head["spec"]["containers"][0]["resources"]["limits"]["cpu"], "2",
            "{key}"
        );
        let worker = &body["spec"][key]["workerGroupSpecs"][0]["template"];
        assert_eq!(
            worker["metadata"]["annotations"]["ray.io/compute-template"],
            "gpu-small"
        );
    }
}

#[test]
fn the_accelerator_and_memory_unit_are_the_templates() {
    let mut tpu = template();
    tpu.gpu = 4;
    tpu.gpu_accelerator = "google.com/tpu".into();
    tpu.memory_unit = "Mi".into();
    tpu.extended_resources.clear();
    let mut cluster = object(json!({"spec": {"headGroupSpec": group("ray-head", Some("t"))}}));
    apply(&mut cluster, Group::Head, &tpu);
    let limits =
        &cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
    assert_eq!(limits, &json!({"cpu": "2", "memory": "4Mi", "google.com/tpu": 4}));
}

#[test]
fn odd_shapes_are_left_alone_or_filled_in() {
    // No template at all, or not an object: nothing to do.
    let mut no_template = object(json!({"spec": {"headGroupSpec": {"computeTemplate": "t"}}}));
    apply(&mut no_template, Group::Head, &template());
    assert_eq!(
        no_template["spec"]["headGroupSpec"],
        json!({"computeTemplate": "t"})
    );
    // A name that is not a string is no request.
    let mut number = object(json!({"spec": {"headGroupSpec": {"computeTemplate": 3}}}));
    assert!(requested(&mut number).is_empty());
    let mut no_spec = object(json!({"kind": "RayCluster"}));
    assert!(requested(&mut no_spec).is_empty());
    // Metadata that is not an object is replaced, as KubeRay's middleware does.
    let mut odd = object(json!({"spec": {"headGroupSpec": {"template": {"metadata": "x", "spec": {}}}}}));
    apply(&mut odd, Group::Head, &template());
    assert_eq!(
        odd["spec"]["headGroupSpec"]["template"]["metadata"],
        json!({"annotations": {"ray.io/compute-template": "gpu-small"}})
    );
}

#[test]
fn bodies_are_read_as_their_content_type_says() {
    let yaml = b"apiVersion: ray.io/v1\nkind: RayCluster\nspec:\n  headGroupSpec:\n    computeTemplate: t\n";
    let parsed = parse_body("application/yaml", yaml).unwrap();
    assert_eq!(parsed["spec"]["headGroupSpec"]["computeTemplate"], "t");
    let parsed = parse_body("application/json; charset=utf-8", br#"{"spec": {}}"#).unwrap();
    assert_eq!(parsed["spec"], json!({}));
    assert!(matches!(
        parse_body("application/vnd.kubernetes.protobuf", b"x"),
        Err(BodyError::ContentType(_))
    ));
    assert!(matches!(
        parse_body("application/json", b"[1]"),
        Err(BodyError::Unreadable { format: "JSON", .. })
    ));
    assert!(matches!(
        parse_body("application/yaml", b"- a\n"),
        Err(BodyError::Unreadable { format: "YAML", .. })
    ));
}
