"""Warnings where an HPA cannot work as written (issue 13): a pure function over the HPA, its pods and
the metrics' samples. ``explain``, ``thresholds`` and the controller only print or emit what it finds.

- ``ScaleStarvation``: a Utilization target the pods cannot reach. A container's CPU is throttled at
  its limit (memory above the limit is OOM-killed), so a pod's utilization never exceeds
  ``limit / request``; when that stays at or below the scale-up threshold (target x (1 + scale-up
  tolerance)), the HPA never scales up on the metric. Example: request 100m, limit 150m, target 200 %:
  the value at the target (200m) is above the limit, utilization stops at 150 %.
- ``PodSumHidesContainer``: a Resource (pod-sum) Utilization metric on pods with several containers
  where one container uses more than its own request (more than the target, for targets above 100 %)
  while the pod as a whole is below the target: the other containers' idle requests hide it; a
  ContainerResource metric on that container would scale on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .metrics import describe
from .model import (
    CONTAINER_RESOURCE,
    HPA,
    LIMIT,
    RESOURCE,
    UTILIZATION,
    ControllerConfig,
    MetricSamples,
    MetricSpec,
    Pod,
    Scale,
)
from .quantity import format_milli
from .reconcile import tolerances
from .selector import SelectorError, matches, parse_selector

__all__ = ["SCALE_STARVATION", "POD_SUM_HIDES_CONTAINER", "HPAWarning", "check_hpa"]

SCALE_STARVATION = "ScaleStarvation"
POD_SUM_HIDES_CONTAINER = "PodSumHidesContainer"


@dataclass(slots=True, frozen=True, kw_only=True)
class HPAWarning:
    """One problem: ``reason`` (``ScaleStarvation``, ``PodSumHidesContainer``), the metric as upstream names
    it, ``index`` in ``spec.metrics``, one-line ``message``, and the pods (and container) it was seen on."""

    reason: str
    metric: str
    index: int
    message: str
    pods: tuple[str, ...] = ()
    container: str = ""


def check_hpa(hpa: HPA, scale: Scale | None, pods: Sequence[Pod], samples: Sequence[MetricSamples],
              config: ControllerConfig) -> list[HPAWarning]:
    """Every warning for ``hpa``: its pods are those of ``pods`` that ``scale.selector`` picks (as ``decide``;
    ``scale`` None: all of ``pods``, deleted and Failed ones left out); ``samples[i]`` answers
    ``hpa.metrics[i]`` (may be empty: then only what needs no usage is checked). Pure; never raises for
    odd inputs (a bad selector or a pod without requests gives no warning)."""
    if scale is None:
        selected = [p for p in pods if not p.deleted and p.phase != "Failed"]
    else:
        selected = _selected(scale.selector, pods)
    if not selected:
        return []
    _, up = tolerances(hpa, config)
    out: list[HPAWarning] = []
    for i, spec in enumerate(hpa.metrics):
        if spec.type not in (RESOURCE, CONTAINER_RESOURCE) or spec.target_utilization is None \
                or spec.target_average_milli is not None or spec.target_type not in (UTILIZATION, ""):
            continue
        warning = _starvation(spec, i, selected, up)
        if warning is not None:
            out.append(warning)
        if spec.type == RESOURCE and i < len(samples):
            warning = _hidden_container(spec, i, selected, samples[i])
            if warning is not None:
                out.append(warning)
    return out


def _selected(selector: str, pods: Sequence[Pod]) -> list[Pod]:
    try:
        reqs = parse_selector(selector) if selector else None
    except SelectorError:
        return []
    if reqs is None:
        return []
    live = [p for p in pods if not p.deleted and p.phase != "Failed"]
    return [p for p in live if matches(reqs, p.labels)] if reqs else live


def _amount(pod: Pod, resource: str, container: str, limits: bool) -> int | None:
    """The pod's positive request (or limit) of ``resource`` (``container`` empty: its denominator), else None:
    ``pod_amount``'s value where it has one (where it has none it raises or finds 0: no warning can come of it),
    read straight from the pod's amounts (a pod without limits raises no error per check)."""
    value = (pod.limits if limits else pod.requests).get((resource, container))
    return value if value is not None and value > 0 else None


