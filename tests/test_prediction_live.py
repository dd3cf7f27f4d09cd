"""Predictive scaling in `pyhpa run`: history from a real Prometheus, against the Kubernetes API double.

A Prometheus is backfilled (``promtool tsdb create-blocks-from openmetrics``) with 7 days of the pods'
CPU counter (cAdvisor's ``container_cpu_usage_seconds_total``) in which the load rises every day ten
minutes after the test's "now"; the live pod is idle. The controller, with a prediction that looks 15
minutes ahead and its default history query, scales the Deployment up before the load arrives. Prometheus down or
hanging: the prediction steps aside (``HistoryUnavailable``), the reactive path decides, syncs go on.
Skipped only where the ``prometheus``/``promtool`` binaries are absent (``.ci/run`` installs them).
"""

from __future__ import annotations

import asyncio
import random
import shutil
import socket
import time

import pytest
from controller_util import autoscaler, deployment, pod, wait_for
from lightkube import codecs
from test_controller_e2e import HA, Running, replicas

from controlplane.prometheus import PrometheusServer, prometheus_binary
from kubedouble import KubeDouble
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

needs_prometheus = pytest.mark.skipif(
    prometheus_binary() is None or shutil.which("promtool") is None,
    reason="prometheus/promtool are not installed here (.ci/run installs Debian's package)",
)
BUSY_SECONDS = 3 * 3600
#: the daily rise comes this long after the test's start, inside the forecast's window (``LEAD``) from the first
#: sync, and far beyond the test's start-up (Prometheus, the backfill, the controller) on a busy machine
RISE_IN, LEAD = 600.0, 900


def stored_status(kd: KubeDouble, name: str) -> dict:
    return (kd.get_object(HA, "horizontalautoscalers", "default", name) or {}).get("status") or {}


def condition(status: dict, ctype: str) -> dict:
    return {c["type"]: c for c in status.get("conditions") or []}.get(ctype, {})


def history_file(path, now: float, rise_in: float, namespace: str = "default") -> None:
    """7 days of a 1-CPU pod's (``namespace``/web-0) CPU counter, one sample a minute: 0.2 cores, and 4 cores for
    3 hours a day starting at the time of day of ``now + rise_in`` (a little noise on both)."""
    rng = random.Random(7)
    rise = (now + rise_in) % 86400
    counter = 0.0
    lines = ["# TYPE container_cpu_usage_seconds_total counter"]
    for t in range(int(now) - 7 * 86400, int(now) - 60, 60):
        busy = (t % 86400 - rise) % 86400 < BUSY_SECONDS
        counter += (4.0 if busy else 0.2) * (1 + 0.05 * rng.uniform(-1, 1)) * 60
        lines.append(f'container_cpu_usage_seconds_total{{namespace="{namespace}",pod="web-0",container="app"}} '
                     f"{counter:.3f} {t}")
    path.write_text("\n".join(lines) + "\n# EOF\n")


def hpa(**prediction) -> HorizontalAutoscaler:
    return HorizontalAutoscaler(autoscaler("web", "web", max_replicas=10, syncPeriodSeconds=1, prediction=prediction))


async def idle_web(kd: KubeDouble, cpu: str = "200m") -> None:
    await kd.async_client().create(codecs.from_dict(deployment("web", 1)))
    kd.put_object(pod("web-0", "web", cpu="1"))
    kd.set_pod_metrics("default", "web-0", {"app": {"cpu": cpu}})


