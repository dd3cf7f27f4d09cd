"""``spec.schedules`` everywhere the core is used from the command line: the one autoscaler reader (bad input
names file, object and field; exit 2), ``pyhpa explain``, ``pyhpa thresholds``, ``pyhpa schedules`` and
``pyhpa simulate`` (timeline columns, the floor at the start, the stabilized scale-down after the end)."""

from __future__ import annotations

import copy
import json
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from pyhpa.adapters.autoscaler import EXTENSIONS, autoscaler_document, read_autoscaler
from pyhpa.adapters.errors import InputError
from pyhpa.cli.main import app
from pyhpa.simulate import bundled_path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "schedules" / "php-apache-schedules.yaml"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def ha(schedules: list[dict], **spec) -> dict:
    body = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 10,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": 50}}}],
            "schedules": schedules, **spec}
    return {"apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
            "metadata": {"name": "web", "namespace": "shop"}, "spec": body}


BUSINESS = {"name": "business", "start": "0 8 * * 1-5", "end": "0 18 * * 1-5", "timeZone": "America/New_York",
            "minReplicas": 4}
NIGHT = {"name": "night", "start": "0 0 * * *", "durationSeconds": 21600, "timeZone": "America/New_York",
         "maxReplicas": 2}


# ----------------------------------------------------------------------------------------- the reader
def test_the_reader_gives_the_core_windows_with_zones_dates_and_the_object_settings():
    doc = ha([dict(BUSINESS, excludeDates=["2026-12-25", date(2026, 12, 24)]), NIGHT], tolerance=0.05,
             syncPeriodSeconds=30)
    parsed = read_autoscaler(doc)
    business, night = parsed.hpa.schedules
    assert (business.name, business.start, business.end, business.min_replicas) == ("business", "0 8 * * 1-5",
                                                                                     "0 18 * * 1-5", 4)
    assert business.time_zone.key == business.time_zone_name == "America/New_York"
    assert business.exclude_dates == frozenset({date(2026, 12, 25), date(2026, 12, 24)})
    assert (night.duration_seconds, night.max_replicas, night.end) == (21600, 2, None)
    assert (parsed.settings.tolerance, parsed.settings.sync_period_seconds) == (0.05, 30.0)
    assert parsed.kind == "HorizontalAutoscaler" and parsed.label == "HorizontalAutoscaler shop/web"
    assert parsed.hpa.metrics[0].target_utilization == 50
    plain = copy.deepcopy(doc)
    del plain["spec"]["schedules"]
    assert read_autoscaler(plain).hpa.schedules == ()
    assert read_autoscaler(ha([dict(BUSINESS, timeZone=None)])).hpa.schedules[0].time_zone_name == "UTC"
    assert "schedules" in EXTENSIONS


BAD = [
    ([dict(BUSINESS, start="0 25 * * *")], "spec.schedules[0].start", "invalid cron expression '0 25 * * *'"),
    ([dict(BUSINESS, start="@daily")], "spec.schedules[0].start", "must be a 5-field cron expression"),
    ([NIGHT, dict(BUSINESS, timeZone="America/Atlantis")], "spec.schedules[1].timeZone",
     "unknown time zone 'America/Atlantis'"),
    ([dict(BUSINESS, end="0 8 * * 1-5")], "spec.schedules[0].end", "must differ from start"),
    ([{"name": "x", "start": "0 8 * * *", "end": "0 9 * * *"}], "spec.schedules[0].minReplicas",
     "a window needs minReplicas (a floor), maxReplicas (a cap) or both"),
    ([dict(BUSINESS, maxReplicas=3)], "spec.schedules[0].minReplicas", "minReplicas 4 is greater than maxReplicas 3"),
    ([BUSINESS, dict(NIGHT, name="business")], "spec.schedules[1].name",
     "duplicate window name 'business' (also spec.schedules[0].name)"),
    ([dict(BUSINESS, durationSeconds=60)], "spec.schedules[0].durationSeconds", "not both"),
    ([{"name": "x", "start": "0 8 * * *", "minReplicas": 2}], "spec.schedules[0].end", "one of end or durationSeconds"),
    ([dict(BUSINESS, floor=3)], "spec.schedules[0].floor", "unknown field"),
    ([dict(BUSINESS, excludeDates=["25.12.2026"])], "spec.schedules[0].excludeDates[0]", "must be an ISO date"),
    ([dict(BUSINESS, minReplicas="4")], "spec.schedules[0].minReplicas", "must be an integer"),
    ("daily", "spec.schedules", "must be a list of windows"),
]


