"""The autoscaler's status: built from the decision core's ``Decision.status``, written only when it changed.

Upstream's updateStatusIfNeeded compares old and new status and skips the write when they are
equal; here the comparison is on the JSON form the API server stores (times as RFC 3339 seconds,
metav1.Time), and a ``409 Conflict`` (the object changed since the informer saw it) is retried with
the fresh resourceVersion unless the spec changed meanwhile (then the sync is redone).
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from functools import lru_cache

from ...adapters.errors import InputError
from ...adapters.parse import timestamp
from ...adapters.saturation import saturation_status
from typing import Protocol

from ...core import (HPA, Condition, Decision, Event, HPAStatus, HPAWarning, Memory, MetricHealth, PauseStatus,
                     failure_caps, set_condition, with_status)
from ..kube.api import ApiFailure
from ..cache.autoscaler import API_VERSION, KIND, MEMORY_KEY, Autoscaler, packed
from .writer import Writer


def time_text(ts: float) -> str:
    """Epoch seconds as metav1.Time text (RFC 3339, whole seconds, UTC)."""
    return _second_text(math.floor(ts))


@lru_cache(maxsize=4096)
def _second_text(second: int) -> str:
    dt = datetime.fromtimestamp(second, tz=timezone.utc)
    return f"{dt.year:04d}-" + dt.strftime("%m-%dT%H:%M:%SZ")  # %Y is not padded below year 1000 (glibc)


def condition_dict(c: Condition) -> dict:
    """An autoscaling/v2 HorizontalPodAutoscalerCondition."""
    out = {"type": c.type, "status": c.status}
    if c.last_transition_time is not None:
        out["lastTransitionTime"] = time_text(c.last_transition_time)
    if c.reason:
        out["reason"] = c.reason
    if c.message:
        out["message"] = c.message
    return out


def status_from_decision(decision: Decision, generation: int, hpa: HPA | None = None) -> dict:
    """The autoscaling/v2 status of a sync (``observedGeneration`` is the spec generation synced),
    with the HorizontalAutoscaler's ``schedules`` section when the spec has windows, ``metricHealth`` when it
    has a fallback (with ``hpa``, each ``numberOfFailures`` capped by ``failure_caps``), ``saturation``
    (``pyhpa.adapters.saturation.saturation_status``) when it has ``spec.saturation`` and ``pause``
    (``pause_status``) while a pause annotation holds it."""
    st: HPAStatus = decision.status
    out = {"observedGeneration": generation, "desiredReplicas": st.desired_replicas}
    if st.current_replicas:
        out["currentReplicas"] = st.current_replicas
    if st.current_metrics:
        out["currentMetrics"] = list(st.current_metrics)
    if st.conditions:
        out["conditions"] = [condition_dict(c) for c in st.conditions]
    if st.last_scale_time is not None:
        out["lastScaleTime"] = time_text(st.last_scale_time)
    if st.schedules is not None:
        section: dict = {"active": list(st.schedules.active)}
        if st.schedules.next_change is not None:
            section["nextChangeTime"] = time_text(st.schedules.next_change)
        if st.schedules.expired:
            section["expired"] = list(st.schedules.expired)
        out["schedules"] = section
    if st.metric_health is not None:
        caps = failure_caps(hpa) if any(h.number_of_failures > 1 for h in st.metric_health) else {}
        out["metricHealth"] = [metric_health_dict(h, caps.get(h.metric)) for h in st.metric_health]
    if st.saturation is not None:
        out["saturation"] = saturation_status(st.saturation)
    if st.pause is not None:
        out["pause"] = pause_status(st.pause)
    return out


def pause_status(p: PauseStatus) -> dict:
    """``status.pause`` while paused: ``reason`` (the Paused condition's), ``since`` (RFC 3339: when it was
    paused), ``replicas`` held (paused-replicas or the frozen count; absent when one direction is blocked)."""
    out: dict = {"reason": p.reason}
    if p.since is not None:
        out["since"] = time_text(p.since)
    if p.replicas is not None:
        out["replicas"] = p.replicas
    return out


def metric_health_dict(h: MetricHealth, cap: int | None = None) -> dict:
    """One ``status.metricHealth`` entry: ``metric``, ``numberOfFailures`` (at most ``cap``), ``status``
    (Happy/Failing), and while failing ``firstFailureTime``, and in fallback ``fallbackSince`` and
    ``fallbackReplicas``."""
    n = h.number_of_failures if cap is None else min(h.number_of_failures, cap)
    out: dict = {"metric": h.metric, "numberOfFailures": n, "status": h.status}
    if h.first_failure_time is not None:
        out["firstFailureTime"] = time_text(h.first_failure_time)
    if h.fallback_since is not None:
        out["fallbackSince"] = time_text(h.fallback_since)
    if h.fallback_replicas is not None:
        out["fallbackReplicas"] = h.fallback_replicas
    return out


def conditions_of(status: dict) -> list[Condition]:
    """The stored conditions as the core's Conditions (malformed times and malformed entries are dropped)."""
    out = []
    conds = status.get("conditions")
    for c in conds if isinstance(conds, list) else []:
        if not isinstance(c, dict):
            continue
        try:
            t = timestamp(c["lastTransitionTime"]) if c.get("lastTransitionTime") else None
        except InputError:
            t = None
        out.append(Condition(c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", ""), t))
    return out


def status_with_condition(a: Autoscaler, ctype: str, cstatus: str, reason: str, message: str, now: float) -> dict:
    """The stored status with one condition set (upstream: setCondition + updateStatusIfNeeded on failures)."""
    conds = conditions_of(a.status)
    set_condition(conds, ctype, cstatus, reason, message, now)
    out = {k: v for k, v in a.status.items() if k != "conditions"}
    out.setdefault("desiredReplicas", 0)
    out["observedGeneration"] = a.generation
    out["conditions"] = [condition_dict(c) for c in conds]
    return out


# ----- Warning events said, remembered in status.warnings -----------------------------------------------------
#: ``status.warnings``: the Warning events sent whose cause lasts (deploy/crd.yaml describes it)
WARNINGS_KEY = "warnings"


def warning_entry(event: Event, check: HPAWarning | None = None) -> dict:
    """The ``status.warnings`` entry of a Warning event (of a check's warning: with its metric and container)."""
    out: dict = {"reason": event.reason, "message": event.message[:1024]}
    if check is not None:
        out["metric"] = check.index
        if check.container:
            out["container"] = check.container
    return out


def _cause(entry: dict) -> tuple:
    """What makes two entries the same cause: a check's reason, metric and container (its figures move); an
    event's reason and message."""
    if "metric" in entry:
        return entry.get("reason"), entry.get("metric"), entry.get("container", "")
    return entry.get("reason"), entry.get("message")


def said_before(status: dict) -> set[tuple]:
    """The causes of the Warning events remembered in a stored ``status`` (malformed entries are ignored)."""
    entries = status.get(WARNINGS_KEY)
    if not isinstance(entries, list):
        return set()
    return {_cause(e) for e in entries if isinstance(e, dict)}


def remember_warnings(status: dict, stored: dict, entries: list[dict]) -> list[dict]:
    """Set ``status.warnings`` to this sync's ``entries`` (a cause already stored keeps its stored entry, as it
    was said; none: no key) and return the entries whose cause was not said before (to send)."""
    before = stored.get(WARNINGS_KEY)
    kept = {_cause(e): e for e in before if isinstance(e, dict)} if isinstance(before, list) else {}
    out, new = [], []
    for e in entries:
        cause = _cause(e)
        if cause in kept:
            out.append(kept[cause])
        elif all(_cause(o) != cause for o in out):
            out.append(e)
            new.append(e)
    if out:
        status[WARNINGS_KEY] = out
    else:
        status.pop(WARNINGS_KEY, None)
    return new


class StaleSpec(Exception):
    """The spec changed while syncing (status write conflicted): sync again."""


class MemorySections(Protocol):
    """What a status write asks of the memory store (``pyhpa.controller.sync.memory.MemoryStore``)."""

    def status_section(self, a: Autoscaler, memory: Memory | None) -> dict | None:
        """What to write into ``status.pyhpa`` of ``a`` with ``memory``."""


class StatusWriter:
    """Writes ``status`` of an autoscaler through the Writer when it differs from the stored one."""

    def __init__(self, writer: Writer, memory: MemorySections, retries: int = 3):
        self._writer = writer
        self._memory = memory
        self._retries = retries
        self.writes = 0
        self.conflicts = 0

    async def write(self, a: Autoscaler, status: dict, memory: Memory | None = None,
                    decision: Decision | None = None, stored: dict | None = None) -> bool:
        """PUT ``/status`` if it changed; True when written. Raises ApiFailure, StaleSpec or WritesDisabled.

        ``status.pyhpa`` is what the memory store says (``MemoryStore.status_section``: for ``memory`` None,
        a write without a decision, the status-backed store keeps the stored section). ``stored``: ``a.status``
        when the caller unpacked it already."""
        section = self._memory.status_section(a, memory)
        if a.same_status(status, section, stored=stored):
            return False
        body = {"apiVersion": API_VERSION, "kind": KIND,
                "metadata": {"name": a.name, "namespace": a.namespace, "resourceVersion": a.resource_version},
                "status": status if section is None else dict(status, **{MEMORY_KEY: section})}
        written = (packed(status), None if section is None else packed(section))
        a.writing = written
        try:
            for attempt in range(self._retries):
                try:
                    answer = await self._writer.replace_status(a.namespace, a.name, body)
                    break
                except ApiFailure as err:
                    if err.code != 409 or attempt == self._retries - 1:
                        raise
                    self.conflicts += 1
                    body["metadata"]["resourceVersion"] = await self._fresh_version(a)
        finally:
            a.writing = None
        self.writes += 1
        _remember(a, answer, written, decision)
        return True

    async def _fresh_version(self, a: Autoscaler) -> str:
        fresh = await self._writer.get_autoscaler(a.namespace, a.name)
        meta = fresh.get("metadata") or {}
        if int(meta.get("generation") or 0) != a.generation:
            raise StaleSpec(f"{a.key}: spec changed (generation {meta.get('generation')}) while syncing")
        return meta.get("resourceVersion", "")


def _remember(a: Autoscaler, answer: dict, written: tuple[bytes, bytes | None], decision: Decision | None) -> None:
    """Keep what was written (``written``: the status and memory, packed) in the cached Autoscaler until the
    informer delivers it (the next sync must compare against, and carry condition times from, the status just
    written)."""
    a.resource_version = (answer.get("metadata") or {}).get("resourceVersion", a.resource_version)
    a.status_packed, a.memory_packed = written
    if decision is not None and a.hpa is not None:
        a.hpa = with_status(a.hpa, decision.status)
