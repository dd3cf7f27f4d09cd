"""A fleet's gap policy (``trace.gaps``, ``fleet simulate --gaps``), in a module of its own so that the CLI offers
it as a choice without importing the fleet."""

from __future__ import annotations

from enum import StrEnum


class TraceGaps(StrEnum):
    """``trace.gaps``: what a gap in the span a workload replays (rows more than 1.5 steps apart) does, as ``pyhpa
    simulate --gaps``: refused (``error``, the default, as simulate's), or the load holds its last row (``hold``).
    Simulate's ``zero``, ``interpolate`` and ``skip`` are not a fleet's: they add rows or move time."""

    ERROR = "error"
    HOLD = "hold"
