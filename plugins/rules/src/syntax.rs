//! The Kubernetes name and label syntaxes KubeRay checks (`k8s.io/apimachinery/pkg/util/validation`), with
//! the error messages it prints when one fails.

pub use crate::names::is_dns1035_label;

/// The pattern of a DNS-1035 label, as Kubernetes' messages quote it.
const DNS1035_LABEL_FORMAT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

/// Kubernetes' `IsDNS1035Label`: the reasons `value` is not a DNS-1035 label, empty if it is one.
pub fn dns1035_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !matches_dns1035_format(value) {
        errors.push(format!(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an \
             alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', \
             regex used for validation is '{DNS1035_LABEL_FORMAT}')"
        ));
    }
    errors
}

/// A list of messages the way Go's `%v` prints a `[]string`: `[first second]`.
pub fn go_list(messages: &[String]) -> String {
    format!("[{}]", messages.join(" "))
}

/// The DNS-1035 pattern without the length limit.
fn matches_dns1035_format(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_lowercase)
        && bytes
            .last()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
}

/// A label name (the part of a key after any prefix): alphanumerics, `-`, `_` and `.`, starting and
/// ending alphanumeric, at most 63 bytes.
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

/// A DNS-1123 subdomain: dot-separated lower-case alphanumeric labels with inner `-`, at most 253 bytes.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            let bytes = part.as_bytes();
            !bytes.is_empty()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        })
}

/// A qualified name (a label key): a label name with an optional DNS-1123 subdomain prefix and `/`.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

/// A label value: empty, or a label name.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_follow_kubernetes_syntax() {
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

    #[test]
    fn dns1035_errors_are_kubernetes_messages() {
        assert!(dns1035_label_errors("raycluster-sample").is_empty());
        let errors = dns1035_label_errors("1cluster");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("a DNS-1035 label must consist of lower case"));
        assert!(errors[0].ends_with(
            "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ));
        let long = dns1035_label_errors(&"a".repeat(64));
        assert_eq!(long, ["must be no more than 63 characters"]);
        assert_eq!(dns1035_label_errors(&format!("{}-", "a".repeat(64))).len(), 2);
        assert_eq!(go_list(&["a b".into(), "c".into()]), "[a b c]");
    }
}
