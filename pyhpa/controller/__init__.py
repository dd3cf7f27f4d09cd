"""The live HPA controller (``pyhpa run``): HorizontalAutoscaler objects synced through the decision core.

Data flow (docs/controller.md)::

    informers (list+watch) ──> caches: autoscalers (parsed Autoscaler), pods (core.Pod + label index)
         │ new object / spec change
         v
    WorkQueue (due times, one worker per key, backoff) ──> N workers ──> Reconciler.sync(key)
                                                                         │ Scale GET, metrics APIs (timeouts)
                                                                         │ pyhpa.core.decide
                                                                         v
                                                          Writer (gate) ──> scale, status, events

``Controller`` is transport-agnostic (``Cluster`` and ``MetricsClient`` ports); ``run_controller``
wires it to lightkube and serves ``/healthz``, ``/readyz`` and ``/metrics``.
"""

from __future__ import annotations

import asyncio
import logging
import math
import signal
import time
from itertools import islice
from typing import Any, Callable

from lightkube.config.kubeconfig import SingleConfig

from .. import __version__
from ..adapters.metric_types import REGISTRY
from ..adapters.pause import pause_annotations
from .cache.autoscaler import MEMORY_KEY, Autoscaler, parse_autoscaler
from .cache.informer import Informers, PodCache
from .cache.scalecache import ScaleCache
from .kube.api import Cluster, HttpMetrics, LightkubeCluster, MetricsClient
from .outputs.events import EventRecorder
from .outputs.load import RELEASE_SECONDS, SyncLoad, release_memory, tune_gc
from .outputs.monitor import Monitor
from .outputs.server import HealthServer
from .outputs.status import StatusWriter
from .outputs.writer import Writer
from .preview import enable_preview
from .scaleout.leadership import Leadership, LeadershipLost, default_identity, lease_settings
from .scaleout.shards import Sharding, ShardSettings
from .settings import SCALE_CACHE_WAIT_SECONDS, Settings
from .sync.memory import InProcessMemory, MemoryStore, StatusMemory
from .sync.nsmetrics import NamespaceMetrics, resync_delay
from .sync.prediction import LivePredictions
from .sync.queue import QueueClosed, WorkQueue
from .sync.reconciler import Reconciler, SyncResult
from .sync.sources import MetricSources

log = logging.getLogger("pyhpa.controller")

__all__ = ["Controller", "LeadershipLost", "Settings", "run_controller"]


