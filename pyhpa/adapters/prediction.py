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

import math
from typing import Any

from ..core import Decision, Forecast, PredictionSpec, PredictionStatus, check_prediction
from ..core.model import PREDICTING, PREDICTION_SOURCE, MetricSpec
from ..core.prediction import MAX_QUANTILE, MIN_QUANTILE
from ..core.quantity import format_milli
from .errors import InputError
from .parse import api_integer, extension_fields, milli, refuse_first

FIELD = "spec.prediction"
_KEYS = ("metric", "historySeconds", "leadSeconds", "quantile", "mode", "refreshSeconds", "historyQuery")


def prediction_from_dict(d: Any, metrics: tuple[MetricSpec, ...] | None = None, field: str = FIELD) -> PredictionSpec:
    """A ``PredictionSpec`` from the ``spec.prediction`` mapping (None or ``{}``: all defaults).

    Reads the types here and checks the values by the core's one rule set (``pyhpa.core.check_prediction``:
    limits, modes and, with ``metrics``, the HPA's parsed ``spec.metrics``, the ``metric`` index). Raises
    InputError naming ``field`` and the key of the first problem.
    """
    d = extension_fields(d, _KEYS, field)
    default = PredictionSpec()
    quantile = d.get("quantile", default.quantile)
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)):
        raise InputError(f"must be a number in [{MIN_QUANTILE:g}, {MAX_QUANTILE:g}), got {quantile!r}",
                         field=f"{field}.quantile")
    spec = PredictionSpec(
        metric=api_integer(d, "metric", default.metric, field),
        history_seconds=api_integer(d, "historySeconds", default.history_seconds, field),
        lead_seconds=api_integer(d, "leadSeconds", default.lead_seconds, field),
        quantile=float(quantile),
        mode=d.get("mode", default.mode),
        refresh_seconds=api_integer(d, "refreshSeconds", default.refresh_seconds, field),
        history_query=d.get("historyQuery"),
    )
    refuse_first(check_prediction(spec, metrics), field)
    return spec


def prediction_to_dict(spec: PredictionSpec) -> dict:
    """``spec.prediction`` as the API writes it (every field, defaults included)."""
    out = {"metric": spec.metric, "historySeconds": spec.history_seconds, "leadSeconds": spec.lead_seconds,
           "quantile": spec.quantile, "mode": spec.mode, "refreshSeconds": spec.refresh_seconds}
    if spec.history_query:
        out["historyQuery"] = spec.history_query
    return out


# ------------------------------------------------------------------------------------- status.prediction
def prediction_status(ps: PredictionStatus, significant: int | None = None) -> dict:
    """The figures of ``status.prediction`` the core decides at one sync, from its ``PredictionStatus``.

    Keys, every one present (None where the core has no value): ``forecast``, ``expected``, ``provisioned``
    (the quantile, the central forecast and the total the replicas are sized for, as quantities in the
    metric's unit: ``900m`` cores for CPU), ``replicas`` (what the forecast asked for), ``reason`` (the
    ``PredictionActive`` reason) and ``mode``. With ``significant`` the quantities are rounded up to that
    many significant digits (the controller's status: rewritten when they change, not at every sync).
    ``pyhpa explain -o json`` prints them as they are; the controller writes those that are set and adds
    the fit's (``model``, ``periodsSeconds``, ``lastFitTime``, ``accuracy``). ``forecast_from_status``
    reads them back.
    """
    def quantity(m: int | None) -> str | None:
        if m is None:
            return None
        return format_milli(m if significant is None else _significant(m, significant))

    return {"forecast": quantity(ps.forecast_milli), "expected": quantity(ps.expected_milli),
            "provisioned": quantity(ps.provisioned_milli), "replicas": ps.replicas, "reason": ps.reason,
            "mode": ps.mode}


def prediction_report(d: Decision) -> dict | None:
    """What one sync's prediction did (``pyhpa explain``; None when the sync has no prediction status): the
    figures of ``prediction_status`` plus ``applied`` (its replicas were a proposal of the recommendation:
    Enforce mode and not stepping aside) and ``won`` (it set the final number: the source's own ``won``)."""
    ps = d.status.prediction
    if ps is None:
        return None
    source = d.source(PREDICTION_SOURCE)
    return {**prediction_status(ps),
            "applied": bool(source is not None and source.applied and source.active),
            "won": bool(source is not None and source.won)}


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


def _significant(milli_value: int, digits: int) -> int:
    """``milli_value`` rounded up to ``digits`` significant digits (``123456`` to 3: ``124000``)."""
    if milli_value == 0:
        return 0
    scale = 10 ** max(int(math.floor(math.log10(abs(milli_value)))) - digits + 1, 0)
    return int(math.ceil(milli_value / scale) * scale)


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
