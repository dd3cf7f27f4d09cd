"""Moving an autoscaler between a native HPA (autoscaling/v2) and a HorizontalAutoscaler: the objects of the
hand-over, built from the other one (``pyhpa adopt`` and ``pyhpa release``; the cluster steps are
``pyhpa.controller.handover``).

- ``adopted_autoscaler``: the HorizontalAutoscaler of an HPA: its name, namespace, labels and annotations (less
  kubectl's ``last-applied-configuration``, which describes the HPA object, and upstream's
  ``autoscaling.alpha.kubernetes.io/*`` status annotations), its whole spec as the API server stored it (every
  metric type, ``behavior`` with the defaults the API server filled in), paused (``pyhpa.dev/paused``) until the HPA
  is gone, and marked ``pyhpa.dev/adopted-from`` (the HPA's uid).
- ``carried_status``: what of one's status the other's carries: ``lastScaleTime`` (when it last scaled; each
  controller keeps it from the status it reads). The rest of a status (``currentReplicas``, ``desiredReplicas``,
  ``currentMetrics``, ``conditions``) the new owner writes at its first sync, from what it measures.
- ``released_hpa``: the HPA of a HorizontalAutoscaler, with the spec fields autoscaling/v2 has, and ``dropped``:
  each field it has no place for (spec settings, ``schedules``, ``prediction``, ``saturation``, ``fallback``, a
  metric's ``fallback`` or ``utilizationBasis``, a metric of a type only pyhpa reads, pyhpa's annotations), named
  by its path for the warning the command prints.

What an HPA's status cannot carry (upstream keeps it in its controller's memory): the stabilization window's
recent recommendations and the scaling policies' recent scale events. pyhpa starts them as upstream's own
controller does after a restart: the window seeded with the current replica count at the first sync (so no
scale-down for one ``stabilizationWindowSeconds``: conservative), no scale events (docs/adoption.md).
"""

from __future__ import annotations

import copy

from ..api.v1alpha1 import API_VERSION, KIND
from ..core.model import PAUSED_ANNOTATION
from .autoscaler import V2_API_VERSION, V2_KIND, V2_SPEC_FIELDS
from .metric_types import REGISTRY

__all__ = ["ADOPTED_FROM", "CARRIED_STATUS", "HANDOVER_PAUSE", "RELEASED_TO", "adopted_autoscaler", "carried_status", "released_hpa"]

#: annotation of a HorizontalAutoscaler made by ``pyhpa adopt``: the uid of the HPA it came from (removed with the
#: pause once the HPA is deleted; while it is there, the hand-over is not finished)
ADOPTED_FROM = "pyhpa.dev/adopted-from"
#: annotation of a HorizontalAutoscaler that ``pyhpa release`` paused: the uid of the HPA it made
RELEASED_TO = "pyhpa.dev/released-to"
#: annotation that says the pause was put there by the hand-over (lifted with it; a pause of the owner's stays)
HANDOVER_PAUSE = "pyhpa.dev/handover-paused"
#: the status fields the hand-over carries from one object's status into the other's (either way)
CARRIED_STATUS = ("lastScaleTime",)
#: annotations not carried either way: they describe the object they are on
NOT_CARRIED = ("kubectl.kubernetes.io/last-applied-configuration",)
NOT_CARRIED_PREFIXES = ("autoscaling.alpha.kubernetes.io/",)
#: the prefix of pyhpa's annotations (pause, hand-over): upstream has none of them
PYHPA_PREFIX = "pyhpa.dev/"
#: per-item fields of a resource or containerResource metric source that only pyhpa reads
SOURCE_EXTENSIONS = {"resource": ("utilizationBasis",), "containerResource": ("utilizationBasis",)}


def _metadata(obj: dict, api_version: str, kind: str, annotations: dict[str, str]) -> dict:
    meta = obj.get("metadata") or {}
    out: dict = {"name": meta["name"], "namespace": meta.get("namespace", "default")}
    if meta.get("labels"):
        out["labels"] = dict(meta["labels"])
    if annotations:
        out["annotations"] = annotations
    return {"apiVersion": api_version, "kind": kind, "metadata": out}


