"""The decision core's sources that have a section of their own in a HorizontalAutoscaler's spec and status
(``SOURCE_SECTIONS``), each declared once with what reads it (its API struct, the core's spec type and check) and
what shows its decision (``pyhpa explain``'s figures, the controller's gauge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..core.model import PredictionSpec, SaturationSpec, SourceKind
from ..core.prediction import check_prediction
from ..core.reconcile import SOURCES
from ..core.saturation import check_saturation
from .status import prediction_figures, saturation_figures
from .v1alpha1 import Prediction, Saturation

__all__ = ["SOURCE_SECTIONS", "SourceSection"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSection:
    """A source of the decision core with a section of its own in the spec and the status, declared once: what reads
    ``spec.<field>`` (``pyhpa.adapters.parse.source_section``) and what shows the source's decision (``pyhpa
    explain``, the controller's metrics, ``pyhpa simulate``) work from this and the core's source alone.

    ``source``: the core's source (``pyhpa.core.reconcile.SOURCES``: its ``kind`` and ``field``; with a
    ``timeline``, an ``Explained`` one); ``spec``: the API struct of ``spec.<field>``, whose fields are
    ``core_spec``'s (the core's spec type), checked by ``check`` (the core's: (field, message) pairs); ``figures``:
    one sync's figures from the core's status (``pyhpa explain -o json``'s ``<field>``, before ``applied`` and
    ``won``); ``gauge``: (name after ``pyhpa_autoscaler_``, help) of the per-autoscaler gauge that is 1 while the
    source is active and applied (None: none). How ``pyhpa simulate`` shows it is declared there
    (``pyhpa.simulate.sections``), what ``pyhpa tune`` searches of it in ``pyhpa.tune.space`` (``TUNING``)."""

    source: Any
    spec: type
    core_spec: type
    check: Callable[..., list[tuple[str, str]]]
    figures: Callable[[Any], dict]
    gauge: tuple[str, str] | None = None

    @property
    def field(self) -> str:
        """``spec.<field>``, ``status.<field>``: the source's."""
        return self.source.field


_SOURCES = {s.kind: s for s in SOURCES}

#: The sections of the decision core's sources, by field, in the order of ``SOURCES``: each is read one way
#: (``pyhpa.adapters.parse.source_section``) and shown by the consumers' generic code (``SourceSection``).
SOURCE_SECTIONS: dict[str, SourceSection] = {s.field: s for s in (
    SourceSection(source=_SOURCES[SourceKind.PREDICTION], spec=Prediction, core_spec=PredictionSpec,
                  check=check_prediction, figures=prediction_figures, gauge=("predicting", (
                      "1 while the prediction is applied (PredictionActive=True); 0 while it observes or steps aside. "
                      "Only for autoscalers with spec.prediction."))),
    SourceSection(source=_SOURCES[SourceKind.SATURATION], spec=Saturation, core_spec=SaturationSpec,
                  check=check_saturation, figures=saturation_figures, gauge=("saturated", (
                      "1 while the pods are pinned at their CPU limit (SaturationActive=True), else 0. Only for "
                      "autoscalers with spec.saturation."))),
)}
