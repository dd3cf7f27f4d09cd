"""Predictive scaling in the adapters: ``spec.prediction`` in, ``status.prediction`` out and back.

``prediction_from_dict``: ``spec.prediction`` of a HorizontalAutoscaler (pyhpa.dev/v1alpha1) -> the core's
``PredictionSpec``. ``prediction_status``: the one rendering of ``status.prediction`` from the core's
``PredictionStatus`` (the controller's status, ``pyhpa explain``), ``forecast_from_status`` its reader;
``forecast_from_dict``/``forecast_to_dict``: a snapshot's ``forecast``.

``prediction: {}`` turns predictive scaling on with the defaults of ``PredictionSpec``. Fields
(all optional): ``metric`` (index into ``spec.metrics``, default 0), ``historySeconds`` (default
604800, 7 days), ``leadSeconds`` (default 300), ``quantile`` (default 0.9), ``mode`` (``Enforce`` |
``Observe``), ``refreshSeconds`` (default 3600) and ``historyQuery`` (PromQL for ``pyhpa run``).
Integer fields take what the API server takes for ``type: integer`` (an int; a float with no
fraction, as YAML/JSON may write it); every problem is an ``InputError`` naming the field.
"""

from __future__ import annotations

from typing import Any

from ..api.status import prediction_figures
from ..core import Forecast, PredictionSpec
from ..core.model import PREDICTING, MetricSpec
from ..core.quantity import format_milli
from .errors import InputError
from .parse import milli, source_section

FIELD = "spec.prediction"


def prediction_from_dict(d: Any, metrics: tuple[MetricSpec, ...] | None = None, field: str = FIELD) -> PredictionSpec:
    """A ``PredictionSpec`` from the ``spec.prediction`` mapping (None or ``{}``: all defaults).

    Reads the API's fields (``pyhpa.api.v1alpha1.Prediction``, ``source_section``) and checks the values by the core's
    one rule set (``pyhpa.core.check_prediction``: limits, modes and, with ``metrics``, the HPA's parsed
    ``spec.metrics``, the ``metric`` index). Raises InputError naming ``field`` and the key of the first problem.
    """
    return source_section("prediction", d, metrics, field)


def prediction_to_dict(spec: PredictionSpec) -> dict:
    """``spec.prediction`` as the API writes it (every field, defaults included)."""
    out = {"metric": spec.metric, "historySeconds": spec.history_seconds, "leadSeconds": spec.lead_seconds,
           "quantile": spec.quantile, "mode": spec.mode, "refreshSeconds": spec.refresh_seconds}
    if spec.history_query:
        out["historyQuery"] = spec.history_query
    return out


# ------------------------------------------------------------------------------------- status.prediction
#: ``status.prediction``'s figures (``pyhpa.api.status.prediction_figures``, the one rendering)
prediction_status = prediction_figures


def forecast_from_status(status: Any) -> Forecast | None:
    """The forecast the controller last wrote to an object's ``status.prediction`` (``forecast``, ``expected``,
    ``reason``, ``message``; ``status`` is the object's status mapping) as the core's ``Forecast``; None when
    there is none. Raises InputError naming the ``status.prediction`` field."""
    section = status.get("prediction") if isinstance(status, dict) else None
    if not isinstance(section, dict) or "reason" not in section:
        return None
    d = {"total": section.get("forecast"), "expected": section.get("expected"), "reason": section["reason"],
         "message": section.get("message", "")}
    try:
        return forecast_from_dict(d)
    except InputError as err:
        key = err.field.removeprefix("forecast.")
        raise InputError(err.message, field="status.prediction." + ("forecast" if key == "total" else key)) from None


# --------------------------------------------------------------------- the snapshot's ``forecast``
def forecast_from_dict(d: Any) -> Forecast | None:
    """The snapshot's ``forecast`` (``{total: quantity, expected: quantity, reason, message}``; ``total`` the
    quantile, ``expected`` the central forecast, both optional) as the core's ``Forecast``."""
    if d is None:
        return None
    if not isinstance(d, dict):
        raise InputError("must be a mapping {total, expected, reason, message}", field="forecast")
    unknown = set(d) - {"total", "expected", "reason", "message"}
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r} (known: total, expected, reason, message)",
                         field="forecast")
    total = d.get("total")
    expected = d.get("expected")
    if expected is not None and total is None:
        raise InputError("needs a total (the quantile) when it has an expected value", field="forecast.expected")
    reason = d.get("reason", PREDICTING if total is not None else None)
    if not isinstance(reason, str) or not reason:
        raise InputError("needs a reason (a PredictionActive reason) when there is no total", field="forecast.reason")
    message = d.get("message", "")
    if not isinstance(message, str):
        raise InputError("must be a string", field="forecast.message")
    return Forecast(total_milli=None if total is None else milli(total, "forecast.total"),
                    expected_milli=None if expected is None else milli(expected, "forecast.expected"),
                    reason=reason, message=message)


def forecast_to_dict(f: Forecast) -> dict:
    """``forecast_from_dict`` inverted (for ``pyhpa snapshot``)."""
    out: dict = {"reason": f.reason, "message": f.message}
    if f.total_milli is not None:
        out["total"] = format_milli(f.total_milli)
    if f.expected_milli is not None:
        out["expected"] = format_milli(f.expected_milli)
    return out
