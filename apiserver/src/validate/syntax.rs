//! The Kubernetes syntaxes requests must follow (`k8s.io/apimachinery/pkg/util/validation` and
//! `resource.ParseQuantity`), so that a bad value is refused with a message naming its field instead of
//! surfacing later as a Pod the operator cannot create.

pub(crate) use kuberay_plugin_sdk::syntax::{
    is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_label_value, is_qualified_name,
};

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