@pytest.mark.parametrize("schedules, field, words", BAD)
def test_bad_windows_are_one_line_naming_file_object_and_field_exit_2(tmp_path, schedules, field, words):
    assert_refused(tmp_path, schedules, field, words)


def assert_refused(tmp_path: Path, schedules: list[dict], field: str, words: str) -> None:
    """``pyhpa schedules`` and ``pyhpa thresholds`` on an autoscaler with ``schedules``: exit code 2 and one line
    naming the file, the object and ``field``, containing ``words``."""
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(ha(schedules)))
    for command in (("schedules", path), ("thresholds", path)):
        r = invoke(*command)
        assert r.exit_code == 2, r.output
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.output
        assert lines[0].startswith(f"error: {path}: HorizontalAutoscaler shop/web: {field}: "), lines[0]
        assert words in lines[0], lines[0]


def test_unknown_spec_fields_and_extensions_on_an_hpa_are_errors_not_dropped():
    with pytest.raises(InputError) as err:
        read_autoscaler(ha([BUSINESS], prediction_typo={}))
    assert str(err.value).startswith("HorizontalAutoscaler shop/web: spec.prediction_typo: unknown field")
    hpa = ha([BUSINESS])
    hpa["apiVersion"], hpa["kind"] = "autoscaling/v2", "HorizontalPodAutoscaler"
    with pytest.raises(InputError) as err:
        read_autoscaler(hpa)
    assert str(err.value) == ("HorizontalPodAutoscaler shop/web: spec.schedules: only a HorizontalAutoscaler "
                              "(pyhpa.dev/v1alpha1) has this field, not an autoscaling/v2 HorizontalPodAutoscaler")
    with pytest.raises(InputError) as err:
        read_autoscaler(dict(ha([]), kind="Deployment"))
    assert err.value.field == "kind"


def test_a_snapshot_keeps_the_extension_fields_and_leaves_the_settings_to_the_controller_section():
    spec = ha([BUSINESS], tolerance=0.05)["spec"]
    doc = autoscaler_document({"name": "web", "namespace": "shop"}, spec, {"desiredReplicas": 2, "pyhpa": {}})
    assert (doc["apiVersion"], doc["kind"]) == ("pyhpa.dev/v1alpha1", "HorizontalAutoscaler")
    assert doc["spec"]["schedules"] == [BUSINESS] and "tolerance" not in doc["spec"]
    assert doc["status"] == {"desiredReplicas": 2}
    plain = autoscaler_document({"name": "web"}, {k: v for k, v in spec.items() if k != "schedules"}, {})
    assert (plain["apiVersion"], plain["kind"]) == ("autoscaling/v2", "HorizontalPodAutoscaler")


