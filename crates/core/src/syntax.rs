//! Kubernetes' name and label syntaxes (`k8s.io/apimachinery/pkg/util/validation`) as predicates, written
//! once for the operator's admission, the API server's request validation and the plugins' (KubeRay's)
//! validation. Messages are the callers': each says what it checked in its own words.

/// Lower-case alphanumerics and `-`, ending alphanumeric, at most 63 bytes; `first` decides the first byte.
fn dns_label(s: &str, first: impl Fn(u8) -> bool) -> bool {
    let bytes = s.as_bytes();
    bytes.len() <= 63
        && bytes.first().is_some_and(|b| first(*b))
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// A DNS-1035 label (`IsDNS1035Label`): starts with a letter. RayCluster, RayJob and RayService names (their
/// Services are named after them), Service names.
pub fn is_dns1035_label(s: &str) -> bool {
    dns_label(s, |b| b.is_ascii_lowercase())
}

/// A DNS-1123 label (`IsDNS1123Label`): may start with a digit. Namespaces, container names.
pub fn is_dns1123_label(s: &str) -> bool {
    dns_label(s, |b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// A DNS-1123 subdomain (`IsDNS1123Subdomain`): dot-separated DNS-1123 labels, at most 253 bytes. Most
/// object names, label-key prefixes, the cluster domain.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// A label name (the part of a qualified name after any prefix): alphanumerics, `-`, `_` and `.`, starting
/// and ending alphanumeric, at most 63 bytes.
pub fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A label value (`IsValidLabelValue`): empty, or a label name.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

/// A qualified name (`IsQualifiedName`: label and annotation keys, extended resource names): a label name
/// with an optional DNS-1123 subdomain prefix and `/`.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(is_dns1035_label("a-1"));
        for bad in ["1a", "a-", "A", "", "a_b"] {
            assert!(!is_dns1035_label(bad), "{bad}");
        }
        assert!(!is_dns1035_label(&"a".repeat(64)));
        assert!(is_dns1035_label(&"a".repeat(63)));
        assert!(is_dns1123_label("1a") && !is_dns1123_label("-a") && !is_dns1123_label(""));
        assert!(is_dns1123_subdomain("made.by-kubectl.1") && is_dns1123_subdomain("cluster.local"));
        for bad in ["", "a..b", ".a", "a.", "Upper", "a/b", &"a".repeat(254)] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }

    #[test]
    fn label_names_values_and_qualified_names() {
        assert!(is_qualified_name("ray.io/accelerator-type"));
        assert!(is_qualified_name("zone"));
        for bad in ["bad key", "Bad.Prefix/x", "a/b/c", "/x", "x/", ""] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_3-x"));
        assert!(!is_label_value("-x"));
        assert!(!is_label_value(&"x".repeat(64)));
        assert!(!is_label_name(""));
    }
}
