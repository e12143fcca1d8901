//! The simulated Node: registered by the kubelet itself (NodeRestriction lets a node create only its own
//! Node object), kept Ready with status heartbeats and a Lease in `kube-node-lease`.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Node};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::json;

use super::{Shared, status::now};
use crate::error::Result;

const HEARTBEAT: Duration = Duration::from_secs(10);

pub async fn register(shared: &Shared) -> Result<()> {
    let name = &shared.config.node_name;
    let nodes: Api<Node> = Api::all(shared.kubelet.clone());
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "testenv-simulated",
            },
        },
        "spec": {"podCIDR": shared.network.subnet().to_string(), "podCIDRs": [shared.network.subnet().to_string()]},
    }))
    .map_err(|e| crate::error::Error::Other(e.to_string()))?;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    write_status(shared).await?;
    renew_lease(shared).await?;
    tracing::info!(node = %name, "simulated node registered");
    Ok(())
}

async fn write_status(shared: &Shared) -> Result<()> {
    let nodes: Api<Node> = Api::all(shared.kubelet.clone());
    let now = now();
    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now,
        })
    };
    let capacity = json!({"cpu": "64", "memory": "256Gi", "pods": "10000", "ephemeral-storage": "1Ti"});
    let status = json!({"status": {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "simulated kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": shared.network.host_ip().to_string()},
            {"type": "Hostname", "address": shared.config.node_name},
        ],
        // Where the API server sends `pods/exec` (0: no streaming endpoint, exec fails with a clear error).
        "daemonEndpoints": {"kubeletEndpoint": {"Port": shared.kubelet_port.unwrap_or(0)}},
        "nodeInfo": {
            "machineID": "testenv", "systemUUID": "testenv", "bootID": "testenv",
            "kernelVersion": "simulated", "osImage": "kuberay-wasm testenv",
            "containerRuntimeVersion": "testenv://1", "kubeletVersion": "v1.36.3-testenv",
            "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64",
        },
    }});
    nodes
        .patch_status(
            &shared.config.node_name,
            &PatchParams::default(),
            &Patch::Merge(status),
        )
        .await?;
    Ok(())
}

async fn renew_lease(shared: &Shared) -> Result<()> {
    let leases: Api<Lease> = Api::namespaced(shared.kubelet.clone(), "kube-node-lease");
    let name = &shared.config.node_name;
    let renew = micro_time();
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": renew},
    });
    leases
        .patch(
            name,
            &PatchParams::apply("testenv-kubelet").force(),
            &Patch::Apply(lease),
        )
        .await?;
    Ok(())
}

/// Keeps the Node's Lease and Ready condition fresh.
pub async fn heartbeat(shared: Arc<Shared>) {
    let mut beats = 0u32;
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        beats += 1;
        if let Err(e) = renew_lease(&shared).await {
            tracing::warn!(error = %e, "could not renew the node lease");
        }
        if beats.is_multiple_of(6)
            && let Err(e) = write_status(&shared).await
        {
            tracing::warn!(error = %e, "could not post node status");
        }
    }
}

/// Now, in the microsecond-precision form of a `MicroTime`.
fn micro_time() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    let seconds = k8s_openapi::jiff::Timestamp::from_second(now.as_second()).unwrap_or(now);
    format!(
        "{}.{:06}Z",
        seconds.strftime("%Y-%m-%dT%H:%M:%S"),
        now.subsec_microsecond()
    )
}
