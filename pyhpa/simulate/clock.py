"""One clock for every simulation: a discrete-event loop that actors share.

An actor puts its next event on the clock (``at``: a time, an order among the events of one instant, a handler and
its payload); the clock runs the earliest next, and at one instant the lower order first, then the first put. Every
simulation runs on one: ``pyhpa simulate`` is one workload's actor on it (``pyhpa.simulate.cluster.Cluster``: its
load, metrics pipeline and HPA sync loop), a fleet (``pyhpa.fleet.engine``) adds kube-scheduler, the nodes, the
node autoscaler and the timeline's sampler, each an actor on the same clock.

A workload is woken at its next event (``wake``: one entry on the clock however often that time moves; an entry
whose time is no longer the actor's is passed over) and runs everything it has at that instant, in its own order
(pod transitions, the trace row, the scrape, the sync), integrating its pods' CPU and served requests from its last
instant.

The loop is the standard library's ``heapq``. SimPy (4.1, a process per actor) was measured for it
(``benchmarks/clock.py``, 2026-12-01): it ran half as many events a second here (0.64 to 0.74 million against 1.3 to
1.5 million, and 2.7 times fewer on a busier machine), and in SimPy moving an event already waiting (a workload's
next event moves whenever one of its pods is bound) takes an ``Interrupt`` of its process.

Time is in epoch seconds.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Callable, Protocol

#: the order of the events of one instant (lower first): a fleet's nodes turning Ready, scheduling attempts, retries
#: of unschedulable pods, the node autoscaler's loop, the timeline's sample, then the workloads' own events
READY, ATTEMPT, RETRY, AUTOSCALER, SAMPLE, WORKLOAD = range(6)


class Wakeable(Protocol):
    """An actor the clock wakes at its next event: ``next_event()`` (epoch s), ``queued`` (the time of its entry on
    the clock; the clock's to keep) and ``on_clock(t, payload)`` (its events at ``t``)."""

    queued: float

    def next_event(self) -> float: ...

    def on_clock(self, t: float, payload: Any) -> None: ...


class Clock:
    """The event loop: ``at`` puts an event on it, ``wake`` an actor's next event, ``run`` runs them in order until
    ``end`` (epoch s; an event at ``end`` or later is not run). ``now`` is the time of the event running."""

    __slots__ = ("heap", "seq", "now", "end")

    def __init__(self, start: float, end: float):
        self.heap: list = []
        self.seq = itertools.count()
        self.now = start
        self.end = end

    def at(self, t: float, order: int, handler: Callable[[float, Any], None], payload: Any = None) -> None:
        """Run ``handler(t, payload)`` at ``t``: after the events of earlier times, of lower ``order`` at ``t``, and
        of the same order put before it."""
        heapq.heappush(self.heap, (t, order, next(self.seq), handler, payload))

    def wake(self, actor: Wakeable) -> None:
        """Wake ``actor`` at its ``next_event()`` (a new entry only when that time moved: the old one is passed over
        by the actor, whose ``queued`` no longer matches it)."""
        t = actor.next_event()
        if t != actor.queued:
            actor.queued = t
            heapq.heappush(self.heap, (t, WORKLOAD, next(self.seq), actor.on_clock, None))

    def stop_at(self, t: float) -> None:
        """End the run at ``t``: nothing at ``t`` or later runs."""
        self.end = t

    def run(self, progress: Callable[[float], None] | None = None, every: float = math.inf) -> None:
        """Run every event before ``end``, earliest first; ``progress(now)`` after an event whenever ``every``
        simulated seconds passed since the last call."""
        heap, pop = self.heap, heapq.heappop
        shown = self.now
        while heap and heap[0][0] < self.end:
            t, _, _, handler, payload = pop(heap)
            self.now = t
            handler(t, payload)
            if progress is not None and t - shown >= every:
                shown = t
                progress(t)
        self.now = self.end
