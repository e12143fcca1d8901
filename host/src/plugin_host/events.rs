//! Events a plugin records about the object it reconciles, published with its own recorder (its own
//! reporting controller), in the background, within its budget across reconciles (`kubernetes::events`).
//!
//! What a plugin writes into an Event is held to what a reader can trust: the `reason` and `action` are
//! machine-readable words (KubeRay's are UpperCamelCase: `CreatedService`, `Create`), so anything else is
//! refused with a clear error rather than rewritten into something the plugin did not say; the note is
//! free text, so line breaks, control characters, terminal escapes and direction overrides in it are
//! escaped (`\n`, `\u{1b}`), as in the plugin's log lines (`sandbox::log_guard`).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType};
use kuberay_plugin_sdk::{Event, EventType, HostError, Kind};

use super::PluginHost;
use crate::{
    host_api::HostResult,
    sandbox::log_guard::{self, MAX_EVENT_NOTE_TEXT},
};

/// Whether `word` may be an Event's reason or action: an ASCII letter, then ASCII letters, digits, `_`, `-`
/// or `.` (its length is checked where the plugin passed it, `sandbox::call`).
fn is_event_word(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_alphabetic())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Refuses a reason or action that is not an [`is_event_word`].
pub(crate) fn check_word(what: &str, word: &str) -> HostResult<()> {
    if is_event_word(word) {
        return Ok(());
    }
    Err(HostError::Forbidden(format!(
        "event {what} \"{}\" must start with a letter and hold only ASCII letters, digits, '_', '-' or '.' (KubeRay's are UpperCamelCase)",
        log_guard::escape(word, 80)
    )))
}

/// The note of the Warning event `WriteRefused` about the first refused write of a reconcile.
pub(crate) fn refusal_note(verb: &str, kind: &Kind, reason: &str) -> String {
    log_guard::escape(&format!("{verb} {kind} refused: {reason}"), MAX_EVENT_NOTE_TEXT)
}

impl PluginHost {
    fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.primary().kind.api_version()),
            kind: Some(self.primary().kind.kind.clone()),
            name: Some(self.primary().name.clone()),
            namespace: Some(self.primary().namespace.clone()),
            uid: Some(self.primary().uid.clone()),
            ..ObjectReference::default()
        }
    }

    /// Reports a refused write about the reconciled object: a Warning event `WriteRefused` with the rule that
    /// refused it, within the plugin's event budget (a plugin that provokes refusals in a loop floods nothing).
    pub(super) fn report_refusal(&self, verb: &str, kind: &Kind, reason: &str) {
        let event = KubeEvent {
            type_: KubeEventType::Warning,
            reason: "WriteRefused".into(),
            note: Some(refusal_note(verb, kind, reason)),
            action: "Admit".into(),
            secondary: None,
        };
        let queued = self.kube().events.publish_later(
            self.plugin(),
            &self.admission.grant().budget.rates,
            event,
            self.object_reference(),
        );
        if let Err(e) = queued {
            tracing::debug!(plugin = %self.plugin(), error = %e, "refusal not reported as an event");
        }
    }

    /// Publishes an event about the reconciled object (related to another object of its namespace, if any).
    pub(super) async fn publish_event(&self, event: Event) -> HostResult<()> {
        if let Some((kind, name)) = &event.related {
            self.admission.check_names(kind, Some(name))?;
        }
        check_word("reason", &event.reason)?;
        check_word("action", &event.action)?;
        let secondary = event.related.map(|(kind, name)| ObjectReference {
            api_version: Some(kind.api_version()),
            kind: Some(kind.kind),
            name: Some(name),
            namespace: Some(self.primary().namespace.clone()),
            ..ObjectReference::default()
        });
        let kube_event = KubeEvent {
            type_: match event.event_type {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: event.reason,
            note: Some(log_guard::escape(&event.note, MAX_EVENT_NOTE_TEXT)),
            action: event.action,
            secondary,
        };
        // Published in the background (`kubernetes::events`): a failure is logged there, not returned, and
        // an event beyond the plugin's budget is dropped there.
        self.kube()
            .events
            .publish_later(
                self.plugin(),
                &self.admission.grant().budget.rates,
                kube_event,
                self.object_reference(),
            )
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_and_actions_are_words() {
        for word in [
            "CreatedService",
            "FailedToCreateHeadPod",
            "Create",
            "Flood",
            "v1.Ready",
            "a_b-c",
        ] {
            assert!(check_word("reason", word).is_ok(), "{word}");
        }
        for word in [
            "",
            "Forged\n{\"level\":\"ERROR\"}",
            "Red\u{1b}[31m",
            "Over\u{202e}ride",
            "With space",
            "1Digit",
            "Ümlaut",
        ] {
            let refused = check_word("reason", word).unwrap_err();
            let HostError::Forbidden(message) = refused else {
                panic!("{word:?}: not a refusal");
            };
            assert!(
                !message.contains('\n') && !message.contains('\u{1b}'),
                "{message}"
            );
        }
    }
}
