"""Pausing an autoscaler: KEDA's pause annotations, as one rule of the decision.

The annotations (parsed by the adapters into ``PauseSpec``; KEDA's ``autoscaling.keda.sh/paused*`` under
``pyhpa.dev/``):

- ``pyhpa.dev/paused: "true"`` freezes the replica count: the target keeps its current ``spec.replicas``;
- ``pyhpa.dev/paused-replicas: "N"`` scales the target to N and holds it there (it wins over ``paused``; N is
  taken as given, outside ``minReplicas``/``maxReplicas`` too, as KEDA does);
- ``pyhpa.dev/paused-scale-in: "true"`` blocks scale-in only (a floor at the current count),
  ``pyhpa.dev/paused-scale-out: "true"`` blocks scale-out only (a cap at the current count); both at once
  freeze the count as ``paused`` does.

The pause is the last step of a sync: metrics, the other sources and normalization run as usual (so
``explain`` shows what the autoscaler would do, and the stabilization memory keeps being recorded), then the
pause replaces the result; removing the annotations resumes from that intact memory. A value that does not
parse is ignored, never a silent pause: the ``Paused`` condition names it and a Warning event
``InvalidPauseAnnotation`` is emitted when it appears.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import (
    INVALID_PAUSE_ANNOTATION,
    PAUSE_SOURCE,
    PAUSED,
    PAUSED_ANNOTATION,
    PAUSED_CONDITION,
    PAUSED_REPLICAS,
    PAUSED_REPLICAS_ANNOTATION,
    PAUSED_SCALE_IN,
    PAUSED_SCALE_IN_ANNOTATION,
    PAUSED_SCALE_OUT,
    PAUSED_SCALE_OUT_ANNOTATION,
    RESUMED,
    Event,
    PauseSpec,
    PauseStatus,
    SourceKind,
    SourceProposal,
    Step,
)
from .sources import HoldOutcome, SourceInputs, Stage, nothing_to_retire

__all__ = ["PauseOutcome", "PauseSource", "pause_rule"]


@dataclass(slots=True, frozen=True, kw_only=True)
class PauseOutcome:
    """What an active pause does to one sync: the replica count it leaves (``desired``), the ``Paused``
    condition's ``reason`` and ``message``, the ``source`` it adds to the decision's sources (``Pause/<annotation
    without pyhpa.dev/>``) and ``holds``: the count is the pause's whatever the metrics say (paused,
    paused-replicas), not only when it blocked a direction."""

    desired: int
    reason: str
    message: str
    source: SourceProposal
    holds: bool


def _name(annotation: str) -> str:
    return annotation.removeprefix("pyhpa.dev/")


def pause_rule(spec: PauseSpec, current: int, desired: int) -> PauseOutcome | None:
    """The pause of ``spec`` applied to a sync whose target has ``current`` replicas and whose decision (after
    normalization) is ``desired``; None when no valid annotation pauses anything."""
    if spec.replicas is not None:
        n = spec.replicas
        return PauseOutcome(desired=n, reason=PAUSED_REPLICAS, holds=True,
                            message=f"{PAUSED_REPLICAS_ANNOTATION} is {n}: the replicas are held at {n}",
                            source=SourceProposal(source=PAUSE_SOURCE, name=_name(PAUSED_REPLICAS_ANNOTATION),
                                                  replicas=n))
    if spec.paused or (spec.scale_in and spec.scale_out):
        what = PAUSED_ANNOTATION if spec.paused else f"{PAUSED_SCALE_IN_ANNOTATION} and {PAUSED_SCALE_OUT_ANNOTATION}"
        verb = "is" if spec.paused else "are"
        name = _name(PAUSED_ANNOTATION) if spec.paused else _name(PAUSED_SCALE_IN_ANNOTATION)
        return PauseOutcome(desired=current, reason=PAUSED, holds=True,
                            message=f"{what} {verb} true: the replica count is frozen at {current}",
                            source=SourceProposal(source=PAUSE_SOURCE, name=name, replicas=current))
    if spec.scale_in:
        return PauseOutcome(desired=max(desired, current), reason=PAUSED_SCALE_IN, holds=False,
                            message=f"{PAUSED_SCALE_IN_ANNOTATION} is true: no scale-in below {current}",
                            source=SourceProposal(source=PAUSE_SOURCE, name=_name(PAUSED_SCALE_IN_ANNOTATION),
                                                  min_replicas=current))
    if spec.scale_out:
        return PauseOutcome(desired=min(desired, current), reason=PAUSED_SCALE_OUT, holds=False,
                            message=f"{PAUSED_SCALE_OUT_ANNOTATION} is true: no scale-out above {current}",
                            source=SourceProposal(source=PAUSE_SOURCE, name=_name(PAUSED_SCALE_OUT_ANNOTATION),
                                                  max_replicas=current))
    return None


class PauseSource:
    """The Pause source (the ``pyhpa.dev/paused*`` annotations), last: ``pause_rule`` on the normalized count, the
    ``Paused`` condition, ``status.pause``, the Pause source and step, and the events ``Paused``/``Resumed``
    (Normal) and ``InvalidPauseAnnotation`` (Warning) when they appear. It also runs while a ``Paused`` condition
    says the autoscaler was paused: the annotations were just removed (``Resumed``)."""

    kind = SourceKind.PAUSE
    stage = Stage.HOLD

    def enabled(self, inputs: SourceInputs) -> bool:
        if inputs.hpa.pause is not None:
            return True
        for c in inputs.conditions:  # a Paused condition other than Resumed: the annotations were just removed
            if c.type == PAUSED_CONDITION:
                return c.reason != RESUMED
        return False

    retired = nothing_to_retire

    def evaluate(self, inputs: SourceInputs) -> HoldOutcome:
        spec = inputs.hpa.pause
        current, desired = inputs.current, inputs.desired
        before = inputs.condition(PAUSED_CONDITION)
        got = pause_rule(spec, current, desired) if spec is not None else None
        problems = "; ".join(spec.problems) if spec is not None else ""
        events = []
        if got is None:
            conditions: tuple[tuple[str, str, str, str], ...] = ()
            message = ""
            if problems:
                message = f"not paused: ignored {problems}"
                conditions = ((PAUSED_CONDITION, "False", INVALID_PAUSE_ANNOTATION, message),)
            elif before is not None and before.reason != RESUMED:
                message = "no pause annotation: autoscaling resumed"
                conditions = ((PAUSED_CONDITION, "False", RESUMED, message),)
                if before.status == "True":
                    events.append(Event("Normal", RESUMED, message))
            if problems and (before is None or before.message != message):
                events.append(Event("Warning", INVALID_PAUSE_ANNOTATION, message))
            return HoldOutcome(conditions=conditions, events=tuple(events))
        message = got.message + (f"; ignored {problems}" if problems else "")
        if before is None or before.status != "True":
            events.append(Event("Normal", PAUSED, got.message))
        if problems and (before is None or before.message != message):
            events.append(Event("Warning", INVALID_PAUSE_ANNOTATION, f"ignored {problems}"))
        # the condition's transition time once set (``set_condition``): kept while it stays True
        since = before.last_transition_time if before is not None and before.status == "True" else inputs.now
        changed = got.desired != desired
        return HoldOutcome(
            proposals=(got.source,), conditions=((PAUSED_CONDITION, "True", got.reason, message),),
            events=tuple(events),
            section=("pause", PauseStatus(reason=got.reason, message=message, since=since, replicas=got.source.replicas)),
            replicas=got.desired, step=Step("pause", desired, got.desired, got.reason, got.message) if changed else None,
            decides=got.holds or changed)
