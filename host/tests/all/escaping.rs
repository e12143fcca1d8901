//! Plugin strings that reach a log line, an Event or a condition are escaped: a reconcile error imitating
//! a JSON log line wrapped in terminal escapes stays on the host's own line, escaped, in the log, the
//! `Reconciled` condition and the host's Warning event; the note of an Event the plugin records is escaped;
//! an Event reason or action that is not a word is refused.

use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use serde_json::json;

use crate::{
    containment::{ChaosRun, chaos_run},
    identity::{create_chaos, refusal},
    support::{eventually, log_lines, logged},
};

/// Whether `text` holds anything that breaks a line or steers a terminal.
fn raw(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c))
}

#[tokio::test]
async fn a_plugins_error_and_event_text_cannot_forge_log_lines_events_or_conditions() {
    let ChaosRun {
        client,
        ns,
        operator,
        chaos,
    } = chaos_run(
        "escaping",
        vec![kuberay_plugin_artifacts::CHAOS],
        crate::support::test_policy(),
    )
    .await;
    create_chaos(&chaos, "forge-error", json!({"behaviour": "forge-error"})).await;

    // The condition: the plugin's text, escaped, after the host's words.
    let message = refusal(&chaos, "forge-error", "forged by chaos").await;
    assert!(!raw(&message), "{message:?}");
    assert!(
        message.contains("the plugin reported an error: boom\\n{\"timestamp\""),
        "{message}"
    );
    assert!(message.contains("\\u{1b}[2K\\r\\u{202e}"), "{message}");

    // The log: the forged line is part of the host's line, never a line of its own.
    let line = logged(&["reconcile failed", "forged by chaos"]).await;
    assert!(line.contains("boom\\n{"), "{line}");
    let forged = log_lines(&["forged by chaos"]);
    assert!(!forged.is_empty());
    for line in forged {
        assert!(
            !line.starts_with("{\"timestamp\""),
            "a forged line of its own: {line}"
        );
        assert!(!raw(&line), "{line:?}");
    }

    // The Events: the host's Warning and the plugin's own carry it escaped; the forged reason and action
    // were refused, so no Event has them.
    let events: Api<Event> = Api::namespaced(client.clone(), ns.name());
    let list = eventually(
        "the host's and the plugin's events",
        Duration::from_secs(30),
        || async {
            let list = events.list(&ListParams::default()).await.ok()?;
            let has = |reason: &str| list.items.iter().any(|e| e.reason.as_deref() == Some(reason));
            (has("ReconcileFailed") && has("Forged")).then_some(list)
        },
    )
    .await;
    for event in &list.items {
        let note = event.note.as_deref().unwrap_or_default();
        let reason = event.reason.as_deref().unwrap_or_default();
        let action = event.action.as_deref().unwrap_or_default();
        assert!(!raw(note), "{reason}: {note:?}");
        assert!(
            !reason.contains('{') && !action.contains('{'),
            "{reason} {action}"
        );
        if reason == "Forged" {
            assert!(note.starts_with("boom\\n{\"timestamp\""), "{note}");
        }
    }
    assert!(
        operator.metric(
            "kuberay_wasm_refused_calls_total",
            &["plugin=\"chaos\"", "verb=\"record-event\""]
        ) >= 2.0,
        "the forged reason and action were not refused"
    );
    logged(&["plugin=chaos", "refused", "must start with a letter"]).await;
    operator.stop().await;
}
