"""What a RayConnection asks for, in plain Python: no WebAssembly here, so it runs and is tested on CPython.

A RayConnection (`examples.kuberay-wasm.io/v1alpha1`) names a RayCluster of its namespace. The plugin reads
that RayCluster and writes a ConfigMap named after the RayConnection with what a client app needs to reach
it, for the app to mount with `envFrom`:

- `RAY_ADDRESS`: the Ray Client address, `ray://<head service>.<namespace>.svc.<domain>:<client port>`
  (what `ray.init()` reads);
- `RAY_DASHBOARD_URL`: the dashboard and its Jobs API (`ray job submit --address`, `JobSubmissionClient`);
- `RAY_SERVE_URL`: the Serve proxy;
- `RAY_HEAD_SERVICE` and `RAY_CLUSTER_NAME`.

The head Service is KubeRay's: `spec.headGroupSpec.headService.metadata.name` when set, else
`<cluster>-head-svc`; it is headless by default, so its name resolves to the head Pod and every port the head
listens on is reachable. Each port is the head container's port of that name (`client`, `dashboard`,
`serve`), else KubeRay's default (10001, 8265, 8000).

The status says whether the ConfigMap is current (`Ready`), with the ConfigMap's name, the address and the
generation it was computed for. The host watches only the kinds a plugin owns, so a RayCluster created,
changed or deleted after the RayConnection is noticed by polling: every 5 s while it is missing, every
minute once connected.

The host is passed in (`Host` below): `app.py` backs it with the component's imports, the tests with a fake.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

NAME = "rayconnection"
VERSION = "0.1.0"
# The version of the `kuberay:plugin` package this plugin is built against.
WIT_VERSION = "0.1.0"

# Kinds as (group, version, kind).
RAY_CONNECTION = ("examples.kuberay-wasm.io", "v1alpha1", "RayConnection")
RAY_CLUSTER = ("ray.io", "v1", "RayCluster")
CONFIG_MAP = ("", "v1", "ConfigMap")

# What the plugin asks the host for (its metadata): the policy grants at most this.
OWNS = [CONFIG_MAP]
CAPABILITIES = [
    (RAY_CONNECTION, ["apply-status", "record-event"]),
    (RAY_CLUSTER, ["get"]),
    (CONFIG_MAP, ["get", "apply"]),
]

# KubeRay's port names on the head container, and the ports it assumes when a name is not declared.
DEFAULT_PORTS = {"client": 10001, "dashboard": 8265, "serve": 8000}
DEFAULT_CLUSTER_DOMAIN = "cluster.local"

# How long to wait before looking again: the RayCluster is not an owned kind, so its changes queue nothing.
REQUEUE_WHILE_MISSING_MS = 5_000
REQUEUE_WHILE_CONNECTED_MS = 60_000

# Labels the ConfigMap carries, to find it by its RayConnection.
CONNECTION_LABEL = "examples.kuberay-wasm.io/rayconnection"

READY = "Ready"

_DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class HostError(Exception):
    """A host call failed; `kind` is the WIT `host-error` case: forbidden, not-found, conflict, invalid,
    unavailable or internal."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class InvalidObject(Exception):
    """The object itself is wrong; retried only when it changes."""


class Transient(Exception):
    """Something that may pass on retry; retried with backoff."""


@dataclass(frozen=True)
class Outcome:
    requeue_after_ms: int | None = None


@dataclass(frozen=True)
class Event:
    event_type: str  # "Normal" or "Warning"
    reason: str
    action: str
    note: str
    related: tuple[tuple[str, str, str], str] | None = None


class Host(Protocol):
    """The host calls the plugin makes; objects are dicts in their wire form."""

    def get(self, kind: tuple[str, str, str], name: str) -> dict[str, Any] | None: ...

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]: ...

    def apply_status(self, status: dict[str, Any]) -> None: ...

    def record_event(self, event: Event) -> None: ...

    def log(self, level: str, message: str, fields: dict[str, str]) -> None: ...

    def now(self) -> str:
        """The current time as RFC 3339 in UTC, to the second."""
        ...