def _kept_annotations(obj: dict) -> dict[str, str]:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return {k: v for k, v in annotations.items()
            if k not in NOT_CARRIED and not k.startswith(NOT_CARRIED_PREFIXES)}


def adopted_autoscaler(hpa: dict, handing_over: bool = True) -> dict:
    """The HorizontalAutoscaler (a manifest: apiVersion, kind, metadata, spec) that takes over the autoscaling/v2
    HPA ``hpa`` (as read from the API server). ``handing_over``: as the hand-over creates it, marked
    ``pyhpa.dev/adopted-from: <the HPA's uid>`` and paused (``pyhpa.dev/paused: "true"`` with
    ``pyhpa.dev/handover-paused``; an HPA that carries ``pyhpa.dev/paused`` already, for ``pyhpa run --preview``,
    keeps its own pause); else as it is once adopted (``--dry-run``)."""
    annotations = _kept_annotations(hpa)
    if handing_over:
        annotations[ADOPTED_FROM] = str((hpa.get("metadata") or {}).get("uid", ""))
        if PAUSED_ANNOTATION not in annotations:
            annotations[PAUSED_ANNOTATION] = "true"
            annotations[HANDOVER_PAUSE] = "true"
    out = _metadata(hpa, API_VERSION, KIND, annotations)
    out["spec"] = copy.deepcopy(hpa.get("spec") or {})
    return out


def carried_status(obj: dict) -> dict:
    """The part of the status of ``obj`` (an HPA or a HorizontalAutoscaler) that the other carries
    (``CARRIED_STATUS``)."""
    status = obj.get("status") or {}
    return {k: copy.deepcopy(status[k]) for k in CARRIED_STATUS if status.get(k) is not None}


def released_hpa(autoscaler: dict) -> tuple[dict, list[str]]:
    """The autoscaling/v2 HPA that takes over the HorizontalAutoscaler ``autoscaler`` (a manifest), and the path of
    each field it cannot carry (upstream has no place for it: ``spec.schedules``, ``spec.metrics[1]`` of type
    Prometheus, ``spec.metrics[0].resource.utilizationBasis``, ``metadata.annotations[pyhpa.dev/paused]``, ...;
    not the hand-over's own annotations)."""
    dropped: list[str] = []
    annotations = {}
    kept = _kept_annotations(autoscaler)
    own = {ADOPTED_FROM, RELEASED_TO, HANDOVER_PAUSE} | ({PAUSED_ANNOTATION} if HANDOVER_PAUSE in kept else set())
    for k, v in kept.items():
        if k.startswith(PYHPA_PREFIX):
            if k not in own:
                dropped.append(f"metadata.annotations[{k}]")
            continue
        annotations[k] = v
    out = _metadata(autoscaler, V2_API_VERSION, V2_KIND, annotations)
    spec = autoscaler.get("spec") or {}
    v2: dict = {}
    for key, value in spec.items():
        if key not in V2_SPEC_FIELDS:
            dropped.append(f"spec.{key}")
        elif key == "metrics" and isinstance(value, list):
            v2[key] = _v2_metrics(value, dropped)
        else:
            v2[key] = copy.deepcopy(value)
    out["spec"] = v2
    return out, dropped


def _v2_metrics(metrics: list, dropped: list[str]) -> list:
    """The items of ``spec.metrics`` autoscaling/v2 has, each without the fields only pyhpa reads."""
    out = []
    for i, m in enumerate(metrics):
        path = f"spec.metrics[{i}]"
        if not isinstance(m, dict):
            out.append(copy.deepcopy(m))
            continue
        kind = m.get("type")
        t = REGISTRY.get(kind) if isinstance(kind, str) else None
        if t is not None and t.extension is not None:
            dropped.append(f"{path} (type {kind})")
            continue
        item = {}
        for key, value in m.items():
            if key == "fallback":
                dropped.append(f"{path}.fallback")
                continue
            if isinstance(value, dict) and key in SOURCE_EXTENSIONS:
                for ext in SOURCE_EXTENSIONS[key]:
                    if ext in value:
                        dropped.append(f"{path}.{key}.{ext}")
                value = {k: v for k, v in value.items() if k not in SOURCE_EXTENSIONS[key]}
            item[key] = copy.deepcopy(value)
        out.append(item)
    return out
