"""Normalization: from the metrics' recommendation to the replica count to scale to.

Follows "Horizontal Pod Autoscaling" (stabilization window, scaling policies,
configurable scaling behavior) and upstream's normalizeDesiredReplicas /
normalizeDesiredReplicasWithBehaviors. Each function takes the controller memory and
returns the new recommendation list; none mutates its inputs.
"""

from __future__ import annotations

import math
from dataclasses import replace

from .model import MAX_INT32, Behavior, ControllerConfig, Memory, ScalingRules, Step

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


def scale_up_limit(current: int, factor: float, minimum: float) -> int:
    """Without behavior: ``int32(max(factor * current, minimum))`` (calculateScaleUpLimit)."""
    return int(max(factor * float(current), minimum))


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
    """Sum of replica changes strictly after ``now - period`` (getReplicasChangePerPeriod)."""
    cutoff = now - period
    total = 0
    for ts, change in events:
        if ts > cutoff:
            total += change
    return total


def _period_start(current: int, policy_period: int, memory: Memory, now: float) -> int:
    added = change_in_period(memory.scale_up_events, policy_period, now)
    deleted = change_in_period(memory.scale_down_events, policy_period, now)
    return current - added + deleted


def behavior_scale_up_limit(current: int, memory: Memory, rules: ScalingRules, now: float) -> int:
    """Highest replica count the scale-up policies allow now (calculateScaleUpLimitWithScalingRules)."""
    if rules.select_policy == "Disabled":
        return current
    use_min = rules.select_policy == "Min"
    result = MAX_INT32 if use_min else _MIN_INT32
    for policy in rules.policies:
        start = _period_start(current, policy.period_seconds, memory, now)
        if policy.type == "Pods":
            proposed = start + policy.value
        else:
            proposed = int(math.ceil(float(start) * (1 + float(policy.value) / 100)))
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
            proposed = start - policy.value
        else:
            proposed = int(float(start) * (1 - float(policy.value) / 100))
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
        window = config.downscale_stabilization_window_seconds
        stabilized, new_recs = stabilize(recs, prenormalized, now, window)
        able = STABILIZED_DOWN if stabilized != prenormalized else READY
        desired, limited = convert_with_rules(current, stabilized, min_replicas, max_replicas, config)
        window_text = f"downscale stabilization window {window:g}s"
    else:
        up_w = behavior.scale_up.stabilization_window_seconds or 0
        down_w = behavior.scale_down.stabilization_window_seconds
        if down_w is None:
            down_w = config.downscale_stabilization_window_seconds
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
