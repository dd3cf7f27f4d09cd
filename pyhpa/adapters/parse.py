"""Parsing at the edge: quantities, timestamps, durations, tolerances, extension fields.

Quantities use lightkube's parser (``lightkube.utils.quantity.parse_quantity``), extended
with the ``n``/``u`` suffixes that metrics-server writes (e.g. ``"12345678n"`` CPU).
``MilliValue`` is upstream's ``Quantity.MilliValue()``: the value in thousandths, rounded
up.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import httpx2
import msgspec
import msgspec.inspect
from lightkube.utils.quantity import parse_quantity

from ..api.sections import SOURCE_SECTIONS
from ..core.calculator import trunc_div, wrap_int64
from ..core.selector import go_parse_int64
from .errors import InputError

_SMALL = {"n": Decimal("1e-9"), "u": Decimal("1e-6")}
_PLAIN = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(m|k|M|G|T|P|E|)$")
_EXPONENT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)[eE][+-]?\d+$")
_SI_EXP = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DUR_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
#: the largest int32: what the API server stores in an ``int32`` field (replica counts, percentages)
MAX_INT32 = 2**31 - 1
MIN_INT32 = -(2**31)
#: epoch seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the calendar of Python's ``datetime``, so of every
#: time pyhpa reads or prints (Kubernetes' Go ``time.Time`` zero value, ``0001-01-01T00:00:00Z``, is its first second)
FIRST_SECOND, LAST_SECOND = -62135596800.0, 253402300799.0
#: the largest magnitude of a quantity in milli-units: upstream reads quantities as int64 milli-values
#: (``Quantity.MilliValue()``), so a larger one has no meaning there (about 9.2 peta-units)
MAX_MILLI = 2**63 - 1


def number_text(value: int | float, field: str = "") -> str:
    """A quantity written as a JSON/YAML number, as the text the API server reads for it: the API server
    parses the number's own digits as the quantity (``100`` -> ``"100"``, ``0.05`` -> ``"0.05"``;
    ``1e-05`` -> ``"0.00001"``). Raises InputError for NaN and infinities."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise InputError(f"expected a quantity, got {value!r}", field=field)
    text = repr(value)
    return format(Decimal(text), "f") if "e" in text or "E" in text else text


def quantity(text, field: str = "") -> Decimal:
    """Parse a Kubernetes quantity (``"500m"``, ``"1Gi"``, ``"12n"``, ``"1e3"``, or a number) to a Decimal.

    Raises InputError naming ``field``.
    """
    if isinstance(text, bool) or text is None or isinstance(text, (list, dict)):
        raise InputError(f"expected a quantity (a number, or a string such as 500m or 1Gi), got {text!r}", field=field)
    shown = _shown(text)
    if isinstance(text, (int, float)):
        text = number_text(text, field)
    s = str(text).strip()
    try:
        if s and s[-1] in _SMALL and s[:-1].replace(".", "", 1).lstrip("+-").isdigit():
            value = Decimal(s[:-1]) * _SMALL[s[-1]]
        elif _EXPONENT.match(s):
            value = Decimal(s)
        else:
            value = parse_quantity(s)
    except (ValueError, InvalidOperation):
        value = None
    plain = _PLAIN.match(s) if value is None else None
    if plain and (plain.group(2) or plain.group(3)):  # well formed, but more digits than lightkube's parser takes
        sign, whole, frac, suffix = plain.groups()
        value = Decimal(f"{sign}{whole or 0}.{frac or 0}").scaleb(_SI_EXP[suffix])
    if value is None or not value.is_finite():
        raise InputError(f"malformed quantity {shown}", field=field)
    if not -MAX_MILLI - 1 <= math.ceil(value * 1000) <= MAX_MILLI:
        raise InputError(f"must be between {-MAX_MILLI - 1}m and {MAX_MILLI}m (about ±9.2P: upstream reads quantities "
                         f"as int64 milli-values), got {shown}", field=field)
    return value


