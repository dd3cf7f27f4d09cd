"""Where an HPA flips: the measured value at which each replica count scales up or down.

For one metric with every pod ready and reporting the same value, the proposal at
``replicas`` pods is the core's own arithmetic (``within`` and ``ceil_replicas``):
unchanged inside the tolerance band, else ``ceil(ratio * replicas)``; Object/External
AverageValue targets use ``ceil(usage / target)``. Values are searched exactly over the
integers the controller measures: utilization percent (already truncated) or milli-units.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .calculator import ceil_replicas, ceil_saturate, fdiv, within
from .model import AVERAGE_VALUE, EXTERNAL, MAX_INT32, OBJECT, UTILIZATION, MetricSpec

__all__ = ["Threshold", "metric_target", "proposal", "thresholds"]


@dataclass(slots=True, frozen=True)
class Threshold:
    """One row: at ``replicas`` pods, measured >= ``scale_up_at`` proposes ``scale_up_to``;
    measured <= ``scale_down_at`` proposes ``scale_down_to`` (None: cannot happen within min/max).
    Units: percent of request for Utilization targets, milli-units otherwise."""

    replicas: int
    scale_up_at: int | None
    scale_up_to: int | None
    scale_down_at: int | None
    scale_down_to: int | None


def metric_target(spec: MetricSpec) -> tuple[int, str]:
    """(target value, unit) of a metric: percent for Utilization, milli-units otherwise."""
    if spec.target_type == UTILIZATION:
        return spec.target_utilization, "percent"
    if spec.target_type == AVERAGE_VALUE:
        return spec.target_average_milli, "milli"
    return spec.target_value_milli, "milli"


def proposal(spec: MetricSpec, value: int, replicas: int, down: float, up: float) -> int:
    """The proposal for ``replicas`` pods when the metric measures ``value`` (see module doc)."""
    target, _ = metric_target(spec)
    if spec.type in (OBJECT, EXTERNAL) and spec.target_type == AVERAGE_VALUE:
        ratio = fdiv(float(value), float(target) * float(replicas))
        if within(ratio, down, up):
            return replicas
        return ceil_saturate(fdiv(float(value), float(target)), MAX_INT32)
    ratio = float(value) / float(target)
    if within(ratio, down, up):
        return replicas
    return ceil_replicas(ratio, replicas)


def _first_true(lo: int, hi: int, pred) -> int | None:
    """Smallest v in [lo, hi] with pred(v) (pred monotonic False..True), or None."""
    if not pred(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _first_true_near(lo: int, hi: int, pred, guess: int) -> int | None:
    """``_first_true``, searched from ``guess`` outwards (steps 1, 2, 4, ... until the change is bracketed, then
    halving): about 2 log2(|answer - guess|) calls of ``pred`` instead of log2(hi - lo). The same answer for a
    monotonic ``pred``, wherever the guess is."""
    if not pred(hi):
        return None
    g = min(max(guess, lo), hi)
    step = 1
    if pred(g):  # the answer is in [lo, g]: walk down until pred is false (or below lo)
        true = g
        while True:
            false = true - step
            if false < lo:
                false = lo - 1
                break
            if not pred(false):
                break
            true, step = false, step * 2
    else:  # in (g, hi]: walk up until pred is true
        false = g
        while True:
            true = false + step
            if true >= hi:
                true = hi
                break
            if pred(true):
                break
            false, step = true, step * 2
    while true - false > 1:  # pred(false) is false (or false < lo), pred(true) is true
        mid = (false + true) // 2
        if pred(mid):
            true = mid
        else:
            false = mid
    return true


#: below this every integer, and every product of a target and a replica count, is a float64 exactly: there the
#: proposal is monotonic in the measured value (division and multiplication by constants round monotonically, and
#: the tolerance band cannot reorder them), so a search from a guess finds what bisection from 0 does
_EXACT = 2 ** 53


def thresholds(spec: MetricSpec, min_replicas: int, max_replicas: int, down: float, up: float,
               replicas: Iterable[int] | None = None) -> list[Threshold]:
    """The threshold table of one metric for each replica count from min to max (min >= 1), or for the
    counts in ``replicas`` only (each within [max(min, 1), max]; a table of 2147483647 rows has no reader).
    Each bound is searched from where the tolerance puts it (``target x (1 + up)``, ``target x (1 - down)``):
    a few proposals per row (about 40 by bisection over targets too large for float64 to hold exactly)."""
    target, _ = metric_target(spec)
    rows = []
    counts = range(max(min_replicas, 1), max_replicas + 1) if replicas is None else replicas
    for r in counts:
        scale = r if spec.type in (OBJECT, EXTERNAL) and spec.target_type == AVERAGE_VALUE else 1

        def clamp(v: int, r=r) -> int:
            return min(max(proposal(spec, v, r, down, up), min_replicas), max_replicas)

        hi = int(target * scale * (1.0 + up) * 4) + 4
        top = int(target * scale) + 1
        if hi < _EXACT and target * scale < _EXACT:
            # up: past the tolerance band; not down: inside the band, or where the proposal's ceiling reaches r
            # (ratio above (r - 1) / r) when that comes first; at minReplicas never down
            up_at = _first_true_near(0, hi, lambda v, r=r: clamp(v) > r, int(target * scale * (1.0 + up)) + 1)
            lowest = 0.0 if r <= min_replicas else min(1.0 - down, (r - 1) / r)
            first_not_down = _first_true_near(0, top, lambda v, r=r: clamp(v) >= r, int(target * scale * lowest))
        else:
            up_at = _first_true(0, hi, lambda v, r=r: clamp(v) > r)
            first_not_down = _first_true(0, top, lambda v, r=r: clamp(v) >= r)
        down_at = None if first_not_down == 0 else (top if first_not_down is None else first_not_down - 1)
        rows.append(Threshold(
            r, up_at, clamp(up_at) if up_at is not None else None,
            down_at, clamp(down_at) if down_at is not None else None,
        ))
    return rows
