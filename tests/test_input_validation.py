"""Bad input a new user meets (issue 20): quantities the API server refuses or that make no sense as a target,
replica counts beyond int32 or below 0, huge maxReplicas, malformed traces, empty snapshot files, a --server that
is no URL, kubedouble without its extra. Each ends in exit 2 and one line naming the file, object and field
(golden lines below), or in a bounded output; property tests: any quantity or trace row gives a result or one
such line, never a traceback."""

from __future__ import annotations

import copy
import gzip
import json
import math
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest
import typer
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pyhpa.adapters.errors import InputError
from pyhpa.adapters.objects import hpa_from_dict
from pyhpa.adapters.parse import MAX_INT32, MAX_MILLI, int32_value, quantity
from pyhpa.cli.main import app
from pyhpa.cli.thresholds_cmd import MAX_ROWS

ROOT = Path(__file__).resolve().parent.parent
NASA = ROOT / "examples" / "simulate" / "nasa"
TRACE = ROOT / "examples" / "traces" / "nasa_http_1995-07-10_16_per_minute.csv"
SNAPSHOT = ROOT / "examples" / "explain" / "snapshot.yaml"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def error_line(r) -> str:
    """The one line of a refused input (exit 2, nothing else printed, no traceback)."""
    assert r.exit_code == 2, (r.exit_code, r.output)
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


def hpa_doc(target: dict, max_replicas: int = 10, metric: str = "Pods") -> dict:
    source = {"metric": {"name": "rps"}, "target": target} if metric == "Pods" else {"name": "cpu", "target": target}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": max_replicas,
                     "metrics": [{"type": metric, metric.lower(): source}]},
            "status": {"currentReplicas": 3, "desiredReplicas": 3}}


def write(path: Path, doc) -> Path:
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return path


# ------------------------------------------------------------------------------------------- target quantities
AV = "HorizontalPodAutoscaler default/web: spec.metrics[0].pods.target.averageValue"
BAD_TARGETS = {
    "0": f"{AV}: must be positive, got '0'",
    "-1": f"{AV}: must be positive, got '-1'",
    "1e300": f"{AV}: must be between -9223372036854775808m and 9223372036854775807m (about ±9.2P: upstream reads "
             "quantities as int64 milli-values), got '1e300'",
    "1e400": f"{AV}: must be between -9223372036854775808m and 9223372036854775807m (about ±9.2P: upstream reads "
             "quantities as int64 milli-values), got '1e400'",
    "NaN": f"{AV}: malformed quantity 'NaN'",
}


@pytest.mark.parametrize("value", list(BAD_TARGETS))
@pytest.mark.parametrize("command", ["thresholds", "explain"])
def test_a_target_averagevalue_the_api_server_refuses_is_one_line(tmp_path, value, command):
    f = write(tmp_path / "hpa.yaml", hpa_doc({"type": "AverageValue", "averageValue": value}))
    args = ["thresholds", f] if command == "thresholds" else ["explain", "--hpa", f, "--recommendation", 3]
    assert error_line(invoke(*args)) == f"error: {f}: {BAD_TARGETS[value]}"


@pytest.mark.parametrize("target, line", [
    ({"type": "Value", "value": "0"}, "spec.metrics[0].pods.target.value: must be positive, got '0'"),
    ({"type": "AverageValue", "averageValue": -0.5}, "spec.metrics[0].pods.target.averageValue: must be positive, got '-0.5'"),
    ({"type": "AverageValue", "averageValue": float("inf")}, "spec.metrics[0].pods.target.averageValue: expected a quantity, got inf"),
])
def test_value_targets_zero_negative_and_infinite_are_refused(tmp_path, target, line):
    doc = hpa_doc(target)
    if target["type"] == "Value":  # Pods metrics take AverageValue only; Value belongs to Object/External
        doc["spec"]["metrics"] = [{"type": "External", "external": {"metric": {"name": "queue"}, "target": target}}]
        line = line.replace("pods.", "external.")
    f = tmp_path / "hpa.json"
    f.write_text(json.dumps(doc).replace("Infinity", "1e999"))  # JSON has no inf: 1e999 reads as one
    assert error_line(invoke("thresholds", f)) == f"error: {f}: HorizontalPodAutoscaler default/web: {line}"


def test_a_utilization_target_of_zero_and_beyond_int32_is_refused(tmp_path):
    for value, problem in ((0, "must be greater than 0, got 0"),
                           (2**31, "must be at most 2147483647 (an int32), got 2147483648")):
        f = write(tmp_path / f"u{value}.yaml", hpa_doc({"type": "Utilization", "averageUtilization": value},
                                                        metric="Resource"))
        assert error_line(invoke("thresholds", f)) == (
            f"error: {f}: HorizontalPodAutoscaler default/web: spec.metrics[0].resource.target.averageUtilization: "
            f"{problem}")


def test_simulate_refuses_a_zero_target_before_running(tmp_path):
    doc = yaml.safe_load((NASA / "hpa.yaml").read_text())
    doc["spec"]["metrics"][0]["resource"]["target"] = {"type": "AverageValue", "averageValue": "0"}
    f = write(tmp_path / "hpa.yaml", doc)
    r = invoke("simulate", "--hpa", f, "--target", NASA / "deployment.yaml", "--trace", TRACE, "--column", "requests",
               "--no-plot", "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == (f"error: {f}: HorizontalPodAutoscaler web/ksc-web: "
                             "spec.metrics[0].resource.target.averageValue: must be positive, got '0'")


def test_a_quantity_in_an_error_line_is_shown_as_written_and_at_most_40_characters():
    with pytest.raises(InputError) as err:
        quantity(1e300, "spec.x")
    assert str(err.value).endswith("got 1e+300")
    with pytest.raises(InputError) as err:
        quantity("1" + "0" * 300, "spec.x")
    assert str(err.value).endswith("milli-values), got '" + "1" + "0" * 36 + "...'")


def test_pod_requests_beyond_int64_milli_are_refused_in_a_snapshot(tmp_path):
    doc = yaml.safe_load(SNAPSHOT.read_text())
    doc["pods"][0]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1e20"
    f = write(tmp_path / "snap.yaml", doc)
    line = error_line(invoke("explain", f))
    assert line.startswith(f"error: {f}: snapshot 'php-apache-scale-up-with-a-starting-pod': Pod default/")
    assert line.endswith(": pods[0].spec.containers[0].resources.requests.cpu: must be between -9223372036854775808m and "
                         "9223372036854775807m (about ±9.2P: upstream reads quantities as int64 milli-values), got '1e20'")


