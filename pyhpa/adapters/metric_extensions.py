"""The metric extensions of a HorizontalAutoscaler, taken out of ``spec.metrics`` in one pass and put back on the
core's metrics in one.

A ``spec.metrics[]`` item of a HorizontalAutoscaler may carry what autoscaling/v2's MetricSpec has not
(``pyhpa.api.v1alpha1.MetricExtensions``): ``fallback``, a metric type autoscaling/v2 lacks (``type: Prometheus``
with its ``prometheus`` query: a ``MetricType`` with an ``extension``, ``pyhpa.adapters.metric_types``), and
``utilizationBasis`` on a Resource or ContainerResource source. lightkube's autoscaling/v2 model reads the rest, so
``split_metric_extensions`` walks the items once: it leaves each item as autoscaling/v2 has it (a Prometheus metric as
the Pods or External metric it acts as) and keeps what it took (``MetricExtras``); ``apply_metric_extensions`` sets it
on the core's metrics. Each metric's ``fallback`` is read with the spec-wide one (``pyhpa.adapters.fallback.read_metric_fallbacks``,
from the items as written). Errors are InputError naming the field (``spec.metrics[2].prometheus.query``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..core import HPA, MetricSpec
from .metric_types import REGISTRY, MetricQuery
from .objects import split_basis, with_bases

__all__ = ["MetricExtras", "apply_metric_extensions", "split_metric_extensions", "with_extended"]


@dataclass(frozen=True, slots=True)
class MetricExtras:
    """What ``split_metric_extensions`` took out of ``spec.metrics``, by item index: ``bases`` (``utilizationBasis``),
    ``extended`` (the core's spec and the query of each item of a type autoscaling/v2 lacks: ``type: Prometheus``)
    and whether any item has a ``fallback``."""

    bases: dict[int, str] = field(default_factory=dict)
    extended: dict[int, tuple[MetricSpec, MetricQuery]] = field(default_factory=dict)
    fallback: bool = False


def split_metric_extensions(metrics: Any, extensions: bool, prometheus_server: str | None = None,
                            list_field: str = "spec.metrics") -> tuple[Any, MetricExtras]:
    """``metrics`` (``spec.metrics`` as written) as autoscaling/v2 reads it, and what was taken out (one pass).

    ``extensions``: the object may carry them (a HorizontalAutoscaler, or a snapshot); on a plain autoscaling/v2
    object ``utilizationBasis`` is an error (``fallback`` and ``type: Prometheus`` are refused by the caller and the
    v2 model). ``prometheus_server`` is the default server of Prometheus metrics (the controller's
    ``--prometheus-url``), handed to every type's ``extension``. Anything that is not a list of mappings is returned
    as is (the HPA parser reports it). Raises InputError naming the item's field."""
    if not isinstance(metrics, list):
        return metrics, MetricExtras()
    out = list(metrics)
    bases: dict[int, str] = {}
    extended: dict[int, tuple[MetricSpec, MetricQuery]] = {}
    fallback = False
    for i, m in enumerate(metrics):
        if not isinstance(m, dict):
            continue
        if "fallback" in m:
            fallback = True
            m = {k: v for k, v in m.items() if k != "fallback"}
        kind = m.get("type")
        t = REGISTRY.get(kind) if isinstance(kind, str) else None
        if t is not None and t.extension is not None:
            spec, query, m = t.extension(m, f"{list_field}[{i}]", prometheus_server)
            extended[i] = (spec, query)
        else:
            m = split_basis(i, m, extensions, bases)
        out[i] = m
    return out, MetricExtras(bases=bases, extended=extended, fallback=fallback)


def apply_metric_extensions(hpa: HPA, extras: MetricExtras, lenient: bool) -> HPA:
    """``hpa`` (read from the metrics ``split_metric_extensions`` left) with what it took: each metric's
    ``utilizationBasis`` (``Limit`` needs a Utilization target unless ``lenient``) and the core spec of each metric of
    a type autoscaling/v2 lacks in place of the one read from what it acts as. Raises InputError naming the field."""
    return with_extended(with_bases(hpa, extras.bases, lenient), extras.extended)


def with_extended(hpa: HPA, extended: dict[int, tuple[MetricSpec, MetricQuery]]) -> HPA:
    """``hpa`` with the metrics at ``extended``'s indices replaced by their core specs."""
    if not extended:
        return hpa
    metrics = tuple(extended[i][0] if i in extended else m for i, m in enumerate(hpa.metrics))
    return replace(hpa, metrics=metrics)
