//! The version of the WIT world, `wit/plugin.wit`: the one the operator serves and the SDK builds plugins
//! against. Plugins carry the version they were built against in their metadata.

/// The version of `wit/plugin.wit`'s package, `kuberay:plugin@WIT_VERSION` (a test holds the two equal).
pub const WIT_VERSION: &str = "0.1.1";

/// Whether a plugin built against WIT version `theirs` (`major.minor[.patch]`) runs on [`WIT_VERSION`]: the
/// same major and an equal or older minor (minor versions only add functions).
pub fn wit_compatible(theirs: &str) -> bool {
    match (major_minor(theirs), major_minor(WIT_VERSION)) {
        (Some((major, minor)), Some((ours_major, ours_minor))) => major == ours_major && minor <= ours_minor,
        _ => false,
    }
}

fn major_minor(version: &str) -> Option<(u64, u64)> {
    let mut parts = version.split('.').map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Some((major, minor)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_wit_packages() {
        let wit = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit/plugin.wit"))
            .unwrap_or_else(|e| panic!("reading wit/plugin.wit: {e}"));
        let package = format!("package kuberay:plugin@{WIT_VERSION};");
        assert!(
            wit.lines().any(|l| l.trim() == package),
            "wit/plugin.wit does not declare {package}"
        );
    }

    #[test]
    fn older_minors_of_the_same_major_are_compatible() {
        assert!(major_minor(WIT_VERSION).is_some());
        let (major, minor) = major_minor(WIT_VERSION).unwrap_or_default();
        assert!(wit_compatible(WIT_VERSION));
        assert!(wit_compatible(&format!("{major}.0.0")));
        assert!(wit_compatible(&format!("{major}.{minor}")));
        assert!(!wit_compatible(&format!("{major}.{}.0", minor + 1)));
        assert!(!wit_compatible(&format!("{}.0.0", major + 1)));
        assert!(!wit_compatible("x.y"));
        assert!(!wit_compatible(""));
    }
}
