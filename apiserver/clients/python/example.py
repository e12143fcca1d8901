"""What a user of the generated client writes: a compute template, a cluster of it, reading and listing
clusters, then deleting both. Reads KUBERAY_API (the server's URL), KUBERAY_TOKEN (the caller's Kubernetes
token) and KUBERAY_NAMESPACE; prints what it saw as one JSON object. Exits 1 on any unexpected answer."""

import json
import os
import sys

from kuberay_apiserver_client import AuthenticatedClient
from kuberay_apiserver_client.api.cluster_service import (
    cluster_service_create_cluster,
    cluster_service_delete_cluster,
    cluster_service_get_cluster,
    cluster_service_list_cluster,
)
from kuberay_apiserver_client.api.compute_template_service import (
    compute_template_service_create_compute_template,
    compute_template_service_delete_compute_template,
)
from kuberay_apiserver_client.models import ProtoClusterInput, ProtoComputeTemplateInput, ProtoStatus


def check(answer, what):
    """The answer's parsed body, or exit with the server's status and message."""
    if answer.status_code != 200 or isinstance(answer.parsed, ProtoStatus):
        sys.exit(f"{what}: HTTP {answer.status_code}: {answer.content.decode(errors='replace')}")
    return answer.parsed


def main():
    namespace = os.environ["KUBERAY_NAMESPACE"]
    client = AuthenticatedClient(base_url=os.environ["KUBERAY_API"], token=os.environ["KUBERAY_TOKEN"])
    template = ProtoComputeTemplateInput.from_dict(
        {"name": "py-small", "namespace": namespace, "cpu": 1, "memory": 1})
    check(compute_template_service_create_compute_template.sync_detailed(namespace, client=client, body=template),
          "create template")
    cluster = ProtoClusterInput.from_dict({
        "name": "py-cluster", "namespace": namespace, "user": "python", "version": "2.52.0",
        "clusterSpec": {"headGroupSpec": {"computeTemplate": "py-small",
                                          "rayStartParams": {"dashboard-host": "0.0.0.0"}}},
    })
    created = check(cluster_service_create_cluster.sync_detailed(namespace, client=client, body=cluster),
                    "create cluster")
    got = check(cluster_service_get_cluster.sync_detailed(namespace, "py-cluster", client=client), "get cluster")
    listed = check(cluster_service_list_cluster.sync_detailed(namespace, client=client), "list clusters")
    missing = cluster_service_get_cluster.sync_detailed(namespace, "no-such-cluster", client=client)
    # The token alone in Authorization, as KubeRay's Python apiserver client sends its `token` parameter.
    bare = AuthenticatedClient(base_url=os.environ["KUBERAY_API"], token=os.environ["KUBERAY_TOKEN"], prefix="")
    bare_listed = check(cluster_service_list_cluster.sync_detailed(namespace, client=bare), "list with a bare token")
    print(json.dumps({
        "created": created.to_dict().get("name"),
        "user": got.to_dict().get("user"),
        "listed": sorted(c.get("name") for c in listed.to_dict().get("clusters", [])),
        "missing": [missing.status_code, missing.parsed.to_dict().get("message", "")],
        "bare_token_listed": len(bare_listed.to_dict().get("clusters", [])),
    }))
    check(cluster_service_delete_cluster.sync_detailed(namespace, "py-cluster", client=client), "delete cluster")
    check(compute_template_service_delete_compute_template.sync_detailed(namespace, "py-small", client=client),
          "delete template")


if __name__ == "__main__":
    main()
