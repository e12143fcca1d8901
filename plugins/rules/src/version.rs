//! Ray version comparisons, parsed the way KubeRay's `version.ParseGeneric` does (`2.53`, `v2.53.0`,
//! `2.53.0rc1` all work): features such as the unified health endpoint depend on them.

/// The numeric components of a version, or `None` if it is not at least `major.minor`.
pub fn parse(version: &str) -> Option<Vec<u64>> {
    let text = version.trim();
    let text = text.strip_prefix('v').unwrap_or(text);
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let numbers = text[..end].trim_end_matches('.');
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    if parts[0].len() > 1 && parts[0].starts_with('0') {
        return None;
    }
    parts.iter().map(|p| p.parse().ok()).collect()
}

/// `version >= minimum`; an unparsable version is never new enough.
pub fn ray_version_at_least(version: &str, minimum: &[u64]) -> bool {
    let Some(parts) = parse(version) else {
        return false;
    };
    let len = parts.len().max(minimum.len());
    for i in 0..len {
        let a = parts.get(i).copied().unwrap_or(0);
        let b = minimum.get(i).copied().unwrap_or(0);
        if a != b {
            return a > b;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_versions_compare_numerically() {
        assert!(ray_version_at_least("2.53.0", &[2, 53, 0]));
        assert!(ray_version_at_least("2.53", &[2, 53, 0]));
        assert!(ray_version_at_least("v2.60.1", &[2, 53, 0]));
        assert!(ray_version_at_least("2.54.0rc1", &[2, 53, 0]));
        assert!(!ray_version_at_least("2.52.9", &[2, 53, 0]));
        assert!(!ray_version_at_least("", &[2, 53, 0]));
        assert!(!ray_version_at_least("latest", &[2, 53, 0]));
        assert!(!ray_version_at_least("2", &[2, 0, 0]));
    }
}
