//! Events (events.k8s.io/v1) about reconciled objects, one recorder per plugin so that each plugin appears
//! as its own reporting controller (`raycluster-controller`, as KubeRay names its own).

use std::{collections::HashMap, sync::Mutex};

use kube::{
    Client,
    runtime::events::{Recorder, Reporter},
};

pub(crate) struct EventRecorders {
    client: Client,
    instance: Option<String>,
    recorders: Mutex<HashMap<String, Recorder>>,
}

impl EventRecorders {
    pub(crate) fn new(client: Client, instance: Option<String>) -> Self {
        Self {
            client,
            instance,
            recorders: Mutex::default(),
        }
    }

    pub(crate) fn reporter(&self, plugin: &str) -> Reporter {
        Reporter {
            controller: format!("{plugin}-controller"),
            instance: self.instance.clone(),
        }
    }

    pub(crate) fn recorder(&self, plugin: &str) -> Recorder {
        let mut recorders = self
            .recorders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        recorders
            .entry(plugin.to_string())
            .or_insert_with(|| Recorder::new(self.client.clone(), self.reporter(plugin)))
            .clone()
    }
}
