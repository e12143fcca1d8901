//! The ownership rules, as the host and the FakeHost apply them.

use serde_json::json;

use super::*;

const UID: &str = "11111111-aaaa";

fn writer(kind: &Kind) -> Writer<'_> {
    Writer {
        uid: UID,
        reconciles: kind,
        finalizer: Some("ray.io/rayjob-finalizer"),
    }
}

fn meta(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

#[test]
fn owner_references_to_anything_else_are_refused() {
    let jobs = Kind::new("ray.io", "v1", "RayJob");
    let pods = Kind::new("", "v1", "Pod");
    let w = writer(&jobs);
    let own = json!({"kind": "RayJob", "name": "j", "uid": UID, "controller": true});
    assert!(w.check_metadata(&pods, &meta(json!({}))).is_ok());
    assert!(
        w.check_metadata(&pods, &meta(json!({"ownerReferences": [own]})))
            .is_ok()
    );
    for foreign in [
        json!({"kind": "RayCluster", "name": "victim", "uid": "2222", "controller": true}),
        json!({"kind": "RayCluster", "name": "victim", "uid": "2222"}),
        json!({"kind": "RayCluster", "name": "victim", "uid": "2222", "blockOwnerDeletion": true}),
        json!({"kind": "RayCluster", "name": "victim"}),
    ] {
        let m = meta(json!({"ownerReferences": [own.clone(), foreign.clone()]}));
        let refused = w.check_metadata(&pods, &m).unwrap_err();
        assert!(refused.contains("RayCluster victim"), "{refused}");
    }
}

#[test]
fn only_the_declared_finalizer_on_the_reconciled_kind() {
    let jobs = Kind::new("ray.io", "v1", "RayJob");
    let clusters = Kind::new("ray.io", "v1", "RayCluster");
    let w = writer(&jobs);
    let declared = meta(json!({"finalizers": ["ray.io/rayjob-finalizer"]}));
    assert!(w.check_metadata(&jobs, &declared).is_ok());
    assert!(w.check_metadata(&clusters, &declared).is_err());
    let other = meta(json!({"finalizers": ["ray.io/gcs-ft-redis-cleanup-finalizer"]}));
    assert!(w.check_metadata(&jobs, &other).is_err());
    assert!(w.check_finalizer("ray.io/rayjob-finalizer").is_ok());
    assert!(w.check_finalizer("kubernetes.io/pvc-protection").is_err());
    let none = Writer {
        finalizer: None,
        ..writer(&jobs)
    };
    assert!(none.check_finalizer("ray.io/rayjob-finalizer").is_err());
}

#[test]
fn only_objects_the_reconciled_object_controls_are_written_over() {
    let jobs = Kind::new("ray.io", "v1", "RayJob");
    let w = writer(&jobs);
    let ours = json!({"metadata": {"ownerReferences": [{"uid": UID, "controller": true}]}});
    let owned_not_controlled = json!({"metadata": {"ownerReferences": [{"uid": UID}]}});
    let theirs = json!({"metadata": {"ownerReferences": [{"uid": "2222", "controller": true}]}});
    let orphan = json!({"metadata": {"name": "x"}});
    assert!(w.check_adoption(None).is_ok());
    assert!(w.check_adoption(Some(&ours)).is_ok());
    assert!(w.check_adoption(Some(&owned_not_controlled)).is_err());
    assert!(w.check_adoption(Some(&theirs)).is_err());
    assert!(w.check_adoption(Some(&orphan)).is_err());
    assert!(!controlled_by(&orphan, ""));
}

#[test]
fn ownership_replaces_the_plugins_own_reference_and_keeps_nothing_foreign() {
    let jobs = Kind::new("ray.io", "v1", "RayJob");
    let pods = Kind::new("", "v1", "Pod");
    let w = writer(&jobs);
    let owner = owner_reference(&jobs, "j", UID);
    let mut m = meta(json!({"ownerReferences": [{"kind": "RayJob", "name": "j", "uid": UID}]}));
    assert!(w.take_ownership(&pods, &mut m, owner.clone()).is_ok());
    assert_eq!(m["ownerReferences"], json!([owner]));
    let mut foreign = meta(json!({"ownerReferences": [{"kind": "RayCluster", "name": "v", "uid": "2222"}]}));
    assert!(w.take_ownership(&pods, &mut foreign, owner).is_err());
}

#[test]
fn only_controlled_objects_may_be_deleted() {
    let jobs = Kind::new("ray.io", "v1", "RayJob");
    let w = writer(&jobs);
    let ours = json!({"metadata": {"ownerReferences": [{"uid": UID, "controller": true}]}});
    let owned_not_controlled = json!({"metadata": {"ownerReferences": [{"uid": UID}]}});
    let theirs = json!({"metadata": {"ownerReferences": [{"uid": "2222", "controller": true}]}});
    assert!(w.check_delete(&ours).is_ok());
    assert!(w.check_delete(&owned_not_controlled).is_err());
    assert!(w.check_delete(&theirs).is_err());
    assert!(w.check_delete(&json!({"metadata": {}})).is_err());
}
