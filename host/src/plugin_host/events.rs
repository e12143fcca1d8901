//! Events a plugin records about the object it reconciles, published with its own recorder (its own
//! reporting controller), in the background, within its budget across reconciles (`kubernetes::events`).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event as KubeEvent, EventType as KubeEventType};
use kuberay_plugin_sdk::{Event, EventType, HostError};

use super::PluginHost;
use crate::sandbox::host_api::HostResult;

impl PluginHost {
    fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.primary.kind.api_version()),
            kind: Some(self.primary.kind.kind.clone()),
            name: Some(self.primary.name.clone()),
            namespace: Some(self.primary.namespace.clone()),
            uid: Some(self.primary.uid.clone()),
            ..ObjectReference::default()
        }
    }

    /// Publishes an event about the reconciled object (related to another object of its namespace, if any).
    pub(super) async fn publish_event(&self, event: Event) -> HostResult<()> {
        if let Some((kind, name)) = &event.related {
            self.check_names(kind, Some(name))?;
        }
        let secondary = event.related.map(|(kind, name)| ObjectReference {
            api_version: Some(kind.api_version()),
            kind: Some(kind.kind),
            name: Some(name),
            namespace: Some(self.primary.namespace.clone()),
            ..ObjectReference::default()
        });
        let kube_event = KubeEvent {
            type_: match event.event_type {
                EventType::Normal => KubeEventType::Normal,
                EventType::Warning => KubeEventType::Warning,
            },
            reason: event.reason,
            note: Some(event.note),
            action: event.action,
            secondary,
        };
        // Published in the background (`kubernetes::events`): a failure is logged there, not returned, and
        // an event beyond the plugin's budget is dropped there.
        self.kube
            .events
            .publish_later(
                &self.plugin,
                &self.grant.budget.rates,
                kube_event,
                self.object_reference(),
            )
            .map_err(|e| HostError::Unavailable(e.to_string()))
    }
}
