//! Time as the plugins need it: whole Unix seconds (the precision Kubernetes stores, so a timestamp a plugin
//! computes compares equal to the one it reads back), from the host's clock so that tests can move it, and
//! printed the way KubeRay's messages print times.

use std::time::SystemTime;

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kuberay_plugin_sdk::Host;

/// The host's time in Unix seconds.
pub fn now_seconds<H: Host + ?Sized>(host: &H) -> i64 {
    host.now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .unwrap_or_default()
}

/// The host's time as a Kubernetes `Time`, to the second.
pub fn now<H: Host + ?Sized>(host: &H) -> Time {
    from_seconds(now_seconds(host))
}

/// A Kubernetes `Time` from Unix seconds (the epoch for values out of range).
pub fn from_seconds(seconds: i64) -> Time {
    Time(Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH))
}

/// Ray's job times are Unix milliseconds; Kubernetes keeps seconds.
pub fn from_millis(millis: u64) -> Time {
    from_seconds(i64::try_from(millis / 1000).unwrap_or(i64::MAX))
}

/// Unix seconds of a Kubernetes `Time`.
pub fn seconds(time: &Time) -> i64 {
    time.0.as_second()
}

/// How Go prints a `time.Time` with `%v`, as KubeRay's deadline messages do: `2025-01-02 03:04:05 +0000 UTC`.
pub fn go_default(time: &Time) -> String {
    format!("{} +0000 UTC", date_time(time))
}

/// Go's `time.DateTime` layout: `2025-01-02 03:04:05`.
pub fn date_time(time: &Time) -> String {
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%d %H:%M:%S", time.0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kuberay_plugin_sdk::testing::FakeHost;

    use super::*;

    #[test]
    fn prints_like_go() {
        let t = from_seconds(1_800_000_000);
        assert_eq!(go_default(&t), "2027-01-15 08:00:00 +0000 UTC");
        assert_eq!(date_time(&t), "2027-01-15 08:00:00");
        assert_eq!(seconds(&from_millis(1_800_000_000_999)), 1_800_000_000);
    }

    #[test]
    fn the_hosts_clock_is_read_to_the_second() {
        let host = FakeHost::new(serde_json::json!({"metadata": {"name": "x"}}));
        host.set_now(SystemTime::UNIX_EPOCH + Duration::from_millis(1_800_000_000_900));
        assert_eq!(now_seconds(&host), 1_800_000_000);
        assert_eq!(seconds(&now(&host)), 1_800_000_000);
    }
}
