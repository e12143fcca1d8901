//! Counting one user's requests in the API server's JSON audit log (see `KUBERAY_TESTENV_AUDIT_GROUPS` in
//! kuberay-testenv): each audit ID is counted once, whatever stages the policy records.

use std::{
    collections::{BTreeMap, HashSet},
    io::{Read, Seek, SeekFrom},
    path::Path,
};

use serde::{Deserialize, Serialize};

/// Requests by verb and by `verb resource[/subresource]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RequestCounts {
    pub total: u64,
    pub writes: u64,
    pub by_verb: BTreeMap<String, u64>,
    pub by_resource: BTreeMap<String, u64>,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "auditID")]
    audit_id: String,
    verb: String,
    user: User,
    #[serde(rename = "objectRef", default)]
    object_ref: Option<ObjectRef>,
}

#[derive(Deserialize)]
struct User {
    username: String,
}

#[derive(Deserialize)]
struct ObjectRef {
    #[serde(default)]
    resource: String,
    #[serde(default)]
    subresource: String,
}

/// Verbs that change something.
pub fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

/// Counts the requests of `user` in audit log lines; lines that are not audit events are skipped.
pub fn count_lines<'a>(lines: impl IntoIterator<Item = &'a str>, user: &str) -> RequestCounts {
    let mut seen = HashSet::new();
    let mut counts = RequestCounts::default();
    for line in lines {
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            continue;
        };
        if event.user.username != user || !seen.insert(event.audit_id) {
            continue;
        }
        counts.total += 1;
        if is_write(&event.verb) {
            counts.writes += 1;
        }
        let resource = match &event.object_ref {
            Some(r) if !r.subresource.is_empty() => format!("{}/{}", r.resource, r.subresource),
            Some(r) => r.resource.clone(),
            None => "(non-resource)".to_string(),
        };
        *counts
            .by_resource
            .entry(format!("{} {resource}", event.verb))
            .or_default() += 1;
        *counts.by_verb.entry(event.verb).or_default() += 1;
    }
    counts
}

/// The audit log's current length (0 when it does not exist yet): a mark to count from.
pub fn mark(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Counts `user`'s requests logged between two marks.
pub fn count_between(path: &Path, from: u64, to: u64, user: &str) -> std::io::Result<RequestCounts> {
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut text = String::new();
    file.take(to.saturating_sub(from)).read_to_string(&mut text)?;
    Ok(count_lines(text.lines(), user))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, user: &str, verb: &str, resource: &str, sub: &str) -> String {
        format!(
            r#"{{"kind":"Event","level":"Metadata","auditID":"{id}","stage":"RequestReceived","verb":"{verb}","user":{{"username":"{user}","groups":["g"]}},"objectRef":{{"resource":"{resource}","subresource":"{sub}","namespace":"ns"}}}}"#
        )
    }

    #[test]
    fn each_audit_id_of_the_user_counts_once() {
        let lines = [
            line("a", "op", "create", "pods", ""),
            line("a", "op", "create", "pods", ""),
            line("b", "op", "patch", "rayclusters", "status"),
            line("c", "op", "watch", "pods", ""),
            line("d", "someone-else", "create", "pods", ""),
            "not json".to_string(),
            r#"{"auditID":"e","verb":"get","user":{"username":"op"}}"#.to_string(),
        ];
        let counts = count_lines(lines.iter().map(String::as_str), "op");
        assert_eq!(counts.total, 4);
        assert_eq!(counts.writes, 2);
        assert_eq!(counts.by_verb["create"], 1);
        assert_eq!(counts.by_resource["patch rayclusters/status"], 1);
        assert_eq!(counts.by_resource["get (non-resource)"], 1);
    }
}