def _shown(text) -> str:
    """A value the user wrote, for an error line: as written, at most 40 characters."""
    shown = repr(text)
    return shown if len(shown) <= 42 else shown[:38] + "...'"


def positive_milli(text, field: str = "") -> int:
    """A quantity that must be greater than 0 (a metric target's ``averageValue`` or ``value``: the API
    server refuses 0 and below, "must be positive"), in milli-units rounded up; InputError naming ``field``."""
    value = quantity(text, field)
    if value <= 0:
        raise InputError(f"must be positive, got {_shown(text)}", field=field)
    return math.ceil(value * 1000)


def int32_value(value, field: str, minimum: int = 0, maximum: int = MAX_INT32) -> int:
    """A count the user gave (``replicas``, ``minReplicas``, ``averageUtilization``, ``--recommendation``, ...)
    as the API server takes an ``int32`` field: an integer (or a float without fraction, as YAML/JSON may
    write it) from ``minimum`` to ``maximum`` (at most 2147483647); InputError naming ``field`` otherwise."""
    value = _integer(value, field)
    if value < minimum:
        bound = "greater than 0" if minimum == 1 else f"{minimum} or more"
        raise InputError(f"must be {bound}, got {value}", field=field)
    if value > maximum:
        kind = " (an int32)" if maximum == MAX_INT32 else ""
        raise InputError(f"must be at most {maximum}{kind}, got {value}", field=field)
    return value


def milli(text, field: str = "") -> int:
    """A quantity in milli-units exactly as upstream's ``resource.ParseQuantity(text).MilliValue()`` gives it
    (``go_milli_value``: rounded up, and Go's int64 results where the value does not fit); raises InputError
    naming ``field`` for text Go does not parse.

    Memoized on the text: metrics answers repeat the same quantity strings every sync.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = number_text(text, field)
    if isinstance(text, str):
        value = go_milli_value(text)
        if value is not None:
            return value
    quantity(text, field)  # the error line for what Go refuses
    raise InputError(f"malformed quantity {_shown(text)}", field=field)


# -- apimachinery's Quantity (k8s.io/apimachinery/pkg/api/resource v0.37.2): ParseQuantity and MilliValue,
# ported so that every quantity is the int64 upstream reads, to the last wrapped bit. A parser of our own:
# lightkube's does not reproduce Go's rounding away from zero, its arbitrary-precision path for more than 18
# digits (where a negative value's MilliValue is computed through an overflowing int64), nor its wraps.

_GO_DEC_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_GO_BIN_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DIGITS = "0123456789"


def _go_big_int64(x: int) -> int:
    """math/big's ``Int.Int64()``: the low 64 bits of |x| as an int64, negated for negative x."""
    v = wrap_int64(abs(x) % 2**64)
    return wrap_int64(-v) if x < 0 else v


def _digits_end(s: str, pos: int) -> int:
    """The index after the decimal digits from ``pos``."""
    while pos < len(s) and s[pos] in _DIGITS:
        pos += 1
    return pos


def _go_parse_quantity_string(s: str):
    """parseQuantityString: (positive, value, num, denom, suffix), or None (ErrFormatWrong)."""
    positive, pos, end = True, 0, len(s)
    if pos < end and s[0] in "+-":
        positive = s[0] != "-"
        pos += 1
    while True:  # leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if s[pos] != "0":
            break
        pos += 1
    start, pos = pos, _digits_end(s, pos)
    num = s[start:pos]
    if pos >= end:
        return positive, s, num, "", ""
    num = num or "0"
    denom = ""
    if s[pos] == ".":
        start, pos = pos + 1, _digits_end(s, pos + 1)
        denom = s[start:pos]
        if pos >= end:
            return positive, s, num, denom, ""
    value = s[:pos]
    suffix_start = pos
    while pos < end and s[pos] in "eEinumkKMGTP":
        pos += 1
    if pos >= end:
        return positive, value, num, denom, s[suffix_start:]
    if s[pos] in "+-":
        pos += 1
    pos = _digits_end(s, pos)
    if pos >= end:
        return positive, value, num, denom, s[suffix_start:]
    return None