def _starvation(spec: MetricSpec, index: int, pods: list[Pod], up: float) -> HPAWarning | None:
    container = spec.container if spec.type == CONTAINER_RESOURCE else ""
    by_limit = spec.utilization_basis == LIMIT
    basis = "limit" if by_limit else "request"
    target = spec.target_utilization
    starving: list[tuple[str, int, int]] = []
    for pod in pods:
        cap = _amount(pod, spec.name, container, True)
        denominator = _amount(pod, spec.name, container, by_limit) if cap is not None else None
        if denominator is None or cap is None:
            continue  # no limit: nothing caps the usage
        highest = cap * 100 // denominator  # utilization at the limit, truncated as upstream
        if highest / target <= 1.0 + up:
            starving.append((pod.name, denominator, cap))
    if not starving:
        return None
    name, denominator, cap = starving[0]
    highest = cap * 100 // denominator
    at_target = denominator * target // 100
    where = f"container {container} of pod {name}" if container else f"pod {name}"
    more = f" (and {len(starving) - 1} more pods)" if len(starving) > 1 else ""
    cause = ("CPU is throttled at the limit" if spec.name == "cpu"
             else f"{spec.name} cannot grow past the limit (the container is killed)")
    if at_target > cap:
        why = f"the target {target}% of the {basis} ({format_milli(at_target)}) is above the limit {format_milli(cap)}"
    else:
        threshold = target * (1.0 + up)
        why = (f"the scale-up threshold {threshold:g}% (target {target}% plus the {up:g} tolerance) is above the "
               f"{highest}% the limit {format_milli(cap)} allows")
    message = (f"{describe(spec)}: on {where}{more} {why}; {cause}, so utilization stays at or below "
               f"{highest}% and the HPA never scales up on this metric (scale starvation): lower the target "
               f"or raise the limit")
    return HPAWarning(reason=SCALE_STARVATION, metric=describe(spec), index=index, message=message,
                      pods=tuple(p for p, _, _ in starving), container=container)


def _hidden_container(spec: MetricSpec, index: int, pods: list[Pod], samples: MetricSamples) -> HPAWarning | None:
    if samples.error is not None or not samples.containers or not samples.pods:
        return None
    by_limit = spec.utilization_basis == LIMIT
    basis = "limit" if by_limit else "request"
    target = spec.target_utilization
    hot_level = max(100, target)
    found: list[tuple[str, str, int, int]] = []
    for pod in pods:
        usage = samples.containers.get(pod.name)
        sample = samples.pods.get(pod.name)
        if not usage or len(usage) < 2 or sample is None:
            continue
        total = _amount(pod, spec.name, "", by_limit)
        if total is None:
            continue
        pod_util = sample.value * 100 // total
        if pod_util >= target:
            continue
        for cname, value in usage.items():
            own = _amount(pod, spec.name, cname, by_limit)
            if own is not None and value * 100 // own > hot_level:
                found.append((pod.name, cname, value * 100 // own, pod_util))
                break
    if not found:
        return None
    pod_name, cname, c_util, pod_util = found[0]
    more = f" (and {len(found) - 1} more pods)" if len(found) > 1 else ""
    message = (f"{describe(spec)}: in pod {pod_name}{more} container {cname} uses {c_util}% of its own {basis} while "
               f"the pod as a whole is at {pod_util}% (target {target}%): the other containers' idle {basis}s hide it "
               f"from this pod-sum metric; a ContainerResource metric on container {cname} would scale on it")
    return HPAWarning(reason=POD_SUM_HIDES_CONTAINER, metric=describe(spec), index=index, message=message,
                      pods=tuple(p for p, _, _, _ in found), container=cname)