def _at(value: Any, *path: Any) -> Any:
    """`value[path[0]][path[1]]...`, or None where a step is missing or of another type."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None
        elif not isinstance(value, dict):
            return None
        value = value[step] if isinstance(step, int) else value.get(step)
    return value


def head_service_name(cluster: dict[str, Any]) -> str:
    """KubeRay's head Service of `cluster`: the custom name if set and not empty, else
    `<cluster>-head-svc`."""
    custom = _at(cluster, "spec", "headGroupSpec", "headService", "metadata", "name")
    if isinstance(custom, str) and custom:
        return custom
    return f"{_at(cluster, 'metadata', 'name')}-head-svc"


def head_ports(cluster: dict[str, Any]) -> dict[str, int]:
    """The client, dashboard and serve ports of the head: the head container's (the first) port of that name,
    else KubeRay's default."""
    ports = dict(DEFAULT_PORTS)
    declared = _at(cluster, "spec", "headGroupSpec", "template", "spec", "containers", 0, "ports")
    for port in declared if isinstance(declared, list) else []:
        name = _at(port, "name")
        number = _at(port, "containerPort")
        # bool is an int in Python; a port is neither.
        if name in ports and isinstance(number, int) and not isinstance(number, bool) and 0 < number < 65536:
            ports[name] = number
    return ports


def connection_data(cluster: dict[str, Any], namespace: str, domain: str) -> dict[str, str]:
    """The ConfigMap's data for reaching `cluster` in `namespace`."""
    host = f"{head_service_name(cluster)}.{namespace}.svc.{domain}"
    ports = head_ports(cluster)
    return {
        "RAY_ADDRESS": f"ray://{host}:{ports['client']}",
        "RAY_DASHBOARD_URL": f"http://{host}:{ports['dashboard']}",
        "RAY_SERVE_URL": f"http://{host}:{ports['serve']}",
        "RAY_HEAD_SERVICE": host,
        "RAY_CLUSTER_NAME": str(_at(cluster, "metadata", "name")),
    }


def config_map(name: str, data: dict[str, str]) -> dict[str, Any]:
    """The ConfigMap to apply; the host adds the namespace and the controller owner reference."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {CONNECTION_LABEL: name}},
        "data": data,
    }


def condition(
    previous: dict[str, Any] | None, status: bool, reason: str, message: str, generation: Any, now: str
) -> dict[str, Any]:
    """The Ready condition; its transition time moves only when its status does, so a steady state writes the
    same status (and the host skips the write)."""
    value = "True" if status else "False"
    since = now
    if (
        previous is not None
        and previous.get("status") == value
        and isinstance(previous.get("lastTransitionTime"), str)
    ):
        since = previous["lastTransitionTime"]
    ready = {
        "type": READY,
        "status": value,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }
    if isinstance(generation, int):
        ready["observedGeneration"] = generation
    return ready


def controlled_by(obj: dict[str, Any], uid: Any) -> bool:
    """Whether `obj`'s controller owner reference names the object with `uid`."""
    refs = _at(obj, "metadata", "ownerReferences")
    return isinstance(uid, str) and any(
        isinstance(r, dict) and r.get("controller") is True and r.get("uid") == uid
        for r in (refs if isinstance(refs, list) else [])
    )


def _previous_ready(obj: dict[str, Any]) -> dict[str, Any] | None:
    conditions = _at(obj, "status", "conditions")
    for c in conditions if isinstance(conditions, list) else []:
        if isinstance(c, dict) and c.get("type") == READY:
            return c
    return None


def _transient(error: HostError) -> Transient:
    return Transient(f"{error.kind}: {error.message}")


