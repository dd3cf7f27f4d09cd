"""events.k8s.io/v1 Events about autoscalers, sent off the sync path.

The decision core names the events (upstream's reasons: SuccessfulRescale, FailedRescale,
FailedGetScale, FailedComputeMetricsReplicas, FailedGet*Metric, SelectorRequired, InvalidSelector);
``EventRecorder.emit`` queues them and a background task sends them, so a slow events API never
delays a sync. Like client-go's events recorder, a repeat of the same event (object, type, reason,
note) within ``series_window`` seconds updates the first Event's ``series`` (count,
lastObservedTime) instead of creating another Event.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import datetime, timezone

from lightkube.models.core_v1 import ObjectReference
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.events_v1 import Event as EventResource

from ...core import Event
from ..cache.autoscaler import API_VERSION, KIND, Autoscaler
from ..kube.api import ApiFailure
from .writer import Writer, WritesDisabled

log = logging.getLogger("pyhpa.controller.events")

#: ``action`` of the events: what the controller did or tried.
SCALE_REASONS = ("SuccessfulRescale", "FailedRescale")


def action_for(reason: str) -> str:
    """"Scale" for rescale events, "Sync" for everything else."""
    return "Scale" if reason in SCALE_REASONS else "Sync"


def micro_time(ts: float) -> datetime:
    """Epoch seconds as a metav1.MicroTime value."""
    return datetime.fromtimestamp(ts, tz=timezone.utc)


class EventRecorder:
    """Queues and sends Events; ``sent``/``dropped``/``failed`` count them."""

    def __init__(self, writer: Writer, controller: str, instance: str, series_window: float = 1800.0,
                 maxsize: int = 10000):
        self._writer = writer
        self._controller = controller
        self._instance = instance[:128]
        self._window = series_window
        self._queue: asyncio.Queue = asyncio.Queue(maxsize)
        self._series: dict[tuple, list] = {}
        self.sent = self.dropped = self.failed = 0

    def emit(self, a: Autoscaler, event: Event, now: float) -> None:
        """Queue ``event`` about ``a`` (dropped, and counted, when the queue is full)."""
        try:
            self._queue.put_nowait((a.namespace, a.name, a.uid, a.resource_version, event, now))
        except asyncio.QueueFull:
            self.dropped += 1

    async def run(self) -> None:
        """Send queued events until cancelled."""
        while True:
            item = await self._queue.get()
            try:
                await self._send(*item)
                self.sent += 1
            except WritesDisabled:
                self.dropped += 1
            except ApiFailure as err:
                self.failed += 1
                log.warning("event %s for %s/%s not sent: %s", item[4].reason, item[0], item[1], err.message)
            except Exception:  # noqa: BLE001 - the sender must survive a bad event
                self.failed += 1
                log.exception("event %s for %s/%s not sent", item[4].reason, item[0], item[1])
            finally:
                self._queue.task_done()

    async def flush(self, timeout: float) -> bool:
        """Wait until every queued event was handled (at most ``timeout`` s); True when drained."""
        try:
            await asyncio.wait_for(self._queue.join(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    async def _send(self, ns: str, name: str, uid: str, rv: str, event: Event, now: float) -> None:
        key = (ns, name, uid, event.type, event.reason, event.message)
        series = self._series.get(key)
        if series is not None and now - series[1] <= self._window:
            series[2] += 1
            patch = {"series": {"count": series[2], "lastObservedTime": micro_time(now)}}
            await self._writer.patch_event(ns, series[0], patch)
            return
        event_name = f"{name}.{time.time_ns():x}"
        await self._writer.create_event(self._build(ns, name, uid, rv, event, now, event_name))
        self._prune(now)
        self._series[key] = [event_name, now, 1]

    def _build(self, ns: str, name: str, uid: str, rv: str, event: Event, now: float, event_name: str):
        return EventResource(
            metadata=ObjectMeta(name=event_name, namespace=ns),
            eventTime=micro_time(now),
            action=action_for(event.reason),
            reason=event.reason[:128],
            note=event.message[:1024],
            type=event.type,
            regarding=ObjectReference(apiVersion=API_VERSION, kind=KIND, name=name, namespace=ns, uid=uid or None,
                                      resourceVersion=rv or None),
            reportingController=self._controller,
            reportingInstance=self._instance,
        )

    def _prune(self, now: float) -> None:
        if len(self._series) < 10000:
            return
        for key in [k for k, v in self._series.items() if now - v[1] > self._window]:
            del self._series[key]
