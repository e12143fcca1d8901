//! How KubeRay names what it creates. Names are part of the contract: users, the autoscaler, RayJob and
//! RayService address Services and Pods by them, so the truncation rules follow KubeRay's byte for byte.

use kuberay_crds::{RayCluster, RayClusterSpec};
use serde_json::Value;

/// KubeRay's `CheckName`: keeps the last 50 bytes of a long name, and replaces a leading digit or
/// punctuation character with `r` so the result is a valid object name.
pub fn check_name(name: &str) -> String {
    fix_first_char(keep_tail(name, 50), true)
}

/// KubeRay's `CheckLabel`: keeps the last 63 bytes and replaces a leading punctuation character with `r`.
pub fn check_label(value: &str) -> String {
    fix_first_char(keep_tail(value, 63), false)
}

/// `generateName` of a Pod: the prefix cut to 50 bytes (room for `-worker-` and the 5 random characters
/// the API server adds), lower-cased, then `-head-` or `-worker-`.
pub fn pod_generate_name(prefix: &str, node_type: &str) -> String {
    let prefix = cut_front(prefix, 50);
    format!("{}-{node_type}-", prefix.to_lowercase())
}

/// The `generateName` of the head Pod.
pub fn head_pod_generate_name(cluster: &str) -> String {
    pod_generate_name(cluster, "head")
}

/// The head Pod's name with KubeRay's `ENABLE_DETERMINISTIC_HEAD_POD_NAME`: `<cluster>-head` (the cluster
/// name cut to 50 characters, lower case).
pub fn head_pod_name(cluster: &str) -> String {
    format!("{}-head", cut_front(cluster, 50).to_lowercase())
}

/// The `generateName` of a worker Pod of `group`.
pub fn worker_pod_generate_name(cluster: &str, group: &str) -> String {
    pod_generate_name(&format!("{cluster}-{group}"), "worker")
}

/// `ray.io/identifier`: `<name>-head` or `<name>-worker`.
pub fn identifier(name: &str, node_type: &str) -> String {
    check_label(&format!("{name}-{node_type}"))
}

/// `<owner>-head-svc`: the head Service KubeRay makes for a cluster, and the stable head Services of a
/// RayJob and a RayService.
pub fn default_head_service(owner: &str) -> String {
    format!("{owner}-head-svc")
}

/// The head Service of a cluster: `headGroupSpec.headService.metadata.name` if set and not empty, else
/// `<cluster>-head-svc`. The one rule the plugins and the host's Ray routing both follow.
pub fn head_service_name(cluster: &str, spec: &RayClusterSpec) -> String {
    head_service_or_default(cluster, custom_head_service(spec))
}

/// [`head_service_name`] of a RayCluster as JSON (`metadata.name` and
/// `spec.headGroupSpec.headService.metadata.name`), for code that does not read clusters into the typed
/// view, such as the host's routing to Ray heads. The same rule: a custom name if set and not empty.
pub fn head_service_name_of_json(cluster: &Value) -> String {
    let name = cluster.pointer("/metadata/name").and_then(Value::as_str);
    let custom = cluster
        .pointer("/spec/headGroupSpec/headService/metadata/name")
        .and_then(Value::as_str);
    head_service_or_default(name.unwrap_or_default(), custom)
}

/// The custom name if there is one and it is not empty, else `<cluster>-head-svc`.
fn head_service_or_default(cluster: &str, custom: Option<&str>) -> String {
    custom
        .filter(|n| !n.is_empty())
        .map_or_else(|| default_head_service(cluster), str::to_string)
}

/// [`head_service_name`] of a RayCluster object.
pub fn cluster_head_service(cluster: &RayCluster) -> String {
    head_service_name(
        cluster.metadata.name.as_deref().unwrap_or_default(),
        &cluster.spec,
    )
}

/// A custom head Service name, if the spec gives one.
pub fn custom_head_service(spec: &RayClusterSpec) -> Option<&str> {
    spec.head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.metadata.name.as_deref())
        .filter(|n| !n.is_empty())
}

/// The head Service's fully qualified DNS name in the cluster DNS domain `cluster_domain` (KubeRay's
/// `CLUSTER_DOMAIN`, [`crate::consts::CLUSTER_DOMAIN`] by default), which workers use to reach the GCS.
pub fn head_fqdn(cluster: &str, namespace: &str, spec: &RayClusterSpec, cluster_domain: &str) -> String {
    format!(
        "{}.{namespace}.svc.{cluster_domain}",
        head_service_name(cluster, spec)
    )
}

/// `RAY_IP`, kept by KubeRay for old images: the first DNS label of the FQDN.
pub fn ray_ip_from_fqdn(fqdn: &str) -> &str {
    fqdn.split('.').next().unwrap_or(fqdn)
}

/// `<owner>-serve-svc`: the Serve Service of a cluster or a RayService.
pub fn serve_service_name(owner: &str) -> String {
    format!("{owner}-serve-svc")
}

/// The headless Service of multi-host worker groups.
pub fn headless_service_name(cluster: &str) -> String {
    format!("{cluster}-headless")
}

/// The head Ingress of a cluster.
pub fn ingress_name(cluster: &str) -> String {
    check_name(&format!("{cluster}-head-ingress"))
}

/// The Job that cleans a GCS-FT cluster's Redis up after it is deleted.
pub fn redis_cleanup_job_name(cluster: &str) -> String {
    check_label(&format!("{cluster}-redis-cleanup"))
}

