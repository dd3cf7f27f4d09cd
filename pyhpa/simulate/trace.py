"""Load traces: CSV with a header, one row per interval, read once with pandas.

A trace is a step function: each row's value holds from its timestamp (the interval
start) until the next row's; the last row holds for one step (the median time between
rows). Times are ISO 8601 (a time without offset is UTC) or numbers of seconds since the
Unix epoch. Every problem is an ``InputError`` naming the file, line and column; a gap
(rows further apart than 1.5 steps) is an error unless a gap policy says how to fill it,
and the ``TraceReport`` counts every filled or skipped second.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from ..adapters.errors import InputError
from ..adapters.files import read_trace_bytes
from ..adapters.parse import FIRST_SECOND, LAST_SECOND

_RAGGED = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
GAP_POLICIES = ("error", "hold", "zero", "interpolate", "skip")
GAP_FACTOR = 1.5
TIME_COLUMNS = ("timestamp", "time")
#: the times a trace's rows (and its end) may take, epoch s: 0001-01-02 to 9999-12-31T00:00:00Z, the calendar without
#: a day at either end (a simulation starts its first pods a day before the first row; times are shown in the
#: trace's UTC offset)
#: the largest value a trace column takes (times ``--load-scale``): 10^15, a million times the world's web traffic.
#: Sums and products of such values over any simulated span stay far inside a float64, so every figure a simulation
#: reports is a finite number (the workload profile's numbers have the same bound)
MAX_VALUE = 1e15
#: the most rows ``--gaps interpolate`` inserts into one trace (as many as the largest trace file holds)
MAX_INSERTED_ROWS = 10_000_000
CALENDAR = (FIRST_SECOND + 86400.0, LAST_SECOND + 1.0 - 86400.0)


@dataclass(slots=True, frozen=True)
class Gap:
    """Rows further apart than 1.5 steps: ``start`` is where the data stops (previous row
    plus one step), ``end`` the next row's time (epoch s), ``line`` that row's file line."""

    start: float
    end: float
    line: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(slots=True)
class TraceReport:
    """What was read and what was done to it (goes to summary.json as ``trace``)."""

    file: str
    column: str
    time_column: str
    where: list[str]
    rows_in_file: int
    rows_not_matching_where: int
    rows_outside_slice: int
    rows_used: int
    step_seconds: float
    load_scale: float
    gap_policy: str
    gaps: list[Gap] = field(default_factory=list)
    rows_inserted: int = 0
    time_column_numeric: bool = False

    @property
    def gap_seconds(self) -> float:
        return sum(g.seconds for g in self.gaps)

    def to_dict(self, tz: timezone) -> dict:
        filled = self.gap_seconds if self.gap_policy in ("hold", "zero", "interpolate") else 0.0
        return {
            "file": self.file, "column": self.column, "time_column": self.time_column, "where": self.where,
            "rows_in_file": self.rows_in_file, "rows_not_matching_where": self.rows_not_matching_where,
            "rows_outside_slice": self.rows_outside_slice, "rows_used": self.rows_used,
            "step_seconds": round(self.step_seconds, 3), "load_scale": self.load_scale, "gap_policy": self.gap_policy,
            "gaps": len(self.gaps), "gap_seconds": round(self.gap_seconds, 3), "filled_seconds": round(filled, 3),
            "skipped_seconds": round(self.gap_seconds if self.gap_policy == "skip" else 0.0, 3),
            "rows_inserted": self.rows_inserted,
            "gap_list": [{"start": iso(g.start, tz), "end": iso(g.end, tz), "seconds": round(g.seconds, 3), "line": g.line}
                         for g in self.gaps],
        }


@dataclass(slots=True)
class Trace:
    """A loaded trace: ``times`` (epoch s, increasing), one float array per column, the
    end of the last interval ``end`` (epoch s), the display time zone ``tz``."""

    times: np.ndarray
    values: dict[str, np.ndarray]
    end: float
    tz: timezone
    report: TraceReport
    numeric_time: bool = False

    @property
    def start(self) -> float:
        return float(self.times[0])


def iso(ts: float, tz: timezone) -> str:
    """Epoch seconds as ISO 8601 in ``tz`` (``Z`` for UTC), whole seconds unless fractional."""
    dt = datetime.fromtimestamp(ts, tz=tz)
    text = dt.isoformat(timespec="seconds" if dt.microsecond == 0 else "milliseconds")
    return text.replace("+00:00", "Z")


def iso_array(ts: np.ndarray, tz: timezone) -> np.ndarray:
    """``iso`` for an array of epoch seconds (fixed offset ``tz``), vectorized."""
    off = tz.utcoffset(None).total_seconds()
    unit = "s" if np.all(np.mod(ts, 1.0) == 0) else "ms"
    local = np.round((ts + off) * (1 if unit == "s" else 1000)).astype("int64").astype(f"datetime64[{unit}]")
    text = np.datetime_as_string(local, unit=unit)
    return np.char.add(text, "Z" if off == 0 else iso(0.0, tz)[-6:])


def load_trace(
    path: str | Path,
    column: str,
    *,
    extra_columns: tuple[str, ...] = (),
    time_column: str | None = None,
    where: tuple[str, ...] = (),
    start: str | None = None,
    end: str | None = None,
    load_scale: float = 1.0,
    gaps: str = "error",
) -> Trace:
    """Read ``column`` (times ``load_scale``) and ``extra_columns`` of a CSV trace.

    ``where`` items are ``COLUMN=VALUE`` row filters (all must hold), ``start``/``end``
    keep rows with ``start <= time < end`` (ISO 8601; without offset, the trace's own
    offset; or seconds for a numeric time column), ``gaps`` is the gap policy.
    """
    file = str(path)
    if gaps not in GAP_POLICIES:
        raise InputError(f"unknown gap policy {gaps!r} (want one of {', '.join(GAP_POLICIES)})", field="--gaps")
    if not (np.isfinite(load_scale) and load_scale > 0):
        raise InputError(f"must be a number > 0, got {load_scale!r}", field="--load-scale")
    df = _read_csv(file)
    tcol = _time_column(df, time_column, file)
    columns = [column, *[c for c in extra_columns if c != column]]
    for c in columns:
        _need_column(df, c, file, "--column" if c == column else "metric column")
    rows_in_file = len(df)
    if rows_in_file < 2:
        raise InputError(f"{rows_in_file} data rows: a trace needs a header row and at least 2 data rows", file=file)
    df = _filter(df, where, file)
    matched = len(df)
    times, tz, numeric_time = _parse_times(df[tcol], file, tcol)
    lo, hi = bound_time(start, tz, numeric_time, "--start"), bound_time(end, tz, numeric_time, "--end")
    if lo is not None and hi is not None and lo >= hi:
        raise InputError(f"{start} is not before --end {end}", field="--start")
    _check_increasing(times, df.index, file, tcol, where)
    keep = np.ones(len(times), dtype=bool)
    if lo is not None:
        keep &= times >= lo
    if hi is not None:
        keep &= times < hi
    df, times = df[keep], times[keep]
    if len(times) < 2:
        raise InputError(f"fewer than 2 rows left after --where/--start/--end ({len(times)}); a trace needs at least 2",
                         file=file)
    values = {c: _numbers(df[c], file, c) for c in columns}
    values[column] = scaled_load(values[column], column, load_scale)
    step = float(np.median(np.diff(times)))
    _check_calendar(times, step, df.index, file, tcol)
    report = TraceReport(file, column, tcol, list(where), rows_in_file, rows_in_file - matched,
                         matched - len(times), len(times), step, load_scale, gaps,
                         time_column_numeric=numeric_time)
    lines = df.index.to_numpy() + 2
    times, values = _apply_gaps(times, values, step, lines, report, file, tz)
    last_end = float(times[-1]) + step
    trace_end = min(last_end, hi) if hi is not None else last_end
    return Trace(times, values, trace_end, tz, report, numeric_time)


def scaled_load(values: np.ndarray, column: str, load_scale: float) -> np.ndarray:
    """``values`` (a trace's load column) times ``load_scale`` (> 0), a new array. Raises InputError (field
    ``--load-scale``) when a value would pass ``MAX_VALUE``, the largest load pyhpa simulates."""
    with np.errstate(over="ignore"):
        scaled = values * load_scale
    if not (scaled <= MAX_VALUE).all():
        top = float(np.max(values))
        raise InputError(f"{load_scale:g} times column {column!r} (up to {top:g}) is beyond {MAX_VALUE:g}, the largest "
                         "load pyhpa simulates", field="--load-scale")
    return scaled


def _read_csv(file: str) -> pd.DataFrame:
    data = read_trace_bytes(file)  # bounded, decompressed by suffix (pyhpa.adapters.files)
    head = data[:65536]
    if b"\x00" in head:
        raise InputError(f"not a text file (CSV): byte {head.index(0)} is NUL", file=file)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 3:  # not just a character cut at the end of the sample
            raise InputError(f"not a text file (CSV): byte {err.start} is not UTF-8", file=file) from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False, skipinitialspace=True,
                             index_col=False, encoding="utf-8")
    except pd.errors.ParserWarning:  # the first data row has more fields than the header (index_col=False)
        raise InputError("the first data row has one field more than the header", file=file) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not a text file (CSV): byte {err.start} is not UTF-8", file=file) from None
    except pd.errors.EmptyDataError:
        raise InputError("the file is empty (a trace needs a header row and data rows)", file=file) from None
    except pd.errors.ParserError as err:
        ragged = _RAGGED.search(str(err))
        if ragged:
            want, line, saw = ragged.groups()
            raise InputError(f"line {line}: {saw} fields, the header has {want}", file=file) from None
        raise InputError(f"malformed CSV: {str(err).strip()}", file=file) from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _need_column(df: pd.DataFrame, name: str, file: str, option: str) -> None:
    if name not in df.columns:
        raise InputError(f"no column {name!r} in the trace (columns: {', '.join(df.columns)})", file=file, field=option)


def _time_column(df: pd.DataFrame, name: str | None, file: str) -> str:
    if name is not None:
        _need_column(df, name, file, "--time-column")
        return name
    for candidate in TIME_COLUMNS:
        if candidate in df.columns:
            return candidate
    raise InputError(f"no 'timestamp' or 'time' column; name the time column with --time-column "
                     f"(columns: {', '.join(df.columns)})", file=file)


def _filter(df: pd.DataFrame, where: tuple[str, ...], file: str) -> pd.DataFrame:
    for item in where:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise InputError(f"want COLUMN=VALUE, got {item!r}", field="--where")
        _need_column(df, key, file, "--where")
        matched = df[df[key] == value]
        if matched.empty:
            seen = sorted(df[key].unique())
            more = f", ... ({len(seen)} values)" if len(seen) > 10 else ""
            raise InputError(f"no row has {key}={value!r} (values: {', '.join(seen[:10])}{more})", file=file, field="--where")
        df = matched
    return df


def _parse_times(raw: pd.Series, file: str, tcol: str) -> tuple[np.ndarray, timezone, bool]:
    """(epoch seconds, display time zone, whether the column is numeric seconds)."""
    numeric = pd.to_numeric(raw, errors="coerce")
    if numeric.notna().all():
        seconds = numeric.to_numpy(dtype=float)
        bad = ~((seconds >= FIRST_SECOND) & (seconds <= LAST_SECOND))
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"line {raw.index[i] + 2}: time {raw.iloc[i]!r} is not a time (seconds since 1970 between "
                             f"years 1 and 9999)", file=file, field=tcol)
        return seconds, timezone.utc, True
    parsed = pd.to_datetime(raw, format="ISO8601", utc=True, errors="coerce")
    # microseconds since the epoch, computed in microseconds: every year from 1 to 9999 fits (nanoseconds end in 2262)
    micros = parsed.dt.tz_convert(None).to_numpy().astype("datetime64[us]").astype("int64")
    seconds = micros.astype(float) / 1e6
    for i in np.flatnonzero(parsed.isna().to_numpy()):  # what pandas could not read (or, pandas 2, a year it cannot
        ts = _python_time(raw.iloc[i])                    # hold in nanoseconds): Python's parser reads years 1-9999
        if ts is None:
            raise InputError(f"line {raw.index[i] + 2}: malformed time {raw.iloc[i]!r} (want ISO 8601 or seconds, "
                             "years 1 to 9999)", file=file, field=tcol)
        seconds[i] = ts
    return seconds, _zone(raw.iloc[0]), False


def _python_time(text: str) -> float | None:
    """Epoch seconds of an ISO 8601 time read by ``datetime.fromisoformat`` (without offset: UTC); None if it is
    none."""
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo is not None else dt.replace(tzinfo=timezone.utc)).timestamp()


def _zone(text: str) -> timezone:
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return timezone.utc
    off = dt.utcoffset()
    return timezone.utc if off is None or off == timedelta(0) else timezone(off)


def time_bound(text: str | None, trace: Trace, option: str) -> float | None:
    """A ``--start``/``--end`` value as epoch seconds, read as ``load_trace`` reads it (ISO 8601,
    without offset in the trace's own offset; seconds when the trace's times are seconds)."""
    return bound_time(text, trace.tz, trace.report.time_column_numeric, option)


def bound_time(text: str | None, tz: timezone | None, numeric_time: bool, option: str,
               no_offset: str = "") -> float | None:
    """A ``--start``/``--end`` value (``option``) as epoch seconds: ISO 8601, without an offset in ``tz`` (the
    trace's own offset: one rule for ``simulate``, ``tune``, ``forecast`` and the fleet commands); seconds when
    ``numeric_time``. ``tz`` None: the time must carry its offset (``no_offset`` says why: a fleet whose traces are
    in different offsets). InputError naming ``option`` when malformed or without a needed offset."""
    if text is None:
        return None
    if numeric_time:
        try:
            return float(text)
        except ValueError:
            raise InputError(f"malformed time {text!r} (the trace's times are seconds: give seconds)", field=option) from None
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"malformed time {text!r} (want ISO 8601, e.g. 1995-07-13T00:00:00)", field=option) from None
    if dt.tzinfo is None:
        if tz is None:
            raise InputError(f"{text!r} has no UTC offset and {no_offset}: give one (e.g. {text.strip()}Z, or "
                             f"{text.strip()}-04:00)", field=option)
        dt = dt.replace(tzinfo=tz)
    return dt.timestamp()


def _check_calendar(times: np.ndarray, step: float, index: pd.Index, file: str, tcol: str) -> None:
    """A trace's rows, and its end (the last row holds for one ``step``), within ``CALENDAR`` (InputError naming the
    line otherwise): a day of the calendar's ends is kept for the pods a simulation starts a day before its first
    row and for times shown in any UTC offset."""
    lo, hi = CALENDAR
    if times[0] < lo:
        raise InputError(f"line {index[0] + 2}: time {iso(float(times[0]), timezone.utc)} is before {iso(lo, timezone.utc)}"
                         f" (a trace holds times from {iso(lo, timezone.utc)} to {iso(hi, timezone.utc)})", file=file,
                         field=tcol)
    if times[-1] + step > hi:
        raise InputError(f"line {index[-1] + 2}: the trace ends after {iso(hi, timezone.utc)} (its last row, "
                         f"{iso(float(times[-1]), timezone.utc)}, holds for a step of {step:g} s; a trace holds times "
                         f"from {iso(lo, timezone.utc)} to {iso(hi, timezone.utc)})", file=file, field=tcol)


def _check_increasing(times: np.ndarray, index: pd.Index, file: str, tcol: str, where: tuple[str, ...]) -> None:
    if len(times) < 2:
        return
    diffs = np.diff(times)
    bad = np.flatnonzero(diffs <= 0)
    if bad.size == 0:
        return
    i = int(bad[0])
    what = "repeats" if diffs[i] == 0 else "goes back from"
    hint = "" if where else " (a long-format file with several series? select one with --where COLUMN=VALUE)"
    raise InputError(f"line {index[i + 1] + 2}: time {what} the previous row's ({index[i] + 2}); "
                     f"times must be strictly increasing{hint}", file=file, field=tcol)


def _numbers(raw: pd.Series, file: str, name: str) -> np.ndarray:
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values < 0) | (values > MAX_VALUE)
    if bad.any():
        i = int(np.argmax(bad))
        text = raw.iloc[i]
        problem = "empty value" if text.strip() == "" else (
            f"not a {'finite ' * _is_float(text)}number: {text!r}" if not np.isfinite(values[i]) else
            f"negative value {text!r}" if values[i] < 0 else f"value {text!r} is beyond {MAX_VALUE:g}")
        raise InputError(f"line {raw.index[i] + 2}: {problem} (values must be numbers from 0 to {MAX_VALUE:g})",
                         file=file, field=name)
    return values


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _apply_gaps(times, values, step, lines, report: TraceReport, file: str, tz: timezone):
    """Find gaps (rows more than 1.5 steps apart) and apply the policy; fills ``report``."""
    diffs = np.diff(times)
    idx = np.flatnonzero(diffs > GAP_FACTOR * step)
    report.gaps = [Gap(float(times[i]) + step, float(times[i + 1]), int(lines[i + 1])) for i in idx]
    policy = report.gap_policy
    if not report.gaps:
        return times, values
    if policy == "error":
        g = report.gaps[0]
        raise InputError(
            f"line {g.line}: gap of {g.seconds:g} s in the trace ({iso(g.start, tz)} to {iso(g.end, tz)}; "
            f"{len(report.gaps)} gap(s) in all); choose a gap policy: --gaps hold|zero|interpolate|skip",
            file=file, field=report.time_column)
    if policy == "hold":
        return times, values
    if policy == "skip":
        shift = np.zeros(len(times))
        for i in idx:
            shift[i + 1:] += diffs[i] - step
        return times - shift, values
    if policy == "interpolate":
        inserted = float(np.sum(np.maximum(np.ceil(diffs[idx] / step) - 1, 0)))
        if inserted > MAX_INSERTED_ROWS:
            raise InputError(f"interpolate would insert {inserted:,.0f} rows (a row every {step:g} s over "
                             f"{report.gap_seconds:,.0f} s of gaps); at most {MAX_INSERTED_ROWS:,}: hold or skip "
                             "gaps this long", file=file, field="--gaps")
    return _insert_rows(times, values, step, idx, policy, report)


def _insert_rows(times, values, step, idx, policy, report: TraceReport):
    """``zero``: one zero row at each gap start; ``interpolate``: rows every step, linear."""
    new_t, new_v = [times], {c: [v] for c, v in values.items()}
    for i in idx:
        if policy == "zero":
            t = np.array([times[i] + step])
            frac = None
        else:
            count = max(int(np.ceil((times[i + 1] - times[i]) / step)) - 1, 0)
            t = times[i] + step * np.arange(1, count + 1)
            frac = (t - times[i]) / (times[i + 1] - times[i])
        new_t.append(t)
        for c, v in values.items():
            new_v[c].append(np.zeros(len(t)) if frac is None else v[i] + (v[i + 1] - v[i]) * frac)
        report.rows_inserted += len(t)
    all_t = np.concatenate(new_t)
    order = np.argsort(all_t, kind="stable")
    return all_t[order], {c: np.concatenate(parts)[order] for c, parts in new_v.items()}


def parse_outages(items, trace: Trace) -> tuple[tuple[float, float], ...]:
    """``--metrics-outage`` items: ``START/END`` ISO 8601 intervals (a time without offset is in the trace's
    offset; END may be an ISO 8601 duration such as ``PT3H``; seconds for a trace with numeric times), as
    sorted (start, end) epoch seconds. Each must overlap the simulated span; raises InputError naming the item."""
    out = []
    numeric = trace.numeric_time
    for item in items:
        start_text, sep, end_text = str(item).partition("/")
        if not sep or not start_text.strip() or not end_text.strip():
            raise InputError(f"want START/END (ISO 8601, e.g. 1995-07-13T01:00:00/1995-07-13T04:00:00 or "
                             f"1995-07-13T01:00:00/PT3H), got {item!r}", field="--metrics-outage")
        start = bound_time(start_text, trace.tz, numeric, "--metrics-outage")
        if end_text.strip().upper().startswith("P"):
            try:
                end = start + pd.Timedelta(end_text.strip().upper()).total_seconds()
            except ValueError:
                raise InputError(f"malformed ISO 8601 duration {end_text!r} (want e.g. PT3H)",
                                 field="--metrics-outage") from None
        else:
            end = bound_time(end_text, trace.tz, numeric, "--metrics-outage")
        if not end > start:
            raise InputError(f"the end must be after the start, got {item!r}", field="--metrics-outage")
        if end <= trace.start or start >= trace.end:
            raise InputError(f"{item!r} does not overlap the simulated span ({iso(trace.start, trace.tz)} to "
                             f"{iso(trace.end, trace.tz)})", field="--metrics-outage")
        out.append((start, end))
    return tuple(sorted(out))
