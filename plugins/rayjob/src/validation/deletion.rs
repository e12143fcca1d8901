//! The rules for what happens after the job: `shutdownAfterJobFinishes` with its TTL, the legacy
//! `onSuccess`/`onFailure` policies, and `deletionRules` (KubeRay's `validateDeletionConfiguration`; the
//! `RayJobDeletionPolicy` feature gate is on, as it is by default since KubeRay 1.6).

use std::collections::BTreeMap;

use kuberay_crds::{DeletionPolicyType, DeletionRule, DeletionStrategy, RayJob};

use crate::{deletion::impact, spec};

pub fn validate_deletion(job: &RayJob) -> Result<(), String> {
    let s = &job.spec;
    if !spec::shutdown_after_job_finishes(s) && spec::ttl_seconds_after_finished(s) > 0 {
        return Err(
            "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot \
                    have TTLSecondsAfterFinished"
                .into(),
        );
    }
    let Some(strategy) = &s.deletion_strategy else {
        return Ok(());
    };
    let legacy = strategy.on_success.is_some() || strategy.on_failure.is_some();
    let rules = strategy.deletion_rules.as_ref().is_some_and(|r| !r.is_empty());
    if rules && spec::shutdown_after_job_finishes(s) {
        return Err("The RayJob spec is invalid: spec.shutdownAfterJobFinishes and \
                    spec.deletionStrategy.deletionRules are mutually exclusive"
            .into());
    }
    if rules && legacy {
        return Err(
            "The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and \
                    deletionRules simultaneously"
                .into(),
        );
    }
    if legacy {
        validate_legacy(job, strategy)
    } else if rules {
        validate_rules(job, strategy.deletion_rules.as_deref().unwrap_or_default())
    } else {
        Err("The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and onFailure, OR the \
             deletionRules field (cannot be empty)"
            .into())
    }
}

fn autoscaling(job: &RayJob) -> bool {
    job.spec
        .ray_cluster_spec
        .as_ref()
        .and_then(|c| c.enable_in_tree_autoscaling)
        == Some(true)
}

fn destroys_cluster(policy: DeletionPolicyType) -> bool {
    matches!(
        policy,
        DeletionPolicyType::DeleteCluster | DeletionPolicyType::DeleteWorkers
    )
}

fn validate_legacy(job: &RayJob, strategy: &DeletionStrategy) -> Result<(), String> {
    let (Some(on_success), Some(on_failure)) = (&strategy.on_success, &strategy.on_failure) else {
        return Err(
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the \
                    legacy deletion policy fields of DeletionStrategy"
                .into(),
        );
    };
    let Some(success) = on_success.policy else {
        return Err(
            "the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when \
                    DeletionStrategy is enabled"
                .into(),
        );
    };
    let Some(failure) = on_failure.policy else {
        return Err(
            "the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset when \
                    DeletionStrategy is enabled"
                .into(),
        );
    };
    if spec::uses_cluster_selector(&job.spec) {
        if destroys_cluster(success) {
            return Err(format!(
                "the ClusterSelector mode doesn't support DeletionStrategy={success:?} on success"
            ));
        }
        if destroys_cluster(failure) {
            return Err(format!(
                "the ClusterSelector mode doesn't support DeletionStrategy={failure:?} on failure"
            ));
        }
    }
    let workers = DeletionPolicyType::DeleteWorkers;
    if (success == workers || failure == workers) && autoscaling(job) {
        return Err(
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling \
                    enabled"
                .into(),
        );
    }
    let none = DeletionPolicyType::DeleteNone;
    if spec::shutdown_after_job_finishes(&job.spec) && (success == none || failure == none) {
        return Err(
            "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy \
                    is 'DeleteNone'"
                .into(),
        );
    }
    Ok(())
}

/// The rules of one condition (kind and value): by the impact of their policy, the policy and its TTL.
type PolicyTtls = BTreeMap<u8, (DeletionPolicyType, i32)>;

/// Per-rule checks, then uniqueness of (condition, policy) and TTLs that delete less before more. All
/// problems are reported together, one per line, as KubeRay joins them.
fn validate_rules(job: &RayJob, rules: &[DeletionRule]) -> Result<(), String> {
    let selector_mode = spec::uses_cluster_selector(&job.spec);
    let mut groups: BTreeMap<(&str, String), PolicyTtls> = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let condition = &rule.condition;
        let (kind, value) = match (&condition.job_status, &condition.job_deployment_status) {
            (Some(_), Some(_)) => {
                errors.push(format!(
                    "deletionRules[{i}]: cannot set both JobStatus and JobDeploymentStatus at the same time"
                ));
                continue;
            }
            (None, None) => {
                errors.push(format!(
                    "deletionRules[{i}]: exactly one of JobStatus and JobDeploymentStatus must be set"
                ));
                continue;
            }
            (Some(s), None) => ("JobStatus", s.as_str().to_string()),
            (None, Some(d)) => ("JobDeploymentStatus", d.as_str().to_string()),
        };
        let ttl = condition.ttl_seconds.unwrap_or(0);
        if ttl < 0 {
            errors.push(format!("deletionRules[{i}]: TTLSeconds must be non-negative"));
            continue;
        }
        if selector_mode && destroys_cluster(rule.policy) {
            errors.push(format!(
                "deletionRules[{i}]: DeletionPolicyType '{:?}' not supported when ClusterSelector is set",
                rule.policy
            ));
            continue;
        }
        if autoscaling(job) && rule.policy == DeletionPolicyType::DeleteWorkers {
            errors.push(format!(
                "deletionRules[{i}]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled"
            ));
            continue;
        }
        let group = groups.entry((kind, value.clone())).or_default();
        // The first rule of a (condition, policy) pair counts; later ones are reported, not used.
        if group.contains_key(&impact(rule.policy)) {
            errors.push(format!(
                "deletionRules[{i}]: duplicate rule for DeletionPolicyType '{:?}' and {kind} '{value}'",
                rule.policy
            ));
            continue;
        }
        group.insert(impact(rule.policy), (rule.policy, ttl));
    }
    for ((kind, value), ttls) in &groups {
        errors.extend(ttl_order_errors(kind, value, ttls));
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// TTLs must not decrease along DeleteWorkers, DeleteCluster, DeleteSelf: what deletes more never comes
/// before what deletes less.
fn ttl_order_errors(kind: &str, value: &str, ttls: &PolicyTtls) -> Vec<String> {
    let mut errors = Vec::new();
    let mut previous: Option<(DeletionPolicyType, i32)> = None;
    for &(policy, ttl) in ttls.values() {
        if policy == DeletionPolicyType::DeleteNone {
            continue;
        }
        if let Some((prev_policy, prev_ttl)) = previous
            && ttl < prev_ttl
        {
            errors.push(format!(
                "for {kind} '{value}': {policy:?} TTL ({ttl}) must be >= {prev_policy:?} TTL ({prev_ttl})"
            ));
        }
        previous = Some((policy, ttl));
    }
    errors
}