def _go_int64_multiply(a: int, b: int) -> tuple[int, bool]:
    if a in (0, 1) or b in (0, 1):
        return wrap_int64(a * b), True
    if a == -2**63 or b == -2**63:
        return 0, False
    c = wrap_int64(a * b)
    return c, trunc_div(c, b) == a


def _go_scale_multiply(a: int, b: int) -> int:
    """int64MultiplyScale*: the (wrapped) product, or 0 for mostNegative; its ok is ignored by MilliValue."""
    if a in (0, 1):
        return wrap_int64(a * b)
    if a == -2**63:
        return 0
    return wrap_int64(a * b)


def _go_int64_amount_milli(value: int, scale: int) -> int:
    """int64Amount{value, scale}.AsScaledInt64(Milli)."""
    if scale < -3:  # negativeScaleInt64: rounds away from zero
        v, fraction = value, False
        for _ in range(-3 - scale):
            if not fraction and v - trunc_div(v, 10) * 10 != 0:
                fraction = True
            v = trunc_div(v, 10)
            if v == 0:
                return (1 if value > 0 else -1) if fraction else 0
        return v + (1 if value > 0 else -1) if fraction else v
    k = scale + 3
    if k == 0:
        return value
    if k in (1, 2, 3, 6, 9):
        return _go_scale_multiply(value, 10**k)
    v = value
    for _ in range(k):
        if v == -2**63 or (v not in (0, 1) and trunc_div(wrap_int64(v * 10), 10) != v):
            return 0
        v = wrap_int64(v * 10)
    return v


#: a Quantity's Format (its suffix's kind): the canonical text keeps it
_DECIMAL_SI, _BINARY_SI, _DECIMAL_EXPONENT = "DecimalSI", "BinarySI", "DecimalExponent"


def _go_suffix(suffix: str) -> tuple[int, int, str] | None:
    """suffixHandler.interpret: (base, exponent, format) of a suffix, or None (ErrSuffix)."""
    if suffix in _GO_DEC_SUFFIXES:
        return 10, _GO_DEC_SUFFIXES[suffix], _DECIMAL_SI
    if suffix in _GO_BIN_SUFFIXES:
        return 2, _GO_BIN_SUFFIXES[suffix], _BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed_exp = go_parse_int64(suffix[1:])
        if parsed_exp is None:
            return None
        return 10, ((parsed_exp + 2**31) % 2**32) - 2**31, _DECIMAL_EXPONENT  # int32(parsed)
    return None


def go_quantity_text(text: str) -> str | None:
    """``resource.ParseQuantity(text)`` then ``String()``, as apimachinery v0.37.2 computes them: what kubectl
    prints for a quantity (``kubectl get hpa``'s TARGETS). ``text`` itself when ParseQuantity keeps it (an integer
    mantissa without trailing zeros and a suffix that is a power of 1000, or of 1024 for an odd number of units:
    ``100m``, ``1Gi``, ``1e3``, ``+1``), else the canonical form of its value (``Quantity.CanonicalizeBytes``:
    ``1000`` -> ``1k``, ``0.5`` -> ``500m``, ``1536Mi`` stays, ``1.5Gi`` -> ``1536Mi``, ``1024Mi`` -> ``1Gi``, a
    value below 1n rounded up to ``1n``). None where ParseQuantity returns an error. Memoized on the text."""
    return _go_quantity_text_cached(text)


@lru_cache(maxsize=4096)
def _go_quantity_text_cached(s: str) -> str | None:
    q = _go_parse_quantity(s)
    if q is None:
        return None
    if q.kept:
        return s
    return _go_canonical(q.value, q.scale if q.small else -q.scale, q.form)


