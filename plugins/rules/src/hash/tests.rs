use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, Toleration};
use kuberay_crds::{
    HeadGroupSpec, RayClusterSpec, RayClusterUpgradeStrategy, RayClusterUpgradeType, ScaleStrategy,
    WorkerGroupSpec,
};

use super::*;

fn template(image: &str) -> PodTemplateSpec {
    PodTemplateSpec {
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "ray".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..PodTemplateSpec::default()
    }
}

fn spec() -> RayClusterSpec {
    RayClusterSpec {
        head_group_spec: HeadGroupSpec {
            template: template("rayproject/ray:2.9.0"),
            ..HeadGroupSpec::default()
        },
        worker_group_specs: Some(vec![WorkerGroupSpec {
            group_name: "g".into(),
            replicas: Some(1),
            template: template("rayproject/ray:2.9.0"),
            ..WorkerGroupSpec::default()
        }]),
        ..RayClusterSpec::default()
    }
}

fn group(spec: &mut RayClusterSpec) -> &mut WorkerGroupSpec {
    &mut spec.worker_group_specs.as_mut().expect("a worker group")[0]
}

fn toleration() -> Option<Vec<Toleration>> {
    Some(vec![Toleration {
        key: Some("kueue".into()),
        ..Toleration::default()
    }])
}

#[test]
fn base32hex_matches_the_rfc_vectors() {
    assert_eq!(base32hex(b"f"), "CO======");
    assert_eq!(base32hex(b"foobar"), "CPNMUOJ1E8======");
    assert_eq!(base32hex(&[0u8; 20]).len(), 32);
}

#[test]
fn muted_fields_do_not_change_the_hashes() {
    let before = spec();
    let mut after = spec();
    group(&mut after).replicas = Some(5);
    group(&mut after).min_replicas = Some(2);
    group(&mut after).max_replicas = Some(9);
    group(&mut after).scale_strategy = Some(ScaleStrategy {
        workers_to_delete: Some(vec!["p".into()]),
    });
    after.upgrade_strategy = Some(RayClusterUpgradeStrategy {
        type_: Some(RayClusterUpgradeType::Recreate),
    });
    if let Some(pod) = after.head_group_spec.template.spec.as_mut() {
        pod.tolerations = toleration();
        pod.scheduling_gates = Some(vec![Default::default()]);
    }
    if let Some(pod) = group(&mut after).template.spec.as_mut() {
        pod.tolerations = toleration();
    }
    assert_eq!(recreate_hash(&after), recreate_hash(&before));
    assert_eq!(rayservice_hash(&after), rayservice_hash(&before));
}

#[test]
fn other_fields_change_the_hashes() {
    let base = spec();
    let changes: [fn(&mut RayClusterSpec); 4] = [
        |s| s.ray_version = Some("2.9.0".into()),
        |s| s.head_group_spec.template = template("rayproject/ray:2.10.0"),
        |s| group(s).template = template("rayproject/ray:2.10.0"),
        |s| group(s).group_name = "h".into(),
    ];
    for change in changes {
        let mut changed = spec();
        change(&mut changed);
        assert_ne!(recreate_hash(&changed), recreate_hash(&base));
        assert_ne!(rayservice_hash(&changed), rayservice_hash(&base));
    }
}

#[test]
fn suspend_counts_for_a_raycluster_but_not_for_a_rayservice() {
    let mut suspended = spec();
    suspended.suspend = Some(true);
    assert_ne!(recreate_hash(&suspended), recreate_hash(&spec()));
    assert_eq!(rayservice_hash(&suspended), rayservice_hash(&spec()));
}

#[test]
fn missing_ray_start_params_are_empty_for_a_raycluster() {
    let mut with_params = spec();
    with_params.head_group_spec.ray_start_params = Some(Default::default());
    group(&mut with_params).ray_start_params = Some(Default::default());
    assert_eq!(recreate_hash(&with_params), recreate_hash(&spec()));
    assert_ne!(rayservice_hash(&with_params), rayservice_hash(&spec()));
}

#[test]
fn equal_quantities_hash_equally() {
    use k8s_openapi::{api::core::v1::ResourceRequirements, apimachinery::pkg::api::resource::Quantity};
    let with_cpu = |cpu: &str| {
        let mut s = spec();
        if let Some(container) = s
            .head_group_spec
            .template
            .spec
            .as_mut()
            .map(|p| &mut p.containers[0])
        {
            container.resources = Some(ResourceRequirements {
                limits: Some([("cpu".to_string(), Quantity(cpu.into()))].into()),
                ..ResourceRequirements::default()
            });
        }
        recreate_hash(&s)
    };
    assert_eq!(with_cpu("1000m"), with_cpu("1"));
    assert_ne!(with_cpu("2"), with_cpu("1"));
}
