//! The cluster DNS: A records for `<service>.<namespace>.svc.<domain>` (the ClusterIP, or the ready endpoints of
//! a headless Service) and `<hostname>.<service>.<namespace>.svc.<domain>` (an endpoint's hostname), on UDP at
//! the host's pod-network address. It is authoritative for the cluster domain only: other names are refused
//! (the pod network has no way out, so there is nothing to forward to).

use std::net::{Ipv4Addr, SocketAddr};

use hickory_proto::{
    op::{Message, MessageType, OpCode, ResponseCode},
    rr::{RData, Record, RecordType, rdata::A},
};
use tokio::net::UdpSocket;

use super::{CLUSTER_DOMAIN, ServiceView, cluster_ip};
use crate::error::{Error, Result};

/// Seconds resolvers may cache an answer, as CoreDNS's kubernetes plugin answers.
const TTL: u32 = 5;

/// Listens on `address` (port 53) and answers until the task is aborted.
pub async fn serve(address: Ipv4Addr, view: ServiceView) -> Result<tokio::task::JoinHandle<()>> {
    let socket = UdpSocket::bind(SocketAddr::from((address, 53)))
        .await
        .map_err(Error::io(format!("binding the cluster DNS to {address}:53")))?;
    tracing::info!(%address, "cluster DNS serving");
    Ok(tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        loop {
            let (len, peer) = match socket.recv_from(&mut buf).await {
                Ok(received) => received,
                Err(e) => {
                    tracing::warn!(error = %e, "cluster DNS: receiving a query");
                    continue;
                }
            };
            let Some(reply) = answer(&buf[..len], &view) else {
                continue;
            };
            if let Err(e) = socket.send_to(&reply, peer).await {
                tracing::debug!(error = %e, %peer, "cluster DNS: sending an answer");
            }
        }
    }))
}

/// The encoded answer to one query; `None` for what is not a DNS query at all.
fn answer(query: &[u8], view: &ServiceView) -> Option<Vec<u8>> {
    let request = Message::from_vec(query).ok()?;
    if request.metadata.message_type != MessageType::Query {
        return None;
    }
    let mut reply = Message::response(request.metadata.id, request.metadata.op_code);
    reply.metadata.recursion_desired = request.metadata.recursion_desired;
    let Some(question) = request.queries.first().cloned() else {
        reply.metadata.response_code = ResponseCode::FormErr;
        return reply.to_vec().ok();
    };
    reply.add_query(question.clone());
    if request.metadata.op_code != OpCode::Query {
        reply.metadata.response_code = ResponseCode::NotImp;
        return reply.to_vec().ok();
    }
    let name = question.name().to_lowercase().to_ascii();
    match lookup(&name, view) {
        Lookup::NotOurs => reply.metadata.response_code = ResponseCode::Refused,
        Lookup::NoSuchName => {
            reply.metadata.authoritative = true;
            reply.metadata.response_code = ResponseCode::NXDomain;
        }
        Lookup::Addresses(addresses) => {
            reply.metadata.authoritative = true;
            // Other record types of an existing name get an empty answer (NODATA).
            if matches!(question.query_type(), RecordType::A | RecordType::ANY) {
                for ip in addresses {
                    reply.add_answer(Record::from_rdata(question.name().clone(), TTL, RData::A(A(ip))));
                }
            }
        }
    }
    reply.to_vec().ok()
}

#[derive(Debug, PartialEq, Eq)]
enum Lookup {
    NotOurs,
    NoSuchName,
    Addresses(Vec<Ipv4Addr>),
}

/// Resolves a fully qualified, lower-case name (with or without the final dot).
fn lookup(name: &str, view: &ServiceView) -> Lookup {
    let name = name.trim_end_matches('.');
    let Some(local) = name
        .strip_suffix(CLUSTER_DOMAIN)
        .and_then(|n| n.strip_suffix('.'))
    else {
        return if name == CLUSTER_DOMAIN {
            Lookup::Addresses(Vec::new())
        } else {
            Lookup::NotOurs
        };
    };
    let labels: Vec<&str> = local.split('.').collect();
    let found = match labels.as_slice() {
        [service, namespace, "svc"] => service_addresses(view, namespace, service, None),
        [host, service, namespace, "svc"] => service_addresses(view, namespace, service, Some(host)),
        // The zone's own structure (`svc.cluster.local`, `<namespace>.svc.cluster.local`) exists, empty.
        ["svc"] | [_, "svc"] => Some(Vec::new()),
        _ => None,
    };
    found.map_or(Lookup::NoSuchName, Lookup::Addresses)
}

