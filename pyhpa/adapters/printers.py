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

from .errors import InputError
from .parse import go_quantity_text, number_text

__all__ = ["MAX_SHOWN", "Targets", "format_hpa_metrics", "reference"]

#: metrics TARGETS shows; the others are counted (``+ 1 more...``)
MAX_SHOWN = 2
_UNKNOWN = "<unknown>"
#: what Go prints for a nil *Quantity
_NIL = "<nil>"
#: spec.metrics[].type -> the field of the MetricSpec and MetricStatus that holds its source
_FIELD = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods", "Object": "object",
          "External": "external"}


def reference(ref: Any) -> str:
    """REFERENCE: ``Kind/name`` of a ``scaleTargetRef`` (a dict as written); "" when it is not one."""
    if not isinstance(ref, dict):
        return ""
    kind, name = ref.get("kind"), ref.get("name")
    return f"{kind}/{name}" if isinstance(kind, str) and isinstance(name, str) else ""


def _quantity(value: Any) -> str:
    """A quantity of the object as kubectl prints it (``Quantity.String()``); ``<nil>`` when absent."""
    if value is None:
        return _NIL
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            value = number_text(value)
        except InputError:  # NaN or infinite: no quantity kubectl could read
            return str(value)
    if not isinstance(value, str):
        return str(value)
    return go_quantity_text(value) or value  # text Go does not parse: the API server refused it already


@dataclass(frozen=True, slots=True)
class _Shown:
    """How TARGETS shows one metric: its current value is ``current`` of ``status[source].current`` (``percent``:
    an averageUtilization, printed ``N%``; ``required``: ``<unknown>`` unless that value is there, else only
    unless ``status[source]`` is), after ``label`` and before ``/target`` and ``suffix``; ``identity``: what names
    its entry in ``status.currentMetrics`` (type, metric or resource name, container)."""

    source: str
    current: str
    target: str
    label: str = ""
    suffix: str = ""
    percent: bool = False
    required: bool = False
    identity: tuple[str, str, str] = ("", "", "")

    def text(self, status: Any) -> str:
        if not self.source:
            return "<unknown type>"
        section = status.get(self.source) if isinstance(status, dict) else None
        if not isinstance(section, dict):
            return f"{self.label}{_UNKNOWN}/{self.target}{self.suffix}"
        value = (section.get("current") or {}).get(self.current) if isinstance(section.get("current"), dict) else None
        if self.required and value is None:
            current = _UNKNOWN
        elif self.percent:
            current = f"{int(value) if isinstance(value, float) and value.is_integer() else value}%"
        else:
            current = _quantity(value)
        return f"{self.label}{current}/{self.target}{self.suffix}"


def _name(source: Any, key: str = "metric") -> str:
    """The metric name of a source (``metric.name``; ``key`` None: the resource ``name``)."""
    if not isinstance(source, dict):
        return ""
    named = source.get(key) if key else source
    return named.get("name", "") if isinstance(named, dict) else ""


def _shown(spec: Any) -> _Shown:
    """How TARGETS shows the metric ``spec`` (a ``spec.metrics[]`` item as written)."""
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind == "Prometheus":
        return _prometheus(spec.get("prometheus"))
    field = _FIELD.get(kind) if isinstance(kind, str) else None
    source = spec.get(field) if field else None
    if not isinstance(source, dict):
        return _Shown("", "", "")
    target = source.get("target") if isinstance(source.get("target"), dict) else {}
    average = target.get("averageValue")
    if kind in ("Resource", "ContainerResource"):
        name = source.get("name", "")
        label, identity = f"{name}: ", (kind, name, source.get("container", "") if kind == "ContainerResource" else "")
        if average is not None:
            return _Shown(field, "averageValue", _quantity(average), label, identity=identity)
        utilization = target.get("averageUtilization")
        return _Shown(field, "averageUtilization", "<auto>" if utilization is None else f"{utilization}%", label,
                      percent=True, required=True, identity=identity)
    identity = (kind, _name(source), "")
    if kind == "Pods":
        return _Shown(field, "averageValue", _quantity(average), identity=identity)
    if average is not None:  # Object and External
        return _Shown(field, "averageValue", _quantity(average), suffix=" (avg)", required=True, identity=identity)
    return _Shown(field, "value", _quantity(target.get("value")), identity=identity)


def _prometheus(source: Any) -> _Shown:
    """A Prometheus metric, shown as the Pods (``podLabel``) or External metric it acts as."""
    source = source if isinstance(source, dict) else {}
    name = source.get("name") or source.get("query") or ""
    target = source.get("target") if isinstance(source.get("target"), dict) else {}
    if source.get("podLabel"):
        return _shown({"type": "Pods", "pods": {"metric": {"name": name}, "target": target}})
    return _shown({"type": "External", "external": {"metric": {"name": name}, "target": target}})


@dataclass(frozen=True, slots=True)
class Targets:
    """TARGETS of an autoscaler's metrics, worked out from its spec once (``of``) and filled with the current values
    of each status (``text``): only the first ``MAX_SHOWN`` metrics are kept, and how many there are."""

    shown: tuple[_Shown, ...]
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
        has none): the stored ``status.currentMetrics`` leaves out a metric that failed, so it is matched by type
        and name (a duplicate takes the next entry of the same name), not by position."""
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
    source = status.get(_FIELD.get(kind, "")) if isinstance(kind, str) else None
    if not isinstance(source, dict):
        return "", "", ""
    if kind in ("Resource", "ContainerResource"):
        return kind, source.get("name", ""), source.get("container", "") if kind == "ContainerResource" else ""
    return kind, _name(source), ""


def format_hpa_metrics(metrics: Sequence[Any], statuses: Sequence[Any]) -> str:
    """kubectl's ``formatHPAMetrics(spec.metrics, status.currentMetrics)``: the TARGETS column."""
    return Targets.of(metrics).text(statuses)
