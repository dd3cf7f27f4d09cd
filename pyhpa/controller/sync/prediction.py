"""Predictive scaling in the live controller: history from Prometheus, a forecast per sync.

For each autoscaler with ``spec.prediction`` a ``ForecastLoop`` (``pyhpa.forecast``, the simulator's loop
too) keeps the metric's workload total. Its history comes from Prometheus (``/api/v1/query_range`` through
``pyhpa.adapters.promql``): ``spec.prediction.historyQuery``, or a default query per metric type
(``default_history_query``). Every ``refreshSeconds`` the history is fetched again and the model
refitted, in the background: a sync never waits for Prometheus, and the fit runs in a thread. Between
fits each sync adds what the metrics APIs answered (the pods' values summed, or the Object/External
value) and asks the fitted model for [now, now + leadSeconds].

A Prometheus that is down, slow (each range query is bounded by ``timeout_seconds``) or answers
nonsense makes the prediction step aside with ``HistoryUnavailable`` until a fetch succeeds (retried
every ``RETRY_SECONDS``): the decision is then the reactive one, never a scale-down caused by missing
history, never a stuck worker.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import httpx2

from ...adapters.metric_types import REGISTRY, MetricQuery
from ...adapters.parse import format_time
from ...adapters.promql import RangeQueryError, label_value, query_range, range_step, regex_literal
from ...api.v1alpha1 import PredictionAccuracy, Time
from ...core import Forecast, MetricSamples, PredictionSpec
from ...forecast import HISTORY_UNAVAILABLE
from ..cache.autoscaler import Autoscaler

log = logging.getLogger("pyhpa.controller.prediction")

#: Seconds between attempts after a failed history fetch.
RETRY_SECONDS = 60.0
#: Step of the history range query, seconds (coarser for very long histories: Prometheus' point limit).
HISTORY_STEP_SECONDS = 60.0


def default_history_query(a: Autoscaler, index: int) -> tuple[str, str] | None:
    """(PromQL, unit) of the default history of ``spec.metrics[index]``'s workload total, or None: the metric
    type's (``MetricType.history``, ``pyhpa.adapters.metric_types``).

    The target's pods are found by name (``pod=~"<target>-.*"``, how Deployment and StatefulSet pods are
    named, as Crane does): CPU ``sum(rate(container_cpu_usage_seconds_total{...}[5m]))`` (cores), memory
    ``sum(container_memory_working_set_bytes{...})`` (bytes), for ContainerResource only that container;
    a Pods metric ``sum(NAME{namespace, pod=~...})``, an Object metric ``sum(NAME{namespace})``, an External
    metric ``sum(NAME{selector})``; a Prometheus metric its own query (summed over pods when per pod).
    """
    q: MetricQuery = a.queries[index]
    t = REGISTRY.get(q.type)
    if t is None:
        return None
    ns = label_value(a.namespace)
    target = a.scale_target_ref.name if a.scale_target_ref is not None else a.name
    pods = f'namespace="{ns}",pod=~"{label_value(regex_literal(target))}-.*"'
    return t.history(q, ns, pods)


@dataclass(slots=True)
class _State:
    """One autoscaler's forecast loop and the state of its history fetches."""

    loop: Any  # pyhpa.forecast.ForecastLoop (imported with the first autoscaler that predicts: numpy, scipy)
    query: str | None
    task: asyncio.Task | None = None
    failed: str | None = None
    retry_at: float = -math.inf
    fetched_at: float | None = None
    history_points: int = 0
    extra: dict = field(default_factory=dict)
    observed: float | None = None


