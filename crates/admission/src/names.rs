//! Kubernetes' naming rules, checked on everything a plugin names before a request is built from it: kube
//! puts kinds, groups, versions and object names into URL paths (`/apis/<group>/<version>/namespaces/<ns>/
//! <plural>/<name>`), so a name such as `svc:8080/proxy/x` must never get that far. The rules are the API
//! server's own (apimachinery's `IsDNS1123Subdomain`, `IsDNS1123Label`, `IsQualifiedName`,
//! `IsValidLabelValue` and the path-segment rule), so a well-formed object never trips them.

use kuberay_core::{
    Kind,
    syntax::{is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name},
};

/// Why a name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: {rule}")]
pub struct InvalidName {
    what: &'static str,
    value: String,
    rule: &'static str,
}

type Checked = Result<(), InvalidName>;

fn fail(what: &'static str, value: &str, rule: &'static str) -> Checked {
    // Only the beginning of a hostile string goes into messages and logs.
    let value: String = value.chars().take(80).collect();
    Err(InvalidName { what, value, rule })
}

/// The name of an object of `kind`. Most kinds need a DNS-1123 subdomain; RBAC objects may use any path
/// segment (`system:controller:x`), as the API server allows.
pub fn object_name(kind: &Kind, name: &str) -> Checked {
    if kind.group == "rbac.authorization.k8s.io" {
        let segment = !name.is_empty()
            && name.len() <= 253
            && name != "."
            && name != ".."
            && !name.contains(['/', '%'])
            && !name.chars().any(char::is_control);
        return if segment {
            Ok(())
        } else {
            fail("name", name, "must be a path segment (no '/', '%', '.' or '..')")
        };
    }
    if is_dns1123_subdomain(name) {
        Ok(())
    } else {
        fail(
            "name",
            name,
            "must be a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.', at most 253)",
        )
    }
}

/// A kind as a plugin names it: group a DNS-1123 subdomain (or empty for the core API), version a DNS-1123
/// label, kind an alphanumeric identifier starting with a letter (what the API server accepts for CRDs).
pub fn kind(kind: &Kind) -> Checked {
    if !kind.group.is_empty() && !is_dns1123_subdomain(&kind.group) {
        return fail("API group", &kind.group, "must be a DNS-1123 subdomain");
    }
    if !is_dns1123_label(&kind.version) {
        return fail("API version", &kind.version, "must be a DNS-1123 label");
    }
    let valid_kind = kind.kind.len() <= 63
        && kind.kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && kind.kind.chars().all(|c| c.is_ascii_alphanumeric());
    if valid_kind {
        Ok(())
    } else {
        fail(
            "kind",
            &kind.kind,
            "must be 1-63 letters and digits, starting with a letter",
        )
    }
}

/// The name of a namespace.
pub fn namespace(name: &str) -> Checked {
    if is_dns1123_label(name) {
        Ok(())
    } else {
        fail("namespace", name, "must be a DNS-1123 label")
    }
}

/// A label: the key a qualified name (optional DNS-1123 subdomain prefix and '/'), the value a label value.
pub fn label(key: &str, value: &str) -> Checked {
    if !is_qualified_name(key) {
        return fail("label key", key, "must be a qualified name");
    }
    if !is_label_value(value) {
        return fail(
            "label value",
            value,
            "must be at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric",
        );
    }
    Ok(())
}

/// A finalizer: a qualified name, as the API server requires (`ray.io/rayjob-finalizer`).
pub fn finalizer(value: &str) -> Checked {
    if is_qualified_name(value) {
        Ok(())
    } else {
        fail("finalizer", value, "must be a qualified name")
    }
}

/// Splits at commas outside parentheses.
fn top_level_parts(selector: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&selector[start..]);
    parts
}

/// One requirement of a selector: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`.
fn requirement(part: &str) -> bool {
    let part = part.trim();
    if part.is_empty() {
        return true;
    }
    for operator in [" notin ", " in "] {
        if let Some((key, values)) = part.split_once(operator) {
            let values = values.trim();
            let Some(inner) = values.strip_prefix('(').and_then(|v| v.strip_suffix(')')) else {
                return false;
            };
            return is_qualified_name(key.trim()) && inner.split(',').all(|v| is_label_value(v.trim()));
        }
    }
    for operator in ["!=", "==", "="] {
        if let Some((key, value)) = part.split_once(operator) {
            return is_qualified_name(key.trim()) && is_label_value(value.trim());
        }
    }
    is_qualified_name(part.strip_prefix('!').unwrap_or(part).trim())
}

