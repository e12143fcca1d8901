//! How to reach Ray heads, as a program's configuration (and, with the `clap` feature, its command-line
//! flags): the operator and the API server take the same three flags with the same defaults, from here.

use std::time::Duration;

use crate::{RayHeads, RoutingMode};

/// The DNS domain of the Kubernetes cluster, in head Service names of direct routes.
pub const DEFAULT_CLUSTER_DOMAIN: &str = "cluster.local";

/// Routing of requests to Ray heads.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RoutingOptions {
    /// Reach Ray heads only through the Kubernetes API server's proxy subresources (services/.../proxy and
    /// pods/.../proxy), for programs that cannot reach Pod addresses (`--use-kubernetes-proxy[=true|false]`).
    #[cfg_attr(
        feature = "clap",
        arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
            action = clap::ArgAction::Set, default_value_t = false, value_parser = parse_go_bool)
    )]
    pub use_kubernetes_proxy: bool,
    /// The cluster's DNS domain, used in head Service names when reaching Ray heads directly (KubeRay's
    /// `CLUSTER_DOMAIN`; empty means the default, as for KubeRay).
    #[cfg_attr(
        feature = "clap",
        arg(long, env = "CLUSTER_DOMAIN", default_value = DEFAULT_CLUSTER_DOMAIN, value_parser = parse_cluster_domain)
    )]
    pub cluster_domain: String,
    /// Timeout of one request to a Ray head (default: 2s direct, 10s through the API server).
    #[cfg_attr(feature = "clap", arg(long, value_parser = parse_duration))]
    pub ray_request_timeout: Option<Duration>,
}

impl Default for RoutingOptions {
    fn default() -> Self {
        Self {
            use_kubernetes_proxy: false,
            cluster_domain: DEFAULT_CLUSTER_DOMAIN.into(),
            ray_request_timeout: None,
        }
    }
}

impl RoutingOptions {
    /// The routing mode these options choose.
    pub fn mode(&self) -> RoutingMode {
        if self.use_kubernetes_proxy {
            RoutingMode::KubernetesProxy
        } else {
            RoutingMode::Direct {
                cluster_domain: self.cluster_domain.clone(),
            }
        }
    }

    /// A sender routing this way.
    pub fn heads(&self) -> RayHeads {
        RayHeads::new(self.mode(), self.ray_request_timeout)
    }
}

/// A cluster domain: empty is the default (`cluster.local`), as KubeRay reads `CLUSTER_DOMAIN`.
pub fn parse_cluster_domain(value: &str) -> Result<String, std::convert::Infallible> {
    Ok(if value.is_empty() {
        DEFAULT_CLUSTER_DOMAIN.to_string()
    } else {
        value.to_string()
    })
}

/// A boolean flag value as Go's `strconv.ParseBool` reads it (`--use-kubernetes-proxy=true`, as KubeRay's
/// chart writes its flags): `1`, `t`, `T`, `true`, `TRUE`, `True` and their `false` counterparts.
pub fn parse_go_bool(text: &str) -> Result<bool, String> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!("{text:?} is not a boolean (true or false)")),
    }
}

/// A duration flag: `500ms`, `10s`, `2m`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((text, "s"), |i| text.split_at(i));
    let value: f64 = number.parse().map_err(|_| format!("invalid duration {text:?}"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("invalid duration unit in {text:?} (use ms, s or m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("2h").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn the_proxy_flag_chooses_the_mode() {
        assert_eq!(
            RoutingOptions::default().mode(),
            RoutingMode::Direct {
                cluster_domain: "cluster.local".into()
            }
        );
        let proxy = RoutingOptions {
            use_kubernetes_proxy: true,
            ..RoutingOptions::default()
        };
        assert_eq!(proxy.mode(), RoutingMode::KubernetesProxy);
    }
}
