//! The Kubernetes name syntaxes KubeRay checks (`k8s.io/apimachinery/pkg/util/validation`).

pub(super) fn is_dns1035_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            let bytes = part.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && bytes.first().is_some_and(|b| b.is_ascii_alphanumeric())
                && bytes.last().is_some_and(|b| b.is_ascii_alphanumeric())
        })
}

pub(super) fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

pub(super) fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_follow_kubernetes_syntax() {
        assert!(is_dns1035_label("raycluster-sample"));
        assert!(!is_dns1035_label("1cluster"));
        assert!(!is_dns1035_label("cluster-"));
        assert!(!is_dns1035_label("Cluster"));
        assert!(!is_dns1035_label(""));
        assert!(is_qualified_name("ray.io/accelerator-type"));
        assert!(is_qualified_name("zone"));
        assert!(!is_qualified_name("bad key"));
        assert!(!is_qualified_name("Bad.Prefix/x"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_3-x"));
        assert!(!is_label_value("-x"));
        assert!(!is_label_value(&"x".repeat(64)));
    }
}
