"""What a new user meets on the command line: bad input is one line naming file, object and field (exit 2),
``explain`` refuses inputs that would explain the wrong thing, quantities read as written, help reads plainly."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from pyhpa.cli.main import app
from pyhpa.cli.readable import number, quantity
from pyhpa.core.model import MetricSpec

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples" / "explain"
SIM = ROOT / "examples" / "simulate" / "nasa"
runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def one_line_error(r) -> str:
    assert r.exit_code == 2, r.output
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1, r.output
    assert lines[0].startswith("error: ") and "Traceback" not in r.output
    return lines[0]


@pytest.fixture
def binary(tmp_path) -> Path:
    path = tmp_path / "image.yaml"
    path.write_bytes(bytes(range(256)) * 4)
    return path


@pytest.mark.parametrize("args", [
    ["explain", "{bin}"],
    ["thresholds", "{bin}"],
    ["explain", "--hpa", EX / "hpa.yaml", "--pods", EX / "pods.yaml", "--pod-metrics", "{bin}"],
    ["explain", "--hpa", "{bin}", "--pods", EX / "pods.yaml", "--pod-metrics", EX / "podmetrics.json"],
    ["simulate", "--profile", "{bin}", "--no-progress", "--no-plot", "--output-dir", "{tmp}/out"],
    ["simulate", "--hpa", SIM / "hpa.yaml", "--target", SIM / "deployment.yaml", "--trace", "{bin}", "--column", "x",
     "--no-progress", "--no-plot", "--output-dir", "{tmp}/out"],
], ids=["explain", "thresholds", "pod-metrics", "hpa", "profile", "trace"])
def test_a_binary_file_is_one_line_naming_it(args, binary, tmp_path):
    args = [str(a).replace("{bin}", str(binary)).replace("{tmp}", str(tmp_path)) for a in args]
    line = one_line_error(invoke(*args))
    assert line.startswith(f"error: {binary}: not a text file"), line


@pytest.mark.parametrize("where", ["file", "under-file", "proc"])
def test_an_output_dir_that_cannot_be_made_is_one_line_before_simulating(tmp_path, where):
    afile = tmp_path / "afile"
    afile.write_text("x")
    out = {"file": afile, "under-file": afile / "sub", "proc": Path("/proc/pyhpa-test/out")}[where]
    r = invoke("simulate", "--output-dir", out, "--no-progress", "--no-plot")
    line = one_line_error(r)
    assert line.startswith(f"error: {out}: --output-dir: "), line
    assert "pod-hours" not in r.output  # refused before the run, not after


def test_a_failed_run_leaves_no_empty_output_dir(tmp_path, binary):
    out = tmp_path / "new" / "deeper"
    one_line_error(invoke("simulate", "--profile", binary, "--output-dir", out, "--no-progress"))
    assert not (tmp_path / "new").exists()


# ------------------------------------------------------------------------------------------- explain inputs
KUBECTL = ["--hpa", EX / "hpa.yaml", "--pods", EX / "pods.yaml", "--pod-metrics", EX / "podmetrics.json"]


@pytest.mark.parametrize("args,needle", [
    (["--hpa", EX / "hpa.yaml"], "error: --pods: missing: --hpa needs the pods (kubectl get pods -l SELECTOR -o yaml) "
                                 "and --pod-metrics, or --recommendation N to skip metrics"),
    (["--hpa", EX / "hpa.yaml", "--pods", EX / "pods.yaml"], "error: --pod-metrics: missing: --hpa needs the pods' "
     "metrics (kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods), or --recommendation N to skip metrics"),
    ([EX / "snapshot.yaml", *KUBECTL], "error: --hpa: not with snapshot files: explain reads snapshots or kubectl "
                                      "output, not both"),
    ([EX / "snapshot.yaml", "--pods", EX / "pods.yaml"], "error: --pods: goes with --hpa (kubectl output); a snapshot "
                                                         "file holds its own"),
    (["--hpa", EX / "hpa.yaml", "--pods", EX / "podmetrics.json", "--pod-metrics", EX / "podmetrics.json"],
     f"error: {EX / 'podmetrics.json'}: kind: this is a PodMetricsList (metrics.k8s.io), not pods"),
    (["--hpa", EX / "hpa.yaml", "--pods", EX / "pods.yaml", "--pod-metrics", EX / "pods.yaml"],
     f"error: {EX / 'pods.yaml'}: items: this is a list of Pods, not pod metrics"),
    ([*KUBECTL, "--replicas", "-1"], "error: --replicas: must be 0 or more, got -1"),
    ([EX / "snapshot.yaml", "--recommendation", "-5"], "error: --recommendation: must be 0 or more, got -5"),
    ([], "error: SNAPSHOT: give snapshot files, or --hpa with --pods and --pod-metrics"),
])
def test_explain_refuses_inputs_that_would_explain_the_wrong_thing(args, needle):
    line = one_line_error(invoke("explain", *args))
    assert line.startswith(needle), line


def test_explain_hpa_alone_works_with_a_recommendation():
    r = invoke("explain", "-o", "json", "--hpa", EX / "hpa.yaml", "--recommendation", "5")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["desiredReplicas"] == 5


# ------------------------------------------------------------------------------------------- error wording
def _write(tmp_path, name, doc) -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return p


@pytest.mark.parametrize("doc,expected", [
    ({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "prod"},
      "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}}},
     "HorizontalPodAutoscaler prod/web: spec.maxReplicas: required field is missing"),
    ({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
      "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": "ten"}},
     "HorizontalPodAutoscaler web: spec.maxReplicas: expected an integer, got a string"),
    ({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
      "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}},
     "HorizontalPodAutoscaler without metadata.name: "),
    ({"apiVersion": "v1", "kind": "List", "items": []},
     "List: items: the List is empty (kubectl get found no autoscaler); give one autoscaler, e.g. kubectl get hpa NAME -n "
     "NAMESPACE -o yaml"),
    ({"foo": 1}, "kind: expected a pyhpa.dev/v1alpha1 HorizontalAutoscaler or an autoscaling/v2 HorizontalPodAutoscaler, got no apiVersion and kind"),
])
def test_errors_name_file_object_and_field_in_the_users_terms(tmp_path, doc, expected):
    path = _write(tmp_path, "hpa.yaml", doc)
    line = one_line_error(invoke("thresholds", path))
    assert line.startswith(f"error: {path}: {expected}"), line
    for internal in ("Object missing", "Expected `", "?:", "$."):
        assert internal not in line, line


@pytest.mark.parametrize("change,expected", [
    (lambda items: items[0].pop("metadata"), "Pod without metadata.name: items[0].metadata.name: required field is missing"),
    (lambda items: items.__setitem__(0, "x"), "items[0]: expected a v1 Pod, got a string"),
    (lambda items: items[0]["status"].__setitem__("phase", 3),
     "Pod default/php-apache-7d4b9-a: items[0].status.phase: expected a string, got an integer"),
])
def test_pod_errors_name_file_pod_and_field(tmp_path, change, expected):
    pods = yaml.safe_load((EX / "pods.yaml").read_text())
    change(pods["items"])
    path = _write(tmp_path, "pods.yaml", pods)
    line = one_line_error(invoke("explain", "--hpa", EX / "hpa.yaml", "--pods", path, "--pod-metrics",
                                 EX / "podmetrics.json"))
    assert line == f"error: {path}: {expected}"


# ------------------------------------------------------------------------------------------- readable quantities
MEMORY = MetricSpec("Resource", "memory", "AverageValue")
CPU = MetricSpec("Resource", "cpu", "Utilization", 50)


@pytest.mark.parametrize("milli,spec,text", [
    (346030080001, MEMORY, "330Mi"), (436906666666, MEMORY, "417Mi"), (314572800000, MEMORY, "300Mi"),
    (512000, MEMORY, "512"), (110001, None, "110"), (24000000, None, "24000"), (22500000, None, "22500"),
    (25714285, None, "25714"), (25714, None, "25.7"), (1, None, "0.001"), (168, CPU, "168m"), (2000, CPU, "2"),
    (110001, CPU, "110"), (0, None, "0"),
])
def test_quantities_read_as_written(milli, spec, text):
    assert quantity(milli, spec) == text


def test_rounding_directions_keep_threshold_lines_true():
    assert number(88.888, "down") == "88.8" and number(88.888, "up") == "88.9" and number(88.888) == "88.9"


def test_explain_and_thresholds_print_quantities_as_written_and_json_stays_exact(tmp_path):
    hpa = yaml.safe_load((EX / "hpa.yaml").read_text())
    hpa["spec"]["metrics"] = [{"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "AverageValue", "averageValue": "300Mi"}}}]
    path = _write(tmp_path, "hpa.yaml", hpa)
    pods = yaml.safe_load((EX / "pods.yaml").read_text())
    metrics = json.loads((EX / "podmetrics.json").read_text())
    for i, item in enumerate(metrics["items"]):
        item["containers"][0]["usage"]["memory"] = ["400Mi", "450Mi", "400Mi"][i]
    for p in pods["items"]:
        p["spec"]["containers"][0]["resources"]["requests"]["memory"] = "256Mi"
    args = ["--hpa", path, "--pods", _write(tmp_path, "pods.yaml", pods),
            "--pod-metrics", _write(tmp_path, "m.json", json.dumps(metrics)), "--now", "2026-11-21T10:00:00Z"]
    text = invoke("explain", *args)
    assert text.exit_code == 0, text.output
    assert "current 417Mi average  target 300Mi average" in text.output
    assert not re.search(r"\d{7,}m", text.output), text.output
    exact = json.loads(invoke("explain", "-o", "json", *args).output)
    assert exact["proposals"][0]["rawValue"] == "436906666666m"  # (400Mi + 450Mi + 400Mi) / 3, exact
    table = invoke("thresholds", path)
    assert "(target 300Mi)" in table.output and " 330Mi " in table.output  # 300Mi x 1.1
    assert " 266Mi " in table.output  # 9 -> 8 at or below 8/9 x 300Mi = 266.67Mi, rounded down
    assert not re.search(r"\d{7,}m", table.output), table.output
    rows = json.loads(invoke("thresholds", "-o", "json", path).output)["metrics"][0]["rows"]
    assert rows[0]["scale_up_at"] == "346030080001m"


# ------------------------------------------------------------------------------------------- help
COMMANDS = [[], ["explain"], ["thresholds"], ["simulate"], ["run"], ["manifests"], ["snapshot"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: c[0] if c else "pyhpa")
@pytest.mark.parametrize("columns", [80, 110])
def test_help_is_plain_and_nothing_is_cut(cmd, columns):
    env = dict(os.environ, COLUMNS=str(columns), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "pyhpa.cli.main", *cmd, "--help"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for bad in ("<bool>", "<list", "<str>", "<int>", "<float>", "<path>", "``", "…", "╭"):
        assert bad not in text, (bad, text)
    assert max(len(line) for line in text.splitlines()) <= columns
    if cmd == ["run"]:
        assert "--leader-elect-resource-namespace NAMESPACE" in text and "--log-format [text|json]" in text
    if not cmd:
        assert "per metric and per normalization step." in " ".join(text.split())  # summaries are whole


def test_kubedouble_runs_and_helps_from_any_directory(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "kubedouble", "--help"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "``" not in out.stdout and "--port PORT" in out.stdout and "(default: None)" not in out.stdout
    proc = subprocess.Popen([sys.executable, "-m", "kubedouble", "--port", "0"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("kubedouble serving at http://127.0.0.1:"), line
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "registered CRD horizontalautoscalers.pyhpa.dev" in err and "stand-in" not in err


# (issue 37) An error line names its flag once: "--start: 1995-07-14 is not before --end ...", never
# "--start: --start must be ..."; missing flags are named with the ones given.
TRACE = ROOT / "examples" / "traces" / "nasa_http_1995-07-10_16_per_minute.csv"


@pytest.mark.parametrize("args, line", [
    (["forecast", "--trace", TRACE, "--column", "requests", "--start", "2000-01-01", "--no-plot"],
     "error: --start: 2000-01-01 is not before the end of the trace (1995-07-17T00:00:00-04:00)"),
    (["simulate", "--hpa", SIM / "hpa.yaml", "--target", SIM / "deployment.yaml", "--trace", TRACE, "--column",
      "requests", "--start", "1995-07-14", "--end", "1995-07-13"],
     "error: --start: 1995-07-14 is not before --end 1995-07-13"),
    (["tune", "--target", SIM / "deployment.yaml"],
     "error: --hpa, --trace, --column: missing: tune needs --hpa, --target, --trace and --column together (given: "
     "--target), or NAMESPACE/NAME with --prometheus-url (live)"),
    (["tune", "default/web"], "error: --prometheus-url: missing: NAMESPACE/NAME is live mode, which reads the "
                              "autoscaler's history from Prometheus at this URL"),
    (["tune", "--prometheus-url", "http://127.0.0.1:9"], "error: NAMESPACE/NAME: missing: --prometheus-url is live "
                                                         "mode, which reads the autoscaler to tune from the cluster"),
], ids=["forecast-start", "simulate-start-end", "tune-offline", "tune-live-url", "tune-live-name"])
def test_an_error_line_names_its_flag_once(tmp_path, args, line):
    out = ["--output-dir", tmp_path / "out"] if args[0] in ("simulate", "tune") else []
    got = one_line_error(invoke(*args, *out))
    assert got == line
    field, _, message = got.removeprefix("error: ").partition(": ")
    assert not message.startswith(field.split(", ")[0])
