"""One shape for the sources a sync combines (``pyhpa.core.combine``): each reads the sync's ``SourceInputs`` and
returns an ``Outcome`` — what it proposes (a ``SourceProposal``: replicas, or a floor and a cap, and whether it
counts), the condition it reports, its status section and its events. ``decide`` applies outcomes one way
(``pyhpa.core.reconcile``): the proposal joins ``Decision.sources`` and the recommendation, the condition is set by
upstream's rule, the section goes to ``HPAStatus`` under its field name, the events are emitted.

A source of replica proposals (``Prediction``: ``pyhpa.core.prediction.PredictionSource``, ``Saturation``:
``pyhpa.core.saturation.SaturationSource``) is one module implementing ``Source``; ``decide`` evaluates them in the
order of docs/combination.md (``PROPOSAL_SOURCES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .metrics import describe
from .model import (HPA, Condition, ConditionType, ControllerConfig, Event, Forecast, MetricSamples, Pod, Proposal,
                    SourceKind, SourceProposal)

__all__ = ["Outcome", "Source", "SourceInputs"]


@dataclass(slots=True, frozen=True, kw_only=True)
class SourceInputs:
    """What a source reads of one sync: the ``hpa``, ``now`` (epoch s), the controller ``config``, the target's
    ``current`` replicas, the ``pods`` the HPA selected, each metric's ``samples`` and ``proposals`` (as the metrics
    step computed them), the ``conditions`` so far (the stored ones, updated by the steps before), the
    ``forecast`` (``spec.prediction``) and the (scale-down, scale-up) ``tolerances``."""

    hpa: HPA
    now: float
    config: ControllerConfig
    current: int
    pods: Sequence[Pod]
    samples: Sequence[MetricSamples]
    proposals: Sequence[Proposal]
    conditions: Sequence[Condition]
    forecast: Forecast | None
    tolerances: tuple[float, float]

    def metric_name(self, i: int) -> str:
        """``spec.metrics[i]`` as upstream names it in messages (the sync's proposal has it already)."""
        return self.proposals[i].metric if i < len(self.proposals) else describe(self.hpa.metrics[i])

    def condition(self, ctype: ConditionType) -> Condition | None:
        """The condition of ``ctype`` as it stands before this source (None: none)."""
        for c in self.conditions:
            if c.type == ctype:
                return c
        return None


@dataclass(slots=True, frozen=True, kw_only=True)
class Outcome:
    """What one source did at one sync: its ``proposal``, its ``condition`` (type, status, reason, message; None:
    it sets none), its status ``section`` (``HPAStatus`` field name, value; None: none) and its ``events``."""

    proposal: SourceProposal
    condition: tuple[ConditionType, str, str, str] | None = None
    section: tuple[str, Any] | None = None
    events: tuple[Event, ...] = ()


class Source(Protocol):
    """A source of a decision: ``kind`` names it (``SourceKind``); ``enabled`` says whether it runs for ``hpa``
    (``given``: the sync normalizes a given recommendation, the metrics were not evaluated); ``evaluate`` gives its
    outcome. Pure, as the whole core."""

    kind: SourceKind

    def enabled(self, hpa: HPA, given: bool) -> bool: ...

    def evaluate(self, inputs: SourceInputs) -> Outcome: ...
