"""Events per second of two discrete-event loops, for the choice of ``pyhpa.simulate.clock`` (issue 55): SimPy's
``Environment`` with a process per actor (each waiting a ``timeout``), against the standard library's ``heapq`` with
(time, order, sequence, handler) entries, as the clock has them. 200 actors with an event every 15 s each, as the
HPA syncs of a 200-workload fleet; a few rounds, both in this process (compare within one run: timings are noisy).

    python benchmarks/clock.py          # needs SimPy: the test extra has it (pip install -e '.[test]')

Prints ``simpy_events_per_second=N heapq_events_per_second=N heapq_over_simpy=R`` per round.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import time

ACTORS, STEPS, ROUNDS = 200, 2000, 3


def simpy_events_per_second() -> float:
    import simpy

    env = simpy.Environment()
    count = [0]

    def actor(env):
        while True:
            yield env.timeout(15.0)
            count[0] += 1

    for _ in range(ACTORS):
        env.process(actor(env))
    t0 = time.perf_counter()
    env.run(until=15.0 * STEPS + 1)
    return count[0] / (time.perf_counter() - t0)


class _Actor:
    __slots__ = ("n",)

    def __init__(self):
        self.n = 0

    def on_clock(self, t: float, _payload) -> float:
        self.n += 1
        return t + 15.0


def heapq_events_per_second() -> float:
    heap: list = []
    seq = itertools.count()
    for a in (_Actor() for _ in range(ACTORS)):
        heapq.heappush(heap, (15.0, 5, next(seq), a.on_clock, None))
    end = 15.0 * STEPS + 1
    count = 0
    t0 = time.perf_counter()
    while heap and heap[0][0] < end:
        t, order, _, handler, payload = heapq.heappop(heap)
        heapq.heappush(heap, (handler(t, payload), order, next(seq), handler, None))
        count += 1
    return count / (time.perf_counter() - t0)


def main() -> None:
    try:
        import simpy  # noqa: F401
    except ImportError:
        sys.exit("benchmarks/clock.py needs SimPy: pip install -e '.[test]' (or pip install simpy)")
    for _ in range(ROUNDS):
        s, h = simpy_events_per_second(), heapq_events_per_second()
        print(f"simpy_events_per_second={s:.0f} heapq_events_per_second={h:.0f} heapq_over_simpy={h / s:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
