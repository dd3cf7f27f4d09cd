"""What a controller replica carries: syncs behind schedule, API requests per sync, shard size.

``pyhpa_sync_lag_seconds`` (histogram): from the time a key was due in the work queue to the start of its
sync — a replica that cannot keep up shows it here first. ``pyhpa_sync_api_requests`` (histogram): HTTP
requests to the API server made by one sync (Scale reads and writes, metrics APIs, status writes; a shared
namespace metrics list counts for the sync that asked first, one read ahead for the first sync that takes it), counted in the transport
(``pyhpa.controller.kube.transport``) for the sync running in the current asyncio context.
``pyhpa_shard_autoscalers`` and ``pyhpa_shard_members`` (gauges): the autoscalers this replica syncs and
the live replicas of its shard group (``--shards auto``; with ``--shards 1``: every autoscaler, 1 member).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from typing import Callable

from prometheus_client import CollectorRegistry, Gauge, Histogram

from ..kube.transport import SyncContext, current_sync, note_request, set_current_sync  # noqa: F401 (re-exported)

#: Lag buckets, seconds: 1 ms doubling to about 2 minutes.
LAG_BUCKETS = tuple(0.001 * 2**k for k in range(18))
REQUEST_BUCKETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20)


#: Python's cyclic garbage collector, tuned for a process that holds large caches (100,000 pods are millions of
#: objects) and allocates a little per sync: with the default thresholds (700, 10, 10) a full collection, which
#: walks every cached object, ran about every 1,500 syncs and took a fifth of the controller's CPU in the
#: benchmark; with these it runs every ~20 million allocations (none in the benchmark's two rounds).
GC_THRESHOLDS = (50_000, 20, 20)


def tune_gc() -> None:
    """Set ``GC_THRESHOLDS`` (``pyhpa run`` does at start; process-wide)."""
    gc.set_threshold(*GC_THRESHOLDS)


#: glibc's malloc keeps freed memory at the top of its heap up to a threshold that it raises by itself (up to
#: 32 MiB) once a large block is freed: after a start, whose list pages and first status writes are such blocks,
#: about 17 MB of free heap stayed resident at 10,000 autoscalers. Fixing the thresholds low (``mallopt``) gives
#: it back but costs every sync (the heap's top is given back and taken again: +10 % CPU per sync measured);
#: ``malloc_trim`` once the caches are listed and then every ``RELEASE_SECONDS`` gives it back at no such cost.
RELEASE_SECONDS = 60.0


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_memory() -> bool:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim(0)``; man 3 malloc_trim): done once the
    caches are listed, whose pages were the largest buffers of the process, and then every ``RELEASE_SECONDS``.
    False where there is no ``malloc_trim`` (not glibc): nothing is done."""
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False


class SyncLoad:
    """The metrics above, on ``registry``; ``begin``/``end`` bracket each sync in a worker."""

    def __init__(self, registry: CollectorRegistry):
        self.lag = Histogram("pyhpa_sync_lag_seconds", "Seconds from the time an autoscaler's sync was due to "
                             "its start (syncs behind schedule).", buckets=LAG_BUCKETS, registry=registry)
        self.requests = Histogram("pyhpa_sync_api_requests", "API server requests made by one sync.",
                                  buckets=REQUEST_BUCKETS, registry=registry)
        self.shard_size = Gauge("pyhpa_shard_autoscalers", "Autoscalers in this replica's share.",
                                registry=registry)
        self.members = Gauge("pyhpa_shard_members", "Live replicas of this replica's shard group.",
                             registry=registry)
        self.members.set(1)
        self.syncs = 0
        self.requests_total = 0
        self.lag_total = 0.0

    def whole(self, count: Callable[[], int]) -> None:
        """Unsharded: the shard is every autoscaler (``count()``)."""
        self.shard_size.set_function(count)

    def shard(self, size: Callable[[], int], members: Callable[[], int]) -> None:
        """Sharded: ``size()`` autoscalers of ``members()`` replicas."""
        self.shard_size.set_function(size)
        self.members.set_function(members)

    def begin(self, key: str, lag: float) -> SyncContext:
        """A worker starts syncing ``key``, ``lag`` seconds after it was due."""
        lag = max(0.0, lag)
        self.lag.observe(lag)
        self.lag_total += lag
        sync = SyncContext(key)
        set_current_sync(sync)
        return sync

    def end(self, sync: SyncContext) -> None:
        self.requests.observe(sync.requests)
        self.syncs += 1
        self.requests_total += sync.requests
        set_current_sync(None)


__all__ = ["GC_THRESHOLDS", "RELEASE_SECONDS", "SyncContext", "SyncLoad", "current_sync", "note_request",
           "release_memory", "tune_gc"]