fn service_addresses(
    view: &ServiceView,
    namespace: &str,
    service: &str,
    host: Option<&str>,
) -> Option<Vec<Ipv4Addr>> {
    let svc = view.service(namespace, service)?;
    if host.is_none()
        && let Some(ip) = cluster_ip(&svc)
    {
        return Some(vec![ip]);
    }
    let mut ips: Vec<Ipv4Addr> = view
        .addresses(namespace, service)
        .into_iter()
        .filter(|(_, hostname)| host.is_none() || hostname.as_deref() == host)
        .map(|(ip, _)| ip)
        .collect();
    ips.sort();
    ips.dedup();
    (host.is_none() || !ips.is_empty()).then_some(ips)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn view() -> ServiceView {
        let service = |name: &str, ip: &str| {
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": "team"},
                                          "spec": {"clusterIP": ip}}))
            .unwrap_or_default()
        };
        let slice = serde_json::from_value(json!({
            "metadata": {"name": "db-x", "namespace": "team", "labels": {"kubernetes.io/service-name": "db"}},
            "addressType": "IPv4",
            "ports": [{"port": 5432}],
            "endpoints": [
                {"addresses": ["10.1.0.7"], "hostname": "db-0", "conditions": {"ready": true}},
                {"addresses": ["10.1.0.8"], "hostname": "db-1", "conditions": {"ready": false}},
            ],
        }))
        .unwrap_or_default();
        ServiceView::of(
            vec![service("web", "10.96.0.20"), service("db", "None")],
            vec![slice],
        )
    }

    #[test]
    fn services_resolve_to_their_cluster_ip_or_ready_endpoints() {
        let view = view();
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap_or(Ipv4Addr::UNSPECIFIED);
        assert_eq!(
            lookup("web.team.svc.cluster.local.", &view),
            Lookup::Addresses(vec![ip("10.96.0.20")])
        );
        assert_eq!(
            lookup("db.team.svc.cluster.local", &view),
            Lookup::Addresses(vec![ip("10.1.0.7")])
        );
        assert_eq!(
            lookup("db-0.db.team.svc.cluster.local", &view),
            Lookup::Addresses(vec![ip("10.1.0.7")])
        );
        assert_eq!(
            lookup("db-1.db.team.svc.cluster.local", &view),
            Lookup::NoSuchName
        );
        assert_eq!(lookup("web.other.svc.cluster.local", &view), Lookup::NoSuchName);
        assert_eq!(lookup("web.team.cluster.local", &view), Lookup::NoSuchName);
        assert_eq!(
            lookup("team.svc.cluster.local", &view),
            Lookup::Addresses(Vec::new())
        );
        assert_eq!(lookup("example.com.", &view), Lookup::NotOurs);
    }

    #[test]
    fn answers_are_dns_messages_with_the_question_and_the_records() {
        use hickory_proto::{
            op::Query,
            rr::{Name, RecordType},
        };
        let view = view();
        let ask = |name: &str, kind: RecordType| {
            let mut query = Message::query();
            query.metadata.id = 7;
            query.add_query(Query::query(Name::from_ascii(name).unwrap_or_default(), kind));
            let reply = answer(&query.to_vec().unwrap_or_default(), &view).unwrap_or_default();
            Message::from_vec(&reply).unwrap_or_else(|_| Message::query())
        };
        let reply = ask("WEB.team.svc.cluster.local.", RecordType::A);
        assert_eq!(
            (reply.metadata.id, reply.metadata.response_code),
            (7, ResponseCode::NoError)
        );
        assert_eq!(reply.answers.len(), 1);
        assert_eq!(
            ask("web.team.svc.cluster.local.", RecordType::AAAA).answers.len(),
            0
        );
        assert_eq!(
            ask("nope.team.svc.cluster.local.", RecordType::A)
                .metadata
                .response_code,
            ResponseCode::NXDomain
        );
        assert_eq!(
            ask("example.com.", RecordType::A).metadata.response_code,
            ResponseCode::Refused
        );
        assert_eq!(answer(b"not dns", &view), None);
    }
}
