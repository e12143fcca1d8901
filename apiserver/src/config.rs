//! The server's configuration: its command line is the only place defaults are written.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use kuberay_rayhead::{RoutingOptions, parse_duration, parse_go_bool};

use crate::auth::AuthMode;

/// Log output on stderr (shared with the operator).
pub use kuberay_telemetry::LogFormat;

/// `kuberay-apiserver`'s flags.
#[derive(Debug, Clone, clap::Parser)]
#[command(
    name = "kuberay-apiserver",
    version,
    about = "KubeRay-compatible REST and gRPC API for Ray clusters, jobs and services, acting as each caller \
             toward Kubernetes"
)]
pub struct Config {
    /// Where the gRPC services listen (KubeRay's apiserver uses 8887).
    #[arg(long, default_value = "0.0.0.0:8887", env = "KUBERAY_APISERVER_GRPC_ADDRESS")]
    pub grpc_bind_address: SocketAddr,
    /// Where the REST API, /openapi.json, /healthz, /readyz and /metrics listen (KubeRay's uses 8888).
    #[arg(long, default_value = "0.0.0.0:8888", env = "KUBERAY_APISERVER_HTTP_ADDRESS")]
    pub http_bind_address: SocketAddr,
    /// Kubeconfig of the server's own identity; otherwise KUBECONFIG, ~/.kube/config or in-cluster.
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// `kubernetes`: every call needs a bearer token (or a client certificate) and acts as its user.
    /// `none`: no authentication, every call acts as this server (KubeRay's behaviour; logged as a warning).
    #[arg(long, value_enum, default_value = "kubernetes")]
    pub auth: AuthMode,
    /// Audiences a bearer token must be for (comma-separated); the API server's own when empty.
    #[arg(long, value_delimiter = ',')]
    pub token_audiences: Vec<String>,
    /// How long an accepted token's identity is remembered (0 reviews every call).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub token_cache_ttl: Duration,
    /// Serve both ports over TLS with this certificate chain (PEM); needs --tls-key-file.
    #[arg(long, requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The private key of --tls-cert-file (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Accept client certificates signed by these CAs (PEM) as identities (CN = user, O = groups); needs TLS.
    #[arg(long, requires = "tls_cert_file")]
    pub client_ca_file: Option<PathBuf>,
    /// Allow browsers from this origin (`https://host[:port]`, or `*` for any) to call the REST API (CORS);
    /// other origins get no CORS headers. Off when not given.
    #[arg(long)]
    pub cors_allow_origin: Option<String>,
    /// Longest time one call may take, Kubernetes and Ray head requests included (watches through the
    /// `ray.io/v1` pass-through last as long as they ask).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Largest request body (REST) or message (gRPC), in bytes.
    #[arg(long, default_value_t = 3 << 20)]
    pub max_request_bytes: usize,
    /// How long running calls may finish after SIGTERM before the server exits.
    #[arg(long, default_value = "20s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// Serve KubeRay's apiserver v2 on the REST port: the `ray.io/v1` pass-through with its compute-template
    /// middleware, and the Services proxy of Ray heads (`--enable-api-server-v2[=true|false]`, KubeRay's flag).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true",
        action = clap::ArgAction::Set, default_value_t = true, value_parser = parse_go_bool)]
    pub enable_api_server_v2: bool,
    /// How job submissions reach Ray heads; through the API server's proxy they go as the caller.
    #[command(flatten)]
    pub routing: RoutingOptions,
    /// Log format on stderr: `auto` is JSON unless stderr is a terminal; the level comes from RUST_LOG
    /// (default info).
    #[arg(long, value_enum, default_value = "auto")]
    pub log_format: LogFormat,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn defaults_match_kuberays_ports_and_turn_authentication_on() {
        let config = Config::try_parse_from(["kuberay-apiserver"]).unwrap();
        assert_eq!(config.grpc_bind_address.port(), 8887);
        assert_eq!(config.http_bind_address.port(), 8888);
        assert_eq!(config.auth, AuthMode::Kubernetes);
        assert_eq!(
            config.log_format,
            LogFormat::Auto,
            "JSON off a terminal, as the operator"
        );
        assert!(config.enable_api_server_v2);
        for (flag, v2) in [
            ("--enable-api-server-v2=false", false),
            ("--enable-api-server-v2", true),
        ] {
            assert_eq!(
                Config::try_parse_from(["x", flag]).unwrap().enable_api_server_v2,
                v2,
                "{flag}"
            );
        }
        assert!(Config::try_parse_from(["x", "--auth", "nobody"]).is_err());
        assert!(Config::try_parse_from(["x", "--tls-cert-file", "c.pem"]).is_err());
        assert!(Config::try_parse_from(["x", "--client-ca-file", "ca.pem"]).is_err());
    }
}