# ------------------------------------------------------------------------------------------- replica counts
def test_a_negative_deployment_replicas_is_refused_by_simulate(tmp_path):
    doc = yaml.safe_load((NASA / "deployment.yaml").read_text())
    doc["spec"]["replicas"] = -3
    f = write(tmp_path / "deployment.yaml", doc)
    r = invoke("simulate", "--hpa", NASA / "hpa.yaml", "--target", f, "--trace", TRACE, "--column", "requests",
               "--no-plot", "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == f"error: {f}: Deployment web/ksc-web: spec.replicas: must be 0 or more, got -3"


@pytest.mark.parametrize("where, value, line", [
    ("spec", -5, "scale.spec.replicas: must be 0 or more, got -5"),
    ("status", 3000000000, "scale.status.replicas: must be at most 2147483647 (an int32), got 3000000000"),
])
def test_a_snapshot_scale_with_bad_replicas_is_refused(tmp_path, where, value, line):
    doc = yaml.safe_load(SNAPSHOT.read_text())
    doc["scale"][where]["replicas"] = value
    f = write(tmp_path / "snap.yaml", doc)
    assert error_line(invoke("explain", f)) == f"error: {f}: snapshot 'php-apache-scale-up-with-a-starting-pod': {line}"


@pytest.mark.parametrize("flag, value, line", [
    ("--recommendation", 3000000000, "must be at most 2147483647 (an int32), got 3000000000"),
    ("--recommendation", -1, "must be 0 or more, got -1"),
    ("--replicas", 2**31, "must be at most 2147483647 (an int32), got 2147483648"),
])
def test_explain_count_flags_are_int32(flag, value, line):
    hpa = ROOT / "examples" / "explain" / "hpa.yaml"
    args = ["explain", "--hpa", hpa, "--recommendation", 3] if flag == "--replicas" else ["explain", "--hpa", hpa]
    assert error_line(invoke(*args, flag, value)) == f"error: {flag}: {line}"


@pytest.mark.parametrize("field, value, line", [
    ("maxReplicas", 2**31, "spec.maxReplicas: must be at most 2147483647 (an int32), got 2147483648"),
    ("minReplicas", -2, "spec.minReplicas: minReplicas must not be negative"),
])
def test_min_and_max_replicas_are_int32(tmp_path, field, value, line):
    doc = hpa_doc({"type": "AverageValue", "averageValue": "1"})
    doc["spec"][field] = value
    f = write(tmp_path / "hpa.yaml", doc)
    assert error_line(invoke("thresholds", f)) == f"error: {f}: HorizontalPodAutoscaler default/web: {line}"


@pytest.mark.parametrize("rules, line", [
    ({"policies": [{"type": "Pods", "value": 0, "periodSeconds": 60}]},
     "spec.behavior.scaleUp.policies[0].value: must be greater than 0, got 0"),
    ({"policies": [{"type": "Percent", "value": 100, "periodSeconds": 1801}]},
     "spec.behavior.scaleUp.policies[0].periodSeconds: must be at most 1800, got 1801"),
    ({"stabilizationWindowSeconds": -1}, "spec.behavior.scaleUp.stabilizationWindowSeconds: must be 0 or more, got -1"),
])
def test_behavior_bounds_of_the_api_server(tmp_path, rules, line):
    doc = hpa_doc({"type": "AverageValue", "averageValue": "1"})
    doc["spec"]["behavior"] = {"scaleUp": rules}
    f = write(tmp_path / "hpa.yaml", doc)
    assert error_line(invoke("thresholds", f)) == f"error: {f}: HorizontalPodAutoscaler default/web: {line}"


def test_a_schedule_window_beyond_int32_is_refused(tmp_path):
    doc = yaml.safe_load((ROOT / "examples" / "schedules" / "php-apache-schedules.yaml").read_text())
    docs = doc if isinstance(doc, list) else [doc]
    ha = next(d for d in docs if d.get("kind") == "HorizontalAutoscaler")
    ha["spec"]["schedules"][0]["minReplicas"] = 2**40
    f = write(tmp_path / "ha.yaml", ha)
    line = error_line(invoke("thresholds", f))
    assert line.endswith(": spec.schedules[0].minReplicas: must be at most 2147483647 (an int32), got 1099511627776")


# ------------------------------------------------------------------------------------------- huge maxReplicas
@pytest.mark.parametrize("max_replicas", [100000, 2000000000])
def test_thresholds_with_a_huge_max_replicas_is_bounded_and_says_what_it_left_out(tmp_path, max_replicas):
    f = write(tmp_path / "hpa.yaml", hpa_doc({"type": "Utilization", "averageUtilization": 50}, max_replicas,
                                             metric="Resource"))
    r = invoke("thresholds", "-o", "json", f)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    rows = out["metrics"][0]["rows"]
    counts = [row["replicas"] for row in rows]
    assert len(rows) <= MAX_ROWS and counts[0] == 1 and counts[-1] == max_replicas
    assert counts == sorted(set(counts))
    shown_and_elided = len(counts) + sum(e["to"] - e["from"] + 1 for e in out["elided"])
    assert shown_and_elided == max_replicas  # every count is either shown or said to be elided
    assert rows[-1]["scale_up_at"] is None and rows[-2]["scale_up_to"] == max_replicas
    text = invoke("thresholds", f).output
    assert f"{max_replicas - len(counts):,} rows elided (replicas 41-" in text.replace("\n", " ")


def test_thresholds_shows_every_row_up_to_the_limit(tmp_path):
    f = write(tmp_path / "hpa.yaml", hpa_doc({"type": "AverageValue", "averageValue": "100m"}, MAX_ROWS))
    out = json.loads(invoke("thresholds", "-o", "json", f).output)
    assert [r["replicas"] for r in out["metrics"][0]["rows"]] == list(range(1, MAX_ROWS + 1))
    assert out["elided"] == []


def test_simulate_with_a_huge_max_replicas_and_load_stops_at_the_pod_bound(tmp_path):
    doc = yaml.safe_load((NASA / "hpa.yaml").read_text())
    doc["spec"]["maxReplicas"] = 2000000000
    f = write(tmp_path / "hpa.yaml", doc)
    r = invoke("simulate", "--hpa", f, "--target", NASA / "deployment.yaml", "--trace", TRACE, "--column", "requests",
               "--load-scale", "1e9", "--end", "1995-07-10T01:00:00", "--no-plot", "--no-progress",
               "--output-dir", tmp_path / "out")
    line = error_line(r)
    assert line.startswith(f"error: {f}: HorizontalPodAutoscaler web/ksc-web: spec.maxReplicas: scales to ")
    assert line.endswith("; the simulator runs at most 10,000 pods: lower maxReplicas or the load (--load-scale)")
    assert not (tmp_path / "out").exists()


def test_simulate_refuses_a_deployment_beyond_the_pod_bound(tmp_path):
    doc = yaml.safe_load((NASA / "deployment.yaml").read_text())
    doc["spec"]["replicas"] = 20000
    f = write(tmp_path / "deployment.yaml", doc)
    r = invoke("simulate", "--hpa", NASA / "hpa.yaml", "--target", f, "--trace", TRACE, "--column", "requests",
               "--no-plot", "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == (f"error: {f}: Deployment web/ksc-web: spec.replicas: 20,000 pods: the simulator runs at "
                             "most 10,000 pods")


def test_a_load_scale_beyond_float64_is_refused(tmp_path):
    r = invoke("simulate", "--hpa", NASA / "hpa.yaml", "--target", NASA / "deployment.yaml", "--trace", TRACE,
               "--column", "requests", "--load-scale", "1e307", "--no-plot", "--no-progress",
               "--output-dir", tmp_path / "out")
    assert error_line(r) == ("error: --load-scale: 1e+307 times column 'requests' (up to 405) is beyond 1e+15, the "
                             "largest load pyhpa simulates")


# ------------------------------------------------------------------------------------------- malformed traces
def _lines(n: int = 40) -> list[str]:
    return TRACE.read_text().splitlines()[: n + 1]


def _trace_cases(tmp: Path) -> dict[str, tuple[Path, str]]:
    lines = _lines()
    cases = {}

    def case(name: str, content: bytes | str, message: str, suffix: str = ".csv"):
        p = tmp / f"{name}{suffix}"
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        cases[name] = (p, f"error: {p}: {message}")

    case("ragged-every-row", "\n".join([lines[0]] + [ln + ",x" for ln in lines[1:]]) + "\n",
         "the first data row has one field more than the header")
    case("ragged-one-row", "\n".join(lines[:20] + [lines[20] + ",x"] + lines[21:]) + "\n",
         "line 21: 5 fields, the header has 4")
    full = gzip.compress(TRACE.read_bytes())
    case("truncated", full[:100], "corrupt or truncated compressed file: Compressed file ended before the "
                                  "end-of-stream marker was reached", ".csv.gz")
    case("corrupt", b"junk" * 40, "corrupt or truncated compressed file: Not a gzipped file (b'ju')", ".csv.gz")
    case("empty", "", "the file is empty (a trace needs a header row and data rows)")
    case("header-only", lines[0] + "\n", "0 data rows: a trace needs a header row and at least 2 data rows")
    case("inf", "\n".join(lines[:5] + [lines[5].replace(",35,", ",inf,").replace(",28,", ",inf,")] + lines[6:]) + "\n",
         "")
    bad = lines[5].split(",")
    bad[1] = "1e400"
    case("huge", "\n".join(lines[:5] + [",".join(bad)] + lines[6:]) + "\n",
         "requests: line 6: not a finite number: '1e400' (values must be numbers from 0 to 1e+15)")
    bad[1] = "lots"
    case("text", "\n".join(lines[:5] + [",".join(bad)] + lines[6:]) + "\n",
         "requests: line 6: not a number: 'lots' (values must be numbers from 0 to 1e+15)")
    cases.pop("inf")
    case("numeric-time-inf", "time,requests\n0,1\ninf,2\n", "time: line 3: time 'inf' is not a time (seconds since "
                                                            "1970 between years 1 and 9999)")
    return cases


TRACE_CASES = ["ragged-every-row", "ragged-one-row", "truncated", "corrupt", "empty", "header-only", "huge", "text",
               "numeric-time-inf"]


@pytest.mark.parametrize("name", TRACE_CASES)
@pytest.mark.parametrize("command", ["simulate", "forecast"])
def test_a_malformed_trace_is_one_line(tmp_path, name, command):
    path, expected = _trace_cases(tmp_path)[name]
    if command == "simulate":
        r = invoke("simulate", "--hpa", NASA / "hpa.yaml", "--target", NASA / "deployment.yaml", "--trace", path,
                   "--column", "requests", "--no-plot", "--no-progress", "--output-dir", tmp_path / "out")
    else:
        r = invoke("forecast", "--trace", path, "--column", "requests")
    assert error_line(r) == expected


# ------------------------------------------------------------------------------------------- files and flags
@pytest.mark.parametrize("name, content, line", [
    ("cases.json", '{"cases": []}', "cases: no snapshots: 'cases' is empty"),
    ("list.json", "[]", "no snapshots: the file holds an empty list"),
    ("empty.json", "", "the file is empty"),
    ("blank.yaml", "\n  \n", "the file is empty"),
    ("dashes.yaml", "---\n", "the file is empty"),
])
def test_explain_on_a_file_without_snapshots_is_one_line(tmp_path, name, content, line):
    f = tmp_path / name
    f.write_text(content)
    assert error_line(invoke("explain", f)) == f"error: {f}: {line}"


@pytest.mark.parametrize("flag, url, line", [
    ("--server", "not-a-url", "must be an http:// or https:// URL with a host, got 'not-a-url'"),
    ("--server", "ftp://example", "must be an http:// or https:// URL with a host, got 'ftp://example'"),
    ("--server", "http://[::1", "malformed URL 'http://[::1': Invalid port: ':1'"),
    ("--prometheus-url", "http://", "must be an http:// or https:// URL with a host, got 'http://'"),
])
def test_run_with_a_server_that_is_no_url_is_one_line_at_once(flag, url, line):
    args = ["run", flag, url] + (["--server", "http://127.0.0.1:1"] if flag != "--server" else [])
    r = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == f"error: {flag}: {line}" and r.stdout == ""


def test_kubedouble_without_its_extra_is_one_line_naming_it():
    code = ("import sys, runpy; sys.modules['jsonschema'] = None; sys.argv = ['kubedouble']; "
            "runpy.run_module('kubedouble', run_name='__main__')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.strip() == ("error: python -m kubedouble needs the kubedouble extra (jsonschema is not installed): "
                                "pip install 'pyhpa[kubedouble]'")


# ------------------------------------------------------------------------------------------- properties
SUFFIXES = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u"]
quantity_texts = st.one_of(
    st.builds(lambda sign, whole, frac, suffix: f"{sign}{whole}{frac}{suffix}", st.sampled_from(["", "-", "+"]),
              st.integers(0, 10**30).map(str), st.sampled_from(["", ".", ".5", ".000001"]), st.sampled_from(SUFFIXES)),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-10**6, 10**6), st.integers(-500, 500)),
    st.sampled_from(["NaN", "inf", "-inf", "Infinity", "1e", "e3", "", " ", "1.2.3", "0x10", "1Ki5"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10**25, 10**25),
    st.text(max_size=12),
)


