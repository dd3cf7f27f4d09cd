"""One shape for every source of a decision: the ``Source`` protocol, the ``Stage`` it takes part in and the
``Outcome`` it returns.

``pyhpa.core.decide`` evaluates ``pyhpa.core.reconcile.SOURCES`` in one loop, in the order of
docs/combination.md; between the stages it runs the rule's own steps (``pyhpa.core.combine``)::

    BOUNDS     Schedule      floors and caps                     then upstream's early branches and the selector
    METRICS    Metric        upstream's computeReplicasForMetric  (skipped with a given recommendation)
               Fallback      a failing metric's fallback replicas then upstream's rule over the metrics
    PROPOSALS  Prediction    replicas for the forecast
               Saturation    replicas for pinned pods             then the recommendation and normalization
    HOLD       Pause         holds or limits the normalized count then the rescale

A source is one module of the core (``pyhpa.core.schedules``, ``metrics``, ``fallback``, ``prediction``,
``saturation``, ``pause``) implementing ``Source``: ``enabled`` says whether the HPA uses it, ``evaluate`` reads
the sync (``SourceInputs``) and returns an ``Outcome``, ``retired`` what is left to undo when the HPA no longer
uses it. ``decide`` applies every outcome one way: its proposals join ``Decision.sources`` (the replica proposals
of the PROPOSALS stage the recommendation too), its conditions are set by upstream's rule (``set_condition``),
its status section goes to ``HPAStatus`` under its field name, its events are emitted. A source whose stage the
sync does not reach (it stopped before: replicas outside the bounds, a bad selector, failed metrics) is not
evaluated. Pure, as the whole core.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Any, Protocol

from .model import (
    HPA,
    Condition,
    ControllerConfig,
    Event,
    Forecast,
    Memory,
    MetricFailures,
    MetricSamples,
    Pod,
    Proposal,
    SourceKind,
    SourceProposal,
    Step,
)

if TYPE_CHECKING:
    from .combine import Bounds

__all__ = ["BoundsOutcome", "Explained", "ExplainedStatus", "FallbackOutcome", "HoldOutcome", "MetricsOutcome", "Outcome",
           "Source", "SourceInputs", "Stage", "nothing_to_retire"]


class Stage(IntEnum):
    """Where a source takes part in a sync, in the order of the rule (docs/combination.md)."""

    BOUNDS = 1
    METRICS = 2
    PROPOSALS = 3
    HOLD = 4
    DONE = 5


class SourceInputs(Protocol):
    """What a source reads of one sync (``pyhpa.core.reconcile``'s sync state; read only): the ``hpa``, ``now``
    (epoch s), the controller ``config``, the target's ``current`` replicas (its Scale's ``spec.replicas``) and
    ``status_replicas``, ``given`` (a recommendation was given:
    the metrics are not evaluated), the ``pods`` the HPA selected, each metric's ``samples`` and, once the metrics
    were evaluated, their ``proposals``; the controller ``memory`` as the sync found it; the ``forecast``
    (``spec.prediction``), the (scale-down, scale-up) ``tolerances``; ``desired`` (the normalized count, for the
    HOLD stage); the ``conditions`` so far."""

    hpa: HPA
    now: float
    config: ControllerConfig
    current: int
    status_replicas: int
    given: bool
    pods: list[Pod]
    samples: Sequence[MetricSamples]
    proposals: list[Proposal]
    memory: Memory
    forecast: Forecast | None
    tolerances: tuple[float, float]
    desired: int
    conditions: list[Condition]

    def metric_name(self, i: int) -> str:
        """``spec.metrics[i]`` as upstream names it in messages."""

    def condition(self, ctype: str) -> Condition | None:
        """The condition of ``ctype`` as it stands before this source (None: none)."""


@dataclass(slots=True, kw_only=True)
class Outcome:
    """What one source did at one sync (read only: not frozen only because a frozen dataclass costs a microsecond
    more to build, at every sync): its ``proposals`` (``SourceProposal``: replicas, or a floor and a cap, and
    whether they count), the ``conditions`` it sets ((type, status, reason, message), in order), ``drop``: a
    condition type it removes (the HPA no longer uses the source), its status ``section`` (``HPAStatus`` field
    name, value; None: none) and its ``events``."""

    proposals: tuple[SourceProposal, ...] = ()
    conditions: tuple[tuple[str, str, str, str], ...] = ()
    drop: str | None = None
    section: tuple[str, Any] | None = None
    events: tuple[Event, ...] = ()


@dataclass(slots=True, kw_only=True)
class BoundsOutcome(Outcome):
    """A source of the BOUNDS stage: the effective ``bounds`` (``minReplicas``/``maxReplicas`` after its floors
    and caps, who set each)."""

    bounds: Bounds


@dataclass(slots=True, kw_only=True)
class MetricsOutcome(Outcome):
    """The metrics: each metric's ``Proposal`` (upstream's computation, in spec order; ``proposals`` holds the
    ``Metric`` sources)."""

    metrics: list[Proposal]


@dataclass(slots=True, kw_only=True)
class FallbackOutcome(Outcome):
    """The fallback: the ``Fallback`` sources, ``stands_for[i]`` the index in ``spec.metrics`` of the failing
    metric ``proposals[i]`` stands in for; ``failures``: ``Memory.metric_failures`` after the sync (None: as it
    was)."""

    stands_for: tuple[int, ...] = ()
    failures: dict[str, MetricFailures] | None = None


@dataclass(slots=True, kw_only=True)
class HoldOutcome(Outcome):
    """A source of the HOLD stage: the count it leaves (``replicas``; None: it changes nothing), the ``step`` it
    adds when that differs from the normalized count, and ``decides``: it set the final number (it holds the
    count, or it changed it)."""

    replicas: int | None = None
    step: Step | None = None
    decides: bool = False


class Source(Protocol):
    """A source of a decision: ``kind`` names it (``SourceKind``), ``stage`` says where it takes part.

    ``enabled(inputs)``: the HPA uses it at this sync (its spec field, annotation or a condition it must end).
    ``evaluate(inputs)``: its ``Outcome`` (never raises for bad data: it reports it). ``retired(inputs)``: when not
    enabled, what is left to undo (a condition, its memory), or None; a source with nothing ever to undo sets
    ``retired = nothing_to_retire``, and one whose only trace is its condition sets ``condition_only = True``
    (``decide`` then asks it only when the HPA carries a condition upstream does not set: most syncs skip it)."""

    kind: SourceKind
    stage: Stage

    def enabled(self, inputs: SourceInputs) -> bool: ...

    def evaluate(self, inputs: SourceInputs) -> Outcome: ...

    def retired(self, inputs: SourceInputs) -> Outcome | None: ...


class ExplainedStatus(Protocol):
    """The status section of an ``Explained`` source at one sync (``HPAStatus.<field>``): its condition's
    ``reason`` and whether the source is ``active`` (it asks for something: pods pinned, ...)."""

    reason: str

    @property
    def active(self) -> bool: ...


class Explained(Protocol):
    """A source with a section of its own in the spec and the status (``field``: ``HPA.<field>``,
    ``HPAStatus.<field>``, ``Outcome.section``'s name), that says what its decision means, once, so that what
    shows it (``pyhpa explain``, ``pyhpa simulate``) needs no code of its own: ``active_words`` (what ``active``
    means, in words: "pods pinned at their CPU limit"), ``never_active`` (why it may stay inactive over a run),
    ``summary(spec)`` (its spec in one line), ``active_text(spec)`` (``active_words`` with the spec's figures) and
    ``explain(status)`` (one sync's status as lines of text, without the replicas it asked for: the sources
    say those). Its status is an ``ExplainedStatus``."""

    kind: SourceKind
    field: str
    active_words: str
    never_active: str

    def summary(self, spec: Any) -> str: ...

    def active_text(self, spec: Any) -> str: ...

    def explain(self, status: Any) -> tuple[str, ...]: ...


def nothing_to_retire(self: Source, inputs: SourceInputs) -> None:
    """``Source.retired`` of a source that leaves nothing behind when the HPA stops using it (``decide`` does not
    call it)."""
    return None


def condition_dropped(inputs: SourceInputs, ctype: str) -> Outcome | None:
    """``Source.retired`` of a source whose only trace is its condition ``ctype``: an ``Outcome`` that removes it,
    or None when the HPA has none."""
    if inputs.condition(ctype) is None:
        return None
    return Outcome(drop=ctype)
