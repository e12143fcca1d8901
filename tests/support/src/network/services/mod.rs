//! What kube-proxy and the cluster DNS give Pods, for the pod network: the names of Services
//! (`<service>.<namespace>.svc.cluster.local`, answered by [`dns`] at the host's pod-network address, which every
//! mapped container's `/etc/resolv.conf` names) and their ClusterIPs (served by [`proxy`], a user-space proxy in
//! the manner of kube-proxy's old `userspace` mode: each ClusterIP is an address of the pod network's bridge, and
//! a connection to one of a Service's ports is relayed to a ready endpoint, `targetPort` and all).
//!
//! Both read Services and EndpointSlices with kube-proxy's user (`system:kube-proxy`, whose bootstrap role is
//! `system:node-proxier`).

pub mod dns;
pub mod proxy;

use std::net::Ipv4Addr;

use futures::StreamExt;
use k8s_openapi::api::{core::v1::Service, discovery::v1::EndpointSlice};
use kube::{
    Api, Client, ResourceExt,
    runtime::{
        WatchStreamExt,
        reflector::{self, ObjectRef, Store},
        watcher,
    },
};
use tokio::{sync::watch, task::JoinHandle};

/// The cluster's domain, as a kubelet's `--cluster-domain` (and KubeRay's `CLUSTER_DOMAIN`) default.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// Label of an EndpointSlice naming its Service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The cached Services and EndpointSlices, and a signal that fires when Services change.
#[derive(Clone)]
pub struct ServiceView {
    services: Store<Service>,
    slices: Store<EndpointSlice>,
    changed: watch::Receiver<u64>,
}

/// A ready endpoint of a Service port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub ip: Ipv4Addr,
    pub port: u16,
}

impl ServiceView {
    /// Starts the watches; the tasks run until aborted.
    pub fn start(client: &Client) -> (Self, Vec<JoinHandle<()>>) {
        let (services, service_writer) = reflector::store();
        let (slices, slice_writer) = reflector::store();
        let (notify, changed) = watch::channel(0u64);
        let service_api: Api<Service> = Api::all(client.clone());
        let slice_api: Api<EndpointSlice> = Api::all(client.clone());
        let service_task = tokio::spawn(async move {
            let mut stream = watcher(service_api, watcher::Config::default())
                .default_backoff()
                .reflect(service_writer)
                .boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(_) => notify.send_modify(|n| *n += 1),
                    Err(e) => tracing::warn!(error = %e, "watching Services for the cluster DNS and proxy"),
                }
            }
        });
        let slice_task = tokio::spawn(async move {
            let mut stream = watcher(slice_api, watcher::Config::default())
                .default_backoff()
                .reflect(slice_writer)
                .boxed();
            while let Some(event) = stream.next().await {
                if let Err(e) = event {
                    tracing::warn!(error = %e, "watching EndpointSlices for the cluster DNS and proxy");
                }
            }
        });
        let view = Self {
            services,
            slices,
            changed,
        };
        (view, vec![service_task, slice_task])
    }

    /// A view of fixed objects, for tests of what is answered.
    #[cfg(test)]
    pub(crate) fn of(services: Vec<Service>, slices: Vec<EndpointSlice>) -> Self {
        let (service_store, mut service_writer) = reflector::store();
        let (slice_store, mut slice_writer) = reflector::store();
        for s in services {
            service_writer.apply_watcher_event(&watcher::Event::Apply(s));
        }
        for s in slices {
            slice_writer.apply_watcher_event(&watcher::Event::Apply(s));
        }
        Self {
            services: service_store,
            slices: slice_store,
            changed: watch::channel(0).1,
        }
    }

    pub fn service(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<Service>> {
        self.services.get(&ObjectRef::new(name).within(namespace))
    }

    pub fn services(&self) -> Vec<std::sync::Arc<Service>> {
        self.services.state()
    }

    /// A receiver that changes whenever a Service is added, changed or removed.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.clone()
    }

    /// The ready endpoints of the Service's port named `port_name` (`None` or empty for an unnamed port).
    pub fn endpoints(&self, namespace: &str, service: &str, port_name: Option<&str>) -> Vec<Endpoint> {
        let wanted = port_name.unwrap_or_default();
        let mut out: Vec<Endpoint> = self
            .slices_of(namespace, service)
            .iter()
            .filter_map(|slice| {
                let port = slice
                    .ports
                    .iter()
                    .flatten()
                    .find(|p| p.name.as_deref().unwrap_or_default() == wanted)
                    .and_then(|p| p.port)
                    .and_then(|p| u16::try_from(p).ok())?;
                Some(ready_addresses(slice).map(move |(ip, _)| Endpoint { ip, port }))
            })
            .flatten()
            .collect();
        out.sort_by_key(|e| (e.ip, e.port));
        out.dedup();
        out
    }

    /// The addresses of the Service's ready endpoints, whatever their ports, with each endpoint's hostname.
    pub fn addresses(&self, namespace: &str, service: &str) -> Vec<(Ipv4Addr, Option<String>)> {
        let mut out: Vec<(Ipv4Addr, Option<String>)> = self
            .slices_of(namespace, service)
            .iter()
            .flat_map(|slice| ready_addresses(slice).collect::<Vec<_>>())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn slices_of(&self, namespace: &str, service: &str) -> Vec<std::sync::Arc<EndpointSlice>> {
        self.slices
            .state()
            .into_iter()
            .filter(|slice| {
                slice.namespace().as_deref() == Some(namespace)
                    && slice.labels().get(SERVICE_NAME_LABEL).map(String::as_str) == Some(service)
                    && slice.address_type == "IPv4"
            })
            .collect()
    }
}

/// The IPv4 addresses of a slice's ready endpoints (a missing `ready` condition counts as ready, as the API
/// says), with their hostnames.
fn ready_addresses(slice: &EndpointSlice) -> impl Iterator<Item = (Ipv4Addr, Option<String>)> + '_ {
    slice
        .endpoints
        .iter()
        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
        .flat_map(|e| {
            e.addresses
                .iter()
                .filter_map(|a| a.parse::<Ipv4Addr>().ok())
                .map(|ip| (ip, e.hostname.clone()))
        })
}

/// A Service's ClusterIP, if it has one (headless Services and ExternalName Services have none).
pub fn cluster_ip(service: &Service) -> Option<Ipv4Addr> {
    service.spec.as_ref()?.cluster_ip.as_deref()?.parse().ok()
}