@dataclass(frozen=True, slots=True)
class _GoQuantity:
    """What ``resource.ParseQuantity`` makes of a text: ``small`` an int64Amount (``value`` × 10^``scale``), else an
    inf.Dec (``value`` × 10^-``scale``: rounded up to nanos, a BinarySI one capped at 2^63-1); its ``form``
    (DecimalSI, BinarySI, DecimalExponent); ``kept``: the text is its String() (ParseQuantity keeps it)."""

    small: bool
    value: int
    scale: int
    form: str
    kept: bool = False


def _go_parse_quantity(s: str) -> _GoQuantity | None:
    """resource.ParseQuantity(s) (apimachinery v0.37.2); None for an error."""
    if not s:
        return None
    if s == "0":
        return _GoQuantity(True, 0, 0, _DECIMAL_SI, kept=True)
    parsed = _go_parse_quantity_string(s)
    interpreted = None if parsed is None else _go_suffix(parsed[4])
    if interpreted is None:
        return None
    positive, value, num, denom, _ = parsed
    base, exponent, form = interpreted
    mantissa, scale = 1, 0
    if form != _BINARY_SI:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(float(exponent) * 3 / 10) - 1
    else:
        precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            shifted = num + denom
            v = go_parse_int64(shifted)
            if v is None:
                return None
            result, ok = _go_int64_multiply(v, mantissa)
            if ok:
                if form == _BINARY_SI:
                    kept = exponent % 10 == 0 and v & 7 != 0
                else:
                    kept = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return _GoQuantity(True, result if positive else wrap_int64(-result), scale, form, kept)
    # inf.Dec: value is [sign] digits [. digits]
    sign_text = value[:1] if value[:1] in ("+", "-") else ""
    body = value[len(sign_text):]
    whole, _, frac = body.partition(".")
    if not any(c in _DIGITS for c in body) or body.count(".") > 1:
        return None
    unscaled = int((whole or "0") + frac)
    dec_scale = len(frac) if "." in body else 0
    if base == 10:
        dec_scale -= exponent
    else:
        unscaled *= 1 << exponent
    if unscaled != 0:  # round to nanos, away from zero
        if dec_scale > 9:
            div = 10 ** (dec_scale - 9)
            unscaled = -(-unscaled // div)
        else:
            unscaled *= 10 ** (9 - dec_scale)
        dec_scale = 9
    if form == _BINARY_SI and unscaled * 10 ** max(0, -dec_scale) > (2**63 - 1) * 10 ** max(0, dec_scale):
        unscaled, dec_scale = 2**63 - 1, 0  # BinarySI: capped at maxAllowed
    if form == _BINARY_SI and 0 < unscaled and unscaled * 10 ** max(0, -dec_scale) < 10 ** max(0, dec_scale):
        form = _DECIMAL_SI  # below 1: not written in binary units
    return _GoQuantity(False, -unscaled if sign_text == "-" else unscaled, dec_scale, form)


_GO_DEC_SUFFIX_OF = {e: suffix for suffix, e in _GO_DEC_SUFFIXES.items()}
_GO_BIN_SUFFIX_OF = {e // 10: suffix for suffix, e in _GO_BIN_SUFFIXES.items()}


def _go_canonical(unscaled: int, exp10: int, form: str) -> str:
    """Quantity.CanonicalizeBytes of ``unscaled`` × 10^``exp10`` in ``form``: BinarySI for a whole number of 1024 or
    more (every factor 1024 a suffix), else the mantissa without trailing zeros and an exponent that is a multiple
    of 3 (rounded down), as an SI suffix (DecimalSI; none beyond ``E``) or ``eN`` (DecimalExponent)."""
    if unscaled == 0:
        return "0"
    if form == _BINARY_SI:
        whole = unscaled * 10**exp10 if exp10 >= 0 else None
        if exp10 < 0 and unscaled % 10**-exp10 == 0:
            whole = unscaled // 10**-exp10
        if whole is not None and abs(whole) >= 1024:
            times, magnitude = 0, abs(whole)
            while magnitude >= 1024 and magnitude % 1024 == 0:
                magnitude //= 1024
                times += 1
            return f"{'-' if whole < 0 else ''}{magnitude}{_GO_BIN_SUFFIX_OF.get(times, '')}"
        form = _DECIMAL_SI  # between -1024 and 1024, or not a whole number
    sign, magnitude = ("-" if unscaled < 0 else ""), abs(unscaled)
    while magnitude % 10 == 0:
        magnitude //= 10
        exp10 += 1
    down = exp10 % 3
    magnitude, exp10 = magnitude * 10**down, exp10 - down
    if form == _DECIMAL_SI:
        suffix = _GO_DEC_SUFFIX_OF.get(exp10, "")
    else:
        suffix = f"e{exp10}" if exp10 else ""
    return f"{sign}{magnitude}{suffix}"


def go_milli_value(text: str) -> int | None:
    """``resource.ParseQuantity(text)`` then ``MilliValue()``, as apimachinery v0.37.2 computes them; None
    where ParseQuantity returns an error."""
    return _go_milli_cached(text)


@lru_cache(maxsize=65536)
def _go_milli_cached(s: str) -> int | None:
    q = _go_parse_quantity(s)
    if q is None:
        return None
    if q.small:
        return _go_int64_amount_milli(q.value, q.scale)
    unscaled, dec_scale = q.value, q.scale
    # scaledValue(unscaled, scale, 3)
    dif = dec_scale - 3
    if dif == 0:
        return _go_big_int64(unscaled)
    if dif < 0:
        return wrap_int64(_go_big_int64(unscaled) * 10 ** (-dif))
    if unscaled < 2**63 - 1 and dif < 19:
        low = _go_big_int64(unscaled)
        result = trunc_div(low, 10**dif)
        return wrap_int64(result + 1) if (low - trunc_div(low, 10**dif) * 10**dif) != 0 else result
    quotient, r = divmod(unscaled, 10**dif)  # big.Int DivMod: Euclidean (the value is positive here)
    return wrap_int64(_go_big_int64(quotient) + 1) if r != 0 else _go_big_int64(quotient)


def tolerance_float(text, field: str = "") -> float:
    """A tolerance quantity as float64 the way upstream ``AsApproximateFloat64`` computes it:
    the written mantissa times ``10**exponent`` (so ``"0.05"`` is ``5 * 0.01``)."""
    quantity(text, field)  # validate
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = number_text(text, field)
    m = _PLAIN.match(str(text).strip())
    if not m:
        return float(quantity(text, field))
    sign, whole, frac, suffix = m.groups()
    frac = frac or ""
    mantissa = int((whole or "0") + frac) * (-1 if sign == "-" else 1)
    exp = _SI_EXP[suffix] - len(frac)
    if exp == 0:
        return float(mantissa)
    return float(mantissa) * (10.0**exp if exp > 0 else 1.0 / 10.0 ** (-exp))


def timestamp(value, field: str = "") -> float:
    """An RFC 3339 time (string or datetime) as epoch seconds; ``0001-01-01T00:00:00Z`` is valid.

    Raises InputError naming ``field`` for a malformed time and one outside the calendar (in UTC, ``FIRST_SECOND``
    to ``LAST_SECOND``); memoized on the text.
    """
    ts = _epoch(value) if isinstance(value, datetime) else _timestamp_text(str(value))
    if ts is None:
        raise InputError(f"malformed timestamp {value!r} (want RFC 3339, e.g. 2026-01-01T00:00:00Z)", field=field)
    if not FIRST_SECOND <= ts <= LAST_SECOND:  # e.g. 0001-01-01T00:00:00+05:00, which is in year 0 in UTC
        raise InputError(f"{str(value)!r} is outside the calendar (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC)",
                         field=field)
    return ts


def _epoch(dt: datetime) -> float:
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)).timestamp()


