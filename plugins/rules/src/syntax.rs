//! The Kubernetes name and label syntaxes KubeRay checks (`k8s.io/apimachinery/pkg/util/validation`; the
//! predicates are `kuberay_core::syntax`'s, shared with the operator), with the error messages KubeRay
//! prints when one fails.

pub use kuberay_plugin_sdk::syntax::{
    is_dns1035_label, is_dns1123_subdomain, is_label_name, is_label_value, is_qualified_name,
};

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

/// The pattern of a DNS-1123 label, as Kubernetes' messages quote it.
const DNS1123_LABEL_FORMAT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

/// Kubernetes' `IsDNS1123Label`: the reasons `value` is not a DNS-1123 label, empty if it is one.
pub fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_string());
    }
    if !matches_dns1123_format(value) {
        if value.split('.').all(matches_dns1123_format) {
            // A subdomain that is not a label: it has dots.
            errors.push("must not contain dots".to_string());
        } else {
            errors.push(format!(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must \
                 start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for \
                 validation is '{DNS1123_LABEL_FORMAT}')"
            ));
        }
    }
    errors
}

/// The DNS-1123 label pattern without the length limit.
fn matches_dns1123_format(value: &str) -> bool {
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = value.as_bytes();
    bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes.iter().all(|b| alnum(b) || *b == b'-')
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn dns1123_label_errors_are_kubernetes_messages() {
        assert!(dns1123_label_errors("1-group").is_empty());
        assert_eq!(dns1123_label_errors("a.b"), ["must not contain dots"]);
        let errors = dns1123_label_errors("Group_A");
        assert_eq!(
            errors,
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start \
              and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is \
              '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert_eq!(
            dns1123_label_errors(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert_eq!(dns1123_label_errors("").len(), 1);
    }
}