def reconcile(host: Host, obj: dict[str, Any]) -> Outcome:
    """Brings the RayConnection `obj` (as the host's cache last saw it) and its ConfigMap up to date."""
    name = _at(obj, "metadata", "name")
    namespace = _at(obj, "metadata", "namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise InvalidObject("the object has no metadata.name or metadata.namespace")
    generation = _at(obj, "metadata", "generation")
    previous = _previous_ready(obj)
    was_ready = previous is not None and previous.get("status") == "True"
    previous_reason = previous.get("reason") if previous is not None else None

    def report(status: bool, reason: str, message: str, config_map_name: str | None, address: str | None):
        body: dict[str, Any] = {
            "conditions": [condition(previous, status, reason, message, generation, host.now())]
        }
        if isinstance(generation, int):
            body["observedGeneration"] = generation
        if config_map_name is not None:
            body["configMapName"] = config_map_name
        if address is not None:
            body["rayAddress"] = address
        try:
            host.apply_status(body)
        except HostError as e:
            raise _transient(e) from e
        # A Warning once per change of reason, not at every poll.
        if not status and reason != previous_reason:
            record(host, Event("Warning", reason, "Reconcile", message))

    cluster_name = _at(obj, "spec", "rayClusterName")
    domain = _at(obj, "spec", "clusterDomain")
    domain = DEFAULT_CLUSTER_DOMAIN if domain is None else domain
    if not isinstance(cluster_name, str) or not _DNS_1035_LABEL.match(cluster_name):
        report(
            False, "InvalidSpec", f"spec.rayClusterName {cluster_name!r} is not a RayCluster name", None, None
        )
        return Outcome()
    if not isinstance(domain, str) or len(domain) > 253 or not _DNS_SUBDOMAIN.match(domain):
        report(False, "InvalidSpec", f"spec.clusterDomain {domain!r} is not a DNS domain", None, None)
        return Outcome()

    try:
        existing = host.get(CONFIG_MAP, name)
        cluster = host.get(RAY_CLUSTER, cluster_name)
    except HostError as e:
        raise _transient(e) from e
    ours = existing is not None and controlled_by(existing, _at(obj, "metadata", "uid"))
    # The ConfigMap keeps the last address while the cluster is missing; the Ready condition says it is stale.
    kept = name if ours else None
    kept_address = _at(existing, "data", "RAY_ADDRESS") if ours else None
    kept_address = kept_address if isinstance(kept_address, str) else None
    if cluster is None:
        message = f"RayCluster {cluster_name} does not exist in namespace {namespace}"
        if ours:
            message += f"; ConfigMap {name} still holds the last address"
        report(False, "RayClusterNotFound", message, kept, kept_address)
        return Outcome(REQUEUE_WHILE_MISSING_MS)

    data = connection_data(cluster, namespace, domain)
    current = _at(existing, "data") if ours else None
    changed = not isinstance(current, dict) or any(current.get(k) != v for k, v in data.items())
    if changed:
        try:
            host.apply(config_map(name, data))
        except HostError as e:
            if e.kind in ("forbidden", "invalid"):
                # A ConfigMap of that name that is not this RayConnection's, or one the host or the API server
                # refuses: retrying does not help until something changes.
                report(
                    False,
                    "ConfigMapRefused",
                    f"ConfigMap {name} was not written: {e.message}",
                    kept,
                    kept_address,
                )
                return Outcome(REQUEUE_WHILE_CONNECTED_MS)
            raise _transient(e) from e
        action = "Create" if existing is None else "Update"
        record(
            host,
            Event(
                "Normal",
                "ConfigMapWritten",
                action,
                f"ConfigMap {name} points to RayCluster {cluster_name}: RAY_ADDRESS={data['RAY_ADDRESS']}",
                (CONFIG_MAP, name),
            ),
        )
        host.log("info", "wrote the ConfigMap", {"configMap": name, "rayCluster": cluster_name})
    message = f"ConfigMap {name} points to RayCluster {cluster_name}"
    report(True, "ConfigMapReady", message, name, data["RAY_ADDRESS"])
    if not was_ready:
        host.log("info", "connected", {"rayCluster": cluster_name})
    return Outcome(REQUEUE_WHILE_CONNECTED_MS)


def record(host: Host, event: Event) -> None:
    """Records an event; a refused or dropped event does not fail the reconcile."""
    try:
        host.record_event(event)
    except HostError as e:
        host.log("warn", "the event was not recorded", {"reason": event.reason, "error": str(e)})
