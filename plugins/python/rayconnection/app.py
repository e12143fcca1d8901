"""The RayConnection plugin as a `kuberay:plugin/reconcile-plugin` component: the world's exports on top of
the bindings componentize-py generates from `wit/plugin.wit` (`wit_world`), around the plain-Python logic of
`connection.py`.

Built with `plugins/python/rayconnection/build.sh` (`make python-plugin`). componentize-py runs this module
once at build time and snapshots the interpreter: every module the plugin needs is imported here, at the top,
because a plugin has no files to import from while it runs.
"""

import json
import time
import traceback

import wit_world
from componentize_py_types import Err
from wit_world.exports import reconciler
from wit_world.imports import kubernetes, log, types

import connection

_VERBS = {
    "get": reconciler.Verb.GET,
    "list": reconciler.Verb.LIST,
    "create": reconciler.Verb.CREATE,
    "apply": reconciler.Verb.APPLY,
    "apply-status": reconciler.Verb.APPLY_STATUS,
    "delete": reconciler.Verb.DELETE,
    "finalize": reconciler.Verb.FINALIZE,
    "record-event": reconciler.Verb.RECORD_EVENT,
}

_HOST_ERRORS = {
    types.HostError_Forbidden: "forbidden",
    types.HostError_NotFound: "not-found",
    types.HostError_Conflict: "conflict",
    types.HostError_Invalid: "invalid",
    types.HostError_Unavailable: "unavailable",
    types.HostError_Internal: "internal",
}

_LEVELS = {
    "trace": log.Level.TRACE,
    "debug": log.Level.DEBUG,
    "info": log.Level.INFO,
    "warn": log.Level.WARN,
    "error": log.Level.ERROR,
}


def _kind(kind):
    group, version, name = kind
    return types.Kind(group=group, version=version, kind=name)


def _host_error(err):
    """The `connection.HostError` of an `Err(host-error)` a host call raised."""
    value = err.value
    return connection.HostError(
        _HOST_ERRORS.get(type(value), "internal"), str(getattr(value, "value", value))
    )


class WasmHost:
    """`connection.Host` backed by the component's `kuberay:plugin` imports."""

    def get(self, kind, name):
        try:
            text = kubernetes.get(_kind(kind), name)
        except Err as e:
            raise _host_error(e) from None
        return None if text is None else json.loads(text)

    def apply(self, obj):
        try:
            return json.loads(kubernetes.apply(json.dumps(obj)))
        except Err as e:
            raise _host_error(e) from None

    def apply_status(self, status):
        try:
            kubernetes.apply_status(json.dumps(status))
        except Err as e:
            raise _host_error(e) from None

    def record_event(self, event):
        related = None
        if event.related is not None:
            related_kind, related_name = event.related
            related = (_kind(related_kind), related_name)
        event_type = (
            kubernetes.EventType.WARNING if event.event_type == "Warning" else kubernetes.EventType.NORMAL
        )
        try:
            kubernetes.record_event(
                kubernetes.Event(
                    event_type=event_type,
                    reason=event.reason,
                    action=event.action,
                    note=event.note,
                    related=related,
                )
            )
        except Err as e:
            raise _host_error(e) from None

    def log(self, level, message, fields):
        log.log(_LEVELS.get(level, log.Level.INFO), message, [(k, str(v)) for k, v in fields.items()])

    def now(self):
        # WASI's wall clock: the one piece of the outside world a plugin reads without the host's API.
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Reconciler(wit_world.exports.Reconciler):
    """The exported `reconciler` interface."""

    def metadata(self):
        return reconciler.PluginMetadata(
            name=connection.NAME,
            version=connection.VERSION,
            wit_version=connection.WIT_VERSION,
            reconciles=_kind(connection.RAY_CONNECTION),
            owns=[_kind(k) for k in connection.OWNS],
            capabilities=[
                reconciler.Capability(kind=_kind(k), verbs=[_VERBS[v] for v in verbs])
                for k, verbs in connection.CAPABILITIES
            ],
            finalizer=None,
            uses_ray_head=False,
        )

    def reconcile(self, request):
        host = WasmHost()
        try:
            outcome = connection.reconcile(host, json.loads(request.object))
        except connection.InvalidObject as e:
            raise Err(reconciler.ReconcileError_InvalidObject(str(e))) from None
        except connection.Transient as e:
            raise Err(reconciler.ReconcileError_Transient(str(e))) from None
        except Exception as e:  # noqa: BLE001 - a bug is reported on the object and retried, not a trap
            host.log("error", "reconcile failed", {"traceback": traceback.format_exc()})
            raise Err(
                reconciler.ReconcileError_Transient(f"internal error: {type(e).__name__}: {e}")
            ) from None
        return reconciler.Outcome(requeue_after_ms=outcome.requeue_after_ms)

    def cleanup(self, request):
        # The plugin declares no finalizer, so the host never calls this; the ConfigMap goes with its
        # RayConnection through the owner reference the host set.
        return reconciler.Outcome(requeue_after_ms=None)
