//! `deletionRules`: each rule names a condition (how Ray's job ended, or that the RayJob failed), a TTL and
//! a policy. Rules whose TTL has passed and whose effect is not there yet are overdue; of those, only the one
//! that deletes most runs, at most one deletion per reconcile, and the RayJob comes back for the next rule
//! when its TTL is up.

use kuberay_crds::{DeletionRule, RayJobStatus};
use kuberay_plugin_sdk::{Host, LogLevel, Outcome, ReconcileError};

use super::{actions, ended, impact, wait_until};
use crate::{context::Ctx, status};

fn matches(rule: &DeletionRule, job_status: &RayJobStatus) -> bool {
    let condition = &rule.condition;
    if let Some(wanted) = &condition.job_status {
        return *wanted == status::job_status(job_status);
    }
    condition
        .job_deployment_status
        .as_ref()
        .is_some_and(|wanted| *wanted == status::deployment(job_status))
}

pub fn run<H: Host>(
    ctx: &Ctx<'_, H>,
    job_status: &RayJobStatus,
    rules: &[DeletionRule],
) -> Result<Outcome, ReconcileError> {
    let end = ended(ctx, job_status);
    let mut next_due: Option<i64> = None;
    let mut overdue: Option<&DeletionRule> = None;
    for rule in rules.iter().filter(|r| matches(r, job_status)) {
        let due = end + i64::from(rule.condition.ttl_seconds.unwrap_or(0));
        if ctx.now < due {
            next_due = Some(next_due.map_or(due, |n| n.min(due)));
            continue;
        }
        if actions::completed(ctx, job_status, rule.policy)? {
            continue;
        }
        if overdue.is_none_or(|o| impact(rule.policy) > impact(o.policy)) {
            overdue = Some(rule);
        }
    }
    if let Some(rule) = overdue {
        ctx.log(
            LogLevel::Info,
            &format!("executing the overdue deletion rule {:?}", rule.policy),
        );
        actions::execute(ctx, job_status, rule.policy)?;
    }
    Ok(match next_due {
        Some(at) => wait_until(ctx, at),
        None => Outcome::done(),
    })
}
