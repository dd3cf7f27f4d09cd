"""Formatting milli-values as canonical Kubernetes quantities (DecimalSI).

Upstream writes ``resource.NewMilliQuantity(v, resource.DecimalSI)`` into
``status.currentMetrics``; its canonical text uses the largest SI suffix that keeps an
integer mantissa (``1500m``, ``2``, ``15k``).
"""

from __future__ import annotations

__all__ = ["format_milli", "format_milli_binary"]


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


_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def format_milli_binary(milli: int) -> str:
    """Canonical BinarySI text of ``milli`` thousandths, as upstream writes a memory metric's value
    (``resource.NewMilliQuantity(v, resource.BinarySI)``, Quantity.CanonicalizeBytes): the DecimalSI text
    for a value within (-1024, 1024) or one that is not a whole number; otherwise the whole number with every
    factor 1024 taken out as a suffix (``1Gi``, ``2625Gi``, ``1000000000``)."""
    if -1024000 < milli < 1024000 or milli % 1000:
        return format_milli(milli)
    sign = "-" if milli < 0 else ""
    value = abs(milli) // 1000
    times = 0
    while value >= 1024 and value % 1024 == 0:
        value //= 1024
        times += 1
    return f"{sign}{value}{_BINARY_SUFFIXES[times]}"
