"""Formatting milli-values as canonical Kubernetes quantities (DecimalSI).

Upstream writes ``resource.NewMilliQuantity(v, resource.DecimalSI)`` into
``status.currentMetrics``; its canonical text uses the largest SI suffix that keeps an
integer mantissa (``1500m``, ``2``, ``15k``).
"""

from __future__ import annotations

__all__ = ["format_milli"]


_SUFFIXES = ("m", "", "k", "M", "G", "T", "P", "E")


def format_milli(milli: int) -> str:
    """Canonical DecimalSI text of ``milli`` thousandths (e.g. 1200 -> "1200m", 20000 -> "20")."""
    if milli == 0:
        return "0"
    sign = "-" if milli < 0 else ""
    value = abs(milli)
    index = 0
    while index < len(_SUFFIXES) - 1 and value % 1000 == 0:
        value //= 1000
        index += 1
    return f"{sign}{value}{_SUFFIXES[index]}"