/// The characters of Kubernetes' `rand.String` (no vowels, so no words; no look-alike digits).
pub const RANDOM_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// KubeRay's `<base>-<5 random characters>`. Plugins have no random source of their own (and need none):
/// the suffix is derived from `seed` (typically the owner's uid and what the name is for), and the name is
/// recorded in the owner's status before anything is created with it, so it is never derived twice.
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
            let index = usize::try_from(state % RANDOM_ALPHABET.len() as u64).unwrap_or_default();
            char::from(RANDOM_ALPHABET[index])
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

pub use kuberay_plugin_sdk::syntax::is_dns1035_label;

/// The first `max` bytes (on a character boundary), as KubeRay's `prefix[:50]` does for ASCII names.
fn cut_front(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The last `max` bytes (on a character boundary).
fn keep_tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

fn fix_first_char(s: &str, digits_too: bool) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if (digits_too && c.is_ascii_digit()) || is_punctuation(c) => {
            format!("r{}", chars.as_str())
        }
        _ => s.to_string(),
    }
}

/// Unicode's punctuation category for ASCII (Go's `unicode.IsPunct`), which unlike Rust's
/// `is_ascii_punctuation` leaves out symbols such as `+` and `$`.
fn is_punctuation(c: char) -> bool {
    "!\"#%&'()*,-./:;?@[\\]_{}".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consts::CLUSTER_DOMAIN;

    #[test]
    fn pod_names_cut_the_prefix_to_fifty_bytes_and_lower_case_it() {
        assert_eq!(
            head_pod_generate_name("raycluster-sample"),
            "raycluster-sample-head-"
        );
        assert_eq!(worker_pod_generate_name("demo", "Small"), "demo-small-worker-");
        let long = "a".repeat(60);
        assert_eq!(head_pod_generate_name(&long), format!("{}-head-", "a".repeat(50)));
    }

    #[test]
    fn check_name_and_label_keep_the_tail_and_fix_the_first_character_like_go() {
        assert_eq!(check_name("demo"), "demo");
        assert_eq!(check_name("1demo"), "rdemo");
        assert_eq!(check_name("-demo"), "rdemo");
        let long = format!("x{}", "b".repeat(55));
        assert_eq!(check_name(&long), "b".repeat(50));
        assert_eq!(check_label(&"c".repeat(70)), "c".repeat(63));
        assert_eq!(check_label("9lives"), "9lives");
        assert_eq!(check_label("-abc"), "rabc");
        // Go's unicode.IsPunct leaves symbols alone.
        assert_eq!(check_label("+abc"), "+abc");
        assert_eq!(check_label("$abc"), "$abc");
    }

    #[test]
    fn service_names_follow_kuberay() {
        let spec = RayClusterSpec::default();
        assert_eq!(head_service_name("demo", &spec), "demo-head-svc");
        assert_eq!(
            head_fqdn("demo", "ns", &spec, CLUSTER_DOMAIN),
            "demo-head-svc.ns.svc.cluster.local"
        );
        assert_eq!(
            head_fqdn("demo", "ns", &spec, "corp.example"),
            "demo-head-svc.ns.svc.corp.example"
        );
        assert_eq!(
            ray_ip_from_fqdn("demo-head-svc.ns.svc.cluster.local"),
            "demo-head-svc"
        );
        assert_eq!(serve_service_name("demo"), "demo-serve-svc");
        assert_eq!(headless_service_name("demo"), "demo-headless");
        assert_eq!(ingress_name("demo"), "demo-head-ingress");
        assert_eq!(redis_cleanup_job_name("demo"), "demo-redis-cleanup");
        assert_eq!(identifier("demo", "head"), "demo-head");
    }

    #[test]
    fn a_custom_head_service_name_wins_unless_empty() {
        let mut spec: RayClusterSpec = serde_json::from_value(serde_json::json!({
            "headGroupSpec": {"headService": {"metadata": {"name": "custom"}}, "template": {}}
        }))
        .unwrap_or_default();
        assert_eq!(head_service_name("demo", &spec), "custom");
        if let Some(s) = spec.head_group_spec.head_service.as_mut() {
            s.metadata.name = Some(String::new());
        }
        assert_eq!(head_service_name("demo", &spec), "demo-head-svc");
    }

    #[test]
    fn the_json_view_follows_the_same_rule() {
        let cluster = |head_service: Value| serde_json::json!({"metadata": {"name": "demo"}, "spec": {"headGroupSpec": head_service}});
        let custom = cluster(serde_json::json!({"headService": {"metadata": {"name": "custom"}}}));
        assert_eq!(head_service_name_of_json(&custom), "custom");
        let empty = cluster(serde_json::json!({"headService": {"metadata": {"name": ""}}}));
        assert_eq!(head_service_name_of_json(&empty), "demo-head-svc");
        assert_eq!(
            head_service_name_of_json(&cluster(serde_json::json!({}))),
            "demo-head-svc"
        );
    }

    #[test]
    fn random_suffixes_look_like_kuberay_and_depend_on_the_seed() {
        let a = with_random_suffix("rayjob-sample", &["uid", "1"]);
        let b = with_random_suffix("rayjob-sample", &["uid", "2"]);
        assert_ne!(a, b);
        let suffix = a.strip_prefix("rayjob-sample-").unwrap_or_default();
        assert_eq!(suffix.len(), 5);
        assert!(suffix.bytes().all(|c| RANDOM_ALPHABET.contains(&c)));
        assert_eq!(a, with_random_suffix("rayjob-sample", &["uid", "1"]));
    }

    #[test]
    fn dns1035() {
        assert!(is_dns1035_label("a-1"));
        assert!(!is_dns1035_label("1a"));
        assert!(!is_dns1035_label("a-"));
        assert!(!is_dns1035_label("A"));
        assert!(!is_dns1035_label(&"a".repeat(64)));
    }
}
