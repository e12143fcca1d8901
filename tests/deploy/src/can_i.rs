//! The table `kubectl auth can-i --list` prints, as [`Permissions`](crate::rules::Permissions).
//!
//! Each row is `RESOURCE [NON-RESOURCE URLS] [RESOURCE NAMES] [VERBS]`, the resource written
//! `resource.group[/subresource]` (`rayclusters.ray.io/status`; no group for the core group) and empty on
//! the rows of non-resource URLs, which are skipped (every user has the same discovery and health URLs).

use crate::{Error, Permission, Result, rules::Permissions};

/// The resource permissions of the table `text`.
pub fn parse(text: &str) -> Result<Permissions> {
    let mut permissions = Permissions::new();
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    if !header.trim_start().starts_with("Resources") {
        return Err(Error::Parse(format!("not a `can-i --list` table: {header:?}")));
    }
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let (resource, lists) = split_row(line)?;
        let [_urls, names, verbs] = lists;
        let Some(resource) = resource else { continue };
        let (resource, group) = resource_and_group(resource);
        let names: Vec<Option<String>> = if names.is_empty() {
            vec![None]
        } else {
            names.into_iter().map(|n| Some(n.to_string())).collect()
        };
        for verb in verbs {
            for name in &names {
                permissions.insert(Permission {
                    group: group.into(),
                    resource: resource.clone(),
                    verb: verb.into(),
                    name: name.clone(),
                });
            }
        }
    }
    Ok(permissions)
}

/// `rayclusters.ray.io/status` as `rayclusters/status` of `ray.io`; `pods/proxy` as `pods/proxy` of the core
/// group.
fn resource_and_group(written: &str) -> (String, &str) {
    let (main, subresource) = match written.split_once('/') {
        Some((main, sub)) => (main, Some(sub)),
        None => (written, None),
    };
    let (resource, group) = main.split_once('.').unwrap_or((main, ""));
    match subresource {
        Some(sub) => (format!("{resource}/{sub}"), group),
        None => (resource.to_string(), group),
    }
}

/// A row's resource (absent on non-resource rows) and its three bracketed lists.
fn split_row(line: &str) -> Result<(Option<&str>, [Vec<&str>; 3])> {
    let bad = || Error::Parse(format!("unexpected `can-i --list` row: {line:?}"));
    let first_bracket = line.find('[').ok_or_else(bad)?;
    let resource = line[..first_bracket].trim();
    let mut rest = &line[first_bracket..];
    let mut lists: [Vec<&str>; 3] = Default::default();
    for list in &mut lists {
        let open = rest.find('[').ok_or_else(bad)?;
        let close = open + rest[open..].find(']').ok_or_else(bad)?;
        *list = rest[open + 1..close].split_whitespace().collect();
        rest = &rest[close + 1..];
    }
    Ok(((!resource.is_empty()).then_some(resource), lists))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_permissions() {
        let table = "Resources                          Non-Resource URLs   Resource Names   Verbs\n\
            rayclusters.ray.io/status          []                  []               [get patch]\n\
            pods/proxy                         []                  []               [get]\n\
            pods                               []                  []               [create]\n\
            leases.coordination.k8s.io         []                  [x]              [get]\n\
                                               [/api/*]            []               [get]\n";
        let parsed = parse(table).unwrap_or_default();
        let expected: Permissions = [
            Permission::new("ray.io", "rayclusters/status", "get"),
            Permission::new("ray.io", "rayclusters/status", "patch"),
            Permission::new("", "pods", "create"),
            Permission::new("", "pods/proxy", "get"),
            Permission {
                name: Some("x".into()),
                ..Permission::new("coordination.k8s.io", "leases", "get")
            },
        ]
        .into_iter()
        .collect();
        assert_eq!(parsed, expected);
    }

    #[test]
    fn other_output_is_an_error() {
        assert!(parse("error: something").is_err());
    }
}
