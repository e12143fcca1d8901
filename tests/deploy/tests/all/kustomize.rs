//! The kustomize overlays render, and agree with the chart: the same rules in each routing mode, the same
//! Deployment arguments and security settings, the same CRDs.

use kuberay_deploy_tests::{
    manifests::{self, container_args, one},
    rules::{EVENTS_OF_CLUSTER_SCOPED, Sources, granted_by},
};
use serde_json::Value;

use crate::{
    chart::{assert_secure, kinds, operator_rbac},
    tools,
};

#[test]
fn both_overlays_build_with_the_rules_of_their_mode() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    for (overlay, proxy) in [("direct", false), ("proxy", true)] {
        let objects = tools
            .build(&format!("deploy/kustomize/overlays/{overlay}"))
            .unwrap();
        assert_eq!(
            granted_by(&objects, "ClusterRole", None).unwrap(),
            sources.watched(proxy).union(&sources.plugins).cloned().collect(),
            "{overlay}"
        );
        assert_eq!(
            granted_by(&objects, "Role", Some("kuberay-system")).unwrap(),
            sources.own_namespace()
        );
        assert_eq!(
            granted_by(&objects, "Role", Some(EVENTS_OF_CLUSTER_SCOPED)).unwrap(),
            sources.plugin_events,
            "the Events Role stays in {EVENTS_OF_CLUSTER_SCOPED}"
        );
        let deployment = one(&objects, "Deployment").unwrap();
        assert_eq!(manifests::namespace(deployment), "kuberay-system");
        assert_secure(&deployment["spec"]["template"]["spec"]);
        let args = container_args(deployment);
        assert_eq!(
            args.contains(&"--use-kubernetes-proxy".into()),
            proxy,
            "{overlay}: {args:?}"
        );
        assert_eq!(kinds(&objects, "CustomResourceDefinition").len(), 5);
        assert_eq!(kinds(&objects, "Namespace"), ["kuberay-system"]);
    }
}

#[test]
fn the_chart_and_the_overlays_grant_the_same_and_run_the_same_operator() {
    let tools = tools();
    for (overlay, routing) in [("direct", "direct"), ("proxy", "proxy")] {
        let kustomized = tools
            .build(&format!("deploy/kustomize/overlays/{overlay}"))
            .unwrap();
        let routing = format!("routing={routing}");
        let charted = tools
            .template("kuberay-system", &["--include-crds", "--set", &routing])
            .unwrap();
        // The chart's editor and viewer ClusterRoles of the Ray kinds (KubeRay's chart's) are for people, not the
        // operator; the kustomize manifests have none.
        let charted = operator_rbac(&charted);
        for (kind, namespace) in [
            ("ClusterRole", None),
            ("Role", Some("kuberay-system")),
            ("Role", Some(EVENTS_OF_CLUSTER_SCOPED)),
        ] {
            assert_eq!(
                granted_by(&charted, kind, namespace).unwrap(),
                granted_by(&kustomized, kind, namespace).unwrap(),
                "{overlay}: {kind} in {namespace:?}"
            );
        }
        let (chart_pod, kustomize_pod) = (pod_of(&charted), pod_of(&kustomized));
        assert_eq!(chart_pod["securityContext"], kustomize_pod["securityContext"]);
        for field in [
            "args",
            "env",
            "ports",
            "livenessProbe",
            "readinessProbe",
            "securityContext",
            "resources",
            "volumeMounts",
            "image",
        ] {
            assert_eq!(
                chart_pod["containers"][0][field], kustomize_pod["containers"][0][field],
                "{overlay}: {field}"
            );
        }
        assert_eq!(chart_pod["volumes"], kustomize_pod["volumes"]);
        let crds = |objects| {
            let mut names = kinds(objects, "CustomResourceDefinition");
            names.sort_unstable();
            names
        };
        assert_eq!(crds(&charted), crds(&kustomized));
    }
}

/// The Pod template of the one Deployment of `objects`.
fn pod_of(objects: &[Value]) -> &Value {
    &one(objects, "Deployment").unwrap()["spec"]["template"]["spec"]
}

/// Each batch scheduler component, added to the direct overlay, starts the operator with KubeRay's flag for it
/// and grants what the chart grants with the same `batchScheduler.name`.
#[test]
fn the_batch_scheduler_components_match_the_charts_batch_scheduler_values() {
    let tools = tools();
    let sources = Sources::read().unwrap();
    for scheduler in ["volcano", "scheduler-plugins", "yunikorn", "kai-scheduler"] {
        // kustomize takes bases and components by relative path only: an overlay two levels under the checkout.
        let overlay = tools
            .root()
            .join("target")
            .join(format!("kustomize-component-{scheduler}-{}", std::process::id()));
        std::fs::create_dir_all(&overlay).unwrap();
        std::fs::write(
            overlay.join("kustomization.yaml"),
            format!(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n\
                 - ../../deploy/kustomize/overlays/direct\ncomponents:\n- ../../deploy/kustomize/components/{scheduler}\n",
            ),
        )
        .unwrap();
        let kustomized = tools.build(&overlay.display().to_string());
        std::fs::remove_dir_all(&overlay).unwrap();
        let kustomized = kustomized.unwrap();
        let args = container_args(one(&kustomized, "Deployment").unwrap());
        assert!(
            args.contains(&format!("--batch-scheduler={scheduler}")),
            "{scheduler}: {args:?}"
        );
        let mut expected = sources.watched(false);
        expected.extend(sources.plugins.iter().cloned());
        if let Some(podgroups) = sources.batch_schedulers.get(scheduler) {
            expected.extend(podgroups.iter().cloned());
        }
        let granted = granted_by(&kustomized, "ClusterRole", None).unwrap();
        assert_eq!(granted, expected, "{scheduler}");
        let name = format!("batchScheduler.name={scheduler}");
        let charted = tools
            .template("kuberay-system", &["--include-crds", "--set", &name])
            .unwrap();
        assert_eq!(
            granted_by(&operator_rbac(&charted), "ClusterRole", None).unwrap(),
            granted,
            "{scheduler}: the chart grants the same"
        );
    }
}
