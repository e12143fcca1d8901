//! The Kubernetes syntaxes requests must follow (`k8s.io/apimachinery/pkg/util/validation` and
//! `resource.ParseQuantity`), so that a bad value is refused with a message naming its field instead of
//! surfacing later as a Pod the operator cannot create.

/// Lower-case alphanumerics and `-`, starting with a letter, ending with an alphanumeric, at most 63
/// characters: what RayCluster, RayJob and RayService names must be (their Services are named after them).
pub(crate) fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_lowercase) && is_dns_label_body(b)
}

/// A DNS-1123 label: like [`is_dns1035_label`] but it may start with a digit.
pub(crate) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    b.first()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && is_dns_label_body(b)
}

fn is_dns_label_body(b: &[u8]) -> bool {
    b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// Dot-separated DNS-1123 labels, at most 253 characters (ConfigMap names, label-key prefixes).
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// A label value: empty, or at most 63 alphanumerics, `-`, `_` and `.`, starting and ending with an
/// alphanumeric.
pub(crate) fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name(s)
}

fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// A label or annotation key, or an extended resource name: `[prefix/]name`, the prefix a DNS-1123
/// subdomain.
pub(crate) fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_label_name(name),
        None => is_label_name(s),
    }
}

/// A non-negative Kubernetes quantity: a decimal number (`1`, `0.5`, `.5`, `1.`) followed by one binary
/// (`Ki`…`Ei`) or decimal (`n`, `u`, `m`, `k`, `M`…`E`) suffix or a decimal exponent (`e3`, `E-2`).
pub(crate) fn is_quantity(s: &str) -> bool {
    let s = s.strip_prefix('+').unwrap_or(s);
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    is_decimal(number) && is_quantity_suffix(suffix)
}

fn is_decimal(number: &str) -> bool {
    let mut parts = number.split('.');
    let whole = parts.next().unwrap_or_default();
    let fraction = parts.next();
    parts.next().is_none()
        && (!whole.is_empty() || fraction.is_some_and(|f| !f.is_empty()))
        && whole.bytes().all(|c| c.is_ascii_digit())
        && fraction.is_none_or(|f| f.bytes().all(|c| c.is_ascii_digit()))
}

fn is_quantity_suffix(suffix: &str) -> bool {
    const SUFFIXES: &[&str] = &[
        "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E",
    ];
    if SUFFIXES.contains(&suffix) {
        return true;
    }
    let Some(exponent) = suffix.strip_prefix(['e', 'E']) else {
        return false;
    };
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
}

/// Suffixes a compute template's `memory_unit` may have: the byte multiples (`Gi`, `G`, ...). KubeRay
/// accepts any quantity suffix, so `m` (milli-bytes) would be accepted and make every Pod unschedulable.
pub(crate) const MEMORY_UNITS: &[&str] = &["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dns1035_label("raycluster-sample"));
        assert!(!is_dns1035_label("1cluster"));
        assert!(!is_dns1035_label("cluster-"));
        assert!(!is_dns1035_label("Cluster"));
        assert!(!is_dns1035_label(""));
        assert!(!is_dns1035_label(&"a".repeat(64)));
        assert!(is_dns1123_label("1cluster"));
        assert!(is_dns1123_subdomain("small.template-1"));
        assert!(!is_dns1123_subdomain("small..template"));
        assert!(is_label_value(""));
        assert!(is_label_value("Alice_1.x"));
        assert!(!is_label_value("alice@example.com"));
        assert!(!is_label_value("-alice"));
        assert!(is_qualified_name("nvidia.com/gpu"));
        assert!(is_qualified_name("vpc.amazonaws.com/efa"));
        assert!(is_qualified_name("example"));
        assert!(!is_qualified_name("Example.com/gpu"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name(""));
    }

    #[test]
    fn quantities() {
        for ok in [
            "1", "500m", "0.5", ".5", "1.", "4Gi", "512Mi", "1e3", "1E-2", "+2", "10k",
        ] {
            assert!(is_quantity(ok), "{ok}");
        }
        for bad in ["", "Gi", "-1", "1.2.3", "4GB", "4 Gi", "1e", "abc", ".", "4gi"] {
            assert!(!is_quantity(bad), "{bad}");
        }
    }
}
