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

from ..core import PredictionSpec, check_prediction
from ..core.model import MetricSpec
from ..core.prediction import MAX_QUANTILE, MIN_QUANTILE
from .errors import InputError

FIELD = "spec.prediction"
_KEYS = ("metric", "historySeconds", "leadSeconds", "quantile", "mode", "refreshSeconds", "historyQuery")


def prediction_from_dict(d: Any, metrics: tuple[MetricSpec, ...] | None = None, field: str = FIELD) -> PredictionSpec:
    """A ``PredictionSpec`` from the ``spec.prediction`` mapping (None or ``{}``: all defaults).

    Reads the types here and checks the values by the core's one rule set (``pyhpa.core.check_prediction``:
    limits, modes and, with ``metrics``, the HPA's parsed ``spec.metrics``, the ``metric`` index). Raises
    InputError naming ``field`` and the key of the first problem.
    """
    if d is None:
        d = {}
    if not isinstance(d, dict):
        raise InputError(f"must be an object (e.g. {{}} for the defaults), got {type(d).__name__}", field=field)
    unknown = [k for k in d if k not in _KEYS]
    if unknown:
        raise InputError(f"unknown field (known: {', '.join(_KEYS)})", field=f"{field}.{unknown[0]}")
    default = PredictionSpec()
    quantile = d.get("quantile", default.quantile)
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)):
        raise InputError(f"must be a number in [{MIN_QUANTILE:g}, {MAX_QUANTILE:g}), got {quantile!r}",
                         field=f"{field}.quantile")
    spec = PredictionSpec(
        metric=_int(d, "metric", default.metric, field),
        history_seconds=_int(d, "historySeconds", default.history_seconds, field),
        lead_seconds=_int(d, "leadSeconds", default.lead_seconds, field),
        quantile=float(quantile),
        mode=d.get("mode", default.mode),
        refresh_seconds=_int(d, "refreshSeconds", default.refresh_seconds, field),
        history_query=d.get("historyQuery"),
    )
    problems = check_prediction(spec, metrics)
    if problems:
        sub, message = problems[0]
        raise InputError(message, field=f"{field}.{sub}")
    return spec


def _int(d: dict, key: str, default: int, field: str) -> int:
    """An integer field as the API server takes ``type: integer``: an int, or a float with no fraction."""
    value = d.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be an integer, got {value!r}", field=f"{field}.{key}")
    return value


def prediction_to_dict(spec: PredictionSpec) -> dict:
    """``spec.prediction`` as the API writes it (every field, defaults included)."""
    out = {"metric": spec.metric, "historySeconds": spec.history_seconds, "leadSeconds": spec.lead_seconds,
           "quantile": spec.quantile, "mode": spec.mode, "refreshSeconds": spec.refresh_seconds}
    if spec.history_query:
        out["historyQuery"] = spec.history_query
    return out
