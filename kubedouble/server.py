"""``KubeDouble``: lifecycle (on the running loop or in a thread) and the test hooks."""

from __future__ import annotations

import asyncio
import copy
import re
import threading
import uuid
from typing import Any, Iterable, Optional

from aiohttp import web

from .faults import Fault, Faults
from .metrics import MetricsStore, Timestamp
from .ops import CRD_KEY, Api, now_rfc3339, spec_part
from .registry import Registry, ResourceType, resource_from_crd
from .routes import LoggedRequest, Routes
from .store import ABORT, BOOKMARK, CUT, STOP, Store
from .validation import Validator

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _split_gv(group_version: str) -> tuple[str, str]:
    group, _, version = group_version.rpartition("/")
    return group, version


class KubeDouble:
    """An in-process Kubernetes API server double on ``127.0.0.1`` (ephemeral port), driven over real HTTP.

    ``async with KubeDouble() as kd`` serves on the running loop; ``KubeDouble.start_in_thread()`` serves from
    a daemon thread (use it with the sync ``lightkube.Client``) and ``kd.stop()`` ends it.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, k8s_version: str = "1.37",
                 history_limit: int = 10000, validate: bool = True, strict_namespaces: bool = False,
                 bookmark_interval: Optional[float] = None, namespaces: Iterable[str] = DEFAULT_NAMESPACES):
        self.host, self.port = host, port
        self.k8s_minor = k8s_version.lstrip("v").split(".")[1]
        self.store = Store(history_limit)
        self.registry = Registry()
        self.validator = Validator(k8s_version) if validate else None
        self.api = Api(self.store, self.registry, self.validator, strict_namespaces)
        self.metrics = MetricsStore(lambda ns: self.store.list(("", "pods"), ns))
        self.faults = Faults()
        self.requests: list[tuple[str, str, dict]] = []
        self.request_log: list[LoggedRequest] = []  # the same requests with their User-Agent and arrival time
        self.invalid_requests: list[dict] = []
        self.bookmark_interval = bookmark_interval
        self.url: Optional[str] = None
        self._runner: Optional[web.AppRunner] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._stopping: asyncio.Event = asyncio.Event()
        self._tasks: list[asyncio.Task] = []
        for ns in namespaces:
            self.put_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                             "status": {"phase": "Active"}})

    # ----- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> "KubeDouble":
        """Start serving on the running loop; sets ``url``."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(Routes(self).app(), access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self.url = f"http://{self.host}:{self.port}"
        if self.bookmark_interval:
            self._tasks.append(asyncio.create_task(self._bookmark_loop()))
        return self

    async def aclose(self) -> None:
        """Stop serving: releases hanging requests, ends watches, closes the listener."""
        if self._runner is None:
            return
        self._stopping.set()
        self.store.broadcast(STOP)
        for task in self._tasks:
            task.cancel()
        await self._runner.cleanup()
        self._runner = None

    async def __aenter__(self) -> "KubeDouble":
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @classmethod
    def start_in_thread(cls, **kwargs: Any) -> "KubeDouble":
        """Create a double serving from its own event loop in a daemon thread (for sync tests)."""
        kd = cls(**kwargs)
        ready, failure = threading.Event(), []

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(kd.start())
            except BaseException as e:  # noqa: BLE001 - reported to the caller
                failure.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.close()

        kd._thread = threading.Thread(target=run, name="kubedouble", daemon=True)
        kd._thread.start()
        ready.wait(30)
        if failure:
            raise failure[0]
        return kd

    def stop(self) -> None:
        """Stop a double made by ``start_in_thread`` and join its thread."""
        if self._thread is None or self._loop is None:
            raise RuntimeError("stop() is for start_in_thread(); use 'await kd.aclose()' on a running loop")
        asyncio.run_coroutine_threadsafe(self.aclose(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> "KubeDouble":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(self.bookmark_interval or 1.0)
            self.send_bookmarks()

    # ----- lightkube helpers ----------------------------------------------------------------------------
    def kubeconfig(self, namespace: str = "default") -> Any:
        """A ``lightkube.KubeConfig`` for this double.

        ``KubeConfig.from_server(url)`` alone is not enough with lightkube 1.0.1: it leaves the user unset and
        the client then fails ``assert config.user, "Missing user"``; an empty ``User()`` fixes that.
        """
        from lightkube import KubeConfig
        from lightkube.config.models import Cluster, User
        return KubeConfig.from_one(cluster=Cluster(server=self.url), user=User(), namespace=namespace)

    def client(self, namespace: str = "default", **kwargs: Any) -> Any:
        """A sync ``lightkube.Client`` for this double (env proxies ignored)."""
        from lightkube import Client
        kwargs.setdefault("trust_env", False)
        return Client(self.kubeconfig(namespace), **kwargs)

    def async_client(self, namespace: str = "default", **kwargs: Any) -> Any:
        """A ``lightkube.AsyncClient`` for this double (env proxies ignored)."""
        from lightkube import AsyncClient
        kwargs.setdefault("trust_env", False)
        return AsyncClient(self.kubeconfig(namespace), **kwargs)

    # ----- resources ------------------------------------------------------------------------------------
    def register_crd(self, crd: dict) -> dict:
        """Serve the resource described by an ``apiextensions.k8s.io/v1`` CRD manifest (create or replace it).

        The manifest is schema-checked like a POSTed one; raises ``KubeError`` (422) when it is malformed.
        """
        body = copy.deepcopy(crd)
        rt = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        name = (body.get("metadata") or {}).get("name", "")
        with self.store.lock:
            if self.store.get(CRD_KEY, None, name) is None:
                return self.api.create(rt, "v1", None, body)
            body.get("metadata", {}).pop("resourceVersion", None)
            return self.api.update(rt, "v1", None, name, body)

    def _type(self, group_version: str, plural: str) -> ResourceType:
        group, version = _split_gv(group_version)
        rt = self.registry.lookup(group, version, plural)
        if rt is None:
            raise KeyError(f"{plural} is not served at {group_version}")
        return rt

    def get_object(self, group_version: str, plural: str, ns: Optional[str], name: str) -> Optional[dict]:
        """The stored object (a copy) without going through HTTP, or None. ``group_version`` like "apps/v1"."""
        rt = self._type(group_version, plural)
        obj = self.store.get(rt.key, ns if rt.namespaced else None, name)
        return None if obj is None else self.api.render(rt, _split_gv(group_version)[1], obj)

    def list_objects(self, group_version: str, plural: str, ns: Optional[str] = None) -> list[dict]:
        """All stored objects of a resource (in ``ns`` if given), without HTTP."""
        rt = self._type(group_version, plural)
        version = _split_gv(group_version)[1]
        return [self.api.render(rt, version, o) for o in self.store.list(rt.key, ns)]

    def put_object(self, obj: dict) -> dict:
        """Store ``obj`` verbatim (no validation, status kept) and emit ADDED/MODIFIED to watchers.

        Fills what the server owns when missing: namespace ("default"), uid, creationTimestamp, generation
        (bumped when the spec changes); always assigns a new resourceVersion. Returns the stored object.
        """
        obj = copy.deepcopy(obj)
        group, version = _split_gv(obj["apiVersion"])
        rt = self.registry.by_kind(group, obj["kind"])
        if rt is None:
            raise KeyError(f"kind {obj['kind']} of {obj['apiVersion']} is not served")
        meta = obj.setdefault("metadata", {})
        if rt.namespaced:
            meta["namespace"] = meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        with self.store.lock:
            self._fill_meta(rt, obj, self.store.get(rt.key, meta.get("namespace"), meta["name"]))
            obj["apiVersion"] = rt.api_version()
            stored = self.store.put(rt.key, obj)
            if rt.key == CRD_KEY:
                self.registry.add(resource_from_crd(stored))
        return self.api.render(rt, version, stored)

    @staticmethod
    def _fill_meta(rt: ResourceType, obj: dict, cur: Optional[dict]) -> None:
        meta, old = obj["metadata"], (cur or {}).get("metadata", {})
        meta.setdefault("uid", old.get("uid") or str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", old.get("creationTimestamp") or now_rfc3339())
        if cur is None:
            meta.setdefault("generation", 1)
        elif "generation" not in meta:
            changed = spec_part(rt, obj) != spec_part(rt, cur)
            meta["generation"] = int(old.get("generation") or 1) + (1 if changed else 0)

    def delete_object(self, group_version: str, plural: str, ns: Optional[str], name: str) -> Optional[dict]:
        """Delete without HTTP (emits DELETED); returns the deleted object or None."""
        rt = self._type(group_version, plural)
        return self.api.delete_stored(rt, ns if rt.namespaced else None, name)

    # ----- watches --------------------------------------------------------------------------------------
    def cut_watches(self, path_regex: Optional[str] = None, abrupt: bool = False) -> int:
        """End open watch streams whose path matches (all when None); returns how many.

        Graceful (default): the chunked stream ends cleanly, as when the server's watch timeout fires;
        lightkube's ``watch()`` then re-requests from the last resourceVersion it saw. ``abrupt=True`` drops
        the TCP connection mid-stream; lightkube raises an ``httpx2`` transport error to its ``on_error``.
        """
        pattern = re.compile(path_regex) if path_regex else None
        return self.store.broadcast(ABORT if abrupt else CUT,
                                    lambda w: pattern is None or bool(pattern.search(w.path)))

    def send_bookmarks(self) -> int:
        """Send a BOOKMARK (current resourceVersion) to every watch that asked for ``allowWatchBookmarks``."""
        with self.store.lock:
            return self.store.broadcast((BOOKMARK, self.store.rv), lambda w: w.bookmarks)

    def expire_history(self) -> None:
        """Drop retained watch history: a watch from any older resourceVersion now gets a 410 ``Expired``."""
        self.store.expire_history()

    @property
    def open_watches(self) -> list[str]:
        """Paths of the watch streams currently open."""
        with self.store.lock:
            return [w.path for w in self.store.watchers]

    @property
    def resource_version(self) -> str:
        """The current global resourceVersion."""
        return str(self.store.rv)

    # ----- faults and observation -----------------------------------------------------------------------
    def add_fault(self, method: Optional[str] = None, path_regex: str = ".*", status: Optional[int] = 503,
                  delay: float = 0.0, hang: bool = False, times: Optional[int] = None,
                  query_regex: Optional[str] = None, message: Optional[str] = None, lost: bool = False) -> Fault:
        """Make matching requests fail: wait ``delay`` s, then never answer (``hang``) or answer ``status``; with
        ``lost``, carry the request out and then never answer it (a response lost on its way back).

        ``method`` None matches any verb; ``path_regex`` is searched in the URL path and ``query_regex`` in the
        raw query string; ``times`` limits how many requests the rule applies to (None = until removed);
        ``status=None`` with a delay gives slow successes. Returns the rule (``.hits`` counts applications).
        """
        return self.faults.add(Fault(method, path_regex, status, delay, hang, times, query_regex, message, lost))

    def remove_fault(self, fault: Fault) -> None:
        """Uninstall one rule returned by ``add_fault``."""
        self.faults.remove(fault)

    def clear_faults(self) -> None:
        """Uninstall every fault rule."""
        self.faults.clear()

    def clear_requests(self) -> None:
        """Empty ``requests`` (the log of ``(method, path, query_dict)``) and ``request_log``."""
        self.requests.clear()
        self.request_log.clear()

    def count_requests(self, method: Optional[str] = None, path_regex: Optional[str] = None,
                       watch: Optional[bool] = None) -> int:
        """How many logged requests match ``method``, a ``re.search`` of the path, and watch / non-watch."""
        pattern = re.compile(path_regex) if path_regex else None
        n = 0
        for m, path, query in list(self.requests):
            is_watch = query.get("watch") in ("true", "1") or "/watch/" in path
            if ((method is None or m == method.upper()) and (pattern is None or pattern.search(path))
                    and (watch is None or watch == is_watch)):
                n += 1
        return n

    # ----- metrics --------------------------------------------------------------------------------------
    def set_pod_metrics(self, ns: str, pod_name: str, containers: dict[str, dict[str, Any]],
                        timestamp: Timestamp = None, window: Any = "30s") -> None:
        """Serve ``metrics.k8s.io`` usage for one pod (``MetricsStore.set_pod_metrics``); only pods stored in
        the double are reported."""
        self.metrics.set_pod_metrics(ns, pod_name, containers, timestamp, window)

    def clear_pod_metrics(self, ns: Optional[str] = None, pod_name: Optional[str] = None) -> None:
        """Forget resource metrics: all, one namespace's, or one pod's."""
        self.metrics.clear_pod_metrics(ns, pod_name)

    def set_pods_metric(self, ns: str, metric: str, values: dict[str, Any], labels: Optional[dict] = None,
                        timestamp: Timestamp = None, window_seconds: Optional[int] = None) -> None:
        """Serve a custom pods metric (``MetricsStore.set_pods_metric``)."""
        self.metrics.set_pods_metric(ns, metric, values, labels, timestamp, window_seconds)

    def set_object_metric(self, ns: Optional[str], resource: str, name: str, metric: str, value: Any,
                          labels: Optional[dict] = None, timestamp: Timestamp = None,
                          window_seconds: Optional[int] = None) -> None:
        """Serve a custom object metric (``MetricsStore.set_object_metric``)."""
        self.metrics.set_object_metric(ns, resource, name, metric, value, labels, timestamp, window_seconds)

    def set_external_metric(self, ns: str, metric: str, series: list[tuple[dict, Any]],
                            timestamp: Timestamp = None, window_seconds: Optional[int] = None) -> None:
        """Serve an external metric (``MetricsStore.set_external_metric``)."""
        self.metrics.set_external_metric(ns, metric, series, timestamp, window_seconds)

    def clear_metrics(self) -> None:
        """Forget every resource, custom and external metric."""
        self.metrics.clear()

    def remove_metric(self, kind: str, *key: Any) -> None:
        """Forget one metric (``MetricsStore.remove``): a removed metric answers 404."""
        self.metrics.remove(kind, *key)
