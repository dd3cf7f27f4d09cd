"""Metric sources: ask the metrics APIs for each ``spec.metrics[]`` item, with a timeout per call.

What is asked of which API, and how the answer becomes the decision core's ``MetricSamples``, is the metric type's
(``pyhpa.adapters.metric_types``: the same reading ``explain`` uses). Like upstream, a failed call is not an
exception: it becomes ``MetricSamples(error=...)``, and the core reports FailedGet*Metric. Every call is bounded by
``timeout`` seconds (upstream once hung for days on a metrics call); the metrics of one autoscaler are fetched
concurrently, and the metrics of a type whose answer is ``shared`` (Resource, ContainerResource) share one
metrics.k8s.io call per sync.

A type that asks its own server (``MetricType.fetch``: ``Prometheus``, a pyhpa extension, an instant PromQL query)
is asked over httpx2 (one client, made on first use), each query bounded by its own ``timeoutSeconds``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import httpx2

from ...adapters.errors import InputError
from ...adapters.metric_types import REGISTRY, MetricQuery, MetricType
from ...adapters.metrics_api import fetch_failed
from ...core import MetricSamples, Scale
from ...core.selector import SelectorError, parse_selector
from ..cache.autoscaler import Autoscaler
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
        self._http: httpx2.AsyncClient | None = None  # of the types that ask their own server; made on first use

    async def close(self) -> None:
        """Close the HTTP client of the types that ask their own server (Prometheus; if one was made)."""
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
        t = REGISTRY.get(q.type)
        if t is None:  # a type no one knows: nothing to ask (the core reports it)
            return Fetched(MetricSamples(), None, 0.0)
        if t.fetch is not None:  # asks its own server: never raises
            if self._http is None:
                self._http = httpx2.AsyncClient()
            samples, answer = await t.fetch(self._http, q)
            return Fetched(samples, answer, time.perf_counter() - start)
        try:
            answer = await self._answer(t, a.namespace, q, scale.selector, shared)
        except ApiFailure as err:
            msg = fetch_failed(t.api, err.message)
            return Fetched(MetricSamples(error=msg), msg, time.perf_counter() - start)
        try:
            samples = t.samples(q, answer)
        except InputError as err:
            samples = MetricSamples(error=f"malformed answer of the {t.api} metrics API: {err}")
        return Fetched(samples, answer, time.perf_counter() - start)

    async def _answer(self, t: MetricType, ns: str, q: MetricQuery, selector: str, shared: dict | None) -> Any:
        if shared is None or not t.shared:
            return await self._bounded(t.ask(self._client, ns, q, selector))
        if t.api not in shared:  # the first metric of this API in the sync asks; the others take its answer
            shared[t.api] = asyncio.ensure_future(self._bounded(t.ask(self._client, ns, q, selector)))
        return await asyncio.shield(shared[t.api])

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