class Controller:
    """Informers, caches, work queue, workers and the reconciler of one controller process.

    ``gate`` is asked before every write (leader election, read-only mode); ``memory`` keeps the
    controller memory (in-process by default); ``clock`` gives epoch seconds (the decisions' ``now``).
    """

    def __init__(self, settings: Settings, cluster: Cluster, metrics: MetricsClient,
                 memory: MemoryStore | None = None, gate: Callable[[], bool] | None = None,
                 clock: Callable[[], float] = time.time):
        self.settings = settings
        self.cluster = cluster
        self.clock = clock
        self.autoscalers: dict[str, Autoscaler] = {}
        self.pods = PodCache()
        self.memory = memory if memory is not None else InProcessMemory()
        self.monitor = Monitor()
        self.writer = Writer(cluster, gate)
        self.events = EventRecorder(self.writer, settings.reporting_controller, settings.instance,
                                    settings.event_series_window_seconds)
        self.status = StatusWriter(self.writer, self.memory)
        self.shared_metrics: NamespaceMetrics | None = None
        self._ahead_of, self._since_ahead = "", 0  # the namespace that read ahead last, keys taken since
        if isinstance(metrics, HttpMetrics):  # one metrics.k8s.io list per namespace and tick (nsmetrics)
            metrics = self.shared_metrics = NamespaceMetrics(metrics, self.pods.count, self.pods.labels,
                                                             lambda ns, selector: len(self.pods.select(ns, selector)))
        self.sources = MetricSources(metrics, settings.metrics_timeout_seconds)
        self.predictions = LivePredictions(settings.prometheus_url, settings.metrics_timeout_seconds)
        self.reconciler = Reconciler(self.autoscalers, self.pods, cluster, self.sources, self.memory, self.writer,
                                     self.status, self.events, self.monitor, clock, predictions=self.predictions)
        self.autoscaler_informer = Informers("autoscalers", cluster.autoscalers, settings.namespaces,
                                             self._on_autoscaler, self._on_autoscaler_deleted)
        self.pod_informer = Informers("pods", cluster.pods, settings.namespaces, self.pods.upsert, self.pods.delete)
        self.scales = ScaleCache(cluster.listwatch, settings.namespaces) if hasattr(cluster, "listwatch") else None
        self.reconciler.scales = self.scales
        self.queue: WorkQueue | None = None
        self.syncs = 0
        self.stopping = False
        if settings.preview:  # --preview: native HPAs, read-only, report only (pyhpa.controller.preview)
            enable_preview(self)
        self.load = SyncLoad(self.monitor.registry)  # lag, requests per sync, shard size (pyhpa.controller.outputs.load)
        self.load.whole(lambda: len(self.autoscalers))
        self.shards: Sharding | None = None  # --shards auto: set by Sharding.run

    @property
    def ready(self) -> bool:
        """Informers synced and not shutting down (``/readyz``)."""
        return (self.autoscaler_informer.synced.is_set() and self.pod_informer.synced.is_set()
                and not self.stopping)

    # ----- informer handlers -------------------------------------------------------------------------------
    def _on_autoscaler(self, key: str, obj: Any) -> None:
        """Parse once; a new object or a spec change (generation) is synced now, a status change is not."""
        old = self.autoscalers.get(key)
        meta = obj["metadata"]
        generation = int(meta.get("generation") or 0)
        same_object = (old is not None and old.uid == meta.get("uid", "") and old.generation == generation
                       and pause_annotations(meta) == old.pause)  # a pause: sync at once
        if same_object and _same_status(old, obj):
            old.resource_version = meta.get("resourceVersion", "")
            return
        self.autoscalers[key] = parse_autoscaler(obj, self.settings)
        if old is None:
            self.monitor.num_autoscalers.inc()
        elif old.uid != meta.get("uid", ""):
            self.memory.forget(key)  # deleted and created again while the watch was away
        if not same_object and self.queue is not None:
            self.queue.add(key)

    def _on_autoscaler_deleted(self, key: str, obj: Any) -> None:
        a = self.autoscalers.pop(key, None)
        if a is None:
            return
        self.monitor.num_autoscalers.dec()
        self.monitor.deleted(a.namespace, a.name)
        self.memory.forget(key)
        self.predictions.forget(key)
        self.reconciler.selectors.remove(key)
        if self.queue is not None:
            self.queue.remove(key)

    # ----- workers -----------------------------------------------------------------------------------------
    def _next_delay(self, key: str, result: SyncResult | None, started: float) -> float | None:
        """When to sync ``key`` again: its own period, counted from the sync's start, moved by up to ± jitter
        towards its namespace's phase (``resync_delay``: every replica syncs it at the same phase); a backoff
        (never longer than the period) after a failure; now when the spec changed meanwhile. Never later than
        the next start or end of one of its schedule windows (``status.schedules``, from the decision core's
        ``next_change``), so a floor or cap applies within moments of its window's start or end."""
        a = self.autoscalers.get(key)
        if result is None or a is None:
            return None
        period = a.sync_period_seconds
        if result.again:
            return 0.0
        loop_now = asyncio.get_running_loop().time()
        change = _schedule_due(result, started)
        if result.retry:
            return max(0.0, min(self.queue.retry_delay(key), period, change - loop_now))
        self.queue.forget(key)
        wall_started = self.clock() - (loop_now - started)
        due = started + resync_delay(a.namespace, period, wall_started, self.settings.jitter)
        return max(0.0, min(due, change) - loop_now)

    def _read_ahead(self, key: str) -> None:
        """Ask the pod metrics lists of the next ``READ_AHEAD_NAMESPACES`` namespaces in the work queue before
        their syncs do (``NamespaceMetrics.prefetch``, with the pod selectors, from the Scale cache, of each one's
        autoscalers among the next ``READ_AHEAD_KEYS`` due keys, ``WorkQueue.upcoming``): the autoscalers of a
        namespace are due together (at its phase), so without it the workers, done with one namespace, would all
        wait for the next one's list; with it that request overlaps the syncs of the namespaces before.
        Autoscalers without a metric read from metrics.k8s.io, and another replica's share, ask nothing."""
        current = self.autoscalers.get(key)
        if current is None:
            return
        shared, ahead = self.shared_metrics, {}  # namespace -> selectors of its upcoming autoscalers
        for k in islice(self.queue.upcoming(), READ_AHEAD_KEYS):
            a = self.autoscalers.get(k)
            if a is None or a.scale_target_ref is None or a.namespace == current.namespace:
                continue
            if a.namespace not in ahead:
                if len(ahead) == READ_AHEAD_NAMESPACES:
                    break
                ahead[a.namespace] = None if shared.listed(a.namespace) else []  # None: asked already
            selectors = ahead[a.namespace]
            if selectors is None or not _reads_pod_metrics(a) or (
                    self.shards is not None and not self.shards.membership.owns(k)):
                continue
            scale = self.scales.peek(a.namespace, a.scale_target_ref)
            if scale is not None:
                selectors.append(scale.selector)
        for namespace, selectors in ahead.items():
            if selectors:
                shared.prefetch(namespace, selectors)

    async def _worker(self) -> None:
        queue, loop = self.queue, asyncio.get_running_loop()
        while True:
            try:
                key = await queue.get()
            except QueueClosed:
                return
            if self.shards is not None and not self.shards.claim(key):
                queue.done(key)  # another replica's share (it was requeued before the membership changed)
                continue
            started, delay = loop.time(), None
            sync = self.load.begin(key, started - queue.last_due)
            if self.shared_metrics is not None and self.scales is not None:
                namespace = key.partition("/")[0]
                self._since_ahead += 1
                if namespace != self._ahead_of or self._since_ahead >= READ_AHEAD_KEYS // 2:
                    self._ahead_of, self._since_ahead = namespace, 0  # once per namespace or half a look
                    self._read_ahead(key)
            try:
                result = await self.reconciler.sync(key)
                self.syncs += 1
                delay = self._next_delay(key, result, started)
            except Exception:  # noqa: BLE001 - one broken sync must not stop the worker
                log.exception("sync of %s crashed", key)
                delay = min(queue.retry_delay(key), self.settings.sync_period_seconds)
            finally:
                queue.done(key, delay)
                self.load.end(sync)
                if self.shards is not None:
                    self.shards.settle(key)

    # ----- lifecycle ---------------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run until ``stop`` is set, then shut down gracefully (in-flight syncs finish, events flush)."""
        stop = stop or asyncio.Event()
        s = self.settings
        self.queue = WorkQueue(s.retry_base_seconds, s.retry_max_seconds, s.retry_qps, s.retry_burst)
        for key in self.autoscalers:
            self.queue.add(key)
        background = [asyncio.create_task(self.autoscaler_informer.run(), name="informer-autoscalers"),
                      asyncio.create_task(self.pod_informer.run(), name="informer-pods"),
                      asyncio.create_task(self.events.run(), name="events")]
        if self.scales is not None and not self.settings.preview:
            background += self.scales.tasks()
        workers: list[asyncio.Task] = []
        try:
            if await self._wait_synced(stop):
                if self.scales is not None and not s.preview:  # else the first round GETs every Scale
                    await self.scales.wait_synced(SCALE_CACHE_WAIT_SECONDS, stop)
                log.info("caches synced: %d autoscalers, %d pods; starting %d workers",
                         len(self.autoscalers), len(self.pods), s.workers)
                background.append(asyncio.create_task(_release_memory(), name="release-memory"))
                workers = [asyncio.create_task(self._worker(), name=f"worker-{i}") for i in range(s.workers)]
                await stop.wait()
        finally:
            await self._shutdown(workers, background)

    async def _wait_synced(self, stop: asyncio.Event) -> bool:
        synced = asyncio.gather(self.autoscaler_informer.synced.wait(), self.pod_informer.synced.wait())
        stopped = asyncio.ensure_future(stop.wait())
        done, _ = await asyncio.wait({synced, stopped}, return_when=asyncio.FIRST_COMPLETED)
        pending = [f for f in (synced, stopped) if f not in done]
        for f in pending:
            f.cancel()
        await asyncio.gather(*pending, return_exceptions=True)  # retrieved: no "exception was never retrieved"
        return synced in done

    async def _shutdown(self, workers: list[asyncio.Task], background: list[asyncio.Task]) -> None:
        self.stopping = True
        grace = self.settings.shutdown_grace_seconds
        self.queue.shutdown()
        if workers:
            _, pending = await asyncio.wait(workers, timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        await self.events.flush(grace)
        await self.sources.close()
        await self.predictions.close()
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        log.info("controller stopped after %d syncs", self.syncs)


#: how many of the next due keys ``Controller._read_ahead`` looks at, and for how many namespaces at most
READ_AHEAD_KEYS = 32
READ_AHEAD_NAMESPACES = 2


def _reads_pod_metrics(a: Autoscaler) -> bool:
    """``a`` has a metric read from the namespace's pod metrics (a ``shared`` type: Resource, ContainerResource)."""
    for q in a.queries:
        t = REGISTRY.get(q.type)
        if t is not None and t.shared:
            return True
    return False


async def _release_memory() -> None:
    """Give the C heap's free pages back now (the list pages are gone) and every ``RELEASE_SECONDS``
    (``pyhpa.controller.outputs.load.release_memory``)."""
    while True:
        release_memory()
        await asyncio.sleep(RELEASE_SECONDS)


#: seconds after a window's start or end at which its autoscaler is synced (the wall clock and the event loop's
#: clock may drift apart by a little; a sync that comes too early sees the change due at once and resyncs)
SCHEDULE_MARGIN_SECONDS = 0.005


def _schedule_due(result: SyncResult, started: float) -> float:
    """Event-loop time of the next start or end of a window of the synced autoscaler (inf: none), from the
    decision's ``status.schedules.next_change`` (epoch s) and the decision's ``now`` taken at ``started``."""
    d, gathered = result.decision, result.gathered
    if d is None or gathered is None or d.status.schedules is None or d.status.schedules.next_change is None:
        return math.inf
    return started + max(0.0, d.status.schedules.next_change - gathered.inputs.now) + SCHEDULE_MARGIN_SECONDS


def _same_status(old: Autoscaler, obj: Any) -> bool:
    """The object's status is the one ``old`` keeps, or the one being written (the informer's echo of a status
    write may come before its answer)."""
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        return False
    status = dict(status)
    memory = status.pop(MEMORY_KEY, None)
    return old.same_status(status, memory, in_flight=True)


async def run_controller(settings: Settings, config: SingleConfig, http: str = "aiohttp",
                         stop: asyncio.Event | None = None, install_signals: bool = True,
                         on_started: Callable[[Controller, HealthServer | None], None] | None = None,
                         clock: Callable[[], float] = time.time) -> Controller:
    """Run the controller against the cluster of ``config`` until ``stop`` is set (or SIGTERM/SIGINT).

    Serves ``/healthz``, ``/readyz`` and ``/metrics`` on ``settings.health_host:health_port`` (None: none;
    0: an ephemeral port). ``on_started(controller, health_server)`` is called once both exist.
    With ``settings.leader_elect`` the controller runs only while this replica holds the Lease
    (``pyhpa.controller.scaleout.leadership``; raises ``LeadershipLost`` when it is lost). The memory is kept in the
    autoscalers' status (``StatusMemory``) unless ``settings.memory_store`` is "process". ``clock``: epoch
    seconds of the decisions. Returns the stopped Controller.
    """
    stop = stop or asyncio.Event()
    tune_gc()
    if install_signals:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
    identity = settings.leader_elect_identity or default_identity()
    cluster = LightkubeCluster(config, settings.api_timeout_seconds, settings.field_manager, settings.list_chunk_size,
                               settings.watch_timeout_seconds, http, user_agent=f"pyhpa/{__version__} ({identity})")
    metrics = HttpMetrics(cluster.raw, cluster.discovery, settings.metrics_timeout_seconds)
    sharding = _sharding(settings, cluster, identity)
    leadership = None if sharding else _leadership(settings, cluster, identity)
    memory = StatusMemory(clock) if settings.memory_store == "status" else InProcessMemory()
    gate = sharding.may_write if sharding else leadership.may_write if leadership else None
    controller = Controller(settings, cluster, metrics, memory=memory, gate=gate, clock=clock)
    health = None
    try:
        if settings.health_port is not None:
            health = HealthServer(controller.monitor.registry, lambda: controller.ready or _standby(leadership, stop),
                                  settings.health_host, settings.health_port, controller.monitor.exposition)
            await health.start()
            log.info("serving /healthz, /readyz and /metrics on %s:%d", settings.health_host, health.port)
        if on_started is not None:
            on_started(controller, health)
        if sharding:
            await sharding.run(controller, stop)
        else:
            await (leadership.run(controller, stop) if leadership else controller.run(stop))
    finally:
        if health is not None:
            await health.stop()
        await cluster.close()
    return controller


def _sharding(settings: Settings, cluster: LightkubeCluster, identity: str) -> Sharding | None:
    """``--shards auto``: this replica's Lease in the shard group ``--leader-elect-resource-name`` (None for
    ``--shards 1``)."""
    if settings.shards != "auto":
        return None
    return Sharding(cluster.client, ShardSettings(
        settings.leader_elect_namespace, settings.leader_elect_name, identity,
        settings.leader_elect_lease_duration_seconds, settings.leader_elect_renew_deadline_seconds,
        settings.leader_elect_retry_period_seconds))


def _leadership(settings: Settings, cluster: LightkubeCluster, identity: str) -> Leadership | None:
    """The Lease campaign of ``--leader-elect`` (None without it)."""
    if not settings.leader_elect:
        return None
    lease = lease_settings(settings.leader_elect_namespace, settings.leader_elect_name,
                           identity, settings.leader_elect_lease_duration_seconds,
                           settings.leader_elect_renew_deadline_seconds, settings.leader_elect_retry_period_seconds)
    return Leadership(cluster.client, lease)


def _standby(leadership: Leadership | None, stop: asyncio.Event) -> bool:
    """A campaigning standby is ready (a rolling update must not wait for it to lead)."""
    return leadership is not None and leadership.standby and not stop.is_set()