def _one_line(err: InputError) -> str:
    text = str(err)
    assert text and "\n" not in text and "Traceback" not in text
    return text


@settings(max_examples=400, deadline=None)
@given(quantity_texts)
def test_any_quantity_parses_within_int64_milli_or_is_one_line(text):
    try:
        value = quantity(text, "spec.x")
    except InputError as err:
        assert _one_line(err).startswith("spec.x: ")
        return
    assert isinstance(value, Decimal) and value.is_finite()
    assert -MAX_MILLI - 1 <= math.ceil(value * 1000) <= MAX_MILLI


@settings(max_examples=300, deadline=None)
@given(quantity_texts, st.sampled_from(["AverageValue", "Value"]), st.integers(-5, 2**32))
def test_any_target_is_a_positive_int64_milli_value_or_one_line(text, kind, max_replicas):
    target = {"type": kind, "averageValue" if kind == "AverageValue" else "value": text}
    doc = hpa_doc(target, max_replicas)
    doc["spec"]["metrics"] = [{"type": "External", "external": {"metric": {"name": "q"}, "target": target}}]
    try:
        hpa, _ = hpa_from_dict(copy.deepcopy(doc))
    except InputError as err:
        line = _one_line(err)
        assert line.startswith("HorizontalPodAutoscaler default/web: spec."), line
        return
    spec = hpa.metrics[0]
    milli = spec.target_average_milli if kind == "AverageValue" else spec.target_value_milli
    assert 1 <= milli <= MAX_MILLI
    assert 1 <= hpa.max_replicas <= MAX_INT32


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(quantity_texts, st.sampled_from([1, 10, 150, 2**31 - 1]))
def test_thresholds_on_any_target_answers_or_is_one_line(text, max_replicas):
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "hpa.json"
        f.write_text(json.dumps(hpa_doc({"type": "AverageValue", "averageValue": text}, max_replicas),
                                allow_nan=True).replace("NaN", '"NaN"').replace("-Infinity", '"-inf"')
                     .replace("Infinity", '"inf"'))
        r = invoke("thresholds", "-o", "json", f)
    if r.exit_code == 2:
        error_line(r)
        return
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)["metrics"][0]["rows"]
    assert 1 <= len(rows) <= MAX_ROWS


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(-2**40, 2**40), st.floats(allow_nan=True), st.text(max_size=4), st.booleans(),
                 st.none()))
def test_any_count_is_an_int32_or_one_line(value):
    try:
        n = int32_value(value, "spec.replicas")
    except InputError as err:
        assert _one_line(err).startswith("spec.replicas: ")
        return
    assert isinstance(n, int) and 0 <= n <= MAX_INT32 and n == value


good = st.one_of(st.integers(0, 10**6).map(str), st.floats(0, 1e12).map(repr))
cells = st.one_of(st.integers(-5, 10**6).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                  st.sampled_from(["", "x", "nan", "inf", "1e400", " 7", "\"3\""]), st.text(max_size=5))
# mostly well-formed rows (a load and one other field), some with a bad cell, a field too many or too few
row = st.one_of(st.tuples(good, good).map(list), st.tuples(good, good).map(list), st.tuples(good, good).map(list),
                st.tuples(cells, good).map(list), st.lists(cells, min_size=1, max_size=4))
rows = st.lists(row, min_size=0, max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows, st.booleans(), st.booleans())
def test_any_trace_rows_load_or_give_one_line(body, numeric_time, compress):
    from pyhpa.simulate.trace import load_trace

    lines = ["time,load,other"]
    for i, cells_ in enumerate(body):
        t = str(60 * i) if numeric_time else f"2026-01-01T00:{i:02d}:00Z"
        lines.append(",".join([t, *cells_]))
    data = ("\n".join(lines) + "\n").encode()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("t.csv.gz" if compress else "t.csv")
        path.write_bytes(gzip.compress(data) if compress else data)
        try:
            tr = load_trace(path, "load", gaps="hold")
        except InputError as err:
            assert _one_line(err).startswith(str(path) + ": ") or _one_line(err).startswith("--")
            return
    values = tr.values["load"]
    assert len(values) >= 2 and all(math.isfinite(v) and v >= 0 for v in values)
    assert all(b > a for a, b in zip(tr.times, tr.times[1:]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300), st.sampled_from([".csv", ".csv.gz"]))
def test_any_bytes_as_a_trace_load_or_give_one_line(data, suffix):
    from pyhpa.simulate.trace import load_trace

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t{suffix}"
        path.write_bytes(data)
        try:
            load_trace(path, "load")
        except InputError as err:
            assert _one_line(err)


def test_a_negative_behavior_tolerance_is_refused(tmp_path):
    doc = hpa_doc({"type": "AverageValue", "averageValue": "1"})
    doc["spec"]["behavior"] = {"scaleDown": {"tolerance": "-0.1"}}
    f = write(tmp_path / "hpa.yaml", doc)
    assert error_line(invoke("thresholds", f)) == (
        f"error: {f}: HorizontalPodAutoscaler default/web: spec.behavior.scaleDown.tolerance: must be 0 or more, "
        "got '-0.1'")


@pytest.mark.parametrize("value, shown", [(float("nan"), "nan"), ("-1", "'-1'"), ("inf", "'inf'")])
def test_a_snapshot_controller_setting_must_be_finite_and_not_negative(tmp_path, value, shown):
    doc = yaml.safe_load(SNAPSHOT.read_text())
    doc["controller"]["tolerance"] = value
    f = write(tmp_path / "snap.yaml", doc)
    assert error_line(invoke("explain", f)) == (
        f"error: {f}: snapshot 'php-apache-scale-up-with-a-starting-pod': controller.tolerance: must be a finite "
        f"number >= 0, got {shown}")


@pytest.mark.parametrize("key, item, line", [
    ("recommendations", {"timestamp": "2026-11-21T09:59:00Z", "replicas": -1},
     "history.recommendations[0].replicas: must be 0 or more, got -1"),
    ("scaleUpEvents", {"timestamp": "2026-11-21T09:59:00Z", "replicaChange": 2**31},
     "history.scaleUpEvents[0].replicaChange: must be at most 2147483647 (an int32), got 2147483648"),
])
def test_snapshot_history_counts_are_int32_and_not_negative(tmp_path, key, item, line):
    doc = yaml.safe_load(SNAPSHOT.read_text())
    doc["history"] = {key: [item]}
    f = write(tmp_path / "snap.yaml", doc)
    assert error_line(invoke("explain", f)) == f"error: {f}: snapshot 'php-apache-scale-up-with-a-starting-pod': {line}"


# ------------------------------------------------------------------------- files that are no regular file, or huge
# (issue 29) Every file argument is read with a bound (pyhpa.adapters.files): a device that never ends, a folder, a
# huge (sparse) file, a compressed trace that decompresses to more than the bound: one line naming it, at once.
DOCUMENT_LIMIT = "32 MiB, the limit for a YAML or JSON file"


@pytest.mark.parametrize("command", [("thresholds",), ("explain",), ("schedules",),
                                     ("snapshot", "default/web", "--kubeconfig"), ("run", "--kubeconfig")])
def test_a_device_that_never_ends_as_a_document_is_one_line(command):
    assert error_line(invoke(*command, "/dev/zero")) == (
        f"error: /dev/zero: {'--kubeconfig: ' * ('--kubeconfig' in command)}not a regular file, and longer than "
        f"{DOCUMENT_LIMIT}")


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # no blocks written: the file is huge, the disk holds nothing
    return path


