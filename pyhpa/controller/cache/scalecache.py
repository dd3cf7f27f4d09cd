"""The targets' Scale from informer caches, for the common workload kinds (no Scale GET per sync).

Upstream's controller GETs the target's ``/scale`` subresource at every sync: one request per autoscaler
per period. For Deployments, StatefulSets and ReplicaSets (``apps/v1``) the Scale is a pure function of the
object — ``spec.replicas``, ``status.replicas`` and ``spec.selector`` rendered as the API server renders
it — so ``ScaleCache`` lists and watches those kinds once (``Informer``) and answers ``get`` from memory.

The cache can lag the API server by the watch latency, so it is only trusted where a stale value cannot do
harm: the reconciler reads the Scale live (a GET, whose ``resourceVersion`` guards the write) before every
scale update, decides again when the live Scale differs from the cached one, and reads it live for the
sync after a failed update (a 409 Conflict). A decision made from the cache that does *not* rescale writes
only the autoscaler's status (``currentReplicas`` as of the cache), which the next sync corrects like any
other status.

Kinds not in ``CACHED_KINDS``, an informer that has not listed yet, and an object the cache does not hold
(not created yet, or deleted) all fall back to the live GET (which then reports the error, as upstream).
A kind the controller may not list (RBAC: 403, or not served: 404) is disabled after the first attempt.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Optional

import msgspec
from lightkube.core import resource as res
from lightkube.resources.apps_v1 import Deployment, ReplicaSet, StatefulSet

from ...core import Scale
from ..kube.api import ListWatch, as_failure
from .autoscaler import TargetRef
from .informer import Informer

log = logging.getLogger("pyhpa.controller.scalecache")

class _WorkloadSpec(msgspec.Struct, omit_defaults=True):
    replicas: Optional[int] = None
    selector: Optional[dict[str, Any]] = None


class _WorkloadStatus(msgspec.Struct, omit_defaults=True):
    replicas: Optional[int] = None


class _Meta(msgspec.Struct, omit_defaults=True):
    name: str = ""
    namespace: Optional[str] = None
    resourceVersion: Optional[str] = None


class _WorkloadView(msgspec.Struct, omit_defaults=True):
    """What the Scale of a workload is made of; the rest of the JSON is skipped while decoding."""

    apiVersion: Optional[str] = None
    kind: Optional[str] = None
    metadata: Optional[_Meta] = None
    spec: Optional[_WorkloadSpec] = None
    status: Optional[_WorkloadStatus] = None


def _view(resource: Any) -> Any:
    """A lightkube resource of ``resource``'s kind decoded as ``_WorkloadView`` (list and watch only)."""
    return type(f"{resource.__name__}View", (res.NamespacedResourceG, _WorkloadView),
                {"_api_info": resource._api_info})


#: (apiVersion, kind) of scaleTargetRef -> lightkube resource (decoded as the few fields a Scale is made of);
#: their Scale is spec/status.replicas + spec.selector.
CACHED_KINDS: dict[tuple[str, str], Any] = {
    ("apps/v1", "Deployment"): _view(Deployment),
    ("apps/v1", "StatefulSet"): _view(StatefulSet),
    ("apps/v1", "ReplicaSet"): _view(ReplicaSet),
}


def selector_string(selector: Any) -> str:
    """A ``metav1.LabelSelector`` (lightkube model or dict) as the API server writes ``Scale.status.selector``
    (``metav1.LabelSelectorAsSelector(...).String()``): requirements sorted by key, ``matchLabels`` as
    ``k=v``, ``In``/``NotIn`` values sorted (``k in (a,b)``, ``k notin (a,b)``), ``Exists`` as ``k``,
    ``DoesNotExist`` as ``!k``. Empty for no selector."""
    if selector is None:
        return ""
    if not isinstance(selector, dict):
        selector = selector.to_dict()
    reqs = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for e in selector.get("matchExpressions") or []:
        key, op = e.get("key", ""), e.get("operator", "")
        values = ",".join(sorted(e.get("values") or []))
        text = {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                "DoesNotExist": f"!{key}"}.get(op)
        if text is not None:
            reqs.append((key, text))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def scale_of(obj: Any) -> Scale:
    """The autoscaling/v1 Scale the API server serves for a Deployment/StatefulSet/ReplicaSet ``obj``."""
    spec, status = obj.spec, obj.status
    return Scale((spec.replicas or 0) if spec else 0, (status.replicas or 0) if status else 0,
                 selector_string(spec.selector) if spec else "")


