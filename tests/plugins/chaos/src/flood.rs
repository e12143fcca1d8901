//! Behaviours that try to make the host work without bound, or to forge the operator's log:
//!
//! - `flood-reads`: reads a ConfigMap over and over, ignoring every error;
//! - `flood-writes`: applies the same ConfigMap over and over, ignoring every error;
//! - `flood-events`: records events over and over, ignoring every error;
//! - `oversized-object`: applies a ConfigMap of 2 MiB;
//! - `oversized-note`: records an event whose note is 64 KiB;
//! - `oversized-selector`: lists ConfigMaps with a 64 KiB label selector;
//! - `flood-log`: logs 100 000 lines through the log interface and on stdout, then reports `status.observed`;
//! - `forge-log`: logs a message and a field with line breaks and ANSI escapes that imitate an operator
//!   line, then reports `status.observed`;
//! - `event-storm`: records 100 events (the most one reconcile may), reports `status.observed` and asks to be
//!   requeued after 200 ms, forever: many reconciles' worth of events;
//! - `write-bytes`: applies `spec.count` ConfigMaps of 900 KiB each (`<name>-mib-<i>`), reports
//!   `status.observed` and asks to be requeued after 200 ms;
//! - `forge-error`: records a Warning event whose note imitates a JSON log line with ANSI escapes
//!   ([`FORGED_ERROR`]), tries events whose reason and action do ([`FORGED_WORD`]), and fails the reconcile
//!   with that text.

use kuberay_plugin_sdk::{
    Event, Host, Kind, LogLevel, Outcome, ReconcileError,
    serde_json::{Value, json},
};

/// Whether `behaviour` is one of this module's.
pub fn handles(behaviour: &str) -> bool {
    matches!(
        behaviour,
        "flood-reads"
            | "flood-writes"
            | "flood-events"
            | "oversized-object"
            | "oversized-note"
            | "oversized-selector"
            | "flood-log"
            | "forge-log"
            | "event-storm"
            | "write-bytes"
            | "forge-error"
    )
}

/// A line that, printed raw, would look like one of the operator's own.
pub const FORGED: &str =
    "innocent\n2026-01-01T00:00:00.000000Z  INFO kuberay_wasm::operator: plugin raycluster unloaded\x1b[2K\r";

/// A JSON log line (what a collector would take for the operator's own), with terminal escapes around it.
pub const FORGED_ERROR: &str = "boom\n{\"timestamp\":\"2026-01-01T00:00:00Z\",\"level\":\"ERROR\",\"fields\":{\"message\":\"forged by chaos\"},\"target\":\"kuberay_wasm::operator\"}\x1b[2K\r\u{202e}";

/// A reason or action with a line break and a terminal escape, short enough for the host's size limit.
pub const FORGED_WORD: &str = "Forged\n{\"level\":\"ERROR\",\"fields\":{\"message\":\"forged\"}}\x1b[2K";

pub fn run(host: &impl Host, behaviour: &str, object: &Value) -> Result<Outcome, ReconcileError> {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match behaviour {
        "event-storm" => {
            for _ in 0..100 {
                let _ = std::hint::black_box(host.record_event(&Event::normal("Storm", "Storm", "again")));
            }
            host.apply_status(&json!({"observed": behaviour}))?;
            Ok(Outcome::requeue_after(std::time::Duration::from_millis(200)))
        }
        "write-bytes" => {
            let count = object.pointer("/spec/count").and_then(Value::as_u64).unwrap_or(1);
            for i in 0..count {
                host.apply(&json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("{name}-mib-{i}")},
                    "data": {"big": "x".repeat(900 << 10)},
                }))?;
            }
            host.apply_status(&json!({"observed": behaviour}))?;
            Ok(Outcome::requeue_after(std::time::Duration::from_millis(200)))
        }
        "forge-error" => {
            host.record_event(&Event::warning("Forged", "Forge", FORGED_ERROR))?;
            let _ = host.record_event(&Event::warning(FORGED_WORD, "Forge", "a forged reason"));
            let _ = host.record_event(&Event::warning("Forged", FORGED_WORD, "a forged action"));
            Err(ReconcileError::Transient(FORGED_ERROR.into()))
        }
        _ => floods(host, behaviour, name),
    }
}

fn floods(host: &impl Host, behaviour: &str, name: &str) -> Result<Outcome, ReconcileError> {
    let config_maps = Kind::new("", "v1", "ConfigMap");
    let config_map = |data: Value| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-flood")}, "data": data,
        })
    };
    match behaviour {
        "flood-reads" => loop {
            let _ = std::hint::black_box(host.get(&config_maps, name));
        },
        "flood-writes" => loop {
            let _ = std::hint::black_box(host.apply(&config_map(json!({"k": "v"}))));
        },
        "flood-events" => loop {
            let _ = std::hint::black_box(host.record_event(&Event::normal("Flood", "Flood", "again")));
        },
        "oversized-object" => {
            host.apply(&config_map(json!({"big": "x".repeat(2 << 20)})))?;
        }
        "oversized-note" => {
            host.record_event(&Event::normal("Big", "Big", "x".repeat(64 << 10)))?;
        }
        "oversized-selector" => {
            host.list(&config_maps, &format!("a in ({})", "b,".repeat(32 << 10)))?;
        }
        "flood-log" => {
            for i in 0..100_000 {
                host.log(LogLevel::Info, "flood", &[("line", &i.to_string())]);
                println!("flood {i}");
            }
            host.apply_status(&json!({"observed": behaviour}))?;
        }
        _ => {
            host.log(LogLevel::Warn, FORGED, &[("field\nINFO forged", FORGED)]);
            println!("{FORGED}");
            host.apply_status(&json!({"observed": behaviour}))?;
        }
    }
    Ok(Outcome::done())
}
