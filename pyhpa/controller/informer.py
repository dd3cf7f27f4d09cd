"""Informers: LIST + WATCH of one resource type, delivered to handlers (client-go's reflector, simplified).

``Informer.run`` lists (in chunks), then watches from the list's resourceVersion. A watch that ends
(server timeout) is resumed from the last resourceVersion seen (lightkube does that itself); a watch
error resumes after a backoff; ``410 Gone`` (the server no longer has that history) re-lists, and the
difference to the objects known so far is delivered as upserts and deletes. ``synced`` is set after
the first complete list. Handlers parse objects once (``PodCache.upsert``, ``parse_autoscaler``), so
the sync hot path never sees Kubernetes objects.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ..adapters.errors import InputError
from ..adapters.objects import pod_from_model
from ..core import Pod
from ..core.selector import SelectorError, matches, parse_selector
from .api import ApiFailure, ListWatch, as_failure

log = logging.getLogger("pyhpa.controller.informer")

Handler = Callable[[str, Any], None]


def meta_of(obj: Any) -> tuple[str, str, str]:
    """(namespace, name, resourceVersion) of a lightkube model or a dict-shaped object."""
    meta = obj["metadata"] if isinstance(obj, dict) else obj.metadata
    if isinstance(meta, dict):
        return meta.get("namespace") or "", meta.get("name") or "", meta.get("resourceVersion") or ""
    return meta.namespace or "", meta.name or "", meta.resourceVersion or ""


class Informer:
    """Keeps handlers up to date with one resource type; ``backoff`` is (first, max) seconds after errors."""

    def __init__(self, name: str, listwatch: ListWatch, on_upsert: Handler, on_delete: Handler,
                 backoff: tuple[float, float] = (0.5, 30.0)):
        self.name = name
        self._lw = listwatch
        self._upsert = on_upsert
        self._delete = on_delete
        self._backoff = backoff
        self._known: dict[str, str] = {}
        self.resource_version: str | None = None
        self.synced = asyncio.Event()
        self.relists = 0
        self.last_error: str | None = None

    async def run(self) -> None:
        """List and watch until cancelled."""
        delay = self._backoff[0]
        while True:
            try:
                if self.resource_version is None:
                    await self._relist()
                await self._watch()
                delay = self._backoff[0]
            except asyncio.CancelledError:
                raise
            except Exception as err:  # noqa: BLE001 - an informer never dies; it retries
                failure = _failure(err)
                self.last_error = failure.message
                if failure.code == 410:
                    log.info("%s: watch history expired (%s); re-listing", self.name, failure.message)
                    self.resource_version = None
                    continue
                log.warning("%s: %s; retrying in %.1fs", self.name, failure.message, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._backoff[1])

    def _deliver(self, handler: Handler, key: str, obj: Any) -> None:
        """Call a handler; a failure is logged and that object skipped (the informer must go on)."""
        try:
            handler(key, obj)
        except Exception:  # noqa: BLE001
            log.exception("%s: handler failed for %s; object skipped", self.name, key)

    async def _relist(self) -> None:
        items, rv = await self._lw.list()
        seen: dict[str, str] = {}
        for obj in items:
            ns, name, obj_rv = meta_of(obj)
            key = f"{ns}/{name}"
            seen[key] = obj_rv
            if self._known.get(key) != obj_rv:
                self._deliver(self._upsert, key, obj)
        for key in self._known.keys() - seen.keys():
            self._deliver(self._delete, key, None)
        self._known = seen
        self.resource_version = rv
        self.relists += 1
        self.synced.set()
        log.debug("%s: listed %d objects at resourceVersion %s", self.name, len(items), rv)

    async def _watch(self) -> None:
        """Deliver watch events from ``resource_version`` on, advancing it with every event."""
        async for etype, obj in self._lw.watch(self.resource_version):
            ns, name, obj_rv = meta_of(obj)
            key = f"{ns}/{name}"
            if obj_rv:
                self.resource_version = obj_rv
            if etype == "DELETED":
                self._known.pop(key, None)
                self._deliver(self._delete, key, obj)
            elif etype in ("ADDED", "MODIFIED"):
                self._known[key] = obj_rv
                self._deliver(self._upsert, key, obj)


def _failure(err: Exception) -> ApiFailure:
    """``as_failure(err)``, which must not raise here: an exception escaping ``run`` would end the informer."""
    try:
        return as_failure(err)
    except Exception:  # noqa: BLE001
        return ApiFailure(0, repr(err))


class PodCache:
    """Pods as the decision core sees them (``core.Pod``), per namespace, with a label index.

    ``select(namespace, selector)`` answers from memory: candidates come from the index of the
    selector's smallest ``key=value`` requirement, then every requirement is checked — no pod LIST
    per sync, and no scan of a large namespace for the usual ``matchLabels`` selectors.
    """

    def __init__(self) -> None:
        self._pods: dict[str, dict[str, Pod]] = {}
        self._index: dict[str, dict[tuple[str, str], set[str]]] = {}

    def __len__(self) -> int:
        return sum(len(p) for p in self._pods.values())

    def upsert(self, key: str, obj: Any) -> None:
        """Informer handler: parse the lightkube Pod once and index it."""
        ns = key.partition("/")[0]
        try:
            pod = pod_from_model(obj)
        except InputError as err:
            log.warning("ignoring pod %s: %s", key, err)
            self.delete(key, None)
            return
        self._remove(ns, pod.name)
        self._pods.setdefault(ns, {})[pod.name] = pod
        index = self._index.setdefault(ns, {})
        for label in pod.labels.items():
            index.setdefault(label, set()).add(pod.name)

    def delete(self, key: str, obj: Any) -> None:
        """Informer handler: forget the pod."""
        ns, _, name = key.partition("/")
        self._remove(ns, name)

    def _remove(self, ns: str, name: str) -> None:
        old = self._pods.get(ns, {}).pop(name, None)
        if old is None:
            return
        index = self._index[ns]
        for label in old.labels.items():
            names = index.get(label)
            if names is not None:
                names.discard(name)
                if not names:
                    del index[label]

    def count(self, namespace: str) -> int:
        """Pods cached in ``namespace``."""
        return len(self._pods.get(namespace, ()))

    def labels(self, namespace: str, name: str) -> dict | None:
        """The labels of a cached pod (None when the cache does not have it)."""
        pod = self._pods.get(namespace, {}).get(name)
        return None if pod is None else pod.labels

    def select(self, namespace: str, selector: str) -> list[Pod]:
        """The pods of ``namespace`` matching ``selector`` text, sorted by name ([] for an empty or bad selector:
        the decision core reports SelectorRequired / InvalidSelector itself)."""
        if not selector:
            return []
        try:
            reqs = parse_selector(selector)
        except SelectorError:
            return []
        pods = self._pods.get(namespace)
        if not pods:
            return []
        index = self._index.get(namespace, {})
        candidates: Any = None
        for op, key, value in reqs:
            if op == "=":
                names = index.get((key, value), ())
                if candidates is None or len(names) < len(candidates):
                    candidates = names
        if candidates is None:
            candidates = pods.keys()
        return [pods[n] for n in sorted(candidates) if matches(reqs, pods[n].labels)]


__all__ = ["ApiFailure", "Informer", "PodCache", "meta_of"]
