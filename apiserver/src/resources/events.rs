//! Events about the objects the API returns. They are extras: failing to read them (the caller may not
//! list events, say) is logged and the objects are returned without them.

use std::collections::{BTreeSet, HashMap};

use futures::future::join_all;
use k8s_openapi::api::events::v1::Event;
use kube::{Api, Client, api::ListParams};

/// Events read for some objects, by the object they are about.
#[derive(Debug, Default, Clone)]
pub struct EventIndex {
    by_object: HashMap<(String, String, String), Vec<Event>>,
}

impl EventIndex {
    /// The events about the `kind` object `name` in `namespace`; with `uid`, those about an earlier object
    /// of the same name are left out.
    pub fn about(&self, namespace: &str, kind: &str, name: &str, uid: Option<&str>) -> Vec<&Event> {
        let key = (namespace.to_owned(), kind.to_owned(), name.to_owned());
        self.by_object
            .get(&key)
            .into_iter()
            .flatten()
            .filter(
                |e| match (uid, e.regarding.as_ref().and_then(|r| r.uid.as_deref())) {
                    (Some(uid), Some(about)) => uid == about,
                    _ => true,
                },
            )
            .collect()
    }

    /// Adds events listed in `namespace`.
    fn add(&mut self, namespace: &str, events: Vec<Event>) {
        for event in events {
            let Some(regarding) = &event.regarding else {
                continue;
            };
            let key = (
                namespace.to_owned(),
                regarding.kind.clone().unwrap_or_default(),
                regarding.name.clone().unwrap_or_default(),
            );
            self.by_object.entry(key).or_default().push(event);
        }
    }
}

/// Which events to read: those about `kind` objects in `namespace`, or only about the one named `name`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EventQuery {
    pub(crate) namespace: String,
    pub(crate) kind: &'static str,
    pub(crate) name: Option<String>,
}

impl EventQuery {
    /// The queries for `objects` (namespace, name): one per object when there is one, else one per
    /// namespace.
    pub(crate) fn for_objects<'a>(
        kind: &'static str,
        objects: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> BTreeSet<EventQuery> {
        let objects: Vec<_> = objects.into_iter().collect();
        let single = objects.len() == 1;
        objects
            .into_iter()
            .map(|(namespace, name)| EventQuery {
                namespace: namespace.to_owned(),
                kind,
                name: single.then(|| name.to_owned()),
            })
            .collect()
    }
}

/// Reads the events of every query (concurrently); a query that fails is logged and skipped.
pub(crate) async fn read(client: &Client, queries: BTreeSet<EventQuery>) -> EventIndex {
    let reads = queries.into_iter().map(|query| async move {
        let mut selector = format!("regarding.kind={}", query.kind);
        if let Some(name) = &query.name {
            selector.push_str(&format!(",regarding.name={name}"));
        }
        let api: Api<Event> = Api::namespaced(client.clone(), &query.namespace);
        match api.list(&ListParams::default().fields(&selector)).await {
            Ok(list) => (query.namespace, list.items),
            Err(error) => {
                tracing::warn!(
                    namespace = %query.namespace,
                    kind = query.kind,
                    name = query.name.as_deref().unwrap_or("*"),
                    %error,
                    "could not read events; returning the objects without them"
                );
                (query.namespace, Vec::new())
            }
        }
    });
    let mut index = EventIndex::default();
    for (namespace, events) in join_all(reads).await {
        index.add(&namespace, events);
    }
    index
}
