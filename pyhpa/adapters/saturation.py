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

from ..api.status import saturation_status  # noqa: F401 (the one rendering of status.saturation)
from ..core import Decision, SaturationSpec
from ..core.model import SATURATION_SOURCE, MetricSpec
from .parse import source_section

FIELD = "spec.saturation"


def saturation_from_dict(d: Any, metrics: tuple[MetricSpec, ...] | None = None,
                         field: str = FIELD) -> SaturationSpec:
    """A ``SaturationSpec`` from the ``spec.saturation`` mapping (None or ``{}``: all defaults).

    Reads the API's fields (``pyhpa.api.v1alpha1.Saturation``, ``source_section``) and checks the values by the core's
    rule set (``pyhpa.core.check_saturation``: limits, modes and, with ``metrics``, that a cpu metric is watched).
    Raises InputError naming ``field`` and the key of the first problem.
    """
    return source_section("saturation", d, metrics, field)


def saturation_to_dict(spec: SaturationSpec) -> dict:
    """``spec.saturation`` as the API writes it (every field, defaults included; ``metric`` when set)."""
    out: dict = {"pinnedPercent": spec.pinned_percent, "demandFactor": spec.demand_factor, "mode": spec.mode}
    if spec.metric is not None:
        out = {"metric": spec.metric, **out}
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