def test_a_huge_file_is_refused_before_it_is_read(tmp_path):
    doc = _sparse(tmp_path / "huge.yaml", 2**40)
    assert error_line(invoke("thresholds", doc)) == f"error: {doc}: larger than {DOCUMENT_LIMIT}"
    trace = _sparse(tmp_path / "huge.csv", 2**40)
    r = invoke("simulate", "--hpa", NASA / "hpa.yaml", "--target", NASA / "deployment.yaml", "--trace", trace,
               "--column", "requests", "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == f"error: {trace}: larger than 256 MiB, the limit for a trace"


@pytest.mark.parametrize("command", ["simulate", "forecast"])
def test_a_device_or_a_folder_as_a_trace_is_one_line(tmp_path, command):
    def run(trace):
        if command == "forecast":
            return invoke("forecast", "--trace", trace, "--column", "requests", "--plot-file", tmp_path / "f.png")
        return invoke("simulate", "--hpa", NASA / "hpa.yaml", "--target", NASA / "deployment.yaml", "--trace", trace,
                      "--column", "requests", "--no-progress", "--output-dir", tmp_path / "out")

    assert error_line(run("/dev/zero")) == ("error: /dev/zero: not a regular file, and longer than 256 MiB, the limit "
                                            "for a trace")
    assert error_line(run(tmp_path)) == f"error: {tmp_path}: is a folder, not a file"


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.xz", ".zip", ".tar.gz"])
def test_a_compressed_trace_is_decompressed_up_to_the_bound(tmp_path, suffix):
    import bz2
    import io
    import lzma
    import tarfile
    import zipfile

    from pyhpa.adapters.files import read_trace_bytes

    def pack(data: bytes) -> Path:
        path = tmp_path / f"t{len(data)}{suffix}"
        if suffix == ".zip":
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("t.csv", data)
        elif suffix == ".tar.gz":
            with tarfile.open(path, "w:gz") as t:
                info = tarfile.TarInfo("t.csv")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
        else:
            path.write_bytes({".csv.gz": gzip, ".csv.bz2": bz2, ".csv.xz": lzma}[suffix].compress(data))
        return path

    limit = 2**20
    fits = b"time,load\n" + b"0,1\n" * (limit // 8)
    assert read_trace_bytes(pack(fits), limit) == fits
    bomb = pack(b"0" * (4 * limit))  # a few KiB that decompress to 4 MiB
    with pytest.raises(InputError) as err:
        read_trace_bytes(bomb, limit)
    assert str(err.value) == f"{bomb}: decompresses to more than 1 MiB, the limit for a trace"


def test_a_pipe_is_read_as_a_file_is(tmp_path):
    import os
    import threading

    fifo = tmp_path / "hpa.fifo"
    os.mkfifo(fifo)
    doc = yaml.safe_dump(hpa_doc({"type": "AverageValue", "averageValue": "1"}))
    writer = threading.Thread(target=lambda: fifo.write_text(doc))
    writer.start()
    r = invoke("thresholds", "-o", "json", fifo)  # as <(kubectl get hpa web -o yaml) is
    writer.join()
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["hpa"] == "default/web"


@pytest.mark.parametrize("text, line", [
    ("apiVersion: v1\nclusters: [\n  - a: b\n   c\n", "K:3: --kubeconfig: malformed YAML: "),
    ("[1, 2]\n", "K: --kubeconfig: not a kubeconfig: want a YAML mapping with lists clusters and contexts"),
    ("clusters: [x]\ncontexts: [y]\ncurrent-context: y\n", "K: --kubeconfig: malformed kubeconfig (TypeError: "),
    ("clusters: []\ncontexts: []\n", "K: --kubeconfig: cannot load the Kubernetes configuration: No current context"),
])
@pytest.mark.parametrize("command", [["run"], ["snapshot", "default/web"], ["tune", "default/web",
                                                                            "--prometheus-url", "http://p:9090"]])
def test_a_malformed_kubeconfig_is_one_line_naming_it(tmp_path, text, line, command):
    kubeconfig = write(tmp_path / "kubeconfig", text)
    r = invoke(*command, "--kubeconfig", kubeconfig, *(["--output-dir", tmp_path / "out"] if command[0] == "tune" else []))
    assert error_line(r).startswith("error: " + line.replace("K", str(kubeconfig), 1)), r.output


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                 st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                                  st.sampled_from(["clusters", "contexts", "users", "current-context", "cluster",
                                                   "context", "name", "server", "user"]), inner, max_size=4),
                              max_leaves=12).map(lambda d: yaml.safe_dump(d).encode())))
def test_any_kubeconfig_loads_or_is_one_line(data):
    from pyhpa.adapters.kubeconfig import load_config

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kubeconfig"
        path.write_bytes(data)
        try:
            load_config(str(path))
        except InputError as err:
            assert _one_line(err).startswith(f"{path}")


# ------------------------------------------------------------------------------------------- the calendar's ends
# (issue 29) Times from year 1 to 9999 are what pyhpa reads and prints (Python's datetime): a trace in any of those
# years loads (pandas' nanoseconds end in 1677 and 2262; seconds are computed in microseconds); a trace too close to
# the calendar's ends, or a time beyond them in UTC, is one line; cron windows end with the calendar.
def _iso_rows(year: int, month: int = 6) -> str:
    return "time,load\n" + "".join(f"{year:04d}-{month:02d}-15T00:{m:02d}:00Z,{m}\n" for m in range(4))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 9998), st.integers(1, 12))
def test_a_trace_in_any_year_of_the_calendar_loads(year, month):
    from pyhpa.simulate.trace import load_trace

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_text(_iso_rows(year, month))
        tr = load_trace(path, "load")
    first = datetime(year, month, 15, tzinfo=timezone.utc).timestamp()
    assert list(tr.times) == [first + 60 * m for m in range(4)] and tr.end == first + 240


@pytest.mark.parametrize("year", [1500, 1000, 2500, 9000])
def test_simulate_runs_a_trace_outside_pandas_nanosecond_years(tmp_path, year):
    trace = write(tmp_path / "t.csv", _iso_rows(year))
    r = invoke("simulate", "--hpa", ROOT / "pyhpa/data/examples/php-apache-hpa.yaml", "--target",
               ROOT / "pyhpa/data/examples/php-apache.yaml", "--trace", trace, "--column", "load", "--no-progress",
               "--output-dir", tmp_path / "out")
    assert r.exit_code == 0, r.output
    timeline = (tmp_path / "out" / "timeline.csv").read_text().splitlines()
    assert timeline[1].startswith(f"{year:04d}-06-15T00:00:00Z,") and timeline[-1].startswith(f"{year:04d}-06-15T00:03")
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["simulated_seconds"] == 240


