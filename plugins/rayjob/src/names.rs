//! Names of what a RayJob creates. The cluster and the Ray submission get KubeRay's `<rayjob>-<5 random>`
//! names; the plugin has no random source of its own (and needs none), so the suffix is derived from the
//! RayJob's uid, the host's clock and what it is for. The names are recorded in the status before anything
//! is created with them, so they never need to be derived twice.

use kuberay_crds::RayCluster;

/// The characters of Kubernetes' `rand.String` (no vowels, so no words; no look-alike digits).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// KubeRay's `<base>-<5 random characters>`, seeded by `seed`.
pub fn with_random_suffix(base: &str, seed: &[&str]) -> String {
    let mut state = 0xcbf2_9ce4_8422_2325_u64;
    for part in seed {
        for byte in part.bytes().chain([0xff]) {
            state ^= u64::from(byte);
            state = state.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let suffix: String = (0..5)
        .map(|_| {
            state = splitmix(state);
            let index = usize::try_from(state % ALPHABET.len() as u64).unwrap_or_default();
            char::from(ALPHABET[index])
        })
        .collect();
    format!("{base}-{suffix}")
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The RayJob's own head Service, which follows whichever cluster currently runs the job.
pub fn head_service(rayjob: &str) -> String {
    format!("{rayjob}-head-svc")
}

/// The head Service of a cluster: a custom `headService` name, or `<cluster>-head-svc`.
pub fn cluster_head_service(cluster: &RayCluster) -> String {
    let custom = cluster
        .spec
        .head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.metadata.name.as_deref())
        .filter(|n| !n.is_empty());
    match custom {
        Some(name) => name.to_string(),
        None => format!(
            "{}-head-svc",
            cluster.metadata.name.as_deref().unwrap_or_default()
        ),
    }
}

/// Kubernetes label values are at most 63 characters and must start with an alphanumeric; KubeRay keeps
/// the end of long values and replaces a leading punctuation mark.
pub fn check_label(value: &str) -> String {
    fit(value, 63, false)
}

/// Names that Pods derive from (KubeRay's `CheckName`, used for the auth Secret's name): at most 50
/// characters, starting with a letter.
pub fn check_name(value: &str) -> String {
    fit(value, 50, true)
}

fn fit(value: &str, max: usize, no_leading_digit: bool) -> String {
    let mut start = value.len().saturating_sub(max);
    while !value.is_char_boundary(start) {
        start += 1;
    }
    let tail = &value[start..];
    match tail.chars().next() {
        Some(c) if (no_leading_digit && c.is_ascii_digit()) || c.is_ascii_punctuation() => {
            format!("r{}", &tail[c.len_utf8()..])
        }
        _ => tail.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_suffixes_look_like_kuberay_and_depend_on_the_seed() {
        let a = with_random_suffix("rayjob-sample", &["uid", "1"]);
        let b = with_random_suffix("rayjob-sample", &["uid", "2"]);
        assert_ne!(a, b);
        let suffix = a.strip_prefix("rayjob-sample-").unwrap();
        assert_eq!(suffix.len(), 5);
        assert!(suffix.bytes().all(|c| ALPHABET.contains(&c)));
        assert_eq!(a, with_random_suffix("rayjob-sample", &["uid", "1"]));
    }

    #[test]
    fn labels_and_names_are_trimmed_like_kuberay() {
        assert_eq!(check_label("-abc"), "rabc");
        let long = format!("x{}", "a".repeat(70));
        assert_eq!(check_label(&long).len(), 63);
        assert_eq!(check_name("1abc"), "rabc");
        assert_eq!(check_name(&long).len(), 50);
    }
}
