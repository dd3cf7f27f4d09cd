"""A workload's timeline: a row per HPA sync, its columns named as timeline.csv's header (docs/simulate.md), the
figures as the simulation made them (rounded only by the writers).

``Timeline`` keeps every column (``pyhpa simulate``, which writes timeline.csv and plots it); ``SummaryTimeline``
keeps only what a run's summary reads (``SUMMARY_COLUMNS`` and each metric's value, ``metric_columns``), as 8-byte
floats: a fleet of thousands of workloads, whose timelines are not written, fits in memory, and the simulation
skips the columns nobody reads. Both answer ``column(name)`` (a list in sync order; None where a sync has no
value) and ``len``.
"""

from __future__ import annotations

import math
from array import array
from typing import Iterator, Sequence

#: the columns of every timeline before the metrics' (then each metric's value and target, ``metric_columns``)
LEADING_COLUMNS = ("time", "load", "current_replicas", "ready_replicas", "desired_replicas", "recommended_replicas")
#: the columns after the metrics' and the sections' own
TRAILING_COLUMNS = ("unready_pods", "missing_pods", "ready_capacity", "unserved_requests", "conditions_changed",
                    "error", "min_replicas_effective", "max_replicas_effective", "active_schedules")
#: the replica columns a summary reads (besides each metric's value)
SUMMARY_COLUMNS = ("current_replicas", "desired_replicas")


def metric_columns(labels: Sequence[str]) -> list[str]:
    """Each metric's value and target columns, in the order of the HPA's metrics (``MetricView.label``)."""
    return [c for label in labels for c in (label, f"{label}_target")]


class Timeline:
    """Every column of every sync: ``header`` (the column names, in timeline.csv's order) and a row per sync
    (``append``, a tuple in the header's order; ``rows``)."""

    __slots__ = ("header", "_index", "rows")

    def __init__(self, header: Sequence[str]):
        self.header = tuple(header)
        self._index = {name: i for i, name in enumerate(self.header)}
        if len(self._index) != len(self.header):
            raise ValueError(f"timeline columns named twice: {sorted(n for n in self._index if self.header.count(n) > 1)}")
        self.rows: list[tuple] = []

    def append(self, row: tuple) -> None:
        """One sync's row (a value per column of ``header``)."""
        self.rows.append(row)

    def column(self, name: str) -> list:
        """The column ``name``, a value per sync; KeyError for a column the timeline does not have."""
        i = self._index[name]
        return [r[i] for r in self.rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timeline) and self.header == other.header and self.rows == other.rows

    __hash__ = None  # type: ignore[assignment]


class SummaryTimeline:
    """The columns a summary reads (``SUMMARY_COLUMNS`` and the metric value columns ``metrics``), each an
    ``array('d')`` (None kept as NaN; the replica columns read back as ints): about 24 bytes a sync with one metric.
    ``append(current, desired, values)`` takes one sync's."""

    __slots__ = ("metrics", "_columns")

    def __init__(self, metrics: Sequence[str]):
        self.metrics = tuple(metrics)
        self._columns = {name: array("d") for name in (*SUMMARY_COLUMNS, *self.metrics)}

    @classmethod
    def from_columns(cls, metrics: Sequence[str], current: array, desired: array,
                     values: Sequence[array]) -> SummaryTimeline:
        """A timeline of these columns (``array('d')`` each, a value a sync; NaN: none), as ``append`` would have
        made them (a compiled workload's: ``pyhpa.simulate.compiled``)."""
        tl = cls(metrics)
        tl._columns["current_replicas"], tl._columns["desired_replicas"] = current, desired
        for name, col in zip(tl.metrics, values):
            tl._columns[name] = col
        return tl

    def append(self, current: int, desired: int, values: Sequence[float | None]) -> None:
        cols = self._columns
        cols["current_replicas"].append(current)
        cols["desired_replicas"].append(desired)
        for name, v in zip(self.metrics, values):
            cols[name].append(math.nan if v is None else v)

    def column(self, name: str) -> list:
        """The column ``name`` (one it keeps), a value per sync; KeyError for another."""
        col = self._columns[name]
        if name in SUMMARY_COLUMNS:
            return [int(v) for v in col]
        return [None if v != v else v for v in col]

    def __len__(self) -> int:
        return len(self._columns["current_replicas"])


def minute_spans(t0: float, a: float, b: float):
    """The seconds of [a, b) (epoch s) in each minute counted from ``t0`` (minute k covers [t0 + 60 k,
    t0 + 60 (k + 1))): (k, seconds) pairs, in order."""
    k = int((a - t0) // 60.0)
    while a < b:
        edge = min(b, t0 + 60.0 * (k + 1))
        yield k, edge - a
        a, k = edge, k + 1