@pytest.mark.parametrize("rows, line", [
    ("0001-01-01T00:00:00Z,1\n0001-01-01T00:01:00Z,1\n",
     "line 2: time 0001-01-01T00:00:00Z is before 0001-01-02T00:00:00Z (a trace holds times from "
     "0001-01-02T00:00:00Z to 9999-12-31T00:00:00Z)"),
    ("9999-12-30T23:58:00Z,1\n9999-12-30T23:59:00Z,1\n9999-12-31T00:00:00Z,1\n",
     "line 4: the trace ends after 9999-12-31T00:00:00Z (its last row, 9999-12-31T00:00:00Z, holds for a step of 60 s; "
     "a trace holds times from 0001-01-02T00:00:00Z to 9999-12-31T00:00:00Z)"),
    ("-62135596800,1\n-62135596740,1\n", "line 2: time 0001-01-01T00:00:00Z is before 0001-01-02T00:00:00Z (a trace "
                                         "holds times from 0001-01-02T00:00:00Z to 9999-12-31T00:00:00Z)"),
    ("9999-12-31T23:59:59Z,1\n10000-01-01T00:00:00Z,1\n",
     "line 3: malformed time '10000-01-01T00:00:00Z' (want ISO 8601 or seconds, years 1 to 9999)"),
])
@pytest.mark.parametrize("command", ["simulate", "forecast"])
def test_a_trace_at_the_calendar_ends_is_one_line(tmp_path, rows, line, command):
    trace = write(tmp_path / "t.csv", "time,load\n" + rows)
    if command == "forecast":
        r = invoke("forecast", "--trace", trace, "--column", "load", "--plot-file", tmp_path / "f.png")
    else:
        r = invoke("simulate", "--hpa", ROOT / "pyhpa/data/examples/php-apache-hpa.yaml", "--target",
                   ROOT / "pyhpa/data/examples/php-apache.yaml", "--trace", trace, "--column", "load",
                   "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == f"error: {trace}: time: {line}"


SCHEDULES = ROOT / "examples" / "schedules" / "php-apache-schedules.yaml"
EXPLAIN = ROOT / "examples" / "explain"


@pytest.mark.parametrize("when", ["9999-12-31T00:00:00Z", "9999-12-31T23:59:58Z", "9999-12-31T23:59:59Z",
                                  "0001-01-01T00:00:00Z", "9999-12-31T18:59:59-05:00"])
def test_explain_and_schedules_at_the_calendar_ends_answer(when):
    r = invoke("explain", "-o", "json", "--hpa", SCHEDULES, "--pods", EXPLAIN / "pods.yaml", "--pod-metrics",
               EXPLAIN / "podmetrics.json", "--replicas", "3", "--now", when)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["desiredReplicas"] >= 1 and out["nextScheduleChange"] in (None, *[out["nextScheduleChange"]])
    r = invoke("schedules", "-o", "json", SCHEDULES, "--from", when)
    if when.startswith("9999-12-31T23:59:59") or when.endswith("-05:00"):
        assert error_line(r) == ("error: --from: must be before 9999-12-31T23:59:59Z, the end of the calendar")
        return
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["to"] <= "9999-12-31T23:59:59Z" and all(len(o["start"]) == 20 for o in out["occurrences"])


@pytest.mark.parametrize("flag", ["--now", "--from", "--to"])
def test_a_time_beyond_the_calendar_in_utc_is_one_line(flag):
    args = (["schedules", SCHEDULES] if flag != "--now" else
            ["explain", "--hpa", SCHEDULES, "--pods", EXPLAIN / "pods.yaml", "--pod-metrics", EXPLAIN / "podmetrics.json"])
    value = "0001-01-01T00:00:00+05:00" if flag != "--to" else "9999-12-31T23:00:00-05:00"
    assert error_line(invoke(*args, flag, value)) == (
        f"error: {flag}: '{value}' is outside the calendar (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z in UTC)")


@settings(max_examples=300, deadline=None)
@given(st.floats(-62135596800.0, 253402300799.0), st.sampled_from(["UTC", "Pacific/Kiritimati", "America/New_York",
                                                                   "Pacific/Pago_Pago", "Europe/Berlin"]),
       st.sampled_from(["0 8 * * 1-5", "*/20 * * * *", "0 0 29 2 *", "30 2 * * *"]),
       st.sampled_from([None, "0 18 * * 1-5", "0 0 1 1 *"]), st.integers(1, 2**31 - 1))
def test_cron_windows_at_any_time_of_the_calendar_answer_within_it(now, zone, start, end, duration):
    """The core's cron look-ups near year 1 and year 9999, in zones east and west of Greenwich: an answer, every
    time it gives within the calendar (an occurrence whose end would be later runs to its end)."""
    from zoneinfo import ZoneInfo

    from pyhpa.core import END_OF_CALENDAR, WindowSpec, active_windows, next_change, occurrences

    w = WindowSpec(name="w", start=start, end=end, duration_seconds=None if end else duration,
                       time_zone=ZoneInfo(zone), time_zone_name=zone, min_replicas=2)
    for a in active_windows([w], now):
        assert a.start <= now < a.end <= END_OF_CALENDAR
    change = next_change([w], now)
    assert change is None or now < change <= END_OF_CALENDAR
    for s, e in occurrences(w, now, min(now + 86400 * 3, END_OF_CALENDAR)):
        assert s < e <= END_OF_CALENDAR


@pytest.mark.parametrize("ts, text", [(-62135596800.0, "0001-01-01T00:00:00Z"), (-59011459200.0, "0100-01-01T00:00:00Z"),
                                      (253402300799.0, "9999-12-31T23:59:59Z")])
def test_times_before_year_1000_print_with_four_digit_years(ts, text):
    from pyhpa.adapters.parse import format_time

    assert format_time(ts) == text


# ------------------------------------------------------------------------------------------- non-finite numbers
# (issue 29) inf, nan and numbers whose sums overflow never reach a figure: every NUMBER flag of every command must
# be finite (one check in pyhpa.cli.help.Command); spec fields are typed as the CRD types them; trace values, the
# profile's numbers and --load-scale are bounded so every summary figure is finite and summary.json strict JSON.
def _float_flags():
    from pyhpa.cli.kubectl_plugin import plugin

    out = []
    for group_app, prefix in ((app, ()), (plugin, ("plugin",))):
        group = typer.main.get_command(group_app)
        for name, cmd in sorted(group.commands.items()):
            positional = ["x"] * sum(1 for p in cmd.params if p.param_type_name == "argument" and p.required)
            positional += [a for p in cmd.params if p.param_type_name == "option" and p.required
                           for a in (max(p.opts, key=len), "x")]  # forecast --trace x --column x
            for p in cmd.params:
                if p.param_type_name == "option" and p.metavar != "" and _is_float(p):
                    out.append((prefix, name, max(p.opts, key=len), positional))
    return out


def _is_float(param) -> bool:
    import typing

    desc = param.type_descriptor
    ann = desc.annotation
    return ann is float or (desc.is_list and typing.get_args(ann)[:1] == (float,))


FLOAT_FLAGS = _float_flags()


def test_the_float_flags_are_found():
    names = {(p, c, f) for p, c, f, _ in FLOAT_FLAGS}
    assert ((), "simulate", "--tolerance") in names and ((), "run", "--sync-period") in names
    assert ((), "tune", "--max-overloaded-fraction") in names and len(names) >= 25


@pytest.mark.parametrize("prefix, command, flag, positional", FLOAT_FLAGS,
                         ids=[f"{'plugin-' * bool(p)}{c}{f}" for p, c, f, _ in FLOAT_FLAGS])
@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999"])
def test_every_number_flag_must_be_finite(prefix, command, flag, positional, value):
    from pyhpa.cli.kubectl_plugin import plugin

    r = runner.invoke(plugin if prefix else app, [command, *positional, flag, value])
    shown = {"inf": "inf", "1e999": "inf", "-inf": "-inf", "nan": "nan"}[value]
    see = f"kubectl pyhpa {command}" if prefix else f"root {command}"
    assert error_line(r) == f"error: {flag}: must be a finite number, got {shown} (see {see} -h)"


def _autoscaler(tmp_path: Path, **spec) -> Path:
    doc = yaml.safe_load(SCHEDULES.read_text())
    doc["spec"].update(spec)
    return write(tmp_path / "ha.yaml", doc)


@pytest.mark.parametrize("spec, line", [
    ({"tolerance": float("inf")}, "spec.tolerance: must be a finite number >= 0, got inf"),
    ({"tolerance": float("nan")}, "spec.tolerance: must be a finite number >= 0, got nan"),
    ({"tolerance": -0.1}, "spec.tolerance: must be a finite number >= 0, got -0.1"),
    ({"tolerance": "0.1"}, "spec.tolerance: must be a finite number >= 0, got '0.1'"),
    ({"cpuInitializationPeriodSeconds": 1.5}, "spec.cpuInitializationPeriodSeconds: must be an integer, got 1.5"),
    ({"initialReadinessDelaySeconds": 2**31}, "spec.initialReadinessDelaySeconds: must be at most 2147483647 (an "
                                              "int32), got 2147483648"),
    ({"syncPeriodSeconds": 0}, "spec.syncPeriodSeconds: must be greater than 0, got 0"),
    ({"syncPeriodSeconds": float("inf")}, "spec.syncPeriodSeconds: must be an integer, got inf"),
])
@pytest.mark.parametrize("command", ["thresholds", "explain", "simulate", "schedules"])
def test_settings_of_a_horizontalautoscaler_are_typed_as_the_crd_types_them(tmp_path, spec, line, command):
    f = _autoscaler(tmp_path, **spec)
    args = {"thresholds": [f], "schedules": [f],
            "explain": ["--hpa", f, "--pods", EXPLAIN / "pods.yaml", "--pod-metrics", EXPLAIN / "podmetrics.json",
                        "--replicas", "3"],
            "simulate": ["--hpa", f, "--target", ROOT / "pyhpa/data/examples/php-apache.yaml", "--trace",
                         ROOT / "pyhpa/data/traces/nasa_http_1995-07-12_13_per_minute.csv", "--column",
                         "requests_per_second", "--no-progress", "--output-dir", tmp_path / "out"]}[command]
    assert error_line(invoke(command, *args)) == f"error: {f}: HorizontalAutoscaler php-apache: {line}"


def test_the_crd_types_the_settings_as_the_adapter_reads_them():
    crd = yaml.safe_load((ROOT / "deploy" / "crd.yaml").read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for key in ("syncPeriodSeconds", "cpuInitializationPeriodSeconds", "initialReadinessDelaySeconds"):
        assert (spec[key]["type"], spec[key]["format"], spec[key]["maximum"]) == ("integer", "int32", MAX_INT32)
    assert spec["tolerance"]["type"] == "number"


@pytest.mark.parametrize("cell, line", [
    ("1e308", "load: line 3: value '1e308' is beyond 1e+15 (values must be numbers from 0 to 1e+15)"),
    ("1.8e308", "load: line 3: not a finite number: '1.8e308' (values must be numbers from 0 to 1e+15)"),
    ("1000000000000001", "load: line 3: value '1000000000000001' is beyond 1e+15 (values must be numbers from 0 to "
                         "1e+15)"),
])
def test_a_trace_value_beyond_the_bound_is_one_line(tmp_path, cell, line):
    trace = write(tmp_path / "t.csv", f"time,load\n0,1\n60,{cell}\n120,1\n")
    r = invoke("simulate", "--hpa", ROOT / "pyhpa/data/examples/php-apache-hpa.yaml", "--target",
               ROOT / "pyhpa/data/examples/php-apache.yaml", "--trace", trace, "--column", "load",
               "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == f"error: {trace}: {line}"


@pytest.mark.parametrize("field", ["cpu_millicore_seconds_per_request", "pod_capacity_rps", "memory_baseline_mebibytes",
                                   "app_startup_seconds"])
def test_a_profile_number_beyond_the_bound_is_one_line(tmp_path, field):
    profile = write(tmp_path / "p.yaml", {field: 1e300})
    r = invoke("simulate", "--hpa", ROOT / "pyhpa/data/examples/php-apache-hpa.yaml", "--target",
               ROOT / "pyhpa/data/examples/php-apache.yaml", "--trace", TRACE, "--column", "requests",
               "--profile", profile, "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == (f"error: {profile}: workload profile: {field}: must be a number from 0 to 1e+15, "
                             "got 1e+300")


def _strict(text: str):
    def refuse(name):
        raise AssertionError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.just(0.0), st.floats(0, 1e15), st.sampled_from([1e15, 1e-300, 5e-324])),
                min_size=3, max_size=6),
       st.floats(1e-12, 1e15), st.fixed_dictionaries({}, optional={
           "cpu_millicore_seconds_per_request": st.floats(1e-9, 1e15), "pod_capacity_rps": st.floats(1e-9, 1e15),
           "cpu_baseline_millicores": st.floats(0, 1e15), "memory_mebibytes_per_rps": st.floats(0, 1e15)}))
