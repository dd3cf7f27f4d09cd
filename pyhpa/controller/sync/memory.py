"""The controller memory of each autoscaler (``pyhpa.core.Memory``) behind a small interface.

Upstream keeps recommendations and scale events in the controller's process, so a restarted or new
leader starts with none: it seeds the recommendations with the current replica count *at its own start*
(the stabilization window starts over) and forgets the scale events (the scaling policies' budget is
spent again). ``InProcessMemory`` does the same. ``StatusMemory`` (the default of ``pyhpa run``) keeps
the in-process memory as the working copy and also persists, in the object's ``status.pyhpa`` (snapshot
``history`` shape, written with the normal status write and only when the status changes), the part of
the memory that can still change a decision; a new leader loads it from the informer's cached object.

What is persisted (``persisted_memory``: the decision core's ``relevant_memory``, so the rule lives where
the windows are applied), and why it is decision-equivalent:

* recommendations: the newest one (the *live* value: the one the leader repeats every sync) plus the
  older ones that are still inside a stabilization window and not *dominated*. A recommendation is
  dominated for the scale-down window (where the highest recommendation counts) when a newer one is at
  least as high, and for the scale-up window (the lowest counts) when a newer one is at least as low:
  the newer one stays in every window at least as long, so dropping the older one changes no maximum
  and no minimum, at any later time. Only the live value's timestamp moves every sync; it is written
  with the time it was first persisted and, on load, taken as recommended *until the new leader's
  start* (what upstream assumes of the current replica count, applied to the last recommendation). The
  older recommendations keep their exact timestamps, so a new leader ends a stabilization window
  exactly when the old leader would have.
* scale events (``scaleUpEvents``/``scaleDownEvents``, kept by the core only with ``spec.behavior``):
  those newer than the longest scaling-policy period of either direction (a policy's budget counts the
  events of both directions). They only change on a rescale, which changes the status anyway.
* metric failures (``metricFailures``, kept by the core only for an autoscaler with a fallback): every
  failing metric's consecutive failed syncs (counted up to one past its ``failureThreshold``: from there on
  the fallback applies and more failures change nothing: the core's ``capped_failures``), first failure time and
  fallback start, exactly (a metric absent is healthy). So they change only while a metric's failures can
  still change a decision, when ``status.metricHealth`` changes anyway: a metric that stays down writes no
  status.
* aging alone never causes a write: the stored section is rewritten only when it differs from the new
  one after both dropped what has aged out of the windows and periods by now.

So a steady autoscaler does not write its status every sync, and a new leader decides as the old one
would have, except that the last recommendation holds until the takeover (longer, never shorter).
"""

from __future__ import annotations

import logging
import time
from typing import Callable, Protocol

from ...adapters.errors import InputError
from ...adapters.snapshot import memory_from_dict, memory_to_dict
from ...core import HPA, ControllerConfig, Memory, capped_failures, relevant_memory
from ..cache.autoscaler import Autoscaler

log = logging.getLogger("pyhpa.controller.memory")

#: A restored live recommendation is stamped this many seconds before the sync that loads it, so the sync's
#: own recommendation (stamped at ``now``) is unambiguously the newer one.
RESTORED_BEFORE = 0.001


class MemoryStore(Protocol):
    """Where the memory of each autoscaler lives between syncs."""

    def load(self, a: Autoscaler, now: float | None = None) -> Memory:
        """The memory of ``a`` (``Memory()`` when there is none yet) for a sync at epoch ``now``."""

    def save(self, a: Autoscaler, memory: Memory) -> None:
        """Keep ``memory`` after a sync of ``a``."""

    def forget(self, key: str) -> None:
        """``key`` was deleted."""

    def status_section(self, a: Autoscaler, memory: Memory | None) -> dict | None:
        """What to write into ``status.pyhpa`` of ``a`` with ``memory`` (None: a status write without a
        decision, e.g. FailedGetScale); returning ``a.memory_status`` keeps the stored section."""


class InProcessMemory:
    """Memory in a dict keyed by ``namespace/name`` (upstream's behaviour: lost on restart)."""

    def __init__(self) -> None:
        self._by_key: dict[str, Memory] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def load(self, a: Autoscaler, now: float | None = None) -> Memory:
        return self._by_key.get(a.key) or Memory()

    def save(self, a: Autoscaler, memory: Memory) -> None:
        self._by_key[a.key] = memory

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)

    def status_section(self, a: Autoscaler, memory: Memory | None) -> dict | None:
        return None


def memory_to_status(memory: Memory) -> dict:
    """``status.pyhpa`` of a Memory (the snapshot ``history`` format of tests/data/conformance/FORMAT.md)."""
    return memory_to_dict(memory)


