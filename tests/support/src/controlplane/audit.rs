//! An opt-in audit log of the API server, for benchmarks that count the requests one client makes. Off unless
//! `KUBERAY_TESTENV_AUDIT_GROUPS` names the user groups to record (comma-separated, e.g.
//! `system:serviceaccounts:kuberay-scale`); then every request of a member of those groups is logged once, at
//! level Metadata and stage RequestReceived, as JSON lines in `logs/audit.log`, and nothing else is.

use std::path::{Path, PathBuf};

use super::pki::write;
use crate::error::Result;

/// The environment variable that turns the audit log on.
pub const AUDIT_GROUPS_ENV: &str = "KUBERAY_TESTENV_AUDIT_GROUPS";

/// Where the audit log goes and the API server flags that write it, when `KUBERAY_TESTENV_AUDIT_GROUPS` asks
/// for one.
pub(crate) fn from_env(dir: &Path) -> Result<Option<(PathBuf, Vec<String>)>> {
    let Ok(groups) = std::env::var(AUDIT_GROUPS_ENV) else {
        return Ok(None);
    };
    let groups: Vec<&str> = groups
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .collect();
    if groups.is_empty() {
        return Ok(None);
    }
    let policy_path = dir.join("pki/audit-policy.yaml");
    write(&policy_path, &policy(&groups), 0o644)?;
    let log = dir.join("logs/audit.log");
    let flags = vec![
        format!("--audit-policy-file={}", policy_path.display()),
        format!("--audit-log-path={}", log.display()),
        "--audit-log-format=json".to_string(),
        "--audit-log-maxsize=0".to_string(),
        "--audit-log-mode=blocking".to_string(),
    ];
    Ok(Some((log, flags)))
}

/// The audit policy: Metadata for the groups' requests at RequestReceived only, None for everything else.
fn policy(groups: &[&str]) -> String {
    let groups = groups
        .iter()
        .map(|g| format!("\"{}\"", g.replace('"', "")))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [ResponseStarted, ResponseComplete, Panic]\n\
         rules:\n- level: Metadata\n  userGroups: [{groups}]\n- level: None\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_records_only_the_named_groups() {
        let text = policy(&["system:serviceaccounts:a", "b"]);
        assert!(
            text.contains("userGroups: [\"system:serviceaccounts:a\", \"b\"]"),
            "{text}"
        );
        assert!(text.ends_with("- level: None\n"), "{text}");
    }
}