# ----------------------------------------------------------------------------------------- explain
def snapshot(now: str, current: int, usage: str, schedules: list[dict]) -> dict:
    pods, items = [], []
    for i in range(current):
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"web-{i}", "namespace": "shop",
                                                                       "labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "app", "image": "x", "resources": {"requests": {"cpu": "200m"}}}]},
                     "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
                                "conditions": [{"type": "Ready", "status": "True",
                                                "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
        items.append({"metadata": {"name": f"web-{i}", "namespace": "shop"}, "timestamp": now, "window": "30s",
                      "containers": [{"name": "app", "usage": {"cpu": usage}}]})
    return {"name": "web", "now": now, "hpa": ha(schedules), "scale": {"spec": {"replicas": current},
            "status": {"replicas": current, "selector": "app=web"}}, "pods": pods,
            "metrics": {"resource": {"items": items}}, "history": {"recommendations": []}}


def explained(tmp_path: Path, now: str, current: int, usage: str, schedules: list[dict]) -> tuple[str, dict]:
    """``pyhpa explain`` of ``snapshot(now, current, usage, schedules)`` (exit code 0): its text, whitespace runs made
    single spaces, and its ``-o json`` object."""
    path = tmp_path / "snap.yaml"
    path.write_text(yaml.safe_dump(snapshot(now, current, usage, schedules)))
    r = invoke("explain", path)
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split()), json.loads(invoke("explain", "-o", "json", path).output)


def test_explain_shows_the_active_windows_the_bounds_and_who_decided(tmp_path):
    # Tuesday 2026-06-09 12:00 EDT: business hours; 4 pods at 300 % of target ask for 12
    text, out = explained(tmp_path, "2026-06-09T16:00:00Z", 4, "300m", [BUSINESS, NIGHT])
    assert "schedules at now: 1 of 2 window(s) active" in text
    assert ("business: active from 2026-06-09 08:00 EDT to 2026-06-09 18:00 EDT "
            "(2026-06-09T12:00:00Z to 2026-06-09T22:00:00Z): floor 4") in text
    assert "night: not active (cap 2; America/New_York)" in text
    assert "bounds: minReplicas 1 -> 4, maxReplicas 10 (unchanged)" in text
    assert "next start or end of a window: 2026-06-09T22:00:00Z" in text
    assert "decided by: Policy/scaleUpLimit" in text  # 4 -> 12 asked, the scale-up limit allows 8
    assert out["desiredReplicas"] == 8 and out["decidedBy"] == "Policy/scaleUpLimit"
    assert (out["minReplicasEffective"], out["maxReplicasEffective"], out["activeSchedules"]) == (4, 10, ["business"])
    assert out["schedules"] == [{"name": "business", "start": "2026-06-09T12:00:00Z", "end": "2026-06-09T22:00:00Z",
                                 "minReplicas": 4, "maxReplicas": None}]
    assert out["nextScheduleChange"] == "2026-06-09T22:00:00Z"
    assert [(s["source"], s["name"], s["replicas"], s["minReplicas"]) for s in out["sources"]] == [
        ("Metric", "cpu resource utilization (percentage of request)", 12, None), ("Schedule", "business", None, 4)]
    active = {c["type"]: c for c in out["conditions"]}["ScheduleActive"]
    assert (active["status"], active["reason"]) == ("True", "WindowActive")


def test_explain_at_night_the_cap_decides_and_with_kubectl_input_too(tmp_path):
    path = tmp_path / "snap.yaml"
    snap = snapshot("2026-06-09T07:00:00Z", 3, "150m", [BUSINESS, NIGHT])  # 03:00 EDT
    path.write_text(yaml.safe_dump(snap))
    out = json.loads(invoke("explain", "-o", "json", path).output)
    assert out["desiredReplicas"] == 2 and out["decidedBy"] == "Schedule/night"
    assert out["activeSchedules"] == ["night"] and out["maxReplicasEffective"] == 2
    hpa = tmp_path / "ha.yaml"
    hpa.write_text(yaml.safe_dump(dict(snap["hpa"], status={"currentReplicas": 3, "desiredReplicas": 3})))
    pods = tmp_path / "pods.yaml"
    pods.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": snap["pods"]}))
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps(snap["metrics"]["resource"]))
    r = invoke("explain", "-o", "json", "--hpa", hpa, "--pods", pods, "--pod-metrics", metrics,
               "--now", "2026-06-09T07:00:00Z")
    assert r.exit_code == 0, r.output
    kubectl = json.loads(r.output)
    assert (kubectl["desiredReplicas"], kubectl["decidedBy"]) == (2, "Schedule/night")