def memory_from_status(section: dict | None) -> Memory:
    """The Memory kept in ``status.pyhpa`` (None: no memory yet); raises InputError when malformed."""
    return memory_from_dict(section)


# ----- what is worth persisting --------------------------------------------------------------------------------
def persisted_memory(memory: Memory, hpa: HPA, config: ControllerConfig, now: float,
                     previous: Memory | None = None) -> Memory:
    """The part of ``memory`` kept in ``status.pyhpa`` at ``now``: exactly what the decision core says can
    still matter (``pyhpa.core.relevant_memory``, the windows and periods ``normalize`` applies), so the
    persisted memory cannot drift from the decision.

    ``previous`` is the memory stored so far: when its live recommendation has the same value, its
    timestamp is kept (``live_since``), so a steady autoscaler persists the same section every sync.
    """
    since = None
    recs = memory.recommendations
    if recs and previous is not None and previous.recommendations:
        live = sorted(recs, key=lambda r: r[0])[-1][1]
        if previous.recommendations[-1][1] == live:
            since = previous.recommendations[-1][0]
    return relevant_memory(memory, hpa, config, now, since)


def restored_memory(stored: Memory, now: float) -> Memory:
    """The memory a new leader starts from at ``now``: the stored one, with the live (last)
    recommendation taken as repeated until ``now`` (upstream seeds the current count at ``now``)."""
    recs = stored.recommendations
    if recs:
        ts, value = recs[-1]
        recs = recs[:-1] + [(max(ts, now), value)]
    return Memory(recs, list(stored.scale_up_events), list(stored.scale_down_events), dict(stored.metric_failures))


class StatusMemory:
    """In-process working copy, persisted in ``status.pyhpa`` (what can change a decision) and loaded from
    the cached object by a replica that has no working copy (a new leader). ``clock``: epoch seconds,
    the same clock as the decisions'."""

    def __init__(self, clock: Callable[[], float] = time.time):
        self._clock = clock
        self._by_key: dict[str, tuple[str, Memory]] = {}
        self.restored = 0

    def __len__(self) -> int:
        return len(self._by_key)

    def load(self, a: Autoscaler, now: float | None = None) -> Memory:
        """The working copy of ``a``; else what its status holds, the live recommendation held until ``now``
        (the sync's time; default the clock's)."""
        entry = self._by_key.get(a.key)
        if entry is not None and entry[0] == a.uid:
            return entry[1]
        stored = _parse(a)
        if stored is None:
            return Memory()
        self.restored += 1
        now = self._clock() if now is None else now
        return restored_memory(stored, now - RESTORED_BEFORE)

    def save(self, a: Autoscaler, memory: Memory) -> None:
        self._by_key[a.key] = (a.uid, memory)

    def forget(self, key: str) -> None:
        self._by_key.pop(key, None)

    def status_section(self, a: Autoscaler, memory: Memory | None) -> dict | None:
        """The section to write: the stored one when nothing that can change a decision differs.

        A steady sync persists exactly the stored section (its live recommendation keeps the stored time):
        that is checked on the stored section's last recommendation alone, without reading the whole section
        back into a Memory; only a section that differs is compared with the stored one after both dropped
        what has aged out (aging alone never writes)."""
        stored = a.memory_status
        if memory is None or a.hpa is None:
            return stored
        now = self._clock()
        live = _stored_live(stored)
        if live is not None:
            section = memory_to_status(capped_failures(persisted_memory(memory, a.hpa, a.config, now, live), a.hpa))
            if section == stored:
                return stored
        previous = _parse(a)
        section = memory_to_status(capped_failures(persisted_memory(memory, a.hpa, a.config, now, previous), a.hpa))
        if previous is not None and memory_to_status(capped_failures(
                persisted_memory(previous, a.hpa, a.config, now, previous), a.hpa)) == section:
            return stored
        return section


def _stored_live(stored: dict | None) -> Memory | None:
    """A Memory of the stored section's last recommendation only (what ``persisted_memory`` reads of the stored
    memory); None when there is none or it is malformed."""
    recs = stored.get("recommendations") if isinstance(stored, dict) else None
    if not isinstance(recs, list) or not recs:
        return None
    try:
        return memory_from_status({"recommendations": recs[-1:]})
    except InputError:
        return None


def _parse(a: Autoscaler) -> Memory | None:
    """The memory stored in ``a``'s status (None when absent or malformed: then it is rewritten)."""
    if a.memory_status is None:
        return None
    try:
        return memory_from_status(a.memory_status)
    except InputError as err:
        log.warning("%s: ignoring malformed status.pyhpa: %s", a.key, err)
        return None
