//! Who a replica is and where it runs.

use std::{
    hash::{BuildHasher, Hasher},
    path::Path,
};

/// The namespace file of a Pod's ServiceAccount (mounted with its token).
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// `name` (the Pod name, or the host name) plus a random suffix, so two processes never share an identity
/// (a restarted container keeps its Pod name but must not inherit its predecessor's leadership).
pub fn unique_identity(name: &str) -> String {
    // `RandomState` is seeded from the operating system's randomness, differently in each process.
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{name}_{:016x}", hasher.finish())
}

/// The namespace named in `path` (the ServiceAccount's namespace file), if it exists and is not empty.
pub fn namespace_from_file(path: &Path) -> Option<String> {
    let namespace = std::fs::read_to_string(path).ok()?;
    let namespace = namespace.trim();
    (!namespace.is_empty()).then(|| namespace.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_unique_and_keep_the_name() {
        let (a, b) = (unique_identity("pod-0"), unique_identity("pod-0"));
        assert_ne!(a, b);
        assert!(a.starts_with("pod-0_"), "{a}");
    }

    #[test]
    fn the_namespace_file_is_trimmed_and_may_be_missing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("namespace");
        assert_eq!(namespace_from_file(&file), None);
        std::fs::write(&file, "kuberay-system\n").unwrap();
        assert_eq!(namespace_from_file(&file).as_deref(), Some("kuberay-system"));
        std::fs::write(&file, " \n").unwrap();
        assert_eq!(namespace_from_file(&file), None);
    }
}
