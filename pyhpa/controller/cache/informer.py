"""Informers: LIST + WATCH of one resource type, delivered to handlers (client-go's reflector, simplified).

``Informer.run`` lists (in chunks), then watches from the list's resourceVersion. A watch that ends
(server timeout) is resumed from the last resourceVersion seen (lightkube does that itself); a watch
error resumes after a backoff; ``410 Gone`` (the server no longer has that history) re-lists, and the
difference to the objects known so far is delivered as upserts and deletes. ``synced`` is set after
the first complete list. Handlers parse objects once (``PodCache.upsert``, ``parse_autoscaler``), so
the sync hot path never sees Kubernetes objects.

Memory: a list is delivered page by page as it is read (``ListWatch.stream`` when the ListWatch has it), so
no more than one page of objects is alive at once; what the informer itself keeps per object is its
resourceVersion (an int when it is a canonical decimal, as the API server's are), per namespace, under the
handler's own name string.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any, Awaitable, Callable

from ..kube.api import ApiFailure, ListWatch, as_failure
from .pods import PodCache  # noqa: F401 - its former home

log = logging.getLogger("pyhpa.controller.informer")

Handler = Callable[[str, Any], None]


def meta_of(obj: Any) -> tuple[str, str, str]:
    """(namespace, name, resourceVersion) of a lightkube model or a dict-shaped object."""
    meta = obj["metadata"] if isinstance(obj, dict) else obj.metadata
    if isinstance(meta, dict):
        return meta.get("namespace") or "", meta.get("name") or "", meta.get("resourceVersion") or ""
    return meta.namespace or "", meta.name or "", meta.resourceVersion or ""


#: Seconds without an error after which the next error backs off from the first delay again (client-go's reflector:
#: ``wait.NewExponentialBackoffManager(800ms, 30s, 2min, ...)``, whose resetDuration is 2 minutes).
BACKOFF_RESET_SECONDS = 120.0


class Informer:
    """Keeps handlers up to date with one resource type; ``backoff`` is (first, max) seconds after errors, doubling
    with each error and starting from the first again after ``BACKOFF_RESET_SECONDS`` without one; ``clock`` is
    event-loop seconds (the loop's by default) and ``sleep`` the backoff's wait (``asyncio.sleep``): a test runs
    both on a clock of its own."""

    def __init__(self, name: str, listwatch: ListWatch, on_upsert: Handler, on_delete: Handler,
                 backoff: tuple[float, float] = (0.5, 30.0), clock: Callable[[], float] | None = None,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self.name = name
        self._lw = listwatch
        self._upsert = on_upsert
        self._delete = on_delete
        self._backoff = backoff
        self._clock = clock
        self._sleep = sleep
        self._known: dict[str, dict[str, Any]] = {}  # namespace -> name -> version_token(resourceVersion)
        self.resource_version: str | None = None
        self.synced = asyncio.Event()
        self.relists = 0
        self.last_error: str | None = None

    async def run(self) -> None:
        """List and watch until cancelled."""
        clock = self._clock or asyncio.get_running_loop().time
        delay, failed_at = self._backoff[0], -float("inf")
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
                now = clock()
                if now - failed_at >= BACKOFF_RESET_SECONDS:  # the watch ran long without an error: not a streak
                    delay = self._backoff[0]
                log.warning("%s: %s; retrying in %.1fs", self.name, failure.message, delay)
                await self._sleep(delay)
                failed_at = clock()
                delay = min(delay * 2, self._backoff[1])

    def _deliver(self, handler: Handler, key: str, obj: Any) -> None:
        """Call a handler; a failure is logged and that object skipped (the informer must go on)."""
        try:
            handler(key, obj)
        except Exception:  # noqa: BLE001
            log.exception("%s: handler failed for %s; object skipped", self.name, key)

    async def _relist(self) -> None:
        seen: dict[str, dict[str, Any]] = {}
        count = 0
        stream = getattr(self._lw, "stream", None)
        if stream is not None:  # page by page: only one page of objects alive at a time
            pages = stream()
            async for obj in pages:
                self._listed(obj, seen)
                count += 1
            rv = pages.resourceVersion
        else:
            items, rv = await self._lw.list()
            for obj in items:
                self._listed(obj, seen)
            count = len(items)
            del items
        for ns, names in self._known.items():
            now = seen.get(ns, {})
            for name in names.keys() - now.keys():
                self._deliver(self._delete, f"{ns}/{name}", None)
        self._known = seen
        self.resource_version = rv
        self.relists += 1
        self.synced.set()
        # the first list is said by "caches synced"; a later one (after an error or an expired watch) at info
        log.log(logging.INFO if self.relists > 1 else logging.DEBUG, "%s: listed %d objects at resourceVersion %s",
                self.name, count, rv)

    def _listed(self, obj: Any, seen: dict[str, dict[str, Any]]) -> None:
        ns, name, obj_rv = meta_of(obj)
        token = version_token(obj_rv)
        ns = sys.intern(ns)
        seen.setdefault(ns, {})[name] = token
        if self._known.get(ns, {}).get(name) != token:
            self._deliver(self._upsert, f"{ns}/{name}", obj)

    def known(self) -> int:
        """Objects the informer knows (as of its last list and the watch events since)."""
        return sum(len(names) for names in self._known.values())

    async def _watch(self) -> None:
        """Deliver watch events from ``resource_version`` on, advancing it with every event."""
        async for etype, obj in self._lw.watch(self.resource_version):
            ns, name, obj_rv = meta_of(obj)
            key = f"{ns}/{name}"
            if obj_rv:
                self.resource_version = obj_rv
            if etype == "DELETED":
                names = self._known.get(ns)
                if names is not None:
                    names.pop(name, None)
                self._deliver(self._delete, key, obj)
            elif etype in ("ADDED", "MODIFIED"):
                self._known.setdefault(sys.intern(ns), {})[name] = version_token(obj_rv)
                self._deliver(self._upsert, key, obj)


def version_token(rv: str) -> Any:
    """A resourceVersion as the informer keeps it: an int for a canonical decimal (28 bytes instead of a
    string's 50 and more; the API server's are decimals), else the text. Only compared for equality."""
    if rv.isdigit() and rv.isascii() and (rv[0] != "0" or rv == "0"):
        return int(rv)
    return rv


def _failure(err: Exception) -> ApiFailure:
    """``as_failure(err)``, which must not raise here: an exception escaping ``run`` would end the informer."""
    try:
        return as_failure(err)
    except Exception:  # noqa: BLE001
        return ApiFailure(0, repr(err))


__all__ = ["ApiFailure", "Informer", "Informers", "PodCache", "meta_of", "version_token"]


class Informers:
    """One ``Informer`` per namespace served (``namespaces``; none: one of every namespace), as one: ``run`` runs
    them all, ``synced`` is set once every one has listed. ``listwatch(namespace)`` gives each its ListWatch
    (None: every namespace)."""

    def __init__(self, name: str, listwatch: Callable[[str | None], ListWatch], namespaces: tuple[str, ...],
                 on_upsert: Handler, on_delete: Handler):
        self.name = name
        self.informers = [Informer(name, listwatch(ns), on_upsert, on_delete) for ns in namespaces or (None,)]
        self.synced = asyncio.Event()

    @property
    def relists(self) -> int:
        """Full lists since the start, every namespace's (a watch whose history expired lists again)."""
        return sum(i.relists for i in self.informers)

    async def run(self) -> None:
        """List and watch every namespace until cancelled."""
        await asyncio.gather(*(i.run() for i in self.informers), self._all_synced())

    async def _all_synced(self) -> None:
        for i in self.informers:
            await i.synced.wait()
        self.synced.set()
