"""``spec.prediction`` of a HorizontalAutoscaler (pyhpa.dev/v1alpha1) -> the core's ``PredictionSpec``.

``prediction: {}`` turns predictive scaling on with the defaults of ``PredictionSpec``. Fields
(all optional): ``metric`` (index into ``spec.metrics``, default 0), ``historySeconds`` (default
604800, 7 days), ``leadSeconds`` (default 300), ``quantile`` (default 0.9), ``mode`` (``Enforce`` |
``Observe``), ``refreshSeconds`` (default 3600) and ``historyQuery`` (PromQL for ``pyhpa run``).
Integer fields take what the API server takes for ``type: integer`` (an int; a float with no
fraction, as YAML/JSON may write it); every problem is an ``InputError`` naming the field.
"""

from __future__ import annotations

from typing import Any

from ..core import ENFORCE, OBSERVE, PredictionSpec
from ..core.model import CONTAINER_RESOURCE, EXTERNAL, OBJECT, PODS, RESOURCE, MetricSpec
from .errors import InputError

FIELD = "spec.prediction"
MIN_HISTORY_SECONDS = 7200
MIN_REFRESH_SECONDS = 60
_KEYS = ("metric", "historySeconds", "leadSeconds", "quantile", "mode", "refreshSeconds", "historyQuery")


def prediction_from_dict(d: Any, metrics: tuple[MetricSpec, ...] | None = None, field: str = FIELD) -> PredictionSpec:
    """A ``PredictionSpec`` from the ``spec.prediction`` mapping (None or ``{}``: all defaults).

    With ``metrics`` (the HPA's parsed ``spec.metrics``) the ``metric`` index is checked against
    them. Raises InputError naming ``field`` and the key.
    """
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise InputError(f"must be an object (e.g. {{}} for the defaults), got {type(d).__name__}", field=field)
    unknown = [k for k in d if k not in _KEYS]
    if unknown:
        raise InputError(f"unknown field (known: {', '.join(_KEYS)})", field=f"{field}.{unknown[0]}")
    default = PredictionSpec()
    metric = _int(d, "metric", default.metric, 0, field)
    history = _int(d, "historySeconds", default.history_seconds, MIN_HISTORY_SECONDS, field)
    lead = _int(d, "leadSeconds", default.lead_seconds, 1, field)
    refresh = _int(d, "refreshSeconds", default.refresh_seconds, MIN_REFRESH_SECONDS, field)
    quantile = d.get("quantile", default.quantile)
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not 0.5 <= quantile < 1:
        raise InputError(f"must be a number in [0.5, 1), got {quantile!r}", field=f"{field}.quantile")
    mode = d.get("mode", default.mode)
    if mode not in (ENFORCE, OBSERVE):
        raise InputError(f"must be {ENFORCE} or {OBSERVE}, got {mode!r}", field=f"{field}.mode")
    query = d.get("historyQuery")
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise InputError("must be a non-empty PromQL query", field=f"{field}.historyQuery")
    if lead >= history:
        raise InputError(f"must be shorter than historySeconds ({history})", field=f"{field}.leadSeconds")
    spec = PredictionSpec(metric=metric, history_seconds=history, lead_seconds=lead, quantile=float(quantile),
                          mode=mode, refresh_seconds=refresh, history_query=query)
    if metrics is not None:
        check_metric(spec, metrics, field)
    return spec


def check_metric(spec: PredictionSpec, metrics: tuple[MetricSpec, ...], field: str = FIELD) -> None:
    """The ``metric`` index must name an entry of ``spec.metrics`` of a type that has a workload total."""
    n = len(metrics)
    if not spec.metric < n:
        raise InputError(f"{spec.metric} names no entry of spec.metrics ({n} metric{'s' if n != 1 else ''})",
                         field=f"{field}.metric")
    m = metrics[spec.metric]
    if m.type not in (RESOURCE, CONTAINER_RESOURCE, PODS, OBJECT, EXTERNAL):
        raise InputError(f"spec.metrics[{spec.metric}] of type {m.type!r} cannot be forecast", field=f"{field}.metric")


def _int(d: dict, key: str, default: int, minimum: int, field: str) -> int:
    value = d.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be an integer, got {value!r}", field=f"{field}.{key}")
    if value < minimum:
        raise InputError(f"must be at least {minimum}, got {value}", field=f"{field}.{key}")
    return value


def prediction_to_dict(spec: PredictionSpec) -> dict:
    """``spec.prediction`` as the API writes it (every field, defaults included)."""
    out = {"metric": spec.metric, "historySeconds": spec.history_seconds, "leadSeconds": spec.lead_seconds,
           "quantile": spec.quantile, "mode": spec.mode, "refreshSeconds": spec.refresh_seconds}
    if spec.history_query:
        out["historyQuery"] = spec.history_query
    return out
