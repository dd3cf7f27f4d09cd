"""The dashboard against a real Prometheus that scraped ``pyhpa run`` driving the API double (issue 22).

Debian's ``prometheus`` (the PromQL tests' ``PrometheusServer``) scrapes the controller's ``/metrics`` every
second and holds a backfilled week of the ``web`` pod's CPU (as ``tests/test_prediction_live.py``), so that the
prediction forecasts. Three autoscalers cover the dashboard's states: ``web`` (prediction with a short lead,
saturation), ``worker`` (an External metric that is never served, on fallback), ``frozen`` (paused). Every
query of every panel of the committed dashboard returns data; the committed files are what
``deploy/monitoring/build.py`` builds.
"""

from __future__ import annotations

import asyncio
import importlib.util
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from controller_util import ControllerTask, autoscaler, deployment, pod, wait_for
from lightkube import codecs
from test_prediction_live import history_file

from controlplane.net import free_port
from controlplane.prometheus import PrometheusServer, prometheus_binary
from pyhpa.controller.cache.autoscaler import HorizontalAutoscaler

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("pyhpa_monitoring_build", ROOT / "deploy" / "monitoring" / "build.py")
build = importlib.util.module_from_spec(_spec)  # deploy/monitoring/build.py
_spec.loader.exec_module(build)

needs_prometheus = pytest.mark.skipif(
    prometheus_binary() is None or shutil.which("promtool") is None,
    reason="prometheus/promtool are not installed here (.ci/run installs Debian's package)",
)
QUEUE = {"type": "External", "external": {"metric": {"name": "queue_depth"},
                                          "target": {"type": "AverageValue", "averageValue": "30"}}}


def test_committed_dashboard_and_rule_are_what_the_script_builds():
    for path, text in build.texts().items():
        assert path.read_text() == text, f"{path.relative_to(ROOT)}: run python deploy/monitoring/build.py"
    out = subprocess.run([sys.executable, str(ROOT / "deploy" / "monitoring" / "build.py"), "--check"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_dashboard_has_the_panels_the_issue_lists():
    model = build.build_dashboard()
    titles = [p["title"] for p in model["panels"] if p["type"] != "row"]
    assert titles == ["Replicas against bounds", "Metric against target", "Decided by", "Forecast against actual",
                      "Forecast error (WAPE)", "Fallback, pause, prediction and saturation", "Sync lag", "Sync errors",
                      "Shard membership"]
    ids = [p["id"] for p in model["panels"]]
    assert len(set(ids)) == len(ids)
    assert {v["name"] for v in model["templating"]["list"]} == {"datasource", "namespace", "name"}
    # the PrometheusRule is the alert rules file's groups, unchanged
    import yaml
    assert build.build_prometheus_rule()["spec"]["groups"] == yaml.safe_load(build.ALERTS.read_text())["groups"]


async def _world(kd) -> None:
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", 1)))
    kd.put_object(pod("web-0", "web", cpu="1"))
    kd.set_pod_metrics("default", "web-0", {"app": {"cpu": "200m"}})
    await client.create(HorizontalAutoscaler(autoscaler("web", "web", syncPeriodSeconds=1, saturation={},
                                                        prediction={"leadSeconds": 2})))
    for name in ("worker", "frozen"):
        await client.create(codecs.from_dict(deployment(name, 2)))
        for i in range(2):
            kd.put_object(pod(f"{name}-{i}", name))
            kd.set_pod_metrics("default", f"{name}-{i}", {"app": {"cpu": "100m"}})
    await client.create(HorizontalAutoscaler(autoscaler("worker", "worker", [QUEUE], syncPeriodSeconds=1,
                                                        fallback={"failureThreshold": 1, "replicas": 3})))
    frozen = autoscaler("frozen", "frozen", syncPeriodSeconds=1)
    frozen["metadata"]["annotations"] = {"pyhpa.dev/paused": "true"}
    await client.create(HorizontalAutoscaler(frozen))


def _instant(url: str, query: str) -> list:
    answer = httpx2.get(f"{url}/api/v1/query", params={"query": query}, timeout=30.0).json()
    assert answer["status"] == "success", (query, answer)
    return answer["data"]["result"]


@needs_prometheus
async def test_every_dashboard_query_returns_data(kd, tmp_path):
    now = time.time()
    history_file(tmp_path / "history.om", now, rise_in=3600.0)
    port = free_port()
    prom = PrometheusServer([f"127.0.0.1:{port}"], backfill=tmp_path / "history.om")
    await asyncio.to_thread(prom.__enter__)
    try:
        await _world(kd)
        async with ControllerTask(kd, sync_period_seconds=1, health_host="127.0.0.1", health_port=port,
                                  prometheus_url=prom.url) as run:
            registry = run.controller.monitor.registry
            web = {"namespace": "default", "name": "web"}

            async def fresh_samples() -> None:  # metrics-server's samples are new every scrape: so are these
                while True:
                    kd.set_pod_metrics("default", "web-0", {"app": {"cpu": "200m"}})
                    await asyncio.sleep(1.0)

            refresh = asyncio.create_task(fresh_samples())
            try:
                await wait_for(lambda: registry.get_sample_value("pyhpa_autoscaler_prediction_wape_ratio", web)
                               is not None, timeout=150, what="web's forecasts judged (WAPE)")
            finally:
                refresh.cancel()
            queries = build.dashboard_queries(build.build_dashboard())
            assert len(queries) == sum(len(q) for _, _, q in build.QUERIES.values()) == 20
            missing = {}
            deadline = time.monotonic() + 60
            for q in queries:
                expr = q.replace("$namespace", ".*").replace("$name", ".*")
                while True:
                    result = await asyncio.to_thread(_instant, prom.url, expr)
                    if result or time.monotonic() > deadline:
                        break
                    await asyncio.sleep(0.5)
                if not result:
                    missing[q] = result
            assert missing == {}
            # the data is what the controller decided: paused, fallback and the deciding sources
            paused = await asyncio.to_thread(_instant, prom.url, 'pyhpa_autoscaler_paused{name="frozen"}')
            assert [r["value"][1] for r in paused] == ["1"]
            fallback = await asyncio.to_thread(_instant, prom.url, 'pyhpa_autoscaler_fallback_active{name="worker"}')
            assert [r["value"][1] for r in fallback] == ["1"]
            decided = await asyncio.to_thread(_instant, prom.url, "pyhpa_autoscaler_decided_by_info")
            by = {r["metric"]["name"]: r["metric"]["source"] for r in decided}
            assert by["frozen"] == "Pause" and by["worker"] in ("Fallback", "Policy")
    finally:
        await asyncio.to_thread(prom.__exit__, None, None, None)
