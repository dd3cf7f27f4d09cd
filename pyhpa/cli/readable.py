"""Quantities for people: a metric value as a user writes it in a manifest.

The decision core and ``-o json`` keep exact milli-units (``346030080001m``, upstream's canonical
``MilliValue`` text); text output shows the same value the way it is written in a manifest, with
the unit of the metric: bytes of memory and storage with binary suffixes (``330Mi``), CPU in
millicores (``250m``) or cores (``2``, ``110``), other metrics as plain numbers (``110``, ``22500``,
``25.7``). Values are rounded to three significant digits, never losing integer digits; the exact
value stays in ``-o json``.
"""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from ..adapters.metric_types import RESOURCE_TYPES
from ..core.model import MetricSpec

_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_BYTE_RESOURCES = ("memory", "ephemeral-storage", "storage")
_ROUNDING = {"nearest": ROUND_HALF_EVEN, "up": ROUND_CEILING, "down": ROUND_FLOOR}


def number(x: Decimal | float | int, rounding: str = "nearest") -> str:
    """``x`` with three significant digits, integer digits always kept, no exponent, no trailing zeros
    (110.001 -> "110", 25.714 -> "25.7", 22500 -> "22500", 0.00123 -> "0.00123"). ``rounding``:
    "nearest", or "up"/"down" when the shown value must not be below/above the exact one (thresholds)."""
    x = Decimal(x) if not isinstance(x, Decimal) else x
    if x == 0 or not x.is_finite():
        return "0" if x == 0 else str(x)
    magnitude = x.adjusted()  # floor(log10(|x|))
    places = max(0, 2 - magnitude)
    text = format(x.quantize(Decimal(1).scaleb(-places), rounding=_ROUNDING[rounding]), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def is_bytes(spec: MetricSpec | None) -> bool:
    """Whether the metric's values are bytes (memory and storage resources)."""
    return (spec is not None and spec.type in RESOURCE_TYPES
            and (spec.name in _BYTE_RESOURCES or spec.name.startswith("hugepages-")))


def is_cpu(spec: MetricSpec | None) -> bool:
    """Whether the metric's values are CPU (milli-units are millicores)."""
    return spec is not None and spec.type in RESOURCE_TYPES and spec.name == "cpu"


def quantity(milli: int | None, spec: MetricSpec | None = None, rounding: str = "nearest") -> str:
    """``milli`` thousandths of the metric's unit as a user writes it ("-" for None); ``rounding`` as
    in ``number``."""
    if milli is None:
        return "-"
    if is_cpu(spec):
        if milli % 1000 == 0:
            return str(milli // 1000)
        return f"{milli}m" if abs(milli) < 10_000 else number(Decimal(milli) / 1000, rounding)
    value = Decimal(milli) / 1000
    if is_bytes(spec) and abs(value) >= 1024:
        unit = 0
        while unit < len(_BINARY) - 1 and abs(value) >= 1024 ** (unit + 2):
            unit += 1
        return number(value / 1024 ** (unit + 1), rounding) + _BINARY[unit]
    return number(value, rounding)
