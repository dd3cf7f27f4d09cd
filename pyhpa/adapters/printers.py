"""What ``kubectl get hpa`` prints for an autoscaler: the REFERENCE and TARGETS columns (issue 37).

kubectl's printer for a native HPA (k8s.io/kubernetes v1.37.2 pkg/printers/internalversion/printers.go,
``printHorizontalPodAutoscaler`` and ``formatHPAMetrics``) builds both from the object: REFERENCE is
``spec.scaleTargetRef``'s ``Kind/name``, TARGETS each metric's current value (``status.currentMetrics[i]``) over its
target (``spec.metrics[i]``). A CRD's printer column is one JSONPath into the object and cannot concatenate, so the
controller writes both texts into the HorizontalAutoscaler's status (``status.reference``, ``status.targets``) and
the CRD's columns show those fields.

``reference`` and ``Targets`` port kubectl's rules exactly: ``Kind/name``; ``<none>`` without metrics; per metric
``current/target`` with ``<unknown>`` for a current value the status lacks, the resource's name in front of a
Resource or ContainerResource metric (``cpu: 45%/50%``), `` (avg)`` after an External or Object metric's
AverageValue target, ``<auto>`` for a Utilization target without a percentage, ``<unknown type>`` for a type kubectl
does not know, ``<nil>`` where kubectl prints a quantity the object lacks; the first two metrics, then
`` + N more...``. Quantities are printed as kubectl prints them (``go_quantity_text``: ``1000`` as ``1k``). pyhpa's
``Prometheus`` metrics are printed as what they act as: a Pods metric with ``podLabel``, else an External one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import msgspec

from .metric_types import REGISTRY
from .metric_types.base import NOT_SHOWN, Shown

__all__ = ["MAX_SHOWN", "Targets", "format_hpa_metrics", "reference"]

#: metrics TARGETS shows; the others are counted (``+ 1 more...``)
MAX_SHOWN = 2


def reference(ref: Any) -> str:
    """REFERENCE: ``Kind/name`` of a ``scaleTargetRef`` (a dict as written); "" when it is not one."""
    if not isinstance(ref, dict):
        return ""
    kind, name = ref.get("kind"), ref.get("name")
    return f"{kind}/{name}" if isinstance(kind, str) and isinstance(name, str) else ""


def _shown(spec: Any) -> Shown:
    """How TARGETS shows the metric ``spec`` (a ``spec.metrics[]`` item as written), as its type says
    (``pyhpa.adapters.metric_types``); a type kubectl does not know is ``<unknown type>``."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    t = REGISTRY.get(kind) if isinstance(kind, str) else None
    return NOT_SHOWN if t is None else t.shown(spec)


@dataclass(frozen=True, slots=True)
class Targets:
    """TARGETS of an autoscaler's metrics, worked out from its spec once (``of``) and filled with the current values
    of each status (``text``): only the first ``MAX_SHOWN`` metrics are kept, and how many there are."""

    shown: tuple[Shown, ...]
    count: int

    @classmethod
    def of(cls, metrics: Sequence[Any]) -> "Targets":
        """``metrics``: ``spec.metrics`` as written (the API default, a CPU Utilization of 80 %, is the caller's to
        put in: kubectl sees it on a native HPA). Autoscalers with the same metrics share one (memoized on their
        JSON): thousands of autoscalers of a few shapes keep a few."""
        metrics = list(metrics) if isinstance(metrics, (list, tuple)) else []
        try:
            return _shared(_encode(metrics))
        except (TypeError, msgspec.EncodeError):  # not JSON: not an object of the API server
            return cls._build(metrics)

    @classmethod
    def _build(cls, metrics: list) -> "Targets":
        return cls(tuple(_shown(m) for m in metrics[:MAX_SHOWN]), len(metrics))

    def text(self, statuses: Sequence[Any]) -> str:
        """TARGETS with ``statuses[i]`` the ``MetricStatus`` of metric i (None or a shorter list: no current value),
        as formatHPAMetrics reads ``status.currentMetrics``."""
        if not self.count:
            return "<none>"
        shown = ", ".join(s.text(statuses[i] if i < len(statuses) else None) for i, s in enumerate(self.shown))
        return f"{shown} + {self.count - MAX_SHOWN} more..." if self.count > MAX_SHOWN else shown

    def matched(self, current_metrics: Sequence[Any]) -> list[Any]:
        """The entries of ``current_metrics`` that belong to the metrics shown, in their order (None for one that
        has none): matched by type and name (a duplicate takes the next entry of the same name), not by position,
        so a status written before entry *i* was always metric *i* (a failed metric's entry ``{"type": ""}``, as
        upstream writes it) reads the same."""
        left = [m for m in current_metrics if isinstance(m, dict)]
        out: list[Any] = []
        for s in self.shown:
            found = next((m for m in left if _identity(m) == s.identity), None)
            if found is not None:
                left.remove(found)
            out.append(found)
        return out


_encode = msgspec.json.Encoder(order="deterministic").encode


@lru_cache(maxsize=1024)
def _shared(key: bytes) -> Targets:
    return Targets._build(msgspec.json.decode(key))


def _identity(status: dict) -> tuple[str, str, str]:
    """(type, metric or resource name, container) of a ``status.currentMetrics`` entry."""
    kind = status.get("type")
    t = REGISTRY.get(kind) if isinstance(kind, str) else None
    source = status.get(t.field) if t is not None and t.identity is not None else None
    if not isinstance(source, dict):
        return "", "", ""
    return t.identity(source)


def format_hpa_metrics(metrics: Sequence[Any], statuses: Sequence[Any]) -> str:
    """kubectl's ``formatHPAMetrics(spec.metrics, status.currentMetrics)``: the TARGETS column."""
    return Targets.of(metrics).text(statuses)
