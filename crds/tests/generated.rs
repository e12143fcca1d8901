//! The committed CRDs in `crds/` are exactly what the types generate (`make crds` refreshes them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test fails loudly on any unexpected error"
)]

use std::path::Path;

use kuberay_crds::crd;

#[test]
fn committed_crds_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = crd::render().unwrap();
    let mut stale = Vec::new();
    for file in &files {
        let committed = std::fs::read_to_string(dir.join(&file.file_name)).unwrap_or_default();
        if committed != file.contents {
            stale.push(file.file_name.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "stale CRDs in crds/, run `make crds`: {stale:?}"
    );

    // Nothing else is applied from crds/ (the test environment applies every YAML file there).
    let mut yaml: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .collect();
    yaml.sort();
    let expected: Vec<String> = files.iter().map(|f| f.file_name.clone()).collect();
    assert_eq!(yaml, expected);
}

#[test]
fn crds_describe_the_four_kinds_like_kuberay() {
    let crds = crd::custom_resource_definitions().unwrap();
    let names: Vec<_> = crds.iter().map(|c| c.metadata.name.clone().unwrap()).collect();
    assert_eq!(
        names,
        [
            "rayclusters.ray.io",
            "raycronjobs.ray.io",
            "rayjobs.ray.io",
            "rayservices.ray.io"
        ]
    );
    for crd in &crds {
        assert_eq!(crd.spec.group, "ray.io");
        assert_eq!(crd.spec.scope, "Namespaced");
        assert_eq!(
            crd.spec.names.categories.as_deref(),
            Some(&["all".to_owned()][..])
        );
        assert_eq!(
            crd.spec.names.list_kind.as_deref(),
            Some(&*format!("{}List", crd.spec.names.kind))
        );
        let kind = &crd.spec.names.kind;
        let versions: Vec<_> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage, v.deprecated))
            .collect();
        // KubeRay serves its deprecated v1alpha1 for the three kinds older than it (not RayCronJob).
        if kind == "RayCronJob" {
            assert_eq!(versions, [("v1", true, true, None)]);
        } else {
            assert_eq!(
                versions,
                [("v1", true, true, None), ("v1alpha1", true, false, Some(true))]
            );
            assert_eq!(
                crd.spec.versions[1].deprecation_warning.as_deref(),
                Some(&*format!(
                    "ray.io/v1alpha1 {kind} is deprecated; use ray.io/v1 {kind}."
                ))
            );
        }
        for version in &crd.spec.versions {
            let subresources = version.subresources.as_ref().unwrap();
            assert!(subresources.status.is_some() && subresources.scale.is_none());
        }
    }
}

#[test]
fn files_say_how_to_install_them() {
    for file in crd::render().unwrap() {
        assert!(file.contents.starts_with('#'), "{}", file.file_name);
        assert!(
            file.contents.contains("kubectl apply --server-side"),
            "{}",
            file.file_name
        );
    }
}
