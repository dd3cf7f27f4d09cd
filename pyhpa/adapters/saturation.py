"""Saturation in the adapters: ``spec.saturation`` in, ``status.saturation`` out.

``saturation_from_dict``: ``spec.saturation`` of a HorizontalAutoscaler (pyhpa.dev/v1alpha1) -> the core's
``SaturationSpec`` (rules: ``pyhpa.core.saturation``). ``saturation_status``: the one rendering of
``status.saturation`` from the core's ``SaturationStatus`` (the controller's status, ``pyhpa explain``).

``saturation: {}`` turns it on with the defaults of ``SaturationSpec``. Fields (all optional): ``metric``
(index into ``spec.metrics``; default the first Resource/ContainerResource cpu metric), ``pinnedPercent``
(default 95, percent of the CPU limit), ``demandFactor`` (default 2.0) and ``mode`` (``Enforce`` |
``Observe``). Integer fields take what the API server takes for ``type: integer``; every problem is an
``InputError`` naming the field.
"""

from __future__ import annotations

from typing import Any

from ..core import Decision, SaturationSpec, SaturationStatus, check_saturation
from ..core.model import SATURATION_SOURCE, MetricSpec
from .errors import InputError
from .parse import api_integer, extension_fields, refuse_first

FIELD = "spec.saturation"
_KEYS = ("metric", "pinnedPercent", "demandFactor", "mode")


def saturation_from_dict(d: Any, metrics: tuple[MetricSpec, ...] | None = None,
                         field: str = FIELD) -> SaturationSpec:
    """A ``SaturationSpec`` from the ``spec.saturation`` mapping (None or ``{}``: all defaults).

    Reads the types here and checks the values by the core's rule set (``pyhpa.core.check_saturation``:
    limits, modes and, with ``metrics``, that a cpu metric is watched). Raises InputError naming ``field``
    and the key of the first problem.
    """
    d = extension_fields(d, _KEYS, field)
    default = SaturationSpec()
    factor = d.get("demandFactor", default.demand_factor)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise InputError(f"must be a number, got {factor!r}", field=f"{field}.demandFactor")
    metric = d.get("metric")
    spec = SaturationSpec(
        metric=None if metric is None else api_integer(d, "metric", None, field),
        pinned_percent=api_integer(d, "pinnedPercent", default.pinned_percent, field),
        demand_factor=float(factor),
        mode=d.get("mode", default.mode),
    )
    refuse_first(check_saturation(spec, metrics), field)
    return spec


def saturation_to_dict(spec: SaturationSpec) -> dict:
    """``spec.saturation`` as the API writes it (every field, defaults included; ``metric`` when set)."""
    out: dict = {"pinnedPercent": spec.pinned_percent, "demandFactor": spec.demand_factor, "mode": spec.mode}
    if spec.metric is not None:
        out = {"metric": spec.metric, **out}
    return out


def saturation_status(st: SaturationStatus) -> dict:
    """``status.saturation`` of one sync from the core's ``SaturationStatus``: ``reason`` (the
    ``SaturationActive`` reason), ``message``, ``mode``, ``pinned``, ``usagePercentOfLimit`` (the ready pods'
    CPU usage in percent of their CPU limit, when it could be judged), ``readyPods`` and ``replicas`` (what
    the source asked for, when pinned). The usage and the pods are written only while pinned: below the
    limit they change at every sync, and the status is rewritten when its content changes."""
    out: dict = {"reason": st.reason, "message": st.message, "mode": st.mode, "pinned": st.pinned}
    if st.pinned and st.usage_percent is not None:
        out["usagePercentOfLimit"] = st.usage_percent
        out["readyPods"] = st.ready_pods
    if st.replicas is not None:
        out["replicas"] = st.replicas
    return out


def saturation_report(d: Decision) -> dict | None:
    """What one sync's saturation source did (``pyhpa explain -o json``; None without ``spec.saturation`` or
    when the sync stopped before the sources were combined): ``saturation_status`` plus ``usagePercentOfLimit``
    whenever it could be judged, ``applied`` (its replicas were a proposal of the recommendation) and ``won``
    (it set the final number)."""
    st = d.status.saturation
    if st is None:
        return None
    source = d.source(SATURATION_SOURCE)
    return {**saturation_status(st), "usagePercentOfLimit": st.usage_percent, "readyPods": st.ready_pods,
            "applied": bool(source is not None and source.applied and source.active),
            "won": bool(source is not None and source.won)}
