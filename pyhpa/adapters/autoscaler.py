"""A HorizontalAutoscaler (pyhpa.dev/v1alpha1) or an autoscaling/v2 HPA document -> the core's ``HPA``.

A HorizontalAutoscaler's spec is the autoscaling/v2 HPA spec plus pyhpa's fields: the per-object
controller settings (``syncPeriodSeconds``, ``tolerance``, ``cpuInitializationPeriodSeconds``,
``initialReadinessDelaySeconds``) and ``prediction`` (``pyhpa.adapters.prediction``). The v2 part is
read exactly as ``pyhpa.adapters.objects.hpa_from_dict`` reads an HPA; an autoscaling/v2 object is
read as is (it has no prediction, so it decides exactly as upstream).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core import HPA
from .errors import InputError
from .objects import hpa_from_dict, object_label
from .prediction import FIELD as PREDICTION_FIELD
from .prediction import prediction_from_dict

API_VERSION = "pyhpa.dev/v1alpha1"
KIND = "HorizontalAutoscaler"
#: spec fields of a HorizontalAutoscaler that are not part of the autoscaling/v2 HPA spec.
SETTING_FIELDS = ("syncPeriodSeconds", "tolerance", "cpuInitializationPeriodSeconds", "initialReadinessDelaySeconds")
EXTENSION_FIELDS = ("prediction",)
HPA_KINDS = ("HorizontalPodAutoscaler", KIND)


def is_autoscaler(d: Any) -> bool:
    """Whether ``d`` is a HorizontalAutoscaler document (by kind)."""
    return isinstance(d, dict) and d.get("kind") == KIND


def v2_document(d: dict) -> dict:
    """The autoscaling/v2 HorizontalPodAutoscaler a HorizontalAutoscaler stands for (pyhpa's fields removed)."""
    spec = d.get("spec")
    if not isinstance(spec, dict):
        raise InputError(f"must be an object, got {type(spec).__name__}", obj=object_label(d), field="spec")
    out = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": d.get("metadata") or {},
           "spec": {k: v for k, v in spec.items() if k not in SETTING_FIELDS + EXTENSION_FIELDS}}
    if isinstance(d.get("status"), dict):
        out["status"] = {k: v for k, v in d["status"].items() if k not in ("pyhpa", "prediction", "schedules")}
    return out


def autoscaler_from_dict(d: Any, lenient: bool = False, scale_to_zero: bool = False) -> tuple[HPA, Any]:
    """(core HPA, lightkube autoscaling/v2 model) of a HorizontalAutoscaler or an autoscaling/v2 HPA.

    A HorizontalAutoscaler's ``spec.prediction`` becomes ``HPA.prediction``. Raises InputError naming
    the object and field.
    """
    if not is_autoscaler(d):
        return hpa_from_dict(d, lenient=lenient, scale_to_zero=scale_to_zero)
    if d.get("apiVersion") != API_VERSION:
        raise InputError(f"expected apiVersion {API_VERSION} for kind {KIND}, got {d.get('apiVersion')}",
                         obj=object_label(d), field="apiVersion")
    hpa, model = hpa_from_dict(v2_document(d), lenient=lenient, scale_to_zero=scale_to_zero)
    spec = d["spec"]
    if "prediction" in spec:
        try:
            hpa = replace(hpa, prediction=prediction_from_dict(spec["prediction"], hpa.metrics, PREDICTION_FIELD))
        except InputError as err:
            raise err.at(obj=object_label(d)) from None
    return hpa, model