def test_extreme_but_legal_loads_give_finite_figures_and_strict_json(loads, scale, profile):
    from pyhpa.simulate import run_simulation
    from pyhpa.simulate.report import write_outputs

    with tempfile.TemporaryDirectory() as tmp:
        trace = write(Path(tmp) / "t.csv", "time,load\n" + "".join(f"{60 * i},{v!r}\n" for i, v in enumerate(loads)))
        prof = write(Path(tmp) / "p.yaml", profile)
        try:
            sim = run_simulation([ROOT / "pyhpa/data/examples/php-apache-hpa.yaml"],
                                 ROOT / "pyhpa/data/examples/php-apache.yaml", trace, "load", profile=prof,
                                 load_scale=scale)
        except InputError as err:  # a load beyond the bound after scaling, a CPU limit below the baseline
            assert _one_line(err)
            return
        write_outputs(sim, Path(tmp) / "out", plot=False)
        summary = _strict((Path(tmp) / "out" / "summary.json").read_text())

    def finite(x):
        if isinstance(x, float):
            assert math.isfinite(x)
        elif isinstance(x, dict):
            for v in x.values():
                finite(v)
        elif isinstance(x, list):
            for v in x:
                finite(v)

    finite(summary)


# --------------------------------------------------------------------------------------------------- huge counts
# (issue 29) Every count a user gives has a bound that says itself in one line, checked before any work: workers,
# jobs, trials, occurrences, seeds, and the syncs, scrapes, interpolated rows and forecasts a run implies.
@pytest.mark.parametrize("args, line", [
    (["run", "--workers", "100000000"], "--workers: must be at most 1,000 (concurrent syncs beyond that only queue on "
                                        "the API server), got 100,000,000"),
    (["tune", "--jobs", "10000"], "--jobs: must be from 0 to {cores} (the cores of this machine: each replay keeps one "
                                  "busy), got 10,000"),
    (["tune", "--trials", "10000000"], "--trials: must be from 1 to 100,000, got 10,000,000"),
    (["tune", "--seed", "-1"], "--seed: must be from 0 to 4,294,967,295, got -1"),
    (["simulate", "--seed", str(2**32)], "--seed: must be from 0 to 4,294,967,295, got 4,294,967,296"),
    (["schedules", str(SCHEDULES), "--limit", "1000000000"], "--limit: must be at most 100,000 occurrences per "
                                                             "window, got 1,000,000,000"),
    (["tune", "default/web", "--prometheus-url", "http://127.0.0.1:9", "--server", "http://127.0.0.1:9", "--history",
      "1e15"], "--history: must be from 172800 s (two days) to 7776000 s (90 days), got 1000000000000000.0"),
])
def test_a_huge_count_is_one_line(tmp_path, args, line):
    import os

    extra = ["--output-dir", str(tmp_path / "out")] if args[0] in ("tune", "simulate") else []
    assert error_line(invoke(*args, *extra)) == "error: " + line.format(cores=os.cpu_count())


def test_the_most_workers_are_taken():
    from pyhpa.controller.settings import MAX_WORKERS, Settings

    assert Settings(workers=MAX_WORKERS).workers == 1000


BUNDLED_ARGS = ["--hpa", ROOT / "pyhpa/data/examples/php-apache-hpa.yaml", "--target",
                ROOT / "pyhpa/data/examples/php-apache.yaml"]


def test_a_century_between_two_rows_is_one_line_before_any_work(tmp_path):
    trace = write(tmp_path / "t.csv", "timestamp,rps\n1970-01-01T00:00:00Z,1\n2070-01-01T00:00:00Z,2\n")
    r = invoke("simulate", *BUNDLED_ARGS, "--trace", trace, "--column", "rps", "--no-progress",
               "--output-dir", tmp_path / "out")
    assert error_line(r) == (f"error: {trace}: syncs: one every 15 s over the simulated 73,050.0 days "
                             "(1970-01-01T00:00:00Z to 2170-01-02T00:00:00Z) is 420,768,000; a simulation runs at most "
                             "1,000,000: a shorter span (--start/--end)")
    assert not (tmp_path / "out").exists()  # refused before the output folder was made (it is removed again)


def test_a_tiny_sync_period_or_metric_resolution_is_one_line(tmp_path):
    r = invoke("simulate", "--sync-period", "0.001", "--no-progress", "--output-dir", tmp_path / "out")
    assert error_line(r) == ("error: --sync-period: syncs: one every 0.001 s over the simulated 48.0 hours "
                             "(1995-07-12T00:00:00-04:00 to 1995-07-14T00:00:00-04:00) is 172,800,000; a simulation "
                             "runs at most 1,000,000: a longer period, or a shorter span (--start/--end)")
    profile = write(tmp_path / "p.yaml", {"metric_resolution_seconds": 1e-6})
    r = invoke("simulate", *BUNDLED_ARGS, "--trace", ROOT / "pyhpa/data/traces/nasa_http_1995-07-12_13_per_minute.csv",
               "--column", "requests_per_second", "--profile", profile, "--no-progress", "--output-dir", tmp_path / "o")
    assert error_line(r) == (f"error: {profile}: workload profile: metric_resolution_seconds: metrics-server scrapes: "
                             "one every 1e-06 s over the simulated 48.0 hours (1995-07-12T00:00:00-04:00 to "
                             "1995-07-14T00:00:00-04:00) is 172,800,000,000; a simulation runs at most 1,000,000: a "
                             "longer period, or a shorter span (--start/--end)")


@settings(max_examples=200, deadline=None)
@given(st.floats(60, 1e11), st.floats(1e-6, 1e9), st.floats(1e-6, 1e9))
def test_a_replay_is_refused_exactly_when_it_implies_more_than_the_most_syncs(span, period, resolution):
    from types import SimpleNamespace

    from pyhpa.simulate import MAX_SYNCS, check_extent
    from pyhpa.simulate.profile import Profile

    start = 0.0
    trace = SimpleNamespace(start=start, end=start + span, tz=timezone.utc, report=SimpleNamespace(file="t.csv"))
    h = SimpleNamespace(sync_period_seconds=period, own_sync_period=False, file="h.yaml", label="h")
    try:
        check_extent(trace, h, Profile(metric_resolution_seconds=resolution), {"profile": ""})
    except InputError as err:
        assert max(span / period, span / resolution) > MAX_SYNCS and f"at most {MAX_SYNCS:,}" in _one_line(err)
        return
    assert max(span / period, span / resolution) <= MAX_SYNCS


@pytest.mark.parametrize("command", ["simulate", "forecast"])
def test_interpolating_a_century_gap_is_one_line(tmp_path, command):
    trace = write(tmp_path / "t.csv", "time,load\n" + "".join(f"{i},1\n" for i in range(4)) + "3155760000,2\n")
    args = (["forecast", "--plot-file", tmp_path / "f.png"] if command == "forecast" else
            ["simulate", *BUNDLED_ARGS, "--no-progress", "--output-dir", tmp_path / "out"])
    r = invoke(*args, "--trace", trace, "--column", "load", "--gaps", "interpolate")
    assert error_line(r) == (f"error: {trace}: --gaps: interpolate would insert 3,155,759,996 rows (a row every 1 s "
                             "over 3,155,759,996 s of gaps); at most 10,000,000: hold or skip gaps this long")


