"""Unit tests of connection.py on CPython, against an in-memory host (no WebAssembly):
`python3 -m unittest discover -s plugins/python/rayconnection` (`make python-plugin-check`)."""

import copy
import os
import re
import unittest

import connection
from connection import CONFIG_MAP, RAY_CLUSTER, Event, HostError, Outcome

UID = "0f0e0d0c-uid-of-the-connection"


class FakeHost:
    """Objects by (kind, name) in the RayConnection's namespace, with the host's ownership rule: an apply sets
    the controller owner reference and is refused on an object something else controls."""

    def __init__(self, objects=None, fail=None):
        self.objects = dict(objects or {})
        self.applied = []
        self.statuses = []
        self.events = []
        self.logs = []
        self.fail = fail or {}
        self.clock = "2026-01-01T00:00:00Z"

    def _maybe_fail(self, call):
        if call in self.fail:
            raise HostError(*self.fail[call])

    def get(self, kind, name):
        self._maybe_fail("get")
        found = self.objects.get((kind, name))
        return copy.deepcopy(found)

    def apply(self, obj):
        self._maybe_fail("apply")
        kind = (obj["apiVersion"].rpartition("/")[0], obj["apiVersion"].rpartition("/")[2], obj["kind"])
        name = obj["metadata"]["name"]
        live = self.objects.get((kind, name))
        if live is not None and not connection.controlled_by(live, UID):
            raise HostError("forbidden", f"{obj['kind']} {name} exists and is not controlled by the object")
        written = copy.deepcopy(obj)
        written["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "examples.kuberay-wasm.io/v1alpha1",
                "kind": "RayConnection",
                "name": "conn",
                "uid": UID,
                "controller": True,
            }
        ]
        self.objects[(kind, name)] = written
        self.applied.append(copy.deepcopy(obj))
        return copy.deepcopy(written)

    def apply_status(self, status):
        self._maybe_fail("apply_status")
        self.statuses.append(copy.deepcopy(status))

    def record_event(self, event):
        self._maybe_fail("record_event")
        self.events.append(event)

    def log(self, level, message, fields):
        self.logs.append((level, message, fields))

    def now(self):
        return self.clock


def rayconnection(cluster="demo", generation=1, status=None, domain=None):
    spec = {"rayClusterName": cluster}
    if domain is not None:
        spec["clusterDomain"] = domain
    obj = {
        "apiVersion": "examples.kuberay-wasm.io/v1alpha1",
        "kind": "RayConnection",
        "metadata": {"name": "conn", "namespace": "team", "uid": UID, "generation": generation},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def raycluster(name="demo", ports=None, head_service=None):
    container = {"name": "ray-head", "image": "rayproject/ray:2.52.0"}
    if ports is not None:
        container["ports"] = ports
    head = {"rayStartParams": {}, "template": {"spec": {"containers": [container]}}}
    if head_service is not None:
        head["headService"] = {"metadata": {"name": head_service}}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"headGroupSpec": head},
    }


def ready(status):
    return next(c for c in status["conditions"] if c["type"] == "Ready")


