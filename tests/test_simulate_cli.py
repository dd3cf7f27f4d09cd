"""``pyhpa simulate`` through the real CLI app: the bundled default run, determinism,
compare mode, and bad input as one line with exit code 2."""

from __future__ import annotations

import json

import pytest
from simulate_util import hpa_doc, step_trace, target_doc, write_yaml
from typer.testing import CliRunner

from pyhpa.cli.main import app
from pyhpa.simulate import bundled_path

runner = CliRunner()
SUMMARY_KEYS = {"pod_hours", "overloaded_seconds", "overloaded_fraction", "unserved_requests", "scale_ups",
                "scale_downs", "flaps", "syncs", "simulated_seconds", "min_replicas_seen", "max_replicas_seen"}


def invoke(*args: str):
    return runner.invoke(app, ["simulate", "--no-progress", *args])


def test_default_run_uses_the_bundled_example(tmp_path):
    out = tmp_path / "out"
    result = invoke("--output-dir", str(out))
    assert result.exit_code == 0, result.output
    assert "php-apache" in result.output and "nasa_http_1995-07-12_13_per_minute.csv" in result.output
    assert "pod-hours" in result.output and "flaps" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary["syncs"] == 2 * 86400 // 15 and summary["simulated_seconds"] == 2 * 86400
    assert 1 <= summary["min_replicas_seen"] <= summary["max_replicas_seen"] <= 10
    header = (out / "timeline.csv").read_text().splitlines()[0].split(",")
    assert header[:5] == ["time", "load", "current_replicas", "ready_replicas", "desired_replicas"]
    assert "cpu_utilization_percent" in header and "cpu_utilization_percent_target" in header
    assert "conditions_changed" in header
    assert (out / "timeline.csv").read_text().splitlines()[1].startswith("1995-07-12T00:00:00-04:00,")
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_same_inputs_and_seed_give_identical_bytes(tmp_path):
    args = ("--seed", "7", "--no-plot", "--start", "1995-07-13T06:00", "--end", "1995-07-13T14:00")
    a, b = invoke("--output-dir", str(tmp_path / "a"), *args), invoke("--output-dir", str(tmp_path / "b"), *args)
    assert a.exit_code == b.exit_code == 0, a.output
    for name in ("timeline.csv", "summary.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_seeded_randomness_is_reproducible_and_seed_dependent(tmp_path):
    profile = write_yaml(tmp_path / "p.yaml", {"traffic_spread": "imbalanced", "startup_jitter_fraction": 0.5,
                                                "cpu_millicore_seconds_per_request": 120})
    common = ("--hpa", str(bundled_path("hpa")), "--target", str(bundled_path("target")), "--trace",
              str(bundled_path("trace")), "--column", "requests_per_second", "--profile", str(profile), "--no-plot",
              "--end", "1995-07-12T12:00")
    runs = {name: invoke("--output-dir", str(tmp_path / name), "--seed", seed, *common)
            for name, seed in (("a", "1"), ("b", "1"), ("c", "2"))}
    assert all(r.exit_code == 0 for r in runs.values()), runs["a"].output
    read = lambda n: (tmp_path / n / "timeline.csv").read_bytes()  # noqa: E731
    assert read("a") == read("b") != read("c")


def test_compare_several_hpas(tmp_path):
    hpas = [write_yaml(tmp_path / "tight.yaml", hpa_doc(max_replicas=10)),
            write_yaml(tmp_path / "loose.yaml", hpa_doc(max_replicas=10, behavior={"scaleUp": {"tolerance": "0.5"}}))]
    target = write_yaml(tmp_path / "target.yaml", target_doc(replicas=2))
    trace = step_trace(tmp_path / "trace.csv", [(600, 1.0), (1200, 1.3)])
    out = tmp_path / "out"
    result = invoke("--hpa", str(hpas[0]), "--hpa", str(hpas[1]), "--target", str(target), "--trace", str(trace),
                    "--column", "rps", "--output-dir", str(out))
    assert result.exit_code == 0, result.output
    assert "tight" in result.output and "loose" in result.output
    for label in ("tight", "loose"):
        assert json.loads((out / label / "summary.json").read_text())["label"] == label
    assert (out / "compare.png").exists()
    runs = json.loads((out / "compare.json").read_text())["runs"]
    assert [r["label"] for r in runs] == ["tight", "loose"]


@pytest.mark.parametrize("args, message", [
    (("--trace", "t.csv"), "error: --hpa, --target, --column: missing: simulate needs --hpa, --target, --trace and "
                           "--column together (given: --trace), or none of --hpa, --target, --trace for the bundled "
                           "example"),
    (("--hpa", "h.yaml", "--column", "rps"), "error: --target, --trace: missing: simulate needs --hpa, --target, "
     "--trace and --column together (given: --hpa, --column), or none of --hpa, --target, --trace for the bundled "
     "example"),
    (("--column", "nope"), "no column 'nope' in the trace"),
    (("--load-scale", "-1"), "--load-scale: must be a number > 0"),
    (("--sync-period", "0"), "--sync-period: must be > 0"),
    (("--where", "vm"), "--where: want COLUMN=VALUE"),
    (("--metric-column", "x"), "--metric-column: want METRIC=COLUMN"),
    (("--start", "1999-01-01"), "fewer than 2 rows left"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_bad_manifests_name_file_object_and_field(tmp_path):
    hpa = write_yaml(tmp_path / "hpa.yaml", hpa_doc(name="other"))
    result = invoke("--hpa", str(hpa), "--target", str(bundled_path("target")), "--trace", str(bundled_path("trace")),
                    "--column", "requests_per_second")
    assert result.exit_code == 2
    assert "hpa.yaml: HorizontalPodAutoscaler other: spec.scaleTargetRef: scaleTargetRef is Deployment default/other" \
        in result.output
    pods_metric = hpa_doc(name="php-apache", metrics=[{"type": "Pods", "pods": {
        "metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}}])
    hpa = write_yaml(tmp_path / "hpa2.yaml", pods_metric)
    result = invoke("--hpa", str(hpa), "--target", str(bundled_path("target")), "--trace", str(bundled_path("trace")),
                    "--column", "requests_per_second")
    assert result.exit_code == 2
    assert "spec.metrics[0]: Pods metric 'qps' has no simulated source: add --metric-column qps=COLUMN" in result.output


# (issue 37) A Utilization target over pods whose request is 0 or missing is legal (the API server takes it), and
# upstream's error repeats on every sync: one warning line on stderr says so before the run, which goes on.
@pytest.mark.parametrize("requests, metric, problem, reason", [
    ({"cpu": "0"}, None, "spec.template.spec.containers[0].resources.requests.cpu: container app requests 0 cpu",
     "no metrics returned matched known pods"),
    ({"memory": "64Mi"}, None, "spec.template.spec.containers[0].resources.requests.cpu: container app has no cpu "
                               "request", "missing request for cpu in container app"),
    ({"memory": "64Mi"}, [{"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                                                                              "target": {"type": "Utilization",
                                                                                         "averageUtilization": 50}}}],
     "spec.template.spec.containers[0].resources.requests.cpu: container app has no cpu request",
     "missing request for cpu in container app"),
], ids=["zero", "missing", "container-resource"])
def test_a_utilization_target_without_a_request_warns_once_before_the_run(tmp_path, requests, metric, problem, reason):
    target = target_doc()
    target["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = requests
    tfile, hfile = write_yaml(tmp_path / "target.yaml", target), write_yaml(tmp_path / "hpa.yaml", hpa_doc(metrics=metric))
    trace = step_trace(tmp_path / "t.csv", [(600, 10.0)])
    result = invoke("--hpa", str(hfile), "--target", str(tfile), "--trace", str(trace), "--column", "rps", "--no-plot",
                    "--output-dir", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"warning: {tfile}: Deployment default/web: {problem}, so the Utilization target of {hfile} (HorizontalPodAutoscaler "
        f"web, spec.metrics[0]) cannot be computed: every sync will report upstream's FailedGetResourceMetric "
        f"({reason})"]
    errors = [row.split(",")[0] for row in (tmp_path / "out" / "timeline.csv").read_text().splitlines()[1:]
              if reason in row]
    assert len(errors) == json.loads((tmp_path / "out" / "summary.json").read_text())["syncs"] == 40


def test_the_request_warning_comes_before_the_run_and_not_for_pods_with_requests(tmp_path):
    from pyhpa.simulate import run_simulation

    events = []
    target = target_doc()
    hfile = write_yaml(tmp_path / "hpa.yaml", hpa_doc())
    trace = step_trace(tmp_path / "t.csv", [(600, 10.0)])
    for cpu in ("100m", "0"):
        target["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
        tfile = write_yaml(tmp_path / f"target-{cpu}.yaml", target)
        run_simulation([hfile], tfile, trace, "rps", warn=lambda line: events.append(("warn", cpu)),
                       progress=lambda *a, c=cpu: events.append(("run", c)))
    assert ("warn", "100m") not in events
    assert events.index(("warn", "0")) < events.index(("run", "0")) and events.count(("warn", "0")) == 1
