"""Trace loading: slicing, scaling, long format, and every trace problem as a clear error
or a reported handling (nothing dropped silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyhpa.adapters.errors import InputError
from pyhpa.simulate.trace import load_trace

DATA = Path(__file__).parent / "data" / "traces"
NASA = DATA / "nasa_http_1995-07-28_08-03_per_minute.csv"
BITBRAINS = DATA / "bitbrains_rnd_2013-08-01_03_cpu.csv"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "trace.csv"
    p.write_text(text)
    return p


def error(**kwargs) -> str:
    with pytest.raises(InputError) as err:
        load_trace(**kwargs)
    text = str(err.value)
    assert "\n" not in text
    return text


def test_iso_times_with_offset_slice_and_scale():
    t = load_trace(NASA, "requests_per_second", start="1995-07-28T10:00", end="1995-07-28T11:00", load_scale=3)
    assert len(t.times) == 60 and t.report.rows_outside_slice == 4413 - 60
    assert t.start == 806940000.0  # 10:00 at the trace's own offset (-04:00) = 14:00Z
    assert t.end == t.start + 3600
    raw = load_trace(NASA, "requests_per_second", start="1995-07-28T10:00", end="1995-07-28T11:00")
    assert (t.values["requests_per_second"] == 3 * raw.values["requests_per_second"]).all()


def test_numeric_seconds_and_last_row_holds_one_step(tmp_path):
    t = load_trace(write(tmp_path, "time,rps\n0,1\n10,2\n20,3\n"), "rps")
    assert list(t.times) == [0, 10, 20] and t.end == 30 and t.report.step_seconds == 10


def test_unknown_column_lists_the_columns():
    text = error(path=NASA, column="rps")
    assert "no column 'rps'" in text and "requests_per_second" in text and "--column" in text


def test_non_numeric_value_names_line_and_column(tmp_path):
    text = error(path=write(tmp_path, "time,rps\n0,1\n60,abc\n120,3\n"), column="rps")
    assert text.endswith("rps: line 3: not a number: 'abc' (values must be numbers from 0 to 1e+15)")
    assert "line 4: empty value" in error(path=write(tmp_path, "time,rps\n0,1\n60,2\n120,\n"), column="rps")
    assert "negative value '-1'" in error(path=write(tmp_path, "time,rps\n0,1\n60,-1\n"), column="rps")


def test_non_monotonic_and_repeated_times(tmp_path):
    text = error(path=write(tmp_path, "time,rps\n0,1\n120,2\n60,3\n"), column="rps")
    assert "line 4: time goes back from the previous row's (3)" in text
    text = error(path=write(tmp_path, "time,rps\n0,1\n60,2\n60,3\n"), column="rps")
    assert "line 4: time repeats" in text


def test_malformed_time(tmp_path):
    text = error(path=write(tmp_path, "timestamp,rps\n2020-01-01T00:00:00Z,1\nyesterday,2\n"), column="rps")
    assert "line 3: malformed time 'yesterday'" in text


def test_long_format_needs_where_and_where_selects_one_series():
    assert "select one with --where" in error(path=BITBRAINS, column="cpu_usage_percent")
    t = load_trace(BITBRAINS, "cpu_usage_percent", where=("vm=rnd-411",), gaps="hold")
    assert t.report.rows_used == 856 and t.report.rows_not_matching_where == 1717 - 856
    text = error(path=BITBRAINS, column="cpu_usage_percent", where=("vm=rnd-1",))
    assert "no row has vm='rnd-1' (values: rnd-411, rnd-58)" in text
    assert "no column 'host'" in error(path=BITBRAINS, column="cpu_usage_percent", where=("host=a",))


def test_real_gap_is_an_error_by_default():
    text = error(path=NASA, column="requests_per_second")
    assert "line 815: gap of 296820 s in the trace (1995-07-28T13:33:00-04:00 to 1995-08-01T00:00:00-04:00" in text
    assert "--gaps hold|zero|interpolate|skip" in text


@pytest.mark.parametrize("policy", ["hold", "zero", "interpolate", "skip"])
def test_gap_policies_are_reported(policy):
    t = load_trace(NASA, "requests_per_second", gaps=policy)
    rep = t.report.to_dict(t.tz)
    assert rep["gaps"] == 1 and rep["gap_seconds"] == 296820.0 and rep["gap_policy"] == policy
    assert rep["gap_list"][0]["line"] == 815
    span = t.end - t.start
    if policy == "skip":
        assert rep["skipped_seconds"] == 296820.0 and rep["filled_seconds"] == 0
        assert span == 4413 * 60
    else:
        assert rep["filled_seconds"] == 296820.0 and span == 4413 * 60 + 296820
    inserted = {"hold": 0, "zero": 1, "interpolate": 296820 // 60, "skip": 0}[policy]
    assert rep["rows_inserted"] == inserted and len(t.times) == 4413 + inserted


def test_zero_gap_row_and_interpolation_values(tmp_path):
    path = write(tmp_path, "time,rps\n0,10\n60,10\n120,10\n300,40\n360,40\n")
    zero = load_trace(path, "rps", gaps="zero")
    assert list(zero.times) == [0, 60, 120, 180, 300, 360] and zero.values["rps"][3] == 0
    lin = load_trace(path, "rps", gaps="interpolate")
    assert list(lin.times) == [0, 60, 120, 180, 240, 300, 360]
    assert list(lin.values["rps"][2:6]) == [10, 20, 30, 40]


def test_outage_rows_are_data_and_where_turns_them_into_a_gap():
    t = load_trace(NASA, "requests_per_second", start="1995-08-01", gaps="error")
    assert t.report.rows_used == 3600 and (t.values["requests_per_second"] == 0).sum() >= 2263
    text = error(path=NASA, column="requests_per_second", start="1995-08-01", where=("outage=0",))
    assert "gap of 135780 s" in text


def test_empty_slice_and_bad_bounds(tmp_path):
    assert "fewer than 2 rows" in error(path=NASA, column="requests_per_second", start="2000-01-01")
    assert error(path=NASA, column="requests_per_second", start="1995-08-02", end="1995-08-01") == (
        "--start: 1995-08-02 is not before --end 1995-08-01")
    assert "--start: malformed time 'soon'" in error(path=NASA, column="requests_per_second", start="soon")


def test_file_problems(tmp_path):
    assert "cannot read file: no such file" in error(path=tmp_path / "missing.csv", column="x")
    assert "the file is empty" in error(path=write(tmp_path, ""), column="x")
    assert "no 'timestamp' or 'time' column" in error(path=write(tmp_path, "when,x\n0,1\n1,2\n"), column="x")
    assert "unknown gap policy" in error(path=NASA, column="requests", gaps="fill")
    assert "--load-scale" in error(path=NASA, column="requests", load_scale=0)
