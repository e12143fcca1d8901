//! How KubeRay names what it creates. Names are part of the contract: users, the autoscaler and RayJob
//! address Services and Pods by them, so the truncation rules below follow KubeRay's byte for byte.

use kuberay_crds::RayClusterSpec;

use crate::consts::CLUSTER_DOMAIN;

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

/// The `generateName` of a worker Pod of `group`.
pub fn worker_pod_generate_name(cluster: &str, group: &str) -> String {
    pod_generate_name(&format!("{cluster}-{group}"), "worker")
}

/// KubeRay's `CheckName`: keeps the last 50 bytes of a long name, and replaces a leading digit or
/// punctuation character with `r` so the result is a valid object name.
pub fn check_name(name: &str) -> String {
    fix_first_char(keep_tail(name, 50), true)
}

/// KubeRay's `CheckLabel`: keeps the last 63 bytes and replaces a leading punctuation character with `r`.
pub fn check_label(value: &str) -> String {
    fix_first_char(keep_tail(value, 63), false)
}

/// `ray.io/identifier`: `<cluster>-head` or `<cluster>-worker`.
pub fn identifier(cluster: &str, node_type: &str) -> String {
    check_label(&format!("{cluster}-{node_type}"))
}

/// The head Service: `headGroupSpec.headService.metadata.name` if set, else `<cluster>-head-svc`.
pub fn head_service_name(cluster: &str, spec: &RayClusterSpec) -> String {
    spec.head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.metadata.name.as_deref())
        .filter(|n| !n.is_empty())
        .map_or_else(|| format!("{cluster}-head-svc"), str::to_string)
}

/// The head Service's fully qualified DNS name, which workers use to reach the GCS.
pub fn head_fqdn(cluster: &str, namespace: &str, spec: &RayClusterSpec) -> String {
    format!(
        "{}.{namespace}.svc.{CLUSTER_DOMAIN}",
        head_service_name(cluster, spec)
    )
}

/// `RAY_IP`, kept by KubeRay for old images: the first DNS label of the FQDN.
pub fn ray_ip_from_fqdn(fqdn: &str) -> &str {
    fqdn.split('.').next().unwrap_or(fqdn)
}

pub fn serve_service_name(cluster: &str) -> String {
    format!("{cluster}-serve-svc")
}

/// The headless Service of multi-host worker groups.
pub fn headless_service_name(cluster: &str) -> String {
    format!("{cluster}-headless")
}

pub fn ingress_name(cluster: &str) -> String {
    check_name(&format!("{cluster}-head-ingress"))
}

pub fn redis_cleanup_job_name(cluster: &str) -> String {
    check_label(&format!("{cluster}-redis-cleanup"))
}

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
    fn check_name_keeps_the_tail_and_fixes_the_first_character() {
        assert_eq!(check_name("demo"), "demo");
        assert_eq!(check_name("1demo"), "rdemo");
        assert_eq!(check_name("-demo"), "rdemo");
        let long = format!("x{}", "b".repeat(55));
        assert_eq!(check_name(&long), "b".repeat(50));
        assert_eq!(check_label(&"c".repeat(70)), "c".repeat(63));
        assert_eq!(check_label("9lives"), "9lives");
    }

    #[test]
    fn service_names_follow_kuberay() {
        let spec = RayClusterSpec::default();
        assert_eq!(head_service_name("demo", &spec), "demo-head-svc");
        assert_eq!(
            head_fqdn("demo", "ns", &spec),
            "demo-head-svc.ns.svc.cluster.local"
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
}