def test_thresholds_reads_a_horizontal_autoscaler_with_its_own_tolerance(tmp_path):
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(ha([BUSINESS], tolerance=0.2)))
    out = json.loads(invoke("thresholds", "-o", "json", path).output)
    assert out["hpa"] == "shop/web" and out["tolerance"] == {"scaleDown": 0.2, "scaleUp": 0.2}


# ----------------------------------------------------------------------------------------- pyhpa schedules
def test_schedules_lists_starts_and_ends_in_the_window_zone_and_utc_over_a_dst_switch(tmp_path):
    path = tmp_path / "ha.yaml"
    early = {"name": "early", "start": "30 2 * * *", "durationSeconds": 3600, "timeZone": "America/New_York",
             "minReplicas": 3}
    path.write_text(yaml.safe_dump(ha([early, dict(BUSINESS, excludeDates=["2026-03-09"])])))
    r = invoke("schedules", path, "--from", "2026-03-07T12:00:00Z", "--to", "2026-03-10T13:00:00Z", "-o", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    rows = [(o["window"], o["startLocal"], o["endLocal"], o["start"]) for o in out["occurrences"]]
    assert rows == [
        ("early", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00", "2026-03-08T07:00:00Z"),  # 02:30 skipped
        ("early", "2026-03-09T02:30:00-04:00", "2026-03-09T03:30:00-04:00", "2026-03-09T06:30:00Z"),
        ("early", "2026-03-10T02:30:00-04:00", "2026-03-10T03:30:00-04:00", "2026-03-10T06:30:00Z"),
        ("business", "2026-03-10T08:00:00-04:00", "2026-03-10T18:00:00-04:00", "2026-03-10T12:00:00Z"),
    ]  # Saturday and Sunday have no business hours; Monday 9 March is excluded
    text = " ".join(invoke("schedules", path, "--from", "2026-03-07T12:00:00Z", "--to", "2026-03-10T12:00:00Z")
                    .output.split())
    assert "2026-03-08 03:00 EDT" in text and "2026-03-08 07:00 UTC" in text
    running = json.loads(invoke("schedules", path, "--from", "2026-03-10T15:00:00Z", "--to", "2026-03-10T16:00:00Z",
                                "-o", "json").output)
    assert [(o["window"], o["running"]) for o in running["occurrences"]] == [("business", True)]
    r = invoke("schedules", path, "--from", "2026-03-10T00:00:00Z", "--to", "2026-03-09T00:00:00Z")
    assert r.exit_code == 2 and r.output.startswith("error: --to: must be after --from")


def test_schedules_of_the_example_in_its_time_zone(tmp_path):
    r = invoke("schedules", EXAMPLE, "--from", "1995-07-12T00:00:00-04:00", "--to", "1995-07-13T00:00:00-04:00",
               "-o", "json")
    assert r.exit_code == 0, r.output
    rows = [(o["window"], o["startLocal"], o["endLocal"]) for o in json.loads(r.output)["occurrences"]]
    assert rows == [("night", "1995-07-12T00:00:00-04:00", "1995-07-12T06:00:00-04:00"),
                    ("business-hours", "1995-07-12T08:00:00-04:00", "1995-07-12T18:00:00-04:00")]


# the reported case (issue 37): a window inside the hour skipped when the clocks spring forward
GAP = {"name": "gap", "start": "30 2 * * *", "end": "45 2 * * *", "minReplicas": 4}


@pytest.mark.parametrize("zone, day, offset", [("Europe/Berlin", "2026-03-29", "+02:00"),
                                               ("America/New_York", "2026-03-08", "-04:00")])
def test_schedules_lists_a_window_inside_the_skipped_hour_as_empty_that_day_not_held_for_a_day(
        tmp_path, zone, day, offset):
    """It was listed from 03:00 to 02:45 the next day (a floor held 23 h 45 min); its start and end both happen
    when the gap ends, at 03:00: the occurrence is empty, and the next day's is 02:30 to 02:45 again."""
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(ha([dict(GAP, timeZone=zone)])))
    r = invoke("schedules", path, "--from", f"{day}T00:00:00{offset}", "--to", f"{day}T23:59:00{offset}", "-o", "json")
    assert r.exit_code == 0, r.output
    nxt = f"{day[:-2]}{int(day[-2:]) + 1:02d}"
    r = invoke("schedules", path, "--from", f"{day}T00:00:00{offset}", "--to", f"{nxt}T12:00:00{offset}", "-o", "json")
    rows = [(o["startLocal"], o["endLocal"], o["running"]) for o in json.loads(r.output)["occurrences"]]
    assert rows == [(f"{day}T03:00:00{offset}", f"{day}T03:00:00{offset}", False),
                    (f"{nxt}T02:30:00{offset}", f"{nxt}T02:45:00{offset}", False)]
    text = invoke("schedules", path, "--from", f"{day}T00:00:00{offset}", "--to", f"{nxt}T12:00:00{offset}").output
    assert text.count("(empty: in the DST gap)") == 1
    # from the gap's end itself, the empty occurrence is still listed (it starts there), not as running
    at_gap = json.loads(invoke("schedules", path, "--from", f"{day}T03:00:00{offset}", "--to",
                               f"{day}T04:00:00{offset}", "-o", "json").output)
    assert [(o["startLocal"], o["endLocal"], o["running"]) for o in at_gap["occurrences"]] == [rows[0]]


@pytest.mark.parametrize("zone, day, offset, next_start", [
    ("Europe/Berlin", "2026-03-29", "+02:00", "2026-03-30T00:30:00Z"),
    ("America/New_York", "2026-03-08", "-04:00", "2026-03-09T06:30:00Z")])
def test_explain_on_the_spring_forward_day_does_not_apply_the_floor_of_a_window_inside_the_skipped_hour(
        tmp_path, zone, day, offset, next_start):
    """The core's activity, as explain uses it: at the gap's end, an hour later and 23 h 44 min later no floor
    (before the fix the floor of 4 held from 03:00 to 02:45 the next day); the next day at 02:40 it applies."""
    nxt = f"{day[:-2]}{int(day[-2:]) + 1:02d}"
    gap = dict(GAP, timeZone=zone)
    for now, floor in ((f"{day}T03:00:00{offset}", None), (f"{day}T04:00:00{offset}", None),
                       (f"{nxt}T02:29:00{offset}", None), (f"{nxt}T02:40:00{offset}", 4)):
        path = tmp_path / "snap.yaml"
        path.write_text(yaml.safe_dump(snapshot(now, 2, "20m", [gap])))
        out = json.loads(invoke("explain", "-o", "json", path).output)
        assert out["activeSchedules"] == ([] if floor is None else ["gap"]), now
        assert out["minReplicasEffective"] == (1 if floor is None else 4), now
        assert out["desiredReplicas"] == (1 if floor is None else 4), now
    path.write_text(yaml.safe_dump(snapshot(f"{day}T01:00:00{offset}", 2, "20m", [gap])))
    assert json.loads(invoke("explain", "-o", "json", path).output)["nextScheduleChange"] == next_start


def test_simulate_over_the_spring_forward_day_applies_no_floor_for_a_window_inside_the_skipped_hour(tmp_path):
    """Through ``pyhpa simulate`` (the core's activity at every sync) from the gap day's midnight to 03:00 the next
    day in Europe/Berlin: the window is active only on 30 March, 02:30 to 02:45 CEST (before the fix: from
    03:00 on 29 March to 02:45 the next day)."""
    doc = ha([dict(GAP, timeZone="Europe/Berlin")])
    doc["spec"]["scaleTargetRef"]["name"] = "php-apache"
    del doc["metadata"]["namespace"]
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(doc))
    trace = tmp_path / "trace.csv"
    first = pd.Timestamp("2026-03-29T00:00:00+01:00")
    times = [(first + pd.Timedelta(minutes=m)).isoformat() for m in range(27 * 60)]
    pd.DataFrame({"timestamp": times, "requests_per_second": 0.5}).to_csv(trace, index=False)
    out = tmp_path / "out"
    r = invoke("simulate", "--no-progress", "--no-plot", "--hpa", path, "--target", bundled_path("target"),
               "--profile", bundled_path("profile"), "--trace", trace, "--column", "requests_per_second",
               "--output-dir", out)
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out / "timeline.csv", keep_default_na=False)
    t = pd.to_datetime(df.time, utc=True)
    active = df[df.active_schedules == "gap"]
    assert len(df) > 6000 and len(active) > 0
    assert t[active.index].min() == pd.Timestamp("2026-03-30T00:30:00Z")  # 02:30 CEST on 30 March
    assert t[active.index].max() < pd.Timestamp("2026-03-30T00:45:00Z")
    assert set(active.min_replicas_effective) == {4}
    assert set(df[df.active_schedules != "gap"].min_replicas_effective) == {1}

