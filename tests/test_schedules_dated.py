"""Dated windows (``spec.schedules[]`` with a ``start`` and an ``end`` date-time instead of crons): the core
(active once, then expired, next change), the reader (RFC 3339 with an offset or a wall-clock time in
``timeZone``; bad input one line naming file, object and field, exit 2), ``pyhpa schedules``, ``explain``,
``simulate`` and ``pyhpa run`` against the API double (status ``schedules.expired``)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml
from controller_util import ControllerTask, wait_for
from test_schedules_cli import assert_refused, explained, ha, simulated, snapshot
from test_schedules_controller import condition, stored_status, synced, through_a_window, world
from typer.testing import CliRunner

from pyhpa.adapters.autoscaler import read_autoscaler
from pyhpa.adapters.errors import InputError
from pyhpa.cli.main import app
from pyhpa.core import (
    WindowSpec,
    active_windows,
    check_window,
    check_windows,
    expired_windows,
    next_change,
    occurrences,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "schedules" / "php-apache-dated.yaml"
NY = ZoneInfo("America/New_York")
UTC = ZoneInfo("UTC")
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def utc(*fields) -> float:
    return datetime(*fields, tzinfo=timezone.utc).timestamp()


def dated(name="sale", start=utc(2026, 11, 27, 5), end=utc(2026, 11, 30, 5), **kw) -> WindowSpec:
    return WindowSpec(name=name, start="(date-time)", end="(date-time)", time_zone=UTC, start_time=start,
                          end_time=end, **kw)


SALE = {"name": "sale", "start": "2026-11-27T00:00:00", "end": "2026-11-30T00:00:00", "timeZone": "America/New_York",
        "minReplicas": 5}
LAUNCH = {"name": "launch", "start": "2026-11-20T09:00:00-05:00", "end": "2026-11-20T17:00:00Z", "maxReplicas": 8}


# ----------------------------------------------------------------------------------------- the core
def test_a_dated_window_is_active_once_from_start_up_to_end_then_expired():
    w = dated(min_replicas=5)
    start, end = w.start_time, w.end_time
    assert active_windows([w], start - 1) == () and expired_windows([w], start - 1) == ()
    (a,) = active_windows([w], start)
    assert (a.name, a.start, a.end, a.min_replicas) == ("sale", start, end, 5)
    assert [x.name for x in active_windows([w], end - 0.001)] == ["sale"]
    assert active_windows([w], end) == () and expired_windows([w], end) == ("sale",)
    assert active_windows([w], end + 365 * 86400) == ()  # never again, a year later either
    assert next_change([w], start - 3600) == start and next_change([w], start + 10) == end
    assert next_change([w], end) is None


def test_a_dated_window_has_one_occurrence_in_any_span_that_overlaps_it():
    w = dated(max_replicas=2)
    assert list(occurrences(w, w.start_time - 86400, w.start_time)) == []
    assert list(occurrences(w, w.start_time - 86400, w.start_time + 1)) == [(w.start_time, w.end_time)]
    assert list(occurrences(w, w.end_time - 1, w.end_time + 86400)) == [(w.start_time, w.end_time)]  # running
    assert list(occurrences(w, w.end_time, w.end_time + 86400)) == []


@pytest.mark.parametrize("kw, field, words", [
    ({"end": utc(2026, 11, 26)}, "end", "must be after start"),
    ({"end": utc(2026, 11, 27, 5)}, "end", "must be after start"),
    ({"duration_seconds": 60}, "durationSeconds", "not durationSeconds"),
    ({"exclude_dates": frozenset({datetime(2026, 11, 28).date()})}, "excludeDates", "cron windows only"),
    ({"min_replicas": None}, "minReplicas", "a window needs minReplicas"),
])
def test_check_window_of_a_dated_window_names_the_field(kw, field, words):
    w = dated(**{"min_replicas": 2, **kw})
    problems = check_window(w)
    assert problems and problems[0][0] == field and words in problems[0][1], problems


def test_dated_windows_of_the_same_kind_must_not_overlap_touching_and_other_kinds_may():
    floor = dated("a", min_replicas=3)
    assert check_windows([floor, dated("b", start=floor.end_time, end=floor.end_time + 60, min_replicas=4)]) == []
    assert check_windows([floor, dated("cap", max_replicas=2)]) == []  # a floor and a cap
    ((i, field, message),) = check_windows([floor, dated("b", start=floor.end_time - 60,
                                                           end=floor.end_time + 60, min_replicas=4)])
    assert (i, field) == (1, "start")
    assert "'b' overlaps dated window 'a' (spec.schedules[0]); both are floors" in message
    both = check_windows([dated("a", min_replicas=1, max_replicas=9), dated("b", min_replicas=2, max_replicas=8)])
    assert "both are floors and caps" in both[0][2]


# ----------------------------------------------------------------------------------------- the reader
def test_the_reader_parses_rfc3339_with_an_offset_and_wall_clock_times_in_the_zone():
    parsed = read_autoscaler(ha([SALE, LAUNCH]))
    sale, launch = parsed.hpa.schedules
    assert sale.dated and launch.dated
    assert (sale.start, sale.end) == ("2026-11-27T00:00:00", "2026-11-30T00:00:00")  # what the user gave
    assert sale.start_time == datetime(2026, 11, 27, tzinfo=NY).timestamp() == utc(2026, 11, 27, 5)  # EST
    assert (launch.start_time, launch.end_time) == (utc(2026, 11, 20, 14), utc(2026, 11, 20, 17))
    assert launch.time_zone_name == "UTC"


def test_the_reader_takes_unquoted_yaml_date_times_and_the_first_reading_of_a_repeated_hour(tmp_path):
    text = yaml.safe_dump(ha([])).replace("schedules: []", """schedules:
  - name: fallback-night
    start: 2026-11-01T01:30:00
    end: 2026-11-01T03:00:00
    timeZone: America/New_York
    minReplicas: 2
  - name: z
    start: 2026-12-01T00:00:00Z
    end: 2026-12-02T00:00:00Z
    maxReplicas: 3""")
    doc = yaml.safe_load(text)
    assert isinstance(doc["spec"]["schedules"][0]["start"], datetime)  # YAML's own timestamp type
    night, z = read_autoscaler(doc).hpa.schedules
    assert night.start_time == datetime(2026, 11, 1, 1, 30, tzinfo=NY, fold=0).timestamp() == utc(2026, 11, 1, 5, 30)
    assert (z.start_time, z.end_time) == (utc(2026, 12, 1), utc(2026, 12, 2))


@pytest.mark.parametrize("start, end, expected", [
    # a wall-clock time in the repeated hour is its first reading (EDT, -04:00), as a cron start's
    ("2026-11-01T01:30:00", "2026-11-01T03:00:00", (utc(2026, 11, 1, 5, 30), utc(2026, 11, 1, 8))),
    ("2026-11-01T00:30:00", "2026-11-01T01:30:00", (utc(2026, 11, 1, 4, 30), utc(2026, 11, 1, 5, 30))),
    # with an offset: the second reading (EST), or an instant in the skipped hour's place
    ("2026-11-01T01:15:00-05:00", "2026-11-01T01:45:00-05:00", (utc(2026, 11, 1, 6, 15), utc(2026, 11, 1, 6, 45))),
    ("2026-03-08T02:30:00-05:00", "2026-03-08T04:00:00-04:00", (utc(2026, 3, 8, 7, 30), utc(2026, 3, 8, 8))),
    # just around the gap: 01:59 EST and 03:00 EDT are one minute apart
    ("2026-03-08T01:59:00", "2026-03-08T03:00:00", (utc(2026, 3, 8, 6, 59), utc(2026, 3, 8, 7))),
])
def test_dated_windows_around_dst_are_the_instants_of_their_wall_clock_times(start, end, expected):
    """A dated window is one occurrence of exact instants: a wall-clock time in the repeated hour is its first
    reading, one in the skipped hour does not exist and is refused naming the field (``BAD``), an offset picks
    any instant. Active exactly from start up to end."""
    (w,) = read_autoscaler(ha([dict(SALE, start=start, end=end)])).hpa.schedules
    assert (w.start_time, w.end_time) == expected
    assert [a.name for a in active_windows([w], expected[0])] == ["sale"]
    assert active_windows([w], expected[0] - 1) == () and active_windows([w], expected[1]) == ()
    assert list(occurrences(w, expected[0] - 86400, expected[1] + 86400)) == [expected]


BAD = [
    ([dict(SALE, end="2026-11-26T00:00:00")], "spec.schedules[0].end",
     "must be after start ('2026-11-26T00:00:00' is not after '2026-11-27T00:00:00')"),
    ([SALE, dict(SALE, name="sale2", start="2026-11-29T00:00:00", end="2026-12-01T00:00:00")],
     "spec.schedules[1].start", "dated window 'sale2' overlaps dated window 'sale' (spec.schedules[0]); both are floors"),
    ([dict(SALE, end="0 8 * * *")], "spec.schedules[0].end", "must both be date-times or both crons"),
    ([dict(SALE, end="2026-11-30T00:00:00Z")], "spec.schedules[0].end", "both with a UTC offset or both without"),
    ([dict(SALE, start="2026-03-08T02:30:00", end="2026-03-08T05:00:00")], "spec.schedules[0].start",
     "2026-03-08T02:30:00 does not exist in America/New_York"),
    ([dict(SALE, start="2026-03-08T01:00:00", end="2026-03-08T02:45:00")], "spec.schedules[0].end",
     "2026-03-08T02:45:00 does not exist in America/New_York"),
    ([dict(SALE, start="2026-03-08T02:30:00", end="2026-03-08T02:45:00")], "spec.schedules[0].start",
     "2026-03-08T02:30:00 does not exist in America/New_York"),
    ([dict(SALE, start="2026-11-01T01:45:00", end="2026-11-01T01:15:00")], "spec.schedules[0].end",
     "must be after start"),  # both in the first reading of the repeated hour: give offsets for the second
    ([dict(SALE, start="2026-11-27")], "spec.schedules[0].start", "must be a date-time such as"),
    ([dict(SALE, start="2026-11-27T24:00:00")], "spec.schedules[0].start", "must be a date-time such as"),
    ([dict(SALE, start="2026-02-30T00:00:00")], "spec.schedules[0].start", "not a valid date-time"),
    ([{k: v for k, v in SALE.items() if k != "end"} | {"durationSeconds": 3600}], "spec.schedules[0].end",
     "needs an end date-time"),
    ([dict(SALE, excludeDates=["2026-11-28"])], "spec.schedules[0].excludeDates", "cron windows only"),
]


@pytest.mark.parametrize("schedules, field, words", BAD)
def test_bad_dated_windows_are_one_line_naming_file_object_and_field_exit_2(tmp_path, schedules, field, words):
    assert_refused(tmp_path, schedules, field, words)


def test_an_unquoted_yaml_date_alone_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(ha([SALE])).replace("start: '2026-11-27T00:00:00'", "start: 2026-11-27"))
    r = invoke("schedules", path)
    assert r.exit_code == 2 and "spec.schedules[0].start: a dated window needs a date and a time" in r.output


# ----------------------------------------------------------------------------------------- the commands
def test_pyhpa_schedules_lists_a_dated_window_once_and_reports_it_expired_after_its_end(tmp_path):
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(ha([SALE, LAUNCH])))
    r = invoke("schedules", path, "-o", "json", "--from", "2026-11-19T00:00:00Z", "--to", "2026-12-19T00:00:00Z")
    out = json.loads(r.output)
    assert [(o["window"], o["start"], o["end"], o["startLocal"]) for o in out["occurrences"]] == [
        ("launch", "2026-11-20T14:00:00Z", "2026-11-20T17:00:00Z", "2026-11-20T14:00:00+00:00"),
        ("sale", "2026-11-27T05:00:00Z", "2026-11-30T05:00:00Z", "2026-11-27T00:00:00-05:00")]
    assert out["expired"] == []
    later = json.loads(invoke("schedules", path, "-o", "json", "--from", "2026-11-21T00:00:00Z").output)
    assert [o["window"] for o in later["occurrences"]] == ["sale"]
    assert later["expired"] == [{"window": "launch", "timeZone": "UTC", "start": "2026-11-20T14:00:00Z",
                                 "end": "2026-11-20T17:00:00Z", "minReplicas": None, "maxReplicas": 8}]
    text = invoke("schedules", path, "--from", "2026-12-01T00:00:00Z")
    assert text.exit_code == 0
    flat = " ".join(text.output.split())
    assert "launch: expired (dated window that ended 2026-11-20 17:00 UTC, 2026-11-20T17:00:00Z); it never " \
           "applies again" in flat
    assert "sale: expired (dated window that ended 2026-11-30 00:00 EST, 2026-11-30T05:00:00Z)" in flat


def test_explain_shows_a_dated_floor_deciding_and_an_expired_window(tmp_path):
    # 2026-11-28 12:00 UTC: the sale is on (floor 5), the launch cap has expired; 2 pods at 10 % ask for 1
    text, out = explained(tmp_path, "2026-11-28T12:00:00Z", 2, "20m", [SALE, LAUNCH])
    assert ("sale: active from 2026-11-27 00:00 EST to 2026-11-30 00:00 EST (2026-11-27T05:00:00Z to "
            "2026-11-30T05:00:00Z): floor 5") in text
    assert "launch: not active (expired: ended 2026-11-20 17:00 UTC; cap 8)" in text
    assert "decided by: Schedule/sale" in text
    assert (out["desiredReplicas"], out["decidedBy"], out["activeSchedules"]) == (5, "Schedule/sale", ["sale"])
    assert out["expiredSchedules"] == ["launch"] and out["nextScheduleChange"] == "2026-11-30T05:00:00Z"
    before = tmp_path / "before.yaml"
    before.write_text(yaml.safe_dump(snapshot("2026-11-19T12:00:00Z", 2, "20m", [SALE, LAUNCH])))
    early = " ".join(invoke("explain", before).output.split())
    assert "sale: not active (dated, starts 2026-11-27 00:00 EST; floor 5)" in early
    assert json.loads(invoke("explain", "-o", "json", before).output)["nextScheduleChange"] == "2026-11-20T14:00:00Z"


def test_simulate_the_dated_example_floor_and_cap_apply_once(tmp_path):
    df = simulated(tmp_path, EXAMPLE)
    launch = df[(df.time >= "1995-07-13T06:00:00-04:00") & (df.time < "1995-07-13T09:00:00-04:00")]
    upkeep = df[(df.time >= "1995-07-12T14:00:00-04:00") & (df.time < "1995-07-12T16:00:00-04:00")]
    assert set(launch.active_schedules) == {"launch"} and set(launch.min_replicas_effective) == {6}
    assert launch.desired_replicas.min() == 6
    assert df[df.time == "1995-07-13T06:00:00-04:00"].desired_replicas.iloc[0] == 6  # at the start
    assert set(upkeep.active_schedules) == {"maintenance"} and upkeep.desired_replicas.max() <= 3
    rest = df[~df.index.isin(launch.index) & ~df.index.isin(upkeep.index)]
    assert set(rest.active_schedules) == {""}  # once each: not on the other day at the same hours
    assert set(rest.min_replicas_effective) == {1} and set(rest.max_replicas_effective) == {10}


def test_the_dated_example_is_valid_and_its_windows_are_dated():
    parsed = read_autoscaler(yaml.safe_load(EXAMPLE.read_text()))
    assert [(w.name, w.dated) for w in parsed.hpa.schedules] == [("launch", True), ("maintenance", True)]
    with pytest.raises(InputError):
        read_autoscaler(ha([dict(SALE, end="2026-11-27T00:00:00")]))


# ----------------------------------------------------------------------------------------- pyhpa run
async def test_the_controller_applies_a_dated_floor_once_and_reports_it_expired(kd):
    """Sync period 60 s; a dated floor of 3 starts 1.5 s after the first sync and lasts 3 s: the controller syncs
    at its start (floor), at its end (status: expired), and the window never comes back."""
    start = utc(2026, 11, 27, 5)
    window = {"name": "sale", "start": "2026-11-27T00:00:00", "end": "2026-11-27T00:00:03",
              "timeZone": "America/New_York", "minReplicas": 3}
    await world(kd, [window])
    syncs = await through_a_window(kd, start, lambda: stored_status(kd).get("schedules", {}).get("expired")
                                   == ["sale"], "the expired window in the status")
    assert str(syncs[1].decision.decided_by) == "Schedule/sale" and start <= syncs[1].gathered.inputs.now < start + 1
    end = syncs[2].decision
    assert start + 3 <= syncs[2].gathered.inputs.now and end.status.schedules.expired == ("sale",)
    assert end.status.schedules.next_change is None  # nothing left to happen
    status = stored_status(kd)
    assert status["schedules"] == {"active": [], "expired": ["sale"]}
    assert condition(status, "ScheduleActive")["status"] == "False"
    assert kd.invalid_requests == []


async def test_the_controller_reports_an_overlap_the_crd_cannot_see_as_invalid_spec(kd):
    """Wall-clock date-times in two zones: CEL cannot put them on one time line, the controller can."""
    await world(kd, [
        {"name": "a", "start": "2026-11-27T00:00:00", "end": "2026-11-27T06:00:00", "timeZone": "America/New_York",
         "minReplicas": 2},
        {"name": "b", "start": "2026-11-27T08:00:00", "end": "2026-11-27T12:00:00", "timeZone": "Europe/Berlin",
         "minReplicas": 3}])
    async with ControllerTask(kd, sync_period_seconds=60) as run:
        await synced(run)
        await wait_for(lambda: condition(stored_status(kd), "ScalingActive"), what="the condition")
    cond = condition(stored_status(kd), "ScalingActive")
    assert (cond["status"], cond["reason"]) == ("False", "InvalidSpec")
    assert cond["message"].startswith("the HPA spec is invalid: spec.schedules[1].start: dated window 'b' overlaps "
                                      "dated window 'a' (spec.schedules[0]); both are floors")
    assert kd.invalid_requests == []
