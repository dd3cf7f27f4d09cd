"""The work queue: delayed, de-duplicated keys, each processed by at most one worker at a time.

Semantics of client-go's delaying rate-limited workqueue, which upstream's HPA controller uses: a
key added while it is queued keeps the earlier due time; a key added while a worker holds it is
queued again when that worker calls ``done``. Failed syncs back off per key (``retry_base * 2**n``
up to ``retry_max`` seconds) and, over all keys, at most ``retry_qps`` per second (token bucket of
``retry_burst``), like client-go's DefaultControllerRateLimiter. Times are event-loop seconds.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections import deque
from itertools import islice
from typing import Callable, Iterator

#: how far ``WorkQueue.upcoming`` reads: this many keys (more when keys removed meanwhile are in the way)
UPCOMING_MAX = 64


class QueueClosed(Exception):
    """``get`` on a queue that was shut down."""


class WorkQueue:
    """Keys due at times; ``get`` waits for the earliest due key that no worker holds."""

    def __init__(self, retry_base: float = 1.0, retry_max: float = 300.0, retry_qps: float = 10.0,
                 retry_burst: int = 100, clock: Callable[[], float] | None = None):
        self._clock = clock or asyncio.get_running_loop().time
        self._heap: list[tuple[float, int, str]] = []  # keys not due yet (and due ones not moved yet)
        self._ready: deque[tuple[float, int, str]] = deque()  # due keys, in due order (moved from the heap)
        self._due: dict[str, float] = {}
        self._entry: dict[str, int] = {}  # key -> the sequence number of its one live heap (or ready) entry
        self._processing: set[str] = set()
        self._again: dict[str, float] = {}
        self._removed: set[str] = set()
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._closed = False
        self._failures: dict[str, int] = {}
        self._retry = (retry_base, retry_max, retry_qps, float(retry_burst))
        self._tokens = float(retry_burst)
        self._tokens_at = self._clock()
        self.last_due = 0.0  # due time of the key ``get`` returned last (the sync lag metric)

    def __len__(self) -> int:
        """Keys waiting (due or not), not counting those being processed."""
        return len(self._due)

    @property
    def processing(self) -> int:
        return len(self._processing)

    def add(self, key: str, delay: float = 0.0) -> None:
        """Make ``key`` due in ``delay`` seconds (an earlier due time already set wins)."""
        if self._closed:
            return
        self._removed.discard(key)
        due = self._clock() + max(0.0, delay)
        if key in self._processing:
            if due < self._again.get(key, float("inf")):
                self._again[key] = due
            return
        if self._due.get(key, float("inf")) <= due:
            return
        seq = next(self._seq)
        self._due[key], self._entry[key] = due, seq
        heapq.heappush(self._heap, (due, seq, key))
        self._arm(due)

    def remove(self, key: str) -> None:
        """Forget ``key`` (a deleted object): not queued again, even by its current worker's ``done``."""
        self._due.pop(key, None)
        self._entry.pop(key, None)
        self._again.pop(key, None)
        self._failures.pop(key, None)
        if key in self._processing:
            self._removed.add(key)

    def _arm(self, due: float) -> None:
        if due <= self._clock():
            self._wakeup.set()
        elif due < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            loop = asyncio.get_running_loop()
            self._timer_at = due
            self._timer = loop.call_later(due - self._clock(), self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        self._wakeup.set()

    def _promote(self, now: float) -> None:
        """Move the keys due at ``now`` from the heap to the ready line, in due order (each heap entry is popped
        once, as before there was a line: it only makes the order of due keys readable, ``upcoming``)."""
        heap, entry, ready = self._heap, self._entry, self._ready
        while heap and heap[0][0] <= now:
            item = heapq.heappop(heap)
            if entry.get(item[2]) == item[1]:  # else superseded by an earlier add, or removed
                ready.append(item)

    def _pop_due(self) -> str | None:
        self._promote(self._clock())
        ready, entry = self._ready, self._entry
        while ready:
            when, seq, key = ready.popleft()
            if entry.get(key) != seq:
                continue  # removed meanwhile (and maybe added again: then that entry is another)
            del self._due[key], entry[key]
            self._processing.add(key)
            self.last_due = when
            return key
        if self._heap:
            self._arm(self._heap[0][0])
        return None

    def upcoming(self) -> Iterator[str]:
        """The keys ``get`` would hand out now, in that order (the due keys no worker holds; at most
        ``UPCOMING_MAX``), read lazily: for reading ahead (``Controller._read_ahead``), which stops at the first key
        it needs. Not a promise (a key may be removed or taken meanwhile); do not change the queue while reading."""
        self._promote(self._clock())
        entry, left = self._entry, UPCOMING_MAX
        for _, seq, key in islice(self._ready, 4 * UPCOMING_MAX):
            if entry.get(key) == seq:
                yield key
                left -= 1
                if not left:
                    return

    async def get(self) -> str:
        """The next due key; the caller must call ``done(key)`` when finished. Raises QueueClosed."""
        while True:
            if self._closed:
                raise QueueClosed()
            key = self._pop_due()
            if key is not None:
                return key
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, key: str, delay: float | None = None) -> None:
        """Release ``key``; queue it again in ``delay`` seconds (None: only if re-added while processing)."""
        self._processing.discard(key)
        if key in self._removed:
            self._removed.discard(key)
            return
        again = self._again.pop(key, None)
        if again is not None:
            self.add(key, again - self._clock())
        if delay is not None:
            self.add(key, delay)

    def retry_delay(self, key: str) -> float:
        """Backoff before retrying a failed ``key``: max(per-key exponential, overall token bucket)."""
        base, cap, qps, burst = self._retry
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        per_key = min(base * (2 ** n), cap)
        now = self._clock()
        self._tokens = min(burst, self._tokens + (now - self._tokens_at) * qps)
        self._tokens_at = now
        self._tokens -= 1.0
        overall = 0.0 if self._tokens >= 0 else -self._tokens / qps
        return max(per_key, overall)

    def forget(self, key: str) -> None:
        """Reset ``key``'s failure count after a successful sync."""
        self._failures.pop(key, None)

    def shutdown(self) -> None:
        """Stop handing out keys: waiting and later ``get`` calls raise QueueClosed."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._wakeup.set()