# ----------------------------------------------------------------------------------------- simulate
def simulated(tmp_path: Path, hpa: Path) -> pd.DataFrame:
    """``timeline.csv`` of ``pyhpa simulate`` of ``hpa`` on the bundled NASA example (exit code 0), its outputs in
    ``tmp_path/out``."""
    out = tmp_path / "out"
    r = invoke("simulate", "--no-progress", "--hpa", hpa, "--target", bundled_path("target"),
               "--profile", bundled_path("profile"), "--trace", bundled_path("trace"), "--column", "requests_per_second",
               "--output-dir", out)
    assert r.exit_code == 0, r.output
    return pd.read_csv(out / "timeline.csv", keep_default_na=False)


def test_simulate_the_example_floor_cap_and_stabilized_scale_down(tmp_path):
    df = simulated(tmp_path, EXAMPLE)
    assert list(df.columns[-3:]) == ["min_replicas_effective", "max_replicas_effective", "active_schedules"]
    day = df[(df.time >= "1995-07-12T08:00:00-04:00") & (df.time < "1995-07-12T18:00:00-04:00")]
    night = df[(df.time >= "1995-07-12T00:00:00-04:00") & (df.time < "1995-07-12T06:00:00-04:00")]
    assert set(day.active_schedules) == {"business-hours"} and set(day.min_replicas_effective) == {4}
    assert set(night.active_schedules) == {"night"} and set(night.max_replicas_effective) == {1}
    assert night.desired_replicas.max() == 1 and day.desired_replicas.min() == 4
    at_start = df[df.time == "1995-07-12T08:00:00-04:00"].iloc[0]
    assert at_start.desired_replicas == 4 and at_start.current_replicas < 4  # at the start, not a sync later
    after = df[(df.time >= "1995-07-12T18:00:00-04:00") & (df.time < "1995-07-12T18:10:00-04:00")]
    assert set(after.active_schedules) == {""} and set(after.min_replicas_effective) == {1}
    held = after[after.desired_replicas == 4]
    assert held.time.max() == "1995-07-12T18:04:45-04:00"  # the 300 s window from the last sync at the floor
    assert after[after.time == "1995-07-12T18:05:00-04:00"].desired_replicas.iloc[0] < 4
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["settings"]["sync_period_seconds"] == 15.0
    assert (tmp_path / "out" / "plot.png").stat().st_size > 10_000


def test_simulate_applies_the_autoscalers_own_settings(tmp_path):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["spec"].update(syncPeriodSeconds=30, tolerance=0.2)
    path = tmp_path / "ha.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    r = invoke("simulate", "--no-progress", "--no-plot", "--hpa", path, "--target", bundled_path("target"),
               "--profile", bundled_path("profile"), "--trace", bundled_path("trace"), "--column",
               "requests_per_second", "--end", "1995-07-12T02:00:00-04:00", "--output-dir", out)
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["sync_period_seconds"] == 30.0 and summary["settings"]["controller"]["tolerance"] == 0.2
    assert summary["syncs"] == 2 * 3600 // 30