@lru_cache(maxsize=65536)
def _timestamp_text(text: str) -> float | None:
    try:
        return _epoch(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def duration(value, field: str = "") -> float:
    """A Go duration (``"1m0s"``, ``"30s"``, ``"500ms"``) or a number of seconds, as seconds.

    Raises InputError naming ``field``; memoized on the text.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    total = _duration_text(str(value).strip())
    if total is None:
        raise InputError(f"malformed duration {value!r} (want e.g. 30s or 1m0s)", field=field)
    return total


@lru_cache(maxsize=4096)
def _duration_text(text: str) -> float | None:
    if text == "0":
        return 0.0
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DUR_UNIT[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        return None
    return total


def format_time(ts: float | None) -> str | None:
    """Epoch seconds as RFC 3339 UTC (``...Z``), None stays None."""
    if ts is None:
        return None
    dt = datetime.fromtimestamp(ts, tz=timezone.utc)
    text = f"{dt.year:04d}-" + dt.strftime("%m-%dT%H:%M:%S")  # %Y is not padded to 4 digits below year 1000 (glibc)
    return text + ("Z" if dt.microsecond == 0 else f".{dt.microsecond:06d}Z")


def extension_fields(d: Any, keys: tuple[str, ...], field: str) -> dict:
    """The mapping of an extension field such as ``spec.prediction`` (None: ``{}``, all defaults); InputError
    naming ``field`` when it is not a mapping, or ``field.key`` for the first key not in ``keys``."""
    if d is None:
        return {}
    if not isinstance(d, dict):
        raise InputError(f"must be an object (e.g. {{}} for the defaults), got {type(d).__name__}", field=field)
    unknown = [k for k in d if k not in keys]
    if unknown:
        raise InputError(f"unknown field (known: {', '.join(keys)})", field=f"{field}.{unknown[0]}")
    return d


def source_section(name: str, d: Any, metrics: tuple | None, field: str) -> Any:
    """The core's spec of the source section ``spec.<name>`` (a ``pyhpa.api.sections.SOURCE_SECTIONS`` entry) from
    its mapping (None or ``{}``: all defaults): the API struct (``api_section``) converted to the core's spec type (by
    attribute name: msgspec's ``convert``),
    checked by the core's rule set (the section's ``check``: limits, modes and, with ``metrics``, the HPA's parsed
    ``spec.metrics``, the metric it names). Raises InputError naming ``field`` and the key of the first problem."""
    section = SOURCE_SECTIONS[name]
    spec = msgspec.convert(api_section(d, section.spec, field), section.core_spec, from_attributes=True)
    refuse_first(section.check(spec, metrics), field)
    return spec


def api_section(d: Any, cls: type, field: str) -> Any:
    """An extension field of the API (a source section's ``spec.<field>``: a ``pyhpa.api.v1alpha1`` struct)
    read from its mapping (None: ``{}``, all defaults): the one reading of every such field. Each key must be one of
    the struct's (``extension_fields``) and of its type: an integer as the API server takes ``type: integer``
    (``api_integer``), a number, a string (an enum's value is checked by the core's rule); an absent or null key
    takes the struct's default. Limits are the core's to check (the section's ``check``).
    Raises InputError naming ``field.key``."""
    info = _struct_info(cls)
    d = extension_fields(d, tuple(name for name, _, _ in info), field)
    values = {}
    for encoded, attr, kind in info:
        value = d.get(encoded)
        if value is None:
            continue
        if kind is msgspec.inspect.IntType:
            value = _integer(value, f"{field}.{encoded}")
        elif kind is msgspec.inspect.FloatType:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"must be a number, got {value!r}", field=f"{field}.{encoded}")
            value = float(value)
        elif not isinstance(value, str):
            raise InputError(f"must be a string, got {value!r}", field=f"{field}.{encoded}")
        values[attr] = value
    return cls(**values)


@lru_cache(maxsize=None)
def _struct_info(cls: type) -> tuple[tuple[str, str, type], ...]:
    """(wire name, attribute, msgspec.inspect type class) of each field of a flat API struct."""
    out = []
    for f in msgspec.inspect.type_info(cls).fields:
        t = f.type
        if isinstance(t, msgspec.inspect.UnionType):
            t = next(x for x in t.types if not isinstance(x, msgspec.inspect.NoneType))
        if isinstance(t, msgspec.inspect.Metadata):
            t = t.type
        out.append((f.encode_name, f.name, type(t)))
    return tuple(out)


def api_integer(d: dict, key: str, default: Any, field: str) -> int:
    """``d[key]`` (``default`` when absent) as the API server takes ``type: integer``: an int, or a float with no
    fraction (as YAML/JSON may write it); InputError naming ``field.key`` otherwise."""
    return _integer(d.get(key, default), f"{field}.{key}")


def _integer(value: Any, field: str) -> int:
    """``value`` as the API server takes ``type: integer``: an int, or a float with no fraction."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be an integer, got {value!r}", field=field)
    return value


def refuse_first(problems: list[tuple[str, str]], field: str) -> None:
    """Raise the first of a core check's ``(sub-field, message)`` problems as an InputError naming
    ``field.sub-field`` (``check_window``, a source section's ``check``); nothing when there is none."""
    if problems:
        sub, message = problems[0]
        raise InputError(message, field=f"{field}.{sub}")


def server_url(text: str, field: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (``--server``, ``--prometheus-url``), read by httpx2's URL
    parser; InputError naming ``field`` for anything else, so a typo fails at once instead of in a retry loop."""
    try:
        url = httpx2.URL(text)
    except (httpx2.InvalidURL, TypeError) as err:
        raise InputError(f"malformed URL {text!r}: {err}", field=field) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise InputError(f"must be an http:// or https:// URL with a host, got {text!r}", field=field)
    return text


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
#: kinds whose ``metadata.name`` the API server validates as a DNS-1123 label (k8s.io/kubernetes
#: pkg/apis/apps/validation ``ValidateStatefulSetName``); other kinds pyhpa reads take a DNS-1123 subdomain
#: (apimachinery ``NameIsDNSSubdomain``: ``ValidateHorizontalPodAutoscalerName``, ``ValidateDeploymentName``, and
#: custom resources, apiextensions-apiserver's validator)
LABEL_NAMED_KINDS = frozenset({"StatefulSet"})


def object_name(text: str, field: str, label: bool = False) -> str:
    """A Kubernetes object name as the API server validates it: a DNS-1123 subdomain (at most 253 characters:
    lower-case letters, digits, '-' and '.', starting and ending with a letter or digit; autoscalers, Leases), or with
    ``label`` a DNS-1123 label (at most 63, no '.': namespaces). InputError naming ``field`` otherwise, so a name the
    API server would refuse, or one carrying a query (``web?watch=true``) or fragment, is never sent."""
    limit, pattern = (63, _DNS_LABEL) if label else (253, _DNS_SUBDOMAIN)
    kind = "an RFC 1123 label" if label else "an RFC 1123 subdomain"
    if len(text) > limit:
        raise InputError(f"{_shown(text)} is not a valid name: at most {limit} characters ({kind}), got {len(text)}",
                         field=field)
    if not pattern.fullmatch(text):
        dots = "" if label else ", '.'"
        raise InputError(f"{_shown(text)} is not a valid name: {kind} has lower-case letters, digits, '-'{dots} only "
                         "and starts and ends with a letter or digit", field=field)
    return text


def object_meta(kind: str, name: Any, namespace: Any) -> None:
    """``metadata.name`` and ``metadata.namespace`` of a ``kind`` object from a file, as the API server's
    ``ValidateObjectMeta`` takes them: a name is required and a DNS-1123 subdomain (a label for
    ``LABEL_NAMED_KINDS``), a namespace, when given, a DNS-1123 label (``ValidateNamespaceName``); so a name with
    upper-case or non-ASCII letters is refused, not read. InputError naming the field (``object_name``)."""
    if not name:
        raise InputError("required field is missing", field="metadata.name")
    object_name(name, "metadata.name", label=kind in LABEL_NAMED_KINDS)
    if namespace:
        object_name(namespace, "metadata.namespace", label=True)
