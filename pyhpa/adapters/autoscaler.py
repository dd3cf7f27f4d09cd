"""The HorizontalAutoscaler (``pyhpa.dev/v1alpha1``) object, read the same way by ``pyhpa run``,
``pyhpa explain`` and ``pyhpa thresholds``.

A HorizontalAutoscaler is an autoscaling/v2 HorizontalPodAutoscaler spec plus per-object settings that
upstream only has as kube-controller-manager flags (``SETTING_FIELDS``) and pyhpa's metric extensions
(``type: Prometheus`` metrics, ``utilizationBasis`` on Resource/ContainerResource metrics, read by
``pyhpa.adapters.objects.hpa_from_dict`` with ``extensions=True``). ``hpa_document`` gives the
autoscaling/v2 object it stands for; ``object_settings``/``effective_config`` the decision core's config.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from ..core import ControllerConfig
from .errors import InputError

GROUP = "pyhpa.dev"
VERSION = "v1alpha1"
KIND = "HorizontalAutoscaler"
API_VERSION = f"{GROUP}/{VERSION}"
#: ``status`` key of the controller memory (``pyhpa.controller.memory``).
MEMORY_KEY = "pyhpa"
#: spec fields of a HorizontalAutoscaler that are not part of the autoscaling/v2 HPA spec.
SETTING_FIELDS = ("syncPeriodSeconds", "tolerance", "cpuInitializationPeriodSeconds", "initialReadinessDelaySeconds")


@dataclass(frozen=True, slots=True)
class ObjectSettings:
    """What one autoscaler's spec overrides: None keeps the controller flag."""

    sync_period_seconds: float | None = None
    tolerance: float | None = None
    cpu_initialization_period_seconds: float | None = None
    initial_readiness_delay_seconds: float | None = None


def object_settings(spec: dict) -> ObjectSettings:
    """The per-object settings of a HorizontalAutoscaler spec; raises InputError naming the field."""
    values = []
    for key in SETTING_FIELDS:
        value = spec.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise InputError(f"must be a non-negative number, got {value!r}", field=f"spec.{key}")
        values.append(None if value is None else float(value))
    if values[0] is not None and values[0] <= 0:
        raise InputError("must be at least 1 second", field="spec.syncPeriodSeconds")
    return ObjectSettings(*values)


@lru_cache(maxsize=1024)
def effective_config(base: ControllerConfig, own: ObjectSettings) -> ControllerConfig:
    """``base`` with the object's overrides (memoized: thousands of autoscalers share a few configs)."""
    changes = {}
    if own.tolerance is not None:
        changes["tolerance"] = own.tolerance
    if own.cpu_initialization_period_seconds is not None:
        changes["cpu_initialization_period_seconds"] = own.cpu_initialization_period_seconds
    if own.initial_readiness_delay_seconds is not None:
        changes["initial_readiness_delay_seconds"] = own.initial_readiness_delay_seconds
    return replace(base, **changes) if changes else base


def hpa_document(meta: dict, spec: dict, status: dict) -> dict:
    """The autoscaling/v2 HorizontalPodAutoscaler a HorizontalAutoscaler (or a native HPA) stands for:
    name and namespace, the spec without the per-object settings (pyhpa's metric extensions stay), the
    status when it has desiredReplicas."""
    doc = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "spec": {k: v for k, v in spec.items() if k not in SETTING_FIELDS},
    }
    if status.get("desiredReplicas") is not None:
        doc["status"] = status
    return doc


def is_autoscaler(d: Any) -> bool:
    """``d`` is a HorizontalAutoscaler object (by apiVersion and kind)."""
    return isinstance(d, dict) and d.get("kind") == KIND and d.get("apiVersion") == API_VERSION


def autoscaler_document(d: dict, base: ControllerConfig) -> tuple[dict, ControllerConfig]:
    """(the autoscaling/v2 document, the decision core's config) of a HorizontalAutoscaler object: its
    settings applied to ``base``, the controller memory (``status.pyhpa``) left out of the status.
    Raises InputError naming the field."""
    meta = d.get("metadata") or {}
    spec = d.get("spec")
    if not isinstance(meta, dict):
        raise InputError("must be an object", field="metadata")
    if not isinstance(spec, dict):
        raise InputError("must be an object", field="spec")
    status = d.get("status") or {}
    status = {k: v for k, v in status.items() if k != MEMORY_KEY} if isinstance(status, dict) else {}
    return hpa_document(meta, spec, status), effective_config(base, object_settings(spec))
