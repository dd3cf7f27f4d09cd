"""Normalization: from the metrics' recommendation to the replica count to scale to.

Follows "Horizontal Pod Autoscaling" (stabilization window, scaling policies,
configurable scaling behavior) and upstream's normalizeDesiredReplicas /
normalizeDesiredReplicasWithBehaviors. Each function takes the controller memory and
returns the new recommendation list; none mutates its inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .calculator import go_int32, wrap_int32
from .model import HPA, MAX_INT32, Behavior, ControllerConfig, Memory, ScalingRules, Step

_MIN_INT32 = -MAX_INT32 - 1

STABILIZED_DOWN = (
    "ScaleDownStabilized",
    "recent recommendations were higher than current one, applying the highest recent recommendation",
)
STABILIZED_UP = (
    "ScaleUpStabilized",
    "recent recommendations were lower than current one, applying the lowest recent recommendation",
)
READY = ("ReadyForNewScale", "recommended size matches current size")
WITHIN_RANGE = ("DesiredWithinRange", "the desired count is within the acceptable range")
TOO_FEW = ("TooFewReplicas", "the desired replica count is less than the minimum replica count")
TOO_MANY = ("TooManyReplicas", "the desired replica count is more than the maximum replica count")
UP_LIMIT = ("ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate")
DOWN_LIMIT = ("ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate")


def stabilize(recs: list[tuple[float, int]], desired: int, now: float, window: float) -> tuple[int, list]:
    """Without behavior: the highest recommendation not older than ``window`` s.

    Upstream stabilizeRecommendation: samples strictly before ``now - window`` are old;
    the newest recommendation replaces the last old sample, else is appended.
    """
    best = desired
    cutoff = now - window
    old_index = -1
    for i, (ts, rec) in enumerate(recs):
        if ts < cutoff:
            old_index = i
        elif rec > best:
            best = rec
    return best, _record(recs, old_index, now, desired)


def _record(recs: list[tuple[float, int]], old_index: int, now: float, desired: int) -> list:
    out = list(recs)
    if old_index >= 0:
        out[old_index] = (now, desired)
    else:
        out.append((now, desired))
    return out


def stabilize_with_behavior(
    recs: list[tuple[float, int]], desired: int, current: int, now: float, up_window: float, down_window: float
) -> tuple[int, list, tuple[str, str]]:
    """With behavior: clamp ``desired`` between the lowest recommendation of the scale-up
    window and the highest of the scale-down window, starting from ``current``.

    Upstream stabilizeRecommendationWithBehaviors: samples strictly after each cutoff
    count; a sample older than both windows is replaced by the new recommendation.
    """
    up_cutoff = now - up_window
    down_cutoff = now - down_window
    up_rec = desired
    down_rec = desired
    old_index = -1
    for i, (ts, rec) in enumerate(recs):
        if ts > up_cutoff and rec < up_rec:
            up_rec = rec
        if ts > down_cutoff and rec > down_rec:
            down_rec = rec
        if ts < up_cutoff and ts < down_cutoff:
            old_index = i
    result = current
    if result < up_rec:
        result = up_rec
    if result > down_rec:
        result = down_rec
    why = STABILIZED_UP if desired >= current else STABILIZED_DOWN
    return result, _record(recs, old_index, now, desired), why


def stabilization_windows(behavior: Behavior | None, config: ControllerConfig) -> tuple[float, float]:
    """(scale-up, scale-down) stabilization windows in seconds: ``behavior.scaleUp/scaleDown.
    stabilizationWindowSeconds``, the scale-down one defaulting to the controller's
    ``--horizontal-pod-autoscaler-downscale-stabilization``; without behavior (0, that flag)."""
    if behavior is None:
        return 0, config.downscale_stabilization_window_seconds
    down = behavior.scale_down.stabilization_window_seconds
    return (behavior.scale_up.stabilization_window_seconds or 0,
            config.downscale_stabilization_window_seconds if down is None else down)


@dataclass(frozen=True, slots=True)
class MemoryHorizons:
    """How long (seconds) a piece of controller memory can still change a decision of one HPA.

    ``down_window``/``up_window``: the stabilization windows (``stabilization_windows``);
    ``event_period``: the longest scaling-policy period of either direction (each policy counts the
    scale events of *both* directions within its period, upstream getReplicasChangePerPeriod); 0
    without behavior (upstream keeps no scale events then).
    """

    down_window: float
    up_window: float
    event_period: float


def memory_horizons(hpa: HPA, config: ControllerConfig) -> MemoryHorizons:
    """The MemoryHorizons of ``hpa`` under ``config``: the windows and periods ``normalize`` applies."""
    up, down = stabilization_windows(hpa.behavior, config)
    b = hpa.behavior
    period = 0 if b is None else max((p.period_seconds for p in b.scale_up.policies + b.scale_down.policies), default=0)
    return MemoryHorizons(float(down), float(up), float(period))


def relevant_memory(memory: Memory, hpa: HPA, config: ControllerConfig, now: float,
                    live_since: float | None = None) -> Memory:
    """The part of ``memory`` that can still change a decision of ``hpa`` at ``now`` or later.

    Recommendations (oldest first): the newest one (the *live* value, stamped ``live_since`` when
    given — the time it was first kept, stable while the value repeats — else its own time, never
    before the older ones kept), plus every older one that is inside the scale-down window and higher
    than every newer one, or inside the scale-up window and lower than every newer one
    (stabilization takes the highest, resp. lowest, recommendation inside each window; a newer one
    at least as extreme outlives it in both). Scale events: those inside the longest policy period.
    Metric failures (an HPA with a fallback, ``pyhpa.core.fallback``): all, exactly (a failing metric's
    count and first failure time decide when its fallback applies; a healthy metric has none).
    ``recommendations`` None (no memory yet) stays None. Deciding with the result at ``now`` or
    later gives what the full memory gives, except that a live value restamped later holds longer.
    """
    h = memory_horizons(hpa, config)
    recs = memory.recommendations
    if recs:
        recs = _essential_recommendations(recs, h, now, live_since)
    up = sorted(e for e in memory.scale_up_events if e[0] > now - h.event_period)
    down = sorted(e for e in memory.scale_down_events if e[0] > now - h.event_period)
    return Memory(None if recs is None else list(recs), up, down, dict(memory.metric_failures))


def _essential_recommendations(recs: list[tuple[float, int]], h: MemoryHorizons, now: float,
                               live_since: float | None) -> list[tuple[float, int]]:
    ordered = sorted(recs, key=lambda r: r[0])  # upstream replaces outdated entries in place: any order
    live_ts, live = ordered[-1]
    start = len(ordered)
    while start > 0 and ordered[start - 1][1] == live:
        start -= 1
    kept: list[tuple[float, int]] = []
    high = low = live
    for ts, value in reversed(ordered[:start]):
        # scale-down window: samples at or after its cutoff count (>= covers the no-behavior rule);
        # scale-up window: strictly after
        if (value > high and ts >= now - h.down_window) or (value < low and ts > now - h.up_window):
            kept.append((ts, value))
        high, low = max(high, value), min(low, value)
    kept.reverse()
    stamp = live_ts if live_since is None else live_since
    if kept:
        stamp = max(stamp, kept[-1][0])
    return kept + [(stamp, live)]


def scale_up_limit(current: int, factor: float, minimum: float) -> int:
    """Without behavior: ``int32(math.Max(factor * float64(current), minimum))`` (calculateScaleUpLimit; above
    2^31-1 Go's result is platform-defined, ``go_int32``)."""
    return go_int32(max(factor * float(current), minimum))


def convert_with_rules(
    current: int, desired: int, min_replicas: int, max_replicas: int, config: ControllerConfig
) -> tuple[int, tuple[str, str]]:
    """Without behavior: clamp to [min, min(max, scale-up limit)] (convertDesiredReplicasWithRules)."""
    limit = scale_up_limit(current, config.scale_up_limit_factor, config.scale_up_limit_minimum)
    if max_replicas > limit:
        maximum, why = limit, UP_LIMIT
    else:
        maximum, why = max_replicas, TOO_MANY
    if desired < min_replicas:
        return min_replicas, TOO_FEW
    if desired > maximum:
        return maximum, why
    return desired, WITHIN_RANGE


def change_in_period(events: list[tuple[float, int]], period: int, now: float) -> int:
    """Sum of replica changes strictly after ``now - period`` (getReplicasChangePerPeriod; an int32 sum)."""
    cutoff = now - period
    total = 0
    for ts, change in events:
        if ts > cutoff:
            total += change
    return wrap_int32(total)


def _period_start(current: int, policy_period: int, memory: Memory, now: float) -> int:
    added = change_in_period(memory.scale_up_events, policy_period, now)
    deleted = change_in_period(memory.scale_down_events, policy_period, now)
    return wrap_int32(current - added + deleted)


def behavior_scale_up_limit(current: int, memory: Memory, rules: ScalingRules, now: float) -> int:
    """Highest replica count the scale-up policies allow now (calculateScaleUpLimitWithScalingRules)."""
    if rules.select_policy == "Disabled":
        return current
    use_min = rules.select_policy == "Min"
    result = MAX_INT32 if use_min else _MIN_INT32
    for policy in rules.policies:
        start = _period_start(current, policy.period_seconds, memory, now)
        if policy.type == "Pods":
            proposed = wrap_int32(start + policy.value)
        else:
            x = float(start) * (1 + float(policy.value) / 100)
            proposed = go_int32(math.ceil(x) if math.isfinite(x) else x)
        result = min(result, proposed) if use_min else max(result, proposed)
    return result


def behavior_scale_down_limit(current: int, memory: Memory, rules: ScalingRules, now: float) -> int:
    """Lowest replica count the scale-down policies allow now (calculateScaleDownLimitWithBehaviors)."""
    if rules.select_policy == "Disabled":
        return current
    use_min = rules.select_policy == "Min"
    result = _MIN_INT32 if use_min else MAX_INT32
    for policy in rules.policies:
        start = _period_start(current, policy.period_seconds, memory, now)
        if policy.type == "Pods":
            proposed = wrap_int32(start - policy.value)
        else:
            proposed = go_int32(float(start) * (1 - float(policy.value) / 100))
        result = max(result, proposed) if use_min else min(result, proposed)
    return result


def convert_with_behavior(
    current: int, desired: int, min_replicas: int, max_replicas: int, memory: Memory, behavior: Behavior, now: float
) -> tuple[int, tuple[str, str]]:
    """With behavior: apply the rate policies and min/max (convertDesiredReplicasWithBehaviorRate)."""
    if desired > current:
        limit = max(behavior_scale_up_limit(current, memory, behavior.scale_up, now), current)
        if max_replicas > limit:
            maximum, why = limit, UP_LIMIT
        else:
            maximum, why = max_replicas, TOO_MANY
        if desired > maximum:
            return maximum, why
    elif desired < current:
        limit = min(behavior_scale_down_limit(current, memory, behavior.scale_down, now), current)
        if min_replicas < limit:
            minimum, why = limit, DOWN_LIMIT
        else:
            minimum, why = min_replicas, TOO_FEW
        if desired < minimum:
            return minimum, why
    return desired, WITHIN_RANGE


def normalize(
    current: int,
    prenormalized: int,
    min_replicas: int,
    max_replicas: int,
    behavior: Behavior | None,
    memory: Memory,
    now: float,
    config: ControllerConfig,
) -> tuple[int, list[tuple[float, int]], tuple[str, str], tuple[str, str], list[Step]]:
    """Normalize one recommendation.

    Returns (desired replicas, new recommendation list, AbleToScale (reason, message),
    ScalingLimited (reason, message), the steps that changed the number). The
    ScalingLimited status is True exactly when the final count differs from the
    stabilized one. ``memory.recommendations`` must not be None.
    """
    recs = memory.recommendations or []
    steps: list[Step] = []
    if behavior is None:
        _, window = stabilization_windows(None, config)
        stabilized, new_recs = stabilize(recs, prenormalized, now, window)
        able = STABILIZED_DOWN if stabilized != prenormalized else READY
        desired, limited = convert_with_rules(current, stabilized, min_replicas, max_replicas, config)
        window_text = f"downscale stabilization window {window:g}s"
    else:
        up_w, down_w = stabilization_windows(behavior, config)
        stabilized, new_recs, why = stabilize_with_behavior(recs, prenormalized, current, now, up_w, down_w)
        able = why if stabilized != prenormalized else READY
        desired, limited = convert_with_behavior(
            current, stabilized, min_replicas, max_replicas, memory, behavior, now
        )
        window_text = f"scaleUp window {up_w:g}s, scaleDown window {down_w:g}s"
    if stabilized != prenormalized:
        steps.append(Step("stabilization", prenormalized, stabilized, able[0], f"{able[1]} ({window_text})"))
    if desired != stabilized:
        steps.append(Step("limit", stabilized, desired, limited[0], limited[1]))
    return desired, new_recs, able, limited, steps


def store_scale_event(memory: Memory, behavior: Behavior | None, prev: int, new: int, now: float) -> Memory:
    """Record a successful rescale (upstream storeScaleEvent); only kept with ``spec.behavior``.

    Events older than the direction's longest policy period are outdated; the newest
    event replaces the last outdated one, else is appended.
    """
    if behavior is None:
        return memory
    up = new > prev
    rules = behavior.scale_up if up else behavior.scale_down
    longest = max((p.period_seconds for p in rules.policies), default=0)
    events = list(memory.scale_up_events if up else memory.scale_down_events)
    cutoff = now - longest
    old_index = -1
    for i, (ts, _change) in enumerate(events):
        if ts < cutoff:
            old_index = i
    event = (now, new - prev if up else prev - new)
    if old_index >= 0:
        events[old_index] = event
    else:
        events.append(event)
    if up:
        return replace(memory, scale_up_events=events)
    return replace(memory, scale_down_events=events)