/// A label selector in its string form, every key a qualified name and every value a label value.
pub fn label_selector(selector: &str) -> Checked {
    if selector.len() <= 4096 && top_level_parts(selector).into_iter().all(requirement) {
        Ok(())
    } else {
        fail(
            "label selector",
            selector,
            "keys must be qualified names and values label values",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_map() -> Kind {
        Kind::new("", "v1", "ConfigMap")
    }

    #[test]
    fn object_names_follow_kubernetes_rules() {
        let long = "a".repeat(254);
        for (name, valid) in [
            ("c-head-svc", true),
            ("raycluster-kuberay-head-x7k2p", true),
            ("a.b-c.d", true),
            ("0abc", true),
            ("svc:8080/proxy/x", false),
            ("svc:8080", false),
            ("c-head-svc/proxy", false),
            ("..", false),
            (".", false),
            ("a/../b", false),
            ("a%2fb", false),
            ("Upper", false),
            ("-lead", false),
            ("trail-", false),
            ("a..b", false),
            ("", false),
            ("a b", false),
            ("a?watch=true", false),
            ("a#frag", false),
            ("ünicode", false),
            (long.as_str(), false),
        ] {
            assert_eq!(object_name(&config_map(), name).is_ok(), valid, "{name:?}");
        }
        let role = Kind::new("rbac.authorization.k8s.io", "v1", "Role");
        assert!(object_name(&role, "system:controller:x").is_ok());
        for name in ["a/b", "..", ".", "a%2f", ""] {
            assert!(object_name(&role, name).is_err(), "{name:?}");
        }
    }

    #[test]
    fn kinds_groups_and_versions_follow_kubernetes_rules() {
        for (group, version, name, valid) in [
            ("", "v1", "Pod", true),
            ("ray.io", "v1", "RayCluster", true),
            ("discovery.k8s.io", "v1", "EndpointSlice", true),
            ("apps", "v1beta1", "Deployment", true),
            ("../..", "v1", "Pod", false),
            ("ray.io/v1/namespaces", "v1", "RayCluster", false),
            ("Ray.io", "v1", "RayCluster", false),
            ("ray.io", "v1/x", "RayCluster", false),
            ("ray.io", "", "RayCluster", false),
            ("ray.io", "V1", "RayCluster", false),
            ("", "v1", "Pod/proxy", false),
            ("", "v1", "", false),
            ("", "v1", "1Pod", false),
            ("", "v1", "Po d", false),
        ] {
            assert_eq!(
                kind(&Kind::new(group, version, name)).is_ok(),
                valid,
                "{group:?} {version:?} {name:?}"
            );
        }
    }

    #[test]
    fn label_selectors_follow_kubernetes_rules() {
        for (selector, valid) in [
            ("", true),
            ("ray.io/cluster=c,ray.io/node-type=head", true),
            ("a==b, c!=d", true),
            ("ray.io/group in (small,large),x notin (y)", true),
            ("ray.io/cluster,!gone", true),
            ("app=", true),
            ("a=b&watch=true", false),
            ("a=b/c", false),
            ("a/b/c=d", false),
            ("a in b", false),
            ("a=b#", false),
            ("=b", false),
            ("a=%2e", false),
        ] {
            assert_eq!(label_selector(selector).is_ok(), valid, "{selector:?}");
        }
    }

    #[test]
    fn namespaces_are_labels_and_messages_are_bounded() {
        assert!(namespace("team-a").is_ok());
        assert!(namespace("kube-system/../x").is_err());
        let message = object_name(&config_map(), &"/".repeat(10_000))
            .unwrap_err()
            .to_string();
        assert!(message.len() < 300, "{message}");
    }

    #[test]
    fn labels_follow_kubernetes_rules() {
        for (key, value, valid) in [
            ("ray.io/serve", "true", true),
            ("app", "", true),
            ("ray.io/serve", "a b", false),
            ("ray.io/serve", "-x", false),
            ("a/b/c", "x", false),
            ("Ray.IO/serve", "x", false),
            ("", "x", false),
            ("ray.io/", "x", false),
        ] {
            assert_eq!(label(key, value).is_ok(), valid, "{key:?}={value:?}");
        }
    }
}