def test_forecast_refuses_more_rows_than_its_bound(tmp_path, monkeypatch):
    from pyhpa.cli import forecast_cmd

    monkeypatch.setattr(forecast_cmd, "MAX_FORECAST_ROWS", 100)
    r = invoke("forecast", "--trace", TRACE, "--column", "requests", "--start", "1995-07-10T00:00:00",
               "--plot-file", tmp_path / "f.png")
    assert error_line(r).startswith(f"error: {TRACE}: ") and "; a replay forecasts at most 100: a shorter span" in r.output


# -------------------------------------------------------------------------------------- unwritable destinations
# (issue 29) Every file or folder a command writes is tried before the work (pyhpa.cli.options: output_file,
# output_dir): /proc takes no new files, /sys no new folders, a name longer than the file system's limit is
# refused; one line naming the flag; nothing is left behind, and an existing file is not truncated by the try.
LONG = "x" * 300


def _writer(command: str, dest) -> list:
    trace = ["--trace", TRACE, "--column", "requests"]
    return {"forecast": ["forecast", *trace, "--plot-file", dest],
            "simulate": ["simulate", "--no-progress", "--output-dir", dest],
            "tune": ["tune", "--hpa", NASA / "hpa.yaml", "--target", NASA / "deployment.yaml", *trace,
                     "--output-dir", dest],
            "snapshot": ["snapshot", "default/web", "--server", "http://127.0.0.1:9", "--output-file", dest]}[command]


@pytest.mark.parametrize("command", ["forecast", "simulate", "tune", "snapshot"])
@pytest.mark.parametrize("where", ["proc", "sys", "long-name", "long-folder"])
def test_an_unwritable_destination_is_one_line_before_the_work(tmp_path, command, where):
    flag = {"forecast": "--plot-file", "snapshot": "--output-file"}.get(command, "--output-dir")
    name = "f.png" if command == "forecast" else "f.yaml" if command == "snapshot" else "out"
    dest = {"proc": Path("/proc") / name, "sys": Path("/sys") / name, "long-name": tmp_path / f"{LONG}.png",
            "long-folder": tmp_path / "new" / LONG / name}[where]
    line = error_line(invoke(*_writer(command, dest)))
    assert line.startswith(f"error: {dest}: {flag}: cannot "), line
    reason = {"proc": "No such file or directory", "sys": "Operation not permitted", "long-name": "File name too long",
              "long-folder": "File name too long"}[where]
    if where == "sys" and flag != "--output-dir":  # a file directly under /sys: permission, whoever runs it
        reason = "Permission denied"
    assert line.endswith(reason), line
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no folder made for it is left


def test_trying_an_existing_destination_does_not_truncate_it(tmp_path):
    plot = tmp_path / "keep.png"
    plot.write_bytes(b"the user's plot")
    bad = write(tmp_path / "bad.csv", "time,requests\n0,1\n")
    error_line(invoke("forecast", "--trace", bad, "--column", "requests", "--plot-file", plot))
    assert plot.read_bytes() == b"the user's plot"


# ------------------------------------------------------------------------------------------------ silent nonsense
# (issue 29) What the user gave is used or refused, never ignored: a --metric-column no metric reads, a name the API
# server would refuse (or one carrying a query or a fragment); and an error is the only line on stderr.
WC98 = ROOT / "examples" / "simulate" / "worldcup98"
WC98_ARGS = ["--hpa", WC98 / "hpa.yaml", "--target", WC98 / "deployment.yaml", "--profile", WC98 / "profile.yaml",
             "--trace", ROOT / "examples/traces/worldcup98_1998-06-29_07-05_per_minute.csv",
             "--column", "requests_per_second", "--end", "1998-06-29T02:00:00Z"]


@pytest.mark.parametrize("item, line", [
    ("foo=bar", "--metric-column: 'foo=bar': no autoscaler has a Pods, Object or External metric 'foo' (theirs: "
                "http_requests_per_second; Resource metrics follow the load)"),
    ("cpu=requests", "--metric-column: 'cpu=requests': no autoscaler has a Pods, Object or External metric 'cpu' "
                     "(theirs: http_requests_per_second; Resource metrics follow the load)"),
])
@pytest.mark.parametrize("command", ["simulate", "tune"])
def test_a_metric_column_no_metric_reads_is_one_line(tmp_path, item, line, command):
    r = invoke(command, *WC98_ARGS, "--metric-column", item, "--output-dir", tmp_path / "out",
               *(["--no-progress"] if command == "simulate" else []))
    assert error_line(r) == f"error: {line}"


def test_a_metric_column_naming_no_column_is_one_line(tmp_path):
    r = invoke("simulate", *WC98_ARGS, "--metric-column", "http_requests_per_second=bar", "--no-progress",
               "--output-dir", tmp_path / "out")
    assert error_line(r) == (f"error: {ROOT / 'examples/traces/worldcup98_1998-06-29_07-05_per_minute.csv'}: metric "
                             "column: no column 'bar' in the trace (columns: timestamp, requests, requests_per_second)")


def test_a_metric_column_that_feeds_a_metric_is_used(tmp_path):
    means = []
    for name, extra in (("served", []), ("column", ["--metric-column", "http_requests_per_second=requests"])):
        r = invoke("simulate", *WC98_ARGS, *extra, "--no-progress", "--no-plot", "--output-dir", tmp_path / name)
        assert r.exit_code == 0, r.output
        metrics = json.loads((tmp_path / name / "summary.json").read_text())["metrics"]
        means.append(metrics[1]["mean"])
    assert means[1] != means[0]  # the Pods metric read the column, not the profile's served requests


@pytest.mark.parametrize("key, line", [
    ("default/web?watch=true", "'web?watch=true' is not a valid name: an RFC 1123 subdomain has lower-case letters, "
                               "digits, '-', '.' only and starts and ends with a letter or digit"),
    ("default/web#frag", "'web#frag' is not a valid name: an RFC 1123 subdomain has lower-case letters, digits, '-', "
                         "'.' only and starts and ends with a letter or digit"),
    ("Shop/web", "'Shop' is not a valid name: an RFC 1123 label has lower-case letters, digits, '-' only and starts "
                 "and ends with a letter or digit"),
    (f"default/{'a' * 254}", "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is not a valid name: at most 253 characters "
                             "(an RFC 1123 subdomain), got 254"),
])
@pytest.mark.parametrize("command", ["snapshot", "tune"])
def test_a_name_the_api_server_would_refuse_is_one_line_and_never_sent(tmp_path, key, line, command):
    extra = ["--prometheus-url", "http://127.0.0.1:9", "--output-dir", tmp_path / "o"] if command == "tune" else []
    r = invoke(command, key, "--server", "http://127.0.0.1:9", *extra)  # nothing listens there: no request is made
    assert error_line(r) == f"error: NAMESPACE/NAME: {line}"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abz09-./?#_A é", max_size=70))
def test_any_key_is_a_valid_name_pair_or_one_line(key):
    import re

    from pyhpa.controller.snapshot import parse_key

    try:
        ns, name = parse_key(key)
    except InputError as err:
        assert _one_line(err).startswith("NAMESPACE/NAME: ")
        return
    assert f"{ns}/{name}" == key
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", ns) and len(ns) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name) and len(name) <= 253


@pytest.mark.parametrize("flag, value", [("--namespace", "Shop"), ("--leader-elect-resource-namespace", "a.b"),
                                         ("--leader-elect-resource-name", "lease?x")])
def test_run_refuses_names_the_api_server_would_refuse(flag, value):
    assert error_line(invoke("run", "--server", "http://127.0.0.1:9", flag, value)).startswith(
        f"error: {flag}: '{value}' is not a valid name: ")


def test_an_error_after_a_progress_bar_is_the_only_line_on_stderr(tmp_path):
    hpa = yaml.safe_load((ROOT / "pyhpa/data/examples/php-apache-hpa.yaml").read_text())
    hpa["spec"]["maxReplicas"] = 100000
    f = write(tmp_path / "hpa.yaml", hpa)
    r = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", "simulate", "--hpa", f, "--target",
                        ROOT / "pyhpa/data/examples/php-apache.yaml", "--trace",
                        ROOT / "pyhpa/data/traces/nasa_http_1995-07-12_13_per_minute.csv", "--column",
                        "requests_per_second", "--load-scale", "30000", "--output-dir", tmp_path / "out"],
                       capture_output=True, text=True, timeout=300)  # the bar is on (no --no-progress), stderr a pipe
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith(f"error: {f}: HorizontalPodAutoscaler php-apache: spec.maxReplicas: scales to ")
    assert r.stderr.count("\n") == 1 and r.stderr.endswith("\n"), repr(r.stderr)


# ------------------------------------------------------------------------------------------- repeated keys
# (issue 37) A key written twice in one object is refused, as kubectl refuses it ("key "maxReplicas" already set in
# map"), in every file any command reads: PyYAML and json keep the last value, silently.
EXPLAIN = ROOT / "examples" / "explain"
REPEATED = "(already set at line {first}); kubectl refuses it too, keep one"


