//! Logging: structured `tracing` events on stderr, shared with the operator ([`kuberay_telemetry`]):
//! `--log-format auto` (the default) is JSON unless stderr is a terminal; text never carries colours off
//! a terminal.

pub use kuberay_telemetry::init;