class LivePredictions:
    """Forecasts of every autoscaler with ``spec.prediction`` (see the module docstring).

    ``prometheus_url`` is the controller's ``--prometheus-url`` (the history source); ``timeout_seconds``
    bounds each range query.
    """

    def __init__(self, prometheus_url: str | None, timeout_seconds: float = 10.0):
        self.prometheus_url = prometheus_url.rstrip("/") if prometheus_url else None
        self.timeout_seconds = timeout_seconds
        self._states: dict[str, _State] = {}
        self._http: httpx2.AsyncClient | None = None

    async def close(self) -> None:
        """Cancel history fetches in flight and close the HTTP client."""
        for st in self._states.values():
            if st.task is not None:
                st.task.cancel()
        self._states.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def forget(self, key: str) -> None:
        """Drop the predictor of a deleted autoscaler."""
        st = self._states.pop(key, None)
        if st is not None and st.task is not None:
            st.task.cancel()

    def forecast(self, a: Autoscaler, now: float, samples: list[MetricSamples]) -> Forecast | None:
        """Learn this sync's observation and return the core's ``Forecast`` (None without ``spec.prediction``).

        Never waits for Prometheus: a due history refresh is started in the background.
        """
        spec = a.hpa.prediction if a.hpa is not None else None
        if spec is None:
            self.forget(a.key)
            return None
        st = self._state(a, spec)
        loop = st.loop
        st.observed = loop.learn(now, samples)
        if st.task is None and now >= st.retry_at and loop.predictor.refit_due(now):
            self._start_refresh(a.key, st, now)
        if st.failed is not None:
            return loop.aside(HISTORY_UNAVAILABLE, st.failed)
        if loop.predictor.fit is None:
            return loop.aside(HISTORY_UNAVAILABLE, "the metric's history is being fetched from Prometheus")
        return loop.forecast(now, refit=False)

    def figures(self, key: str) -> tuple[float | None, float | None]:
        """(the workload total observed at the last sync of ``key``, milli-units; the recent WAPE of its forecasts,
        a fraction): None each when unknown (no ``spec.prediction``, the metric failed, too few evaluations)."""
        st = self._states.get(key)
        if st is None:
            return None, None
        last = st.loop.last
        wape = last.accuracy.wape if last is not None and last.accuracy.evaluations else None
        return st.observed, wape

    def _state(self, a: Autoscaler, spec: PredictionSpec) -> _State:
        query = spec.history_query
        unit = "the query's unit"
        if query is None:
            found = default_history_query(a, spec.metric) if spec.metric < len(a.queries) else None
            query, unit = found if found is not None else (None, "")
        st = self._states.get(a.key)
        if st is None or st.loop.spec != spec or st.query != query:
            self.forget(a.key)
            from ...forecast import ForecastLoop

            st = self._states[a.key] = _State(ForecastLoop(spec), query, extra={"unit": unit})
        return st

    def _start_refresh(self, key: str, st: _State, now: float) -> None:
        if st.query is None:
            st.failed = "no history query for this metric type: set spec.prediction.historyQuery"
            st.retry_at = now + st.loop.spec.refresh_seconds
            return
        if self.prometheus_url is None:
            st.failed = "no Prometheus to read the metric's history from: run with --prometheus-url"
            st.retry_at = now + st.loop.spec.refresh_seconds
            return
        st.task = asyncio.get_running_loop().create_task(self._refresh(key, st, now))

    async def _refresh(self, key: str, st: _State, now: float) -> None:
        """Fetch [now - history, now] and refit in a thread; any failure is ``HistoryUnavailable``."""
        try:
            if self._http is None:
                self._http = httpx2.AsyncClient()
            predictor = st.loop.predictor
            start = now - st.loop.spec.history_seconds
            step = range_step(start, now, HISTORY_STEP_SECONDS)
            async with asyncio.timeout(self.timeout_seconds):
                times, values = await query_range(self._http, self.prometheus_url, st.query, start, now, step,
                                                  self.timeout_seconds)
            milli = [v * 1000.0 for v in values]  # base units -> milli-units, as the metrics APIs' MilliValue()
            live_t, live_v = predictor.history()
            after = live_t > (times[-1] if times else -math.inf)
            history_t = list(times) + live_t[after].tolist()
            history_v = milli + live_v[after].tolist()
            predictor.replace_history(history_t, history_v)
            from ...forecast import fit

            result = await asyncio.to_thread(fit, history_t, history_v, now=now, settings=predictor.settings,
                                             previous=predictor.fit)
            predictor.install(result, now)
            st.failed, st.fetched_at, st.history_points = None, now, len(times)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self._failed(key, st, now, f"the history query to Prometheus took longer than {self.timeout_seconds:g}s")
        except RangeQueryError as err:
            self._failed(key, st, now, str(err))
        except Exception as err:  # noqa: BLE001 - a broken fetch or fit never takes the controller down
            self._failed(key, st, now, f"history fetch failed: {type(err).__name__}: {err}")
        finally:
            st.task = None

    def _failed(self, key: str, st: _State, now: float, message: str) -> None:
        if st.failed != message:
            log.warning("prediction of %s steps aside: %s", key, message)
        st.failed = message
        st.retry_at = now + RETRY_SECONDS

    def fit(self, key: str) -> dict | None:
        """The figures of the model fitted for autoscaler ``key`` that ``status.prediction`` carries, keyed by
        ``pyhpa.api.v1alpha1.PredictionSection``'s attributes (``last_fit_time``, ``model``, ``periods_seconds``,
        ``accuracy``; None before a fit). The accuracy is rounded to 0.01, so that the status is rewritten when it
        changes, not at every sync."""
        st = self._states.get(key)
        if st is None:
            return None
        out: dict = {}
        f = st.loop.predictor.fit
        if f is not None:
            out["last_fit_time"] = Time(format_time(f.fitted_at))
            if f.model is not None:
                out["model"] = f.model.name
            if f.periods:
                out["periods_seconds"] = [int(p) for p in f.periods]
        last = st.loop.last
        if last is not None and last.accuracy.evaluations:
            acc = last.accuracy
            out["accuracy"] = PredictionAccuracy(**{k: None if v is None else round(v, 2) for k, v in (
                ("mape", acc.mape), ("wape", acc.wape), ("under_forecast_share", acc.under_share))})
        return out or None

