"""Metric sources: ask the metrics APIs for each ``spec.metrics[]`` item, with a timeout per call.

The answers are turned into the decision core's ``MetricSamples`` by ``pyhpa.adapters.metrics_api``
(the same reading ``explain`` uses). Like upstream, a failed call is not an exception: it becomes
``MetricSamples(error=...)``, and the core reports FailedGet*Metric. Every call is bounded by
``timeout`` seconds (upstream once hung for days on a metrics call); the metrics of one autoscaler
are fetched concurrently, and several Resource/ContainerResource metrics share one
metrics.k8s.io call per sync.

``Prometheus`` metrics (a pyhpa extension: an instant PromQL query, ``pyhpa.adapters.promql``) are
asked of their Prometheus server over httpx2 (``/api/v1/query``), each bounded by its own
``timeoutSeconds``; the answer becomes a Pods-like or External-like ``MetricSamples``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx2

from ...adapters.errors import InputError
from ...adapters.metrics_api import (
    API_NAMES,
    external_samples,
    fetch_failed,
    object_samples,
    pods_samples,
    resource_samples,
)
from ...adapters.promql import PROMETHEUS, PromQuery, query_answer
from ...core import MetricSamples, Scale
from ...core.selector import SelectorError, parse_selector
from ..cache.autoscaler import Autoscaler, MetricQuery
from ..kube.api import ApiFailure, MetricsClient, as_failure


@dataclass(slots=True)
class Fetched:
    """One metric's answer: ``samples`` for the core, the raw ``answer`` (for snapshots), ``seconds`` spent."""

    samples: MetricSamples
    answer: Any
    seconds: float


class MetricSources:
    """Fetches every metric of an autoscaler through a ``MetricsClient``; ``timeout`` in seconds per call."""

    def __init__(self, client: MetricsClient, timeout: float):
        self._client = client
        self._timeout = timeout
        self._http: httpx2.AsyncClient | None = None  # Prometheus queries; made on first use

    async def close(self) -> None:
        """Close the Prometheus HTTP client (if one was made)."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def gather(self, a: Autoscaler, scale: Scale) -> list[Fetched]:
        """One ``Fetched`` per ``a.queries`` item, in order (nothing is fetched for an unusable selector:
        the core then reports SelectorRequired / InvalidSelector, as upstream does before asking)."""
        if not _usable(scale.selector):
            return [Fetched(MetricSamples(), None, 0.0) for _ in a.queries]
        if len(a.queries) == 1:
            return [await self._one(a, a.queries[0], scale, None)]
        shared: dict[str, asyncio.Future] = {}
        return list(await asyncio.gather(*(self._one(a, q, scale, shared) for q in a.queries)))

    async def _one(self, a: Autoscaler, q: MetricQuery, scale: Scale, shared: dict | None) -> Fetched:
        start = time.perf_counter()
        if q.type == PROMETHEUS and q.prom is not None:
            return await self._prometheus(q.prom)
        if q.type not in API_NAMES:
            return Fetched(MetricSamples(), None, 0.0)
        try:
            answer = await self._answer(a.namespace, q, scale.selector, shared)
        except ApiFailure as err:
            msg = fetch_failed(q.type, err.message)
            return Fetched(MetricSamples(error=msg), msg, time.perf_counter() - start)
        try:
            samples = query_samples(q, answer)
        except InputError as err:
            samples = MetricSamples(error=f"malformed answer of the {API_NAMES[q.type]} metrics API: {err}")
        return Fetched(samples, answer, time.perf_counter() - start)

    async def _answer(self, ns: str, q: MetricQuery, selector: str, shared: dict | None) -> Any:
        if q.type in ("Resource", "ContainerResource"):
            if shared is None:
                return await self._bounded(self._client.resource_metrics(ns, selector))
            if "resource" not in shared:
                shared["resource"] = asyncio.ensure_future(self._bounded(self._client.resource_metrics(ns, selector)))
            return await asyncio.shield(shared["resource"])
        if q.type == "Pods":
            return await self._bounded(self._client.pods_metric(ns, q.name, selector, q.metric_selector))
        if q.type == "Object":
            return await self._bounded(self._client.object_metric(ns, q.described, q.name, q.metric_selector))
        return await self._bounded(self._client.external_metric(ns, q.name, q.metric_selector))

    async def _prometheus(self, q: PromQuery) -> Fetched:
        """One instant query, bounded by the metric's ``timeoutSeconds`` as a whole (httpx2's own timeout
        is per read, so a server that trickles bytes could otherwise take longer)."""
        start = time.perf_counter()
        if self._http is None:
            self._http = httpx2.AsyncClient()
        try:
            async with asyncio.timeout(q.timeout_seconds):
                samples, answer = await query_answer(self._http, q)
        except TimeoutError:
            answer = f"prometheus query timed out after {q.timeout_seconds:g}s"
            samples = MetricSamples(error=answer)
        return Fetched(samples, answer, time.perf_counter() - start)

    async def _bounded(self, call) -> Any:
        try:
            async with asyncio.timeout(self._timeout):
                return await call
        except TimeoutError:
            raise ApiFailure(0, f"no answer within {self._timeout:g}s", "Timeout") from None
        except ApiFailure:
            raise
        except Exception as err:  # noqa: BLE001 - any client failure is a failed metric, not a crash
            raise as_failure(err) from None


def _usable(selector: str) -> bool:
    if not selector:
        return False
    try:
        parse_selector(selector)
    except SelectorError:
        return False
    return True


def query_samples(q: MetricQuery, answer: Any) -> MetricSamples:
    if q.type in ("Resource", "ContainerResource"):
        container = q.container if q.type == "ContainerResource" else ""
        return resource_samples(answer, q.name, container)
    if q.type == "Pods":
        return pods_samples(answer, f"pods metric {q.name}")
    if q.type == "Object":
        return object_samples(answer, f"object metric {q.name}")
    return external_samples(answer, f"external metric {q.name}")
