"""``pyhpa run`` as an operator reads it: one structured line per rescale, per failed metric and per InvalidSpec
(``--log-format text`` logfmt, ``json``), and one-line errors instead of tracebacks at start and stop."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from controller_util import CRD, autoscaler, deployment, pod

from kubedouble import KubeDouble
from pyhpa.controller.outputs.logs import JsonFormatter, LogfmtFormatter, fields

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, PYTHONPATH=str(ROOT))


def _pyhpa(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "pyhpa.cli.main", *args], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _lines(proc: subprocess.Popen) -> queue.Queue:
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    return lines


def _cluster(kd: KubeDouble) -> None:
    """web: 2 pods at 200m of a 200m request (100 %) against 50 %: scales to 4. nometrics: no pod metrics.
    broken: a quantity the CRD admits (it holds any value) but the controller cannot read: InvalidSpec."""
    kd.register_crd(CRD)
    for name in ("web", "nometrics"):
        kd.put_object(deployment(name, 2) | {"status": {"replicas": 2}})
        for i in range(2):
            kd.put_object(pod(f"{name}-{i}", name))
    for i in range(2):
        kd.set_pod_metrics("default", f"web-{i}", {"app": {"cpu": "200m"}})
    kd.put_object(autoscaler("web", "web"))
    kd.put_object(autoscaler("nometrics", "nometrics"))
    kd.put_object(autoscaler("broken", "web", [{"type": "Pods", "pods": {
        "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": [100]}}}]))


def _run_until(kd: KubeDouble, log_format: str, done) -> list[str]:
    proc = _pyhpa("run", "--server", kd.url, "--health-port", "-1", "--sync-period", "1", "--log-format", log_format)
    lines, seen = _lines(proc), []
    try:
        deadline = time.monotonic() + 60
        while not done(seen):
            assert time.monotonic() < deadline, "".join(seen)
            seen.append(lines.get(timeout=60))
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        while True:
            try:
                seen.append(lines.get(timeout=1))
            except queue.Empty:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(seen)
    return seen


def test_json_log_has_one_line_per_rescale_failed_metric_and_invalid_spec():
    kd = KubeDouble.start_in_thread()
    try:
        _cluster(kd)

        def done(seen):
            msgs = {(r.get("msg"), r.get("autoscaler")) for r in map(json.loads, seen)}
            return {("rescaled", "default/web"), ("metric failed", "default/nometrics"),
                    ("invalid spec", "default/broken")} <= msgs

        seen = _run_until(kd, "json", done)
    finally:
        kd.stop()
    records = [json.loads(line) for line in seen]  # every line is one JSON object
    assert all({"time", "level", "logger", "msg"} <= r.keys() for r in records)
    rescale = next(r for r in records if r["msg"] == "rescaled")
    assert rescale["level"] == "info" and rescale["autoscaler"] == "default/web"
    assert rescale["target"] == "Deployment/web" and (rescale["old"], rescale["new"]) == (2, 4)
    assert rescale["decided_by"] == "Metric/cpu resource utilization (percentage of request)"  # Decision.decided_by
    assert rescale["reason"] == "cpu resource utilization (percentage of request) above target"
    failed = next(r for r in records if r["msg"] == "metric failed")
    assert failed["level"] == "warning" and failed["reason"] == "FailedGetResourceMetric"
    assert failed["metric"] == "cpu resource utilization (percentage of request)" and failed["error"]
    invalid = next(r for r in records if r["msg"] == "invalid spec")
    assert invalid["level"] == "warning" and invalid["reason"] == "InvalidSpec"
    assert invalid["error"].startswith("spec.metrics[0].pods.target.averageValue: expected a quantity")
    assert sum(1 for r in records if r["msg"] == "rescaled") == 1  # one line per rescale, not per sync
    assert not any("Traceback" in line or "never retrieved" in line for line in seen)


def test_text_log_is_logfmt():
    kd = KubeDouble.start_in_thread()
    try:
        _cluster(kd)
        seen = _run_until(kd, "text", lambda s: any(" msg=rescaled " in line for line in s))
    finally:
        kd.stop()
    line = next(line for line in seen if " msg=rescaled " in line)
    assert line.startswith("time=") and " level=info logger=pyhpa.controller.reconciler msg=rescaled " in line
    assert " autoscaler=default/web target=Deployment/web old=2 new=4 decided_by=" in line
    assert line.rstrip().endswith('reason="cpu resource utilization (percentage of request) above target"')
    assert all(line.startswith("time=") for line in seen), seen


def test_formatters_quote_and_keep_one_line():
    import logging

    record = logging.LogRecord("pyhpa.x", logging.WARNING, __file__, 1, "metric failed", (), None)
    record.__dict__.update(fields(autoscaler="ns/a", error='bad "value"\nsecond line', n=3, none=None))
    text = LogfmtFormatter().format(record)
    assert "\n" not in text
    assert text.endswith(' msg="metric failed" autoscaler=ns/a error="bad \\"value\\"\\nsecond line" n=3 none=-')
    obj = json.loads(JsonFormatter().format(record))
    assert obj["n"] == 3 and obj["none"] is None and obj["error"] == 'bad "value"\nsecond line'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_health_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _pyhpa("run", "--server", f"http://127.0.0.1:{_free_port()}", "--health-host", "127.0.0.1",
                      "--health-port", str(port))
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    assert out.strip().splitlines() == [
        f"error: --health-port: cannot serve /healthz, /readyz and /metrics on 127.0.0.1:{port}: already in use"]


@pytest.mark.parametrize("extra", [[], ["--leader-elect", "--leader-elect-identity", "me"]])
def test_stopping_while_the_api_server_is_unreachable_is_quiet(extra):
    """No "exception was never retrieved", no traceback: the retries' warnings, then a clean stop."""
    proc = _pyhpa("run", "--server", f"http://127.0.0.1:{_free_port()}", "--health-port", "-1", *extra)
    lines, seen = _lines(proc), []
    try:
        while not any("retrying" in line or "lease" in line for line in seen):
            seen.append(lines.get(timeout=60))
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        time.sleep(0.2)
        while not lines.empty():
            seen.append(lines.get())
    finally:
        if proc.poll() is None:
            proc.kill()
    out = "".join(seen)
    assert proc.returncode == 0, out
    assert "never retrieved" not in out and "Traceback" not in out and "CancelledError" not in out, out
    assert all(line.startswith("time=") for line in seen), out