def repeat_line(src: Path, dst: Path, line: str) -> tuple[Path, int]:
    """``src`` copied to ``dst`` with its first line starting (after indentation) with ``line`` written twice;
    returns ``dst`` and the 1-based number of the first of the two lines."""
    lines = src.read_text().splitlines(keepends=True)
    i = next(i for i, x in enumerate(lines) if x.lstrip().startswith(line))
    dst.write_text("".join(lines[:i + 1] + [lines[i]] + lines[i + 1:]))
    return dst, i + 1


SIMULATE = ("simulate", "--hpa", NASA / "hpa.yaml", "--target", NASA / "deployment.yaml", "--profile",
            NASA / "profile.yaml", "--trace", TRACE, "--column", "requests", "--no-plot", "--no-progress")


@pytest.mark.parametrize("src, line, args, where", [
    (EXPLAIN / "hpa.yaml", "maxReplicas:", ("thresholds", "{}"),
     "HorizontalPodAutoscaler default/php-apache: spec.maxReplicas"),
    (EXPLAIN / "hpa.yaml", "spec:", ("thresholds", "{}"), "HorizontalPodAutoscaler default/php-apache: spec"),
    (EXPLAIN / "hpa.yaml", "averageUtilization:", ("explain", "--hpa", "{}", "--recommendation", "2"),
     "HorizontalPodAutoscaler default/php-apache: spec.metrics[0].resource.target.averageUtilization"),
    (EXPLAIN / "pods.yaml", "phase:", ("explain", "--hpa", EXPLAIN / "hpa.yaml", "--pods", "{}", "--pod-metrics",
                                       EXPLAIN / "podmetrics.json"), "Pod default/php-apache-7d4b9-a: status.phase"),
    (SNAPSHOT, "now:", ("explain", "{}"), "now"),
    (ROOT / "examples" / "schedules" / "php-apache-schedules.yaml", "timeZone:", ("schedules", "{}"),
     "HorizontalAutoscaler php-apache: spec.schedules[0].timeZone"),
    (NASA / "deployment.yaml", "replicas:", (*SIMULATE[:3], "--target", "{}", *SIMULATE[5:]),
     "Deployment web/ksc-web: spec.replicas"),
    (NASA / "profile.yaml", "pod_capacity_rps:", (*SIMULATE[:5], "--profile", "{}", *SIMULATE[7:]),
     "pod_capacity_rps"),
    (NASA / "hpa.yaml", "maxReplicas:", ("simulate", "--hpa", "{}", *SIMULATE[3:]),
     "HorizontalPodAutoscaler web/ksc-web: spec.maxReplicas"),
    (NASA / "hpa.yaml", "minReplicas:", ("tune", "--hpa", "{}", *SIMULATE[3:-2]), "HorizontalPodAutoscaler web/ksc-web: spec.minReplicas"),
], ids=["thresholds", "top-level", "explain-hpa", "explain-pods", "explain-snapshot", "schedules", "simulate-target",
        "simulate-profile", "simulate-hpa", "tune-hpa"])
def test_a_key_repeated_in_a_yaml_file_is_one_line_naming_file_line_object_and_path(tmp_path, src, line, args, where):
    f, first = repeat_line(src, tmp_path / src.name, line)
    r = invoke(*[str(f) if a == "{}" else a for a in args], *(["--output-dir", tmp_path / "out"]
                                                                 if args[0] in ("simulate", "tune") else []))
    key = line.rstrip(":")
    assert error_line(r) == f'error: {f}:{first + 1}: {where}: duplicate key "{key}" {REPEATED.format(first=first)}'


def test_a_key_repeated_in_json_is_refused_with_its_path(tmp_path):
    text = (EXPLAIN / "podmetrics.json").read_text().replace('"window": "15s",', '"window": "15s", "window": "30s",', 1)
    f = write(tmp_path / "podmetrics.json", text)
    line = 1 + text[:text.index('"window"')].count("\n")
    r = invoke("explain", "--hpa", EXPLAIN / "hpa.yaml", "--pods", EXPLAIN / "pods.yaml", "--pod-metrics", f)
    assert error_line(r) == (f'error: {f}:{line}: PodMetricsList: items[0].window: duplicate key "window" '
                             f'{REPEATED.format(first=line)}')


def test_a_key_repeated_in_a_kubeconfig_is_refused(tmp_path):
    kubeconfig = write(tmp_path / "kubeconfig", "apiVersion: v1\nclusters: []\ncontexts: []\nclusters: []\n")
    r = invoke("run", "--kubeconfig", kubeconfig)
    assert error_line(r) == f'error: {kubeconfig}:4: clusters: duplicate key "clusters" {REPEATED.format(first=2)}'


def test_keys_a_yaml_merge_brings_in_may_be_overridden(tmp_path):
    from pyhpa.adapters.snapshot import read_document

    f = write(tmp_path / "merge.yaml", "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n")
    assert read_document(f) == {"base": {"x": 1, "y": 2}, "other": {"x": 3, "y": 2}}
    f = write(tmp_path / "twice.yaml", "a: 1\n---\nb: {c: 1, 'c': 2}\n")  # quoted or not, the same key
    with pytest.raises(InputError) as err:
        read_document(f)
    assert (err.value.line, err.value.field) == (3, "b.c")


# ------------------------------------------------------------------------------------------- names in files
# (issue 37) A metadata.name or metadata.namespace the API server would refuse (apimachinery's ValidateObjectMeta:
# names of HPAs, Deployments and custom resources DNS-1123 subdomains, of StatefulSets and namespaces DNS-1123
# labels) is one line naming file, object and field, unless --lenient, as for every object the API server refuses.
SUBDOMAIN = "an RFC 1123 subdomain has lower-case letters, digits, '-', '.' only and starts and ends with a letter or digit"
LABEL = "an RFC 1123 label has lower-case letters, digits, '-' only and starts and ends with a letter or digit"
SCHEDULES = ROOT / "examples" / "schedules" / "php-apache-schedules.yaml"


@pytest.mark.parametrize("field, value, message", [
    ("name", "wéb", f"'wéb' is not a valid name: {SUBDOMAIN}"),
    ("name", "Web", f"'Web' is not a valid name: {SUBDOMAIN}"),
    ("name", "web\n", f"'web\\n' is not a valid name: {SUBDOMAIN}"),
    ("name", "a" * 254, "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is not a valid name: at most 253 characters (an RFC 1123 "
                        "subdomain), got 254"),
    ("namespace", "prod.eu", f"'prod.eu' is not a valid name: {LABEL}"),
    ("namespace", "prød", f"'prød' is not a valid name: {LABEL}"),
])
@pytest.mark.parametrize("command", [("thresholds", "{}"), ("explain", "--hpa", "{}", "--recommendation", "2"),
                                     ("schedules", "{}")])
def test_a_name_in_a_file_the_api_server_would_refuse_is_one_line(tmp_path, field, value, message, command):
    doc = yaml.safe_load((SCHEDULES if command[0] == "schedules" else EXPLAIN / "hpa.yaml").read_text())
    doc["metadata"][field] = value
    f = write(tmp_path / "hpa.yaml", doc)
    meta = {"name": "php-apache", "namespace": doc["metadata"].get("namespace")} | {field: value}
    name = meta["name"] if meta["name"].isprintable() else repr(meta["name"])  # one line, whatever the name holds
    label = f"{doc['kind']} {meta['namespace'] + '/' if meta['namespace'] else ''}{name}"
    r = invoke(*[str(f) if a == "{}" else a for a in command])
    assert error_line(r) == f"error: {f}: {label}: metadata.{field}: {message}"


def test_lenient_reads_a_name_the_api_server_would_refuse(tmp_path):
    doc = yaml.safe_load((EXPLAIN / "hpa.yaml").read_text())
    doc["metadata"]["name"] = "Wéb"
    r = invoke("explain", "-o", "json", "--lenient", "--hpa", write(tmp_path / "hpa.yaml", doc), "--recommendation", "2")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["name"] == "default/Wéb"


@pytest.mark.parametrize("kind, name, message", [
    ("Deployment", "Ksc-web", f"'Ksc-web' is not a valid name: {SUBDOMAIN}"),
    ("Deployment", "ksc.web", None),  # a subdomain: the API server takes it for a Deployment ...
    ("StatefulSet", "ksc.web", f"'ksc.web' is not a valid name: {LABEL}"),  # ... and not for a StatefulSet
])
def test_simulate_refuses_a_target_name_the_api_server_would_refuse(tmp_path, kind, name, message):
    target = yaml.safe_load((NASA / "deployment.yaml").read_text())
    target["kind"], target["metadata"]["name"] = kind, name
    hpa = yaml.safe_load((NASA / "hpa.yaml").read_text())
    hpa["spec"]["scaleTargetRef"].update(kind=kind, name=name)
    f = write(tmp_path / "target.yaml", target)
    args = list(SIMULATE)
    args[2], args[4] = write(tmp_path / "hpa.yaml", hpa), f
    r = invoke(*args, "--end", "1995-07-10T02:00:00", "--output-dir", tmp_path / "out")
    if message is None:
        assert r.exit_code == 0, r.output
    else:
        assert error_line(r) == f"error: {f}: {kind} web/{name}: metadata.name: {message}"
