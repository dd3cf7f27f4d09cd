"""One metrics.k8s.io list per namespace, shared by the autoscalers that sync in the same short tick.

Upstream asks ``/apis/metrics.k8s.io/v1beta1/namespaces/<ns>/pods?labelSelector=<selector>`` once per
autoscaler per sync. ``NamespaceMetrics`` wraps a ``MetricsClient`` and, for namespaces where this replica
serves several autoscalers, asks once for the whole namespace (no ``labelSelector``) and hands each sync of
that namespace within ``window`` seconds of that request the items its selector picks, in the order the API
gave them, as a PodMetricsList — the answer the selector query would have had. So the decision is the same
as with the selector query issued ``window`` seconds earlier at most (metrics-server's values change once
per scrape, every 15 s or more; the syncs of a namespace are due at one phase of their period: ``namespace_phase``).

Items are picked by their ``metadata.labels`` (metrics-server copies each pod's labels into its
PodMetrics, which is how it answers ``labelSelector`` itself); an item without labels is picked when the
pod cache's pod of that name matches the selector.

When the namespace list is worth it: when the k distinct selectors of the namespace asked so far would cost
more as k queries than as one list — ``k * REQUEST_COST_ITEMS + (pods they select) >= REQUEST_COST_ITEMS +
(pods of the namespace)``, by the pod cache (so a namespace of 5,000 pods with a few small autoscalers keeps
its selector queries). Everything else (custom, external, object metrics) passes through unchanged.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from ...core.selector import SelectorError, matches, parse_selector
from ..kube.api import MetricsClient
from ..kube.transport import SyncContext, current_sync, set_current_sync

#: Seconds a namespace list is shared after its request was sent.
SHARE_SECONDS = 0.5
#: What one request costs beyond its items, in items (measured: about 0.3 ms of client CPU per request, a few
#: microseconds per PodMetrics item to decode and pick).
REQUEST_COST_ITEMS = 50


@functools.lru_cache(maxsize=65536)  # asked at every sync's end (resync_delay): the hash once per namespace
def namespace_phase(namespace: str, period: float) -> float:
    """The phase (seconds in [0, ``period``)) at which the autoscalers of ``namespace`` with sync ``period``
    seconds are due, on the wall clock (epoch seconds modulo the period): pseudo-random per namespace and
    period, the same on every replica, so the autoscalers of a namespace sync together — and share one metrics
    list — while namespaces are spread over the period, and a replica that takes an autoscaler over knows when
    its last owner synced it (``phase_points``)."""
    seed = f"{namespace}\x00{period!r}".encode()
    return int.from_bytes(hashlib.blake2b(seed, digest_size=8).digest(), "big") / 2.0**64 * period


def phase_points(namespace: str, period: float, wall: float) -> tuple[float, float]:
    """(last, next): the latest phase point at or before ``wall`` (epoch s) of ``namespace``'s autoscalers with
    sync ``period`` seconds, and the one after it (``last + period``)."""
    phase = namespace_phase(namespace, period)
    last = phase + math.floor((wall - phase) / period) * period
    return last, last + period


def resync_delay(namespace: str, period: float, started: float, jitter: float) -> float:
    """Seconds from a sync's start (``started``, epoch s) to the next sync of an autoscaler of ``namespace``
    with sync ``period`` seconds: the namespace's phase point nearest to ``started + period``, moved no more
    than ``jitter * period`` from it — so every resync lands within ``period * (1 ± jitter)`` (``--jitter``),
    and an autoscaler synced off its phase (its first sync, a spec change, a lagging replica) is back on it
    within a few periods. ``jitter`` 0: exactly the period."""
    if jitter <= 0:
        return period
    phase = namespace_phase(namespace, period)
    target = started + period
    nearest = phase + round((target - phase) / period) * period
    shift = min(max(nearest - target, -jitter * period), jitter * period)
    return period + shift


@dataclass(slots=True)
class _Listing:
    """One namespace list: when it was asked (event-loop seconds), its answer, per-selector answers."""

    started: float
    future: asyncio.Future
    picked: dict[str, dict] = field(default_factory=dict)
    labelled: list | None = None  # (item, labels) of each item
    ahead: SyncContext | None = None  # the requests of a list read ahead, until a sync that takes it counts them
    index: dict | None = None  # (label, value) -> positions in ``labelled``


class NamespaceMetrics:
    """A ``MetricsClient`` whose ``resource_metrics`` shares one namespace list per tick (see module doc).

    ``pod_count(namespace)`` is the number of pods of the namespace (the pod cache), ``pod_labels(namespace,
    name)`` a cached pod's labels (None when unknown), ``selected(namespace, selector)`` how many cached pods
    the selector picks; ``window`` seconds; ``clock`` event-loop seconds.
    """

    def __init__(self, inner: MetricsClient, pod_count: Callable[[str], int],
                 pod_labels: Callable[[str, str], dict | None], selected: Callable[[str, str], int],
                 window: float = SHARE_SECONDS, clock: Callable[[], float] | None = None):
        self._inner = inner
        self._pod_count = pod_count
        self._pod_labels = pod_labels
        self._selected = selected
        self._window = window
        self._clock = clock
        self._listings: OrderedDict[str, _Listing] = OrderedDict()
        self._timer: asyncio.TimerHandle | None = None
        self._sizes: dict[str, dict[str, int]] = {}  # namespace -> selector -> pods it selected when first asked
        self.namespace_lists = self.selector_queries = self.shared = self.read_ahead = 0

    def _now(self) -> float:
        return (self._clock or asyncio.get_running_loop().time)()

    def _worth_sharing(self, namespace: str, selector: str) -> bool:
        sizes = self._sizes.setdefault(namespace, {})
        if selector not in sizes and len(sizes) < 1000:
            sizes[selector] = self._selected(namespace, selector)
        k = len(sizes)
        return k >= 2 and (k - 1) * REQUEST_COST_ITEMS + sum(sizes.values()) >= self._pod_count(namespace)

    async def resource_metrics(self, namespace: str, selector: str) -> dict:
        """The PodMetricsList of the pods ``selector`` picks in ``namespace`` (raises ApiFailure)."""
        if not self._worth_sharing(namespace, selector):
            self.selector_queries += 1
            return await self._inner.resource_metrics(namespace, selector)
        listing, fresh = self._listing(namespace)
        if not fresh:
            self.shared += 1
        try:
            answer = await asyncio.shield(listing.future)
        finally:
            ahead, listing.ahead = listing.ahead, None
            sync = current_sync()
            if ahead is not None and sync is not None:  # the list read ahead counts for the first sync taking it
                sync.requests += ahead.requests
        picked = listing.picked.get(selector)
        if picked is None:
            picked = listing.picked[selector] = self._pick(namespace, selector, answer, listing)
        return picked

    def _listing(self, namespace: str, ahead: bool = False) -> tuple[_Listing, bool]:
        """The namespace's list within its window, asked now when there is none (then True). ``ahead``: asked by
        ``prefetch``, outside the sync it is for (its requests are counted apart, then for that sync)."""
        listing = self._current(namespace)
        if listing is not None:
            return listing, False
        now, call = self._now(), self._inner.resource_metrics(namespace, "")
        if ahead:
            counted = SyncContext(f"read ahead: {namespace}")
            context = contextvars.Context()
            context.run(set_current_sync, counted)
            listing = _Listing(now, asyncio.get_running_loop().create_task(call, context=context), ahead=counted)
        else:
            listing = _Listing(now, asyncio.ensure_future(call))
        listing.future.add_done_callback(_retrieved)
        self._listings[namespace] = listing
        self._listings.move_to_end(namespace)
        self.namespace_lists += 1
        self._arm()
        return listing, True

    def _current(self, namespace: str) -> _Listing | None:
        """The namespace's list asked within the window (lists past it are dropped by the timer, ``_arm``, not
        here), None when there is none."""
        listing = self._listings.get(namespace)
        return listing if listing is not None and self._now() - listing.started <= self._window else None

    def listed(self, namespace: str) -> bool:
        """A list of the namespace was asked within the window (syncs asking now take it)."""
        return self._current(namespace) is not None

    def prefetch(self, namespace: str, selectors: list[str]) -> bool:
        """Ask the namespace's list now (not waiting for it) when the syncs about to come — of the pod
        ``selectors`` given, those of ``namespace``'s autoscalers next in the work queue — will take it from
        the namespace list (``resource_metrics``'s rule) and none is within its window: the request overlaps
        the syncs before them instead of making those syncs wait (``Controller._read_ahead``). They get what
        they would have got had the first of them asked at this moment. True when a list was asked."""
        worth = False
        for selector in selectors:
            worth = self._worth_sharing(namespace, selector)  # files every selector: the rule counts them all
        if not worth or not self._listing(namespace, ahead=True)[1]:
            return False
        self.read_ahead += 1
        return True

    def _expire(self, now: float) -> None:
        """Drop namespace lists older than the window (oldest first: the dict is in request order)."""
        listings = self._listings
        while listings:
            ns, oldest = next(iter(listings.items()))
            if now - oldest.started <= self._window or not oldest.future.done():
                break
            del listings[ns]

    def _arm(self) -> None:
        """Expire the lists once their window is over, also when no sync asks again (an answer is not held
        past the syncs it serves: a quiet replica keeps no namespace's metrics)."""
        if self._timer is not None or not self._listings:
            return
        self._timer = asyncio.get_running_loop().call_later(self._window + 0.01, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self._expire(self._now())
        self._arm()

    def _pick(self, namespace: str, selector: str, answer: Any, listing: _Listing) -> Any:
        """The items of the namespace ``answer`` that ``selector`` picks, as the API would answer it."""
        if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
            return answer  # malformed: the metric source reports it as for any answer
        try:
            reqs = parse_selector(selector)
        except SelectorError:
            return {**answer, "items": []}
        if listing.labelled is None:
            listing.labelled = self._labelled(namespace, answer["items"])
        labelled = listing.labelled
        first = next(((k, v) for op, k, v in reqs if op == "="), None)
        if first is not None:  # candidates by the first equality requirement (an index built once per list)
            if listing.index is None:
                listing.index = {}
                for i, (_, labels) in enumerate(labelled):
                    for pair in labels.items():
                        listing.index.setdefault(pair, []).append(i)
            candidates = [labelled[i] for i in listing.index.get(first, ())]
        else:
            candidates = labelled
        return {**answer, "items": [item for item, labels in candidates if matches(reqs, labels)]}

    def _labelled(self, namespace: str, items: list) -> list[tuple[dict, dict]]:
        """(item, pod labels) of each well-formed item, in the API's order."""
        out = []
        for item in items:
            meta = item.get("metadata") if isinstance(item, dict) else None
            if not isinstance(meta, dict):
                continue
            labels = meta.get("labels")
            if not isinstance(labels, dict):
                labels = self._pod_labels(namespace, meta.get("name") or "")
            if labels is not None:
                out.append((item, labels))
        return out

    async def pods_metric(self, namespace: str, metric: str, selector: str, metric_selector: str) -> dict:
        return await self._inner.pods_metric(namespace, metric, selector, metric_selector)

    async def object_metric(self, namespace: str, described: tuple[str, str, str], metric: str,
                            metric_selector: str) -> dict:
        return await self._inner.object_metric(namespace, described, metric, metric_selector)

    async def external_metric(self, namespace: str, metric: str, selector: str) -> dict:
        return await self._inner.external_metric(namespace, metric, selector)


def _retrieved(future: asyncio.Future) -> None:
    """Mark a list's failure as retrieved: a list read ahead whose syncs never came would log "exception was never
    retrieved" (the syncs that await it get the failure as always)."""
    if not future.cancelled():
        future.exception()


__all__ = ["REQUEST_COST_ITEMS", "SHARE_SECONDS", "NamespaceMetrics", "namespace_phase", "phase_points",
           "resync_delay"]
