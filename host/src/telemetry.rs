//! Logging: structured `tracing` events on stderr as JSON or text, shared with `kuberay-apiserver`
//! ([`kuberay_telemetry`]): `--log-format auto` (the default) is JSON unless stderr is a terminal.

pub use kuberay_telemetry::{LogFormat, Output, init};
