"""Independent tasks on a Dask cluster (``distributed``, the ``tune`` extra), or one after another in this process:
``pyhpa fleet tune``'s workloads, and ``benchmarks/fleet.py --headline``'s variants.

A local cluster by default (Dask's ``LocalCluster``: ``processes`` worker processes of one thread each, on
127.0.0.1, no dashboard), or a cluster of your own at ``scheduler`` (``tcp://host:port``, whose workers can import
what the tasks need). A task that fails, or a scheduler that cannot be reached, is one line (InputError on the flag
``field``).
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from ..adapters.errors import InputError

T = TypeVar("T")
R = TypeVar("R")


#: the address schemes of Dask's comms (``distributed.comm``) a scheduler is reached by
SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def check_scheduler(address: str, field: str = "--scheduler") -> str:
    """A Dask scheduler's address as Dask takes it: ``SCHEME://HOST:PORT`` (``tcp://10.0.0.5:8786``); InputError
    naming ``field`` otherwise, before anything runs (Dask's own error is a traceback, after the tuning began)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:
        port, parts = None, None
    if parts is None or parts.scheme not in SCHEMES or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise InputError(f"want a Dask scheduler's address, {'|'.join(SCHEMES)}://HOST:PORT (e.g. tcp://10.0.0.5:8786), "
                         f"got {address!r}", field=field)
    return address


def run_tasks(fn: Callable[[T], R], items: Sequence[T], *, scheduler: str | None, processes: int, serial: bool,
              progress: Callable[[int, int], None] | None = None, what: str = "a task",
              field: str = "--scheduler") -> list[R]:
    """``fn`` of every item, in the items' order: in this process (``serial``), or on the Dask cluster at
    ``scheduler``, else on a local one of ``processes`` worker processes. ``progress(done, total)`` as each ends.
    Raises InputError (on ``field``): an unreachable scheduler, a task that failed (``what`` names it)."""
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(items))

    if serial:
        results = []
        for item in items:
            results.append(fn(item))
            tick()
        return results
    from distributed import Client, LocalCluster, as_completed

    if scheduler:
        check_scheduler(scheduler, field)
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout="30s")
        else:
            cluster = LocalCluster(n_workers=processes, threads_per_worker=1, processes=True, host="127.0.0.1",
                                   dashboard_address=None, silence_logs=50)
            client = Client(cluster)
    except (OSError, ValueError) as err:
        raise InputError(f"cannot reach the Dask scheduler: {err}", field=field) from None
    try:
        futures = client.map(fn, list(items), pure=False)
        for _ in as_completed(futures):
            tick()
        try:
            return client.gather(futures)
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001 - a task's failure, as one line
            raise InputError(f"{what} failed on the Dask cluster: {err}", field=field) from None
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