class _Guarded:
    """A ListWatch whose kind is disabled for good when listing it is forbidden (403) or not served (404):
    the informer then waits forever instead of retrying, and the cache answers None (live GETs)."""

    def __init__(self, inner: ListWatch, name: str):
        self._inner = inner
        self._name = name
        self.disabled = False

    async def list(self) -> tuple[list, str]:
        try:
            return await self._inner.list()
        except Exception as err:  # noqa: BLE001
            failure = as_failure(err)
            if failure.code not in (403, 404):
                raise
            self.disabled = True
            log.warning("not caching %s (%s): their Scale is read with a GET at every sync", self._name,
                        failure.message)
            await asyncio.Event().wait()
            raise  # unreachable

    def watch(self, resource_version: str) -> AsyncIterator[tuple[str, Any]]:
        return self._inner.watch(resource_version)


class ScaleCache:
    """Scales of the ``CACHED_KINDS`` objects, kept by one informer per kind.

    ``listwatch(resource, namespace)`` gives the ListWatch of a lightkube resource (``LightkubeCluster``
    has it), one per namespace of ``namespaces`` (none: one of every namespace). ``get`` answers None whenever the live GET must be used.
    """

    def __init__(self, listwatch: Any, namespaces: tuple[str, ...] = (),
                 kinds: dict[tuple[str, str], Any] | None = None):
        self._scales: dict[tuple[str, str, str], Scale] = {}  # (kind, namespace, name) -> Scale
        #: (api_version, kind) -> one (informer, guarded list-watch) per namespace served (one of all: ``()``)
        self._informers: dict[tuple[str, str], list[tuple[Informer, _Guarded]]] = {}
        for (api_version, kind), resource in (kinds or CACHED_KINDS).items():
            pairs = self._informers[(api_version, kind)] = []
            for namespace in namespaces or (None,):
                guarded = _Guarded(listwatch(resource, namespace), f"{kind}.{api_version}")
                pairs.append((Informer(f"scales-{kind.lower()}", guarded, self._upsert(kind), self._delete(kind)),
                              guarded))
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._scales)

    def _upsert(self, kind: str):
        def upsert(key: str, obj: Any) -> None:
            ns, _, name = key.partition("/")
            self._scales[(kind, ns, name)] = scale_of(obj)
        return upsert

    def _delete(self, kind: str):
        def delete(key: str, obj: Any) -> None:
            ns, _, name = key.partition("/")
            self._scales.pop((kind, ns, name), None)
        return delete

    @property
    def synced(self) -> bool:
        """Every enabled kind has listed once."""
        return all(i.synced.is_set() or g.disabled for pairs in self._informers.values() for i, g in pairs)

    async def wait_synced(self, timeout: float, stop: asyncio.Event | None = None) -> bool:
        """Wait until every enabled kind has listed (at most ``timeout`` seconds, or until ``stop``); True when
        it has."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.synced and loop.time() < deadline and not (stop is not None and stop.is_set()):
            await asyncio.sleep(0.05)
        return self.synced

    def get(self, namespace: str, ref: TargetRef | None) -> Scale | None:
        """The cached Scale of ``ref`` in ``namespace``; None: read it live (kind not cached, cache not
        listed yet, or no such object in the cache)."""
        entry = self._informers.get((ref.api_version, ref.kind)) if ref is not None else None
        if entry is None or not all(i.synced.is_set() for i, _ in entry):
            self.misses += 1
            return None
        scale = self._scales.get((ref.kind, namespace, ref.name))
        if scale is None:
            self.misses += 1
        else:
            self.hits += 1
        return scale

    def peek(self, namespace: str, ref: TargetRef) -> Scale | None:
        """The cached Scale, if any, without counting a hit or a miss (not for decisions: ``get`` is)."""
        entry = self._informers.get((ref.api_version, ref.kind))
        if entry is None or not all(i.synced.is_set() for i, _ in entry):
            return None
        return self._scales.get((ref.kind, namespace, ref.name))

    def tasks(self) -> list[asyncio.Task]:
        """Start the informers (cancel the tasks to stop them)."""
        return [asyncio.create_task(i.run(), name=i.name) for pairs in self._informers.values() for i, _ in pairs]


__all__ = ["CACHED_KINDS", "ScaleCache", "scale_of", "selector_string"]