class HeadTest(unittest.TestCase):
    def test_the_head_service_is_kuberays(self):
        self.assertEqual(connection.head_service_name(raycluster("demo")), "demo-head-svc")
        self.assertEqual(connection.head_service_name(raycluster("demo", head_service="mine")), "mine")
        self.assertEqual(connection.head_service_name(raycluster("demo", head_service="")), "demo-head-svc")

    def test_ports_come_from_the_head_container_by_name_else_kuberays_defaults(self):
        self.assertEqual(
            connection.head_ports(raycluster()), {"client": 10001, "dashboard": 8265, "serve": 8000}
        )
        declared = [
            {"name": "client", "containerPort": 20001},
            {"name": "dashboard", "containerPort": 9265},
            {"name": "gcs-server", "containerPort": 6380},
        ]
        self.assertEqual(
            connection.head_ports(raycluster(ports=declared)),
            {"client": 20001, "dashboard": 9265, "serve": 8000},
        )

    def test_ports_that_are_not_ports_are_ignored(self):
        odd = [
            {"name": "client", "containerPort": True},
            {"name": "dashboard", "containerPort": 70000},
            {"name": "serve", "containerPort": "8001"},
            "not a port",
        ]
        self.assertEqual(connection.head_ports(raycluster(ports=odd)), connection.DEFAULT_PORTS)
        broken = {
            "metadata": {"name": "x"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": "no"}}}},
        }
        self.assertEqual(connection.head_ports(broken), connection.DEFAULT_PORTS)

    def test_the_data_a_client_needs(self):
        data = connection.connection_data(
            raycluster(ports=[{"name": "serve", "containerPort": 8001}]), "team", "cluster.local"
        )
        self.assertEqual(
            data,
            {
                "RAY_ADDRESS": "ray://demo-head-svc.team.svc.cluster.local:10001",
                "RAY_DASHBOARD_URL": "http://demo-head-svc.team.svc.cluster.local:8265",
                "RAY_SERVE_URL": "http://demo-head-svc.team.svc.cluster.local:8001",
                "RAY_HEAD_SERVICE": "demo-head-svc.team.svc.cluster.local",
                "RAY_CLUSTER_NAME": "demo",
            },
        )


class ReconcileTest(unittest.TestCase):
    def test_a_missing_cluster_is_reported_once_and_polled(self):
        host = FakeHost()
        outcome = connection.reconcile(host, rayconnection())
        self.assertEqual(outcome, Outcome(connection.REQUEUE_WHILE_MISSING_MS))
        self.assertEqual(host.applied, [])
        status = host.statuses[-1]
        self.assertEqual(status["observedGeneration"], 1)
        self.assertNotIn("configMapName", status)
        condition = ready(status)
        self.assertEqual((condition["status"], condition["reason"]), ("False", "RayClusterNotFound"))
        self.assertIn("RayCluster demo does not exist in namespace team", condition["message"])
        self.assertEqual([(e.event_type, e.reason) for e in host.events], [("Warning", "RayClusterNotFound")])

        # The next poll: the same status (so the host skips the write), and no second event.
        host.clock = "2026-01-01T00:00:05Z"
        connection.reconcile(host, rayconnection(status=status))
        self.assertEqual(host.statuses[-1], status)
        self.assertEqual(len(host.events), 1)

    def test_an_existing_cluster_gets_its_configmap_an_event_and_a_ready_status(self):
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster()})
        outcome = connection.reconcile(host, rayconnection())
        self.assertEqual(outcome, Outcome(connection.REQUEUE_WHILE_CONNECTED_MS))
        [applied] = host.applied
        self.assertEqual(
            applied["metadata"], {"name": "conn", "labels": {connection.CONNECTION_LABEL: "conn"}}
        )
        self.assertEqual(applied["data"]["RAY_ADDRESS"], "ray://demo-head-svc.team.svc.cluster.local:10001")
        self.assertNotIn("namespace", applied["metadata"], "the host sets the namespace")
        self.assertNotIn("ownerReferences", applied["metadata"], "the host sets the owner reference")
        self.assertEqual(
            host.events,
            [
                Event(
                    "Normal",
                    "ConfigMapWritten",
                    "Create",
                    "ConfigMap conn points to RayCluster demo: RAY_ADDRESS=ray://demo-head-svc.team.svc.cluster.local:10001",
                    (CONFIG_MAP, "conn"),
                )
            ],
        )
        status = host.statuses[-1]
        self.assertEqual(status["configMapName"], "conn")
        self.assertEqual(status["rayAddress"], "ray://demo-head-svc.team.svc.cluster.local:10001")
        condition = ready(status)
        self.assertEqual(
            (condition["status"], condition["reason"], condition["observedGeneration"]),
            ("True", "ConfigMapReady", 1),
        )

    def test_the_steady_state_writes_nothing_new(self):
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster()})
        connection.reconcile(host, rayconnection())
        status = host.statuses[-1]
        host.clock = "2026-01-01T00:01:00Z"
        connection.reconcile(host, rayconnection(status=status))
        self.assertEqual(len(host.applied), 1)
        self.assertEqual(len(host.events), 1)
        self.assertEqual(host.statuses[-1], status, "the transition time moves only with the status")

    def test_another_cluster_updates_the_configmap(self):
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster(), (RAY_CLUSTER, "other"): raycluster("other")})
        connection.reconcile(host, rayconnection())
        status = host.statuses[-1]
        connection.reconcile(host, rayconnection("other", generation=2, status=status))
        self.assertEqual(host.applied[-1]["data"]["RAY_CLUSTER_NAME"], "other")
        self.assertEqual(host.events[-1].action, "Update")
        self.assertEqual(host.statuses[-1]["observedGeneration"], 2)
        self.assertEqual(ready(host.statuses[-1])["lastTransitionTime"], ready(status)["lastTransitionTime"])

    def test_a_cluster_that_went_away_keeps_the_last_address_and_says_so(self):
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster()})
        connection.reconcile(host, rayconnection())
        del host.objects[(RAY_CLUSTER, "demo")]
        host.clock = "2026-01-01T00:02:00Z"
        connection.reconcile(host, rayconnection(status=host.statuses[-1]))
        status = host.statuses[-1]
        self.assertEqual(status["configMapName"], "conn")
        self.assertEqual(status["rayAddress"], "ray://demo-head-svc.team.svc.cluster.local:10001")
        condition = ready(status)
        self.assertEqual((condition["status"], condition["reason"]), ("False", "RayClusterNotFound"))
        self.assertEqual(condition["lastTransitionTime"], "2026-01-01T00:02:00Z")
        self.assertIn("still holds the last address", condition["message"])

    def test_a_configmap_of_someone_else_is_not_taken_over(self):
        theirs = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "conn"},
            "data": {"mine": "yes"},
        }
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster(), (CONFIG_MAP, "conn"): theirs})
        outcome = connection.reconcile(host, rayconnection())
        self.assertEqual(outcome, Outcome(connection.REQUEUE_WHILE_CONNECTED_MS))
        self.assertEqual(host.objects[(CONFIG_MAP, "conn")], theirs)
        status = host.statuses[-1]
        self.assertNotIn("configMapName", status)
        self.assertEqual(ready(status)["reason"], "ConfigMapRefused")
        self.assertEqual([(e.event_type, e.reason) for e in host.events], [("Warning", "ConfigMapRefused")])

    def test_an_invalid_spec_waits_for_a_change(self):
        for spec in [
            {"rayClusterName": "Not_A_Name"},
            {},
            {"rayClusterName": "demo", "clusterDomain": "bad..domain"},
        ]:
            with self.subTest(spec=spec):
                host = FakeHost({(RAY_CLUSTER, "demo"): raycluster()})
                obj = rayconnection()
                obj["spec"] = spec
                self.assertEqual(connection.reconcile(host, obj), Outcome(None))
                self.assertEqual(ready(host.statuses[-1])["reason"], "InvalidSpec")
                self.assertEqual(host.applied, [])

    def test_a_cluster_domain_is_used(self):
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster()})
        connection.reconcile(host, rayconnection(domain="corp.example"))
        self.assertEqual(host.applied[-1]["data"]["RAY_HEAD_SERVICE"], "demo-head-svc.team.svc.corp.example")

    def test_an_unavailable_host_is_transient(self):
        for call in ["get", "apply", "apply_status"]:
            with self.subTest(call=call):
                host = FakeHost(
                    {(RAY_CLUSTER, "demo"): raycluster()}, fail={call: ("unavailable", "timed out")}
                )
                with self.assertRaisesRegex(connection.Transient, "unavailable: timed out"):
                    connection.reconcile(host, rayconnection())

    def test_a_dropped_event_does_not_fail_the_reconcile(self):
        host = FakeHost({(RAY_CLUSTER, "demo"): raycluster()}, fail={"record_event": ("forbidden", "rate")})
        self.assertEqual(
            connection.reconcile(host, rayconnection()), Outcome(connection.REQUEUE_WHILE_CONNECTED_MS)
        )
        self.assertEqual(ready(host.statuses[-1])["status"], "True")

    def test_an_object_without_a_name_is_invalid(self):
        with self.assertRaises(connection.InvalidObject):
            connection.reconcile(FakeHost(), {"spec": {"rayClusterName": "demo"}})


class PolicyEntryTest(unittest.TestCase):
    def test_the_documented_policy_entry_grants_what_the_plugin_asks_for(self):
        """policy-entry.yaml (read as text: CPython has no YAML parser) against the plugin's metadata."""
        with open(os.path.join(os.path.dirname(__file__), "policy-entry.yaml"), encoding="utf-8") as f:
            text = f.read()

        def printed(kind):
            group, version, name = kind
            return f"{group}/{version}/{name}" if group else f"{version}/{name}"

        verbs = {
            m.group(1): [v.strip() for v in m.group(2).split(",")]
            for m in re.finditer(r"^    (\S+): \[([^\]]*)\]$", text, re.MULTILINE)
        }
        self.assertEqual(verbs, {printed(k): v for k, v in connection.CAPABILITIES})
        self.assertIn(f"  reconciles: {printed(connection.RAY_CONNECTION)}\n", text)
        self.assertIn(f"  owns: [{', '.join(printed(k) for k in connection.OWNS)}]\n", text)
        self.assertIn(f"- name: {connection.NAME}\n", text)
        self.assertIn("  rayHeads: false\n", text)


if __name__ == "__main__":
    unittest.main()