@needs_prometheus
async def test_backfilled_history_drives_a_scale_up_before_the_load_arrives(kd, tmp_path):
    now = time.time()
    history_file(tmp_path / "history.om", now, rise_in=RISE_IN)
    prom = PrometheusServer([], backfill=tmp_path / "history.om")
    await asyncio.to_thread(prom.__enter__)
    try:
        await idle_web(kd)  # 20 % of the 1-CPU request against a 50 % target: the metric asks for 1 replica
        await kd.async_client().create(hpa(leadSeconds=LEAD))
        async with Running(kd, sync_period_seconds=1, prometheus_url=prom.url) as run:
            await wait_for(lambda: replicas(kd, "web") > 1, timeout=120, what="a predictive scale-up")
            up = (await wait_for(lambda: run.rescales("default/web"), what="the scale-up's result"))[0]
            d = up.decision
            assert up.gathered.inputs.now < now + RISE_IN, "the scale-up came after the load would have arrived"
            assert [p.replicas for p in d.proposals] == [1]  # the live metric alone would not scale
            # the forecast covers the start of the rise: well above the 0.2 cores of now, at most the 4 cores of
            # the busy hours (plus the band); a sharp daily step may be forecast at its full height
            total = up.gathered.inputs.forecast.total_milli
            assert 1000 <= total <= 5000
            # the core sizes for the expected value plus the band in proportion to the 50 % target's headroom
            provisioned = d.status.prediction.provisioned_milli
            assert up.gathered.inputs.forecast.expected_milli <= provisioned <= total
            asked = -(-provisioned // 500)  # 50 % of 1 CPU per pod
            assert [s.replicas for s in d.sources if s.source == "Prediction"] == [asked]
            assert d.prenormalized == asked  # the prediction's proposal was the recommendation
            assert d.desired_replicas == min(asked, 4)  # upstream's scale-up limit from 1: max(2 x 1, 4)
            assert str(d.decided_by) == "Policy/scaleUpLimit" if asked > 4 else d.decided_by.kind == "Prediction"
            await wait_for(lambda: stored_status(kd, "web").get("prediction", {}).get("reason") == "Predicting",
                           what="status.prediction")
            st = stored_status(kd, "web")
            assert st["prediction"]["periodsSeconds"] == [86400]
            assert st["prediction"]["model"].startswith("robust-seasonal")
            assert condition(st, "PredictionActive")["status"] == "True"
    finally:
        await asyncio.to_thread(prom.__exit__, None, None, None)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_prometheus_down_leaves_the_reactive_path_and_says_so(kd):
    await idle_web(kd, cpu="900m")  # 90 % against 50 %: the metric asks for 2
    await kd.async_client().create(hpa())
    url = f"http://127.0.0.1:{closed_port()}"
    async with Running(kd, sync_period_seconds=1, prometheus_url=url) as run:
        await wait_for(lambda: replicas(kd, "web") == 2, timeout=30, what="the reactive scale-up")
        up = (await wait_for(lambda: run.rescales("default/web"), what="the scale-up's result"))[0]
        assert up.decision.decided_by.kind == "Metric"
        assert up.gathered.inputs.forecast.total_milli is None
        await wait_for(lambda: "unreachable" in condition(stored_status(kd, "web"), "PredictionActive").get(
            "message", ""), what="PredictionActive=False HistoryUnavailable: unreachable")
        st = stored_status(kd, "web")
        cond = condition(st, "PredictionActive")
        assert cond["status"] == "False" and "prometheus unreachable" in cond["message"]
        assert st["prediction"]["reason"] == "HistoryUnavailable"
        assert "forecast" not in st["prediction"]


async def test_a_hanging_prometheus_never_holds_a_sync(kd):
    """Prometheus accepts the connection and never answers: syncs go on every second meanwhile, the
    history query times out (metrics timeout, 1 s) and the prediction steps aside."""
    held: list = []

    async def hang(reader, writer):
        held.append(writer)
        await asyncio.sleep(3600)

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await idle_web(kd)
        await kd.async_client().create(hpa())
        async with Running(kd, sync_period_seconds=1, metrics_timeout_seconds=1.0,
                           prometheus_url=f"http://127.0.0.1:{port}") as run:
            await wait_for(lambda: held, timeout=20, what="the history query")
            before = len(run.results)
            await wait_for(lambda: "longer than" in condition(stored_status(kd, "web"), "PredictionActive").get(
                "message", ""), timeout=20, what="HistoryUnavailable after the timeout")
            assert "longer than 1s" in condition(stored_status(kd, "web"), "PredictionActive")["message"]
            # syncs go on while the query hangs (it is never answered: every sync counted here came during it)
            await wait_for(lambda: len(run.results) - before >= 2, timeout=30, what="two syncs during the hang")
            assert held and not held[0].is_closing()
            assert replicas(kd, "web") == 1  # no scale change from a missing history
    finally:
        server.close()
        for w in held:
            w.close()
