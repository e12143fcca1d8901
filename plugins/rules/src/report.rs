//! A write followed by an event, the way KubeRay reports what it did: `Created<Thing>` (Normal) with the
//! object it made, or `FailedToCreate<Thing>` (Warning) with the error. Recording an event never fails a
//! reconcile; a failure to record one is logged.

use kuberay_plugin_sdk::{Event, Host, HostError, Kind, LogLevel};

/// What is written and how to report it.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The event action: one of [`crate::consts::action`].
    pub action: &'a str,
    /// The Normal reason on success, for example `CreatedService`.
    pub done: &'a str,
    /// The Warning reason on failure, for example `FailedToCreateService`.
    pub failed: &'a str,
    /// What the note calls the object, for example `service`.
    pub what: &'a str,
    /// The object's kind and name, attached to the event as its related object.
    pub kind: &'a Kind,
    pub name: &'a str,
    /// `namespace/name` as KubeRay's notes print it.
    pub key: &'a str,
}

impl Report<'_> {
    /// Runs `write` and records the matching event; returns the write's result.
    pub fn run<H: Host + ?Sized, T>(
        &self,
        host: &H,
        write: impl FnOnce() -> Result<T, HostError>,
    ) -> Result<T, HostError> {
        let result = write();
        let event = match &result {
            Ok(_) => Event::normal(
                self.done,
                self.action,
                format!("{} {} {}", past_tense(self.action), self.what, self.key),
            )
            .about(self.kind.clone(), self.name),
            Err(e) => Event::warning(
                self.failed,
                self.action,
                format!(
                    "Failed to {} {} {}: {}",
                    self.action.to_lowercase(),
                    self.what,
                    self.key,
                    e.message()
                ),
            ),
        };
        record(host, &event);
        result
    }
}

/// Records an event; a failure to record one is logged, never returned.
pub fn record<H: Host + ?Sized>(host: &H, event: &Event) {
    if let Err(e) = host.record_event(event) {
        host.log(
            LogLevel::Warn,
            &format!("could not record event {}: {e}", event.reason),
            &[],
        );
    }
}

fn past_tense(action: &str) -> String {
    match action {
        "Create" => "Created".into(),
        "Delete" => "Deleted".into(),
        "Update" => "Updated".into(),
        other => format!("{other}d"),
    }
}

#[cfg(test)]
mod tests {
    use kuberay_plugin_sdk::{EventType, testing::FakeHost};
    use serde_json::json;

    use super::*;
    use crate::consts::action;

    fn report<'a>(kind: &'a Kind) -> Report<'a> {
        Report {
            action: action::CREATE,
            done: "CreatedService",
            failed: "FailedToCreateService",
            what: "service",
            kind,
            name: "s",
            key: "ns/s",
        }
    }

    #[test]
    fn success_and_failure_are_each_reported_once() {
        let host = FakeHost::new(json!({"metadata": {"name": "x", "namespace": "ns"}}));
        let kind = Kind::new("", "v1", "Service");
        assert_eq!(report(&kind).run(&host, || Ok(1)), Ok(1));
        let failed: Result<(), _> = report(&kind).run(&host, || Err(HostError::Conflict("exists".into())));
        assert!(failed.is_err());
        let events = host.events();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event_type, EventType::Normal);
        assert_eq!(events[0].note, "Created service ns/s");
        assert_eq!(events[0].related, Some((kind, "s".into())));
        assert_eq!(events[1].event_type, EventType::Warning);
        assert_eq!(events[1].reason, "FailedToCreateService");
        // The API server's message alone, as KubeRay's events carry it (not "conflict: exists").
        assert_eq!(events[1].note, "Failed to create service ns/s: exists");
    }
}
