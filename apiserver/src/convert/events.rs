//! Kubernetes Events (events.k8s.io/v1) as the API's `ClusterEvent` and `RayServiceEvent`. An Event has
//! its timing twice, in the fields of the new API (`eventTime`, `series`) and in the deprecated ones that
//! core/v1 writers fill (`deprecatedFirstTimestamp`, `deprecatedLastTimestamp`, `deprecatedCount`); the
//! first set that is filled is used.

use k8s_openapi::api::events::v1::Event;

use super::timestamp;
use crate::api::{ClusterEvent, RayServiceEvent};

/// The fields both event messages share.
struct Fields {
    id: String,
    name: String,
    created_at: Option<prost_types::Timestamp>,
    first_timestamp: Option<prost_types::Timestamp>,
    last_timestamp: Option<prost_types::Timestamp>,
    reason: String,
    message: String,
    type_: String,
    count: i32,
}

/// `object` is the name of the object the event is about; the message's name is `<object>-<event>`.
fn fields(object: &str, event: &Event) -> Fields {
    let id = event.metadata.name.clone().unwrap_or_default();
    let event_time = event.event_time.as_ref().map(|t| timestamp(&t.0));
    let first = event_time.or_else(|| event.deprecated_first_timestamp.as_ref().map(|t| timestamp(&t.0)));
    let last = match &event.series {
        Some(series) => Some(timestamp(&series.last_observed_time.0)),
        None => event
            .deprecated_last_timestamp
            .as_ref()
            .map(|t| timestamp(&t.0))
            .or(event_time),
    };
    let count = match &event.series {
        Some(series) => series.count,
        None => event.deprecated_count.unwrap_or_default(),
    };
    Fields {
        name: format!("{object}-{id}"),
        id,
        created_at: event
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| timestamp(&t.0)),
        first_timestamp: first,
        last_timestamp: last,
        reason: event.reason.clone().unwrap_or_default(),
        message: event.note.clone().unwrap_or_default(),
        type_: event.type_.clone().unwrap_or_default(),
        count,
    }
}

pub(crate) fn cluster_event(object: &str, event: &Event) -> ClusterEvent {
    let f = fields(object, event);
    ClusterEvent {
        id: f.id,
        name: f.name,
        created_at: f.created_at,
        first_timestamp: f.first_timestamp,
        last_timestamp: f.last_timestamp,
        reason: f.reason,
        message: f.message,
        r#type: f.type_,
        count: f.count,
    }
}

pub(crate) fn service_event(object: &str, event: &Event) -> RayServiceEvent {
    let f = fields(object, event);
    RayServiceEvent {
        id: f.id,
        name: f.name,
        created_at: f.created_at,
        first_timestamp: f.first_timestamp,
        last_timestamp: f.last_timestamp,
        reason: f.reason,
        message: f.message,
        r#type: f.type_,
        count: f.count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(json: serde_json::Value) -> Event {
        serde_json::from_value(json).unwrap_or_default()
    }

    fn seconds(rfc3339: &str) -> Option<prost_types::Timestamp> {
        let t: k8s_openapi::jiff::Timestamp = rfc3339.parse().ok()?;
        Some(timestamp(&t))
    }

    #[test]
    fn new_api_fields_win() {
        let e = event(serde_json::json!({
            "metadata": {"name": "c.17a", "creationTimestamp": "2024-05-01T10:00:00Z"},
            "eventTime": "2024-05-01T10:00:01.250000Z",
            "series": {"count": 4, "lastObservedTime": "2024-05-01T10:05:00.000000Z"},
            "deprecatedFirstTimestamp": "2024-04-01T00:00:00Z",
            "deprecatedLastTimestamp": "2024-04-02T00:00:00Z",
            "deprecatedCount": 9,
            "reason": "CreatedService", "note": "Created service c-head-svc", "type": "Normal",
            "reportingController": "kuberay", "reportingInstance": "x", "action": "Create",
        }));
        let c = cluster_event("c", &e);
        assert_eq!(c.id, "c.17a");
        assert_eq!(c.name, "c-c.17a");
        assert_eq!(c.created_at, seconds("2024-05-01T10:00:00Z"));
        assert_eq!(c.first_timestamp, seconds("2024-05-01T10:00:01Z"));
        assert_eq!(c.last_timestamp, seconds("2024-05-01T10:05:00Z"));
        assert_eq!(c.count, 4);
        assert_eq!(
            (c.reason.as_str(), c.message.as_str(), c.r#type.as_str()),
            ("CreatedService", "Created service c-head-svc", "Normal")
        );
    }

    #[test]
    fn legacy_fields_are_the_fallback() {
        let e = event(serde_json::json!({
            "metadata": {"name": "s.1"},
            "deprecatedFirstTimestamp": "2024-04-01T00:00:00Z",
            "deprecatedLastTimestamp": "2024-04-02T00:00:00Z",
            "deprecatedCount": 9,
            "reason": "Pulled", "type": "Warning",
        }));
        let s = service_event("svc", &e);
        assert_eq!(s.name, "svc-s.1");
        assert_eq!(s.first_timestamp, seconds("2024-04-01T00:00:00Z"));
        assert_eq!(s.last_timestamp, seconds("2024-04-02T00:00:00Z"));
        assert_eq!(s.count, 9);
        assert_eq!(s.created_at, None);
    }

    #[test]
    fn a_single_new_event_ends_when_it_began() {
        let e = event(serde_json::json!({
            "metadata": {"name": "x"},
            "eventTime": "2024-05-01T10:00:01.000000Z",
        }));
        let c = cluster_event("c", &e);
        assert_eq!(c.last_timestamp, c.first_timestamp);
        assert_eq!(c.count, 0);
    }
}
