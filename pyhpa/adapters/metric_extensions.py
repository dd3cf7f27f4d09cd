"""The metric extensions of a HorizontalAutoscaler, taken out of ``spec.metrics`` in one pass and put back on the
core's metrics in one.

A ``spec.metrics[]`` item of a HorizontalAutoscaler may carry what autoscaling/v2's MetricSpec has not
(``pyhpa.api.v1alpha1.MetricExtensions``): ``fallback``, ``type: Prometheus`` with its ``prometheus`` query, and
``utilizationBasis`` on a Resource or ContainerResource source. lightkube's autoscaling/v2 model reads the rest, so
``split_metric_extensions`` walks the items once: it leaves each item as autoscaling/v2 has it (a Prometheus metric as
its ``v2_equivalent``) and keeps what it took (``MetricExtras``); ``apply_metric_extensions`` sets it on the core's
metrics. Each metric's ``fallback`` is read with the spec-wide one (``pyhpa.adapters.fallback.read_metric_fallbacks``,
from the items as written). Errors are InputError naming the field (``spec.metrics[2].prometheus.query``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core import HPA, MetricSpec
from .objects import split_basis, with_bases
from .promql import PROMETHEUS, PromQuery, metric_from_dict, v2_equivalent, with_prometheus

__all__ = ["MetricExtras", "apply_metric_extensions", "split_metric_extensions"]


@dataclass(frozen=True, slots=True)
class MetricExtras:
    """What ``split_metric_extensions`` took out of ``spec.metrics``, by item index: ``bases`` (``utilizationBasis``),
    ``prometheus`` (the core's spec and the query of each ``type: Prometheus`` item) and whether any item has a
    ``fallback``."""

    bases: dict[int, str] = field(default_factory=dict)
    prometheus: dict[int, tuple[MetricSpec, PromQuery]] = field(default_factory=dict)
    fallback: bool = False


def split_metric_extensions(metrics: Any, extensions: bool, prometheus_server: str | None = None,
                            list_field: str = "spec.metrics") -> tuple[Any, MetricExtras]:
    """``metrics`` (``spec.metrics`` as written) as autoscaling/v2 reads it, and what was taken out (one pass).

    ``extensions``: the object may carry them (a HorizontalAutoscaler, or a snapshot); on a plain autoscaling/v2
    object ``utilizationBasis`` is an error (``fallback`` and ``type: Prometheus`` are refused by the caller and the
    v2 model). ``prometheus_server`` is the default server of Prometheus metrics (the controller's
    ``--prometheus-url``). Anything that is not a list of mappings is returned as is (the HPA parser reports it).
    Raises InputError naming the item's field."""
    if not isinstance(metrics, list):
        return metrics, MetricExtras()
    out = list(metrics)
    bases: dict[int, str] = {}
    prometheus: dict[int, tuple[MetricSpec, PromQuery]] = {}
    fallback = False
    for i, m in enumerate(metrics):
        if not isinstance(m, dict):
            continue
        if "fallback" in m:
            fallback = True
            m = {k: v for k, v in m.items() if k != "fallback"}
        if m.get("type") == PROMETHEUS:
            spec, query = metric_from_dict(m, f"{list_field}[{i}]", prometheus_server)
            prometheus[i] = (spec, query)
            m = v2_equivalent(spec, m["prometheus"].get("target"))
        else:
            m = split_basis(i, m, extensions, bases)
        out[i] = m
    return out, MetricExtras(bases=bases, prometheus=prometheus, fallback=fallback)


def apply_metric_extensions(hpa: HPA, extras: MetricExtras, lenient: bool) -> HPA:
    """``hpa`` (read from the metrics ``split_metric_extensions`` left) with what it took: each metric's
    ``utilizationBasis`` (``Limit`` needs a Utilization target unless ``lenient``) and each Prometheus metric's core
    spec in place of its ``v2_equivalent``. Raises InputError naming the field."""
    return with_prometheus(with_bases(hpa, extras.bases, lenient), extras.prometheus)
