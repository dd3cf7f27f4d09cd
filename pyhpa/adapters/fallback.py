"""``spec.fallback`` and ``spec.metrics[].fallback`` of a HorizontalAutoscaler into the core's ``FallbackSpec``.

The fields are KEDA's (``failureThreshold``, ``replicas``, ``behavior``) plus KEP-5679's
``failureDurationSeconds``; their semantics are the decision core's (``pyhpa.core.fallback``). Each
metric's effective fallback (its own over the spec-wide one) is checked here, so a spec the core could
not use is one error naming the field (``spec.metrics[1].fallback.replicas: is required with behavior
static``), never a silent default.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core import HPA, FallbackSpec, check_fallback, effective_fallback
from .errors import InputError
from .parse import MIN_INT32, int32_value

#: the fields of a fallback object
FALLBACK_FIELDS = ("failureThreshold", "failureDurationSeconds", "replicas", "behavior")
_CAMEL = {"failureThreshold": "failure_threshold", "failureDurationSeconds": "failure_duration_seconds",
          "replicas": "replicas", "behavior": "behavior"}


def fallback_spec(value: Any, field: str) -> FallbackSpec:
    """One fallback object as written (unset fields None); raises InputError naming the sub-field."""
    if not isinstance(value, dict):
        raise InputError(f"must be a mapping ({', '.join(FALLBACK_FIELDS)}), got {value!r}", field=field)
    for key in value:
        if key not in FALLBACK_FIELDS:
            raise InputError(f"unknown field (a fallback has {', '.join(FALLBACK_FIELDS)})", field=f"{field}.{key}")
    out: dict[str, Any] = {}
    for key in ("failureThreshold", "replicas"):
        v = value.get(key)  # an int32 as the API stores it; check_fallback checks the range
        out[_CAMEL[key]] = None if v is None else int32_value(v, f"{field}.{key}", MIN_INT32)
    d = value.get("failureDurationSeconds")
    if d is not None and (isinstance(d, bool) or not isinstance(d, (int, float))):
        raise InputError(f"must be a number of seconds, got {d!r}", field=f"{field}.failureDurationSeconds")
    out["failure_duration_seconds"] = None if d is None else float(d)
    b = value.get("behavior")
    if b is not None and not isinstance(b, str):
        raise InputError(f"must be a string, got {b!r}", field=f"{field}.behavior")
    out["behavior"] = b
    spec = FallbackSpec(**out)
    for sub, message in check_fallback(replace(spec, behavior=spec.behavior or "static",
                                               replicas=spec.replicas if spec.replicas is not None else 0)):
        raise InputError(message, field=f"{field}.{sub}")
    return spec


def without_metric_fallbacks(metrics: Any) -> Any:
    """``spec.metrics`` with each item's ``fallback`` removed (the autoscaling/v2 part of the metrics)."""
    if not isinstance(metrics, list):
        return metrics
    return [{k: v for k, v in m.items() if k != "fallback"} if isinstance(m, dict) else m for m in metrics]


def read_spec_fallback(value: Any, field: str, hpa: HPA) -> HPA:
    """``spec.fallback`` (``field``) into ``hpa.fallback``; the metrics' effective fallbacks are checked by
    ``read_metric_fallbacks``, which must follow."""
    return replace(hpa, fallback=None if value is None else fallback_spec(value, field))


def read_metric_fallbacks(metrics: Any, hpa: HPA) -> HPA:
    """Each ``spec.metrics[i].fallback`` into ``hpa.metrics[i].fallback`` (``hpa.metrics[i]`` is
    ``spec.metrics[i]``), and every metric's effective fallback (its own over ``hpa.fallback``) checked.
    Raises InputError naming the field (the metric's own, or ``spec.fallback`` when that lacks it)."""
    spec_wide = hpa.fallback
    raw = metrics if isinstance(metrics, list) else []
    own: dict[int, FallbackSpec] = {}
    for i, m in enumerate(raw):
        if isinstance(m, dict) and m.get("fallback") is not None:
            own[i] = fallback_spec(m["fallback"], f"spec.metrics[{i}].fallback")
    if spec_wide is None and not own:
        return hpa
    out = tuple(replace(m, fallback=own[i]) if i in own else m for i, m in enumerate(hpa.metrics))
    for i, m in enumerate(out):
        fb = effective_fallback(spec_wide, m.fallback)
        if fb is None:
            continue
        for sub, message in check_fallback(fb):
            if i in own and (_gives(own[i], sub) or spec_wide is None):
                raise InputError(message, field=f"spec.metrics[{i}].fallback.{sub}")
            suffix = f" (for spec.metrics[{i}], whose own fallback does not give it)" if i in own else ""
            raise InputError(message + suffix, field=f"spec.fallback.{sub}")
    return replace(hpa, metrics=out)


def _gives(fb: FallbackSpec, sub: str) -> bool:
    return getattr(fb, _CAMEL[sub]) is not None

