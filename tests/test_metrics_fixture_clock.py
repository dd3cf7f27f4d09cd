"""Issue 37: the control plane's metrics fixture dates an annotated pod's sample at metrics-server's latest scrape,
not at the instant the annotation was seen (which, frozen, kept upstream's CPU initialization rule from counting a
new pod for 300 s). No control plane needed: the fixture's answer is built from a pod it is told about."""

from __future__ import annotations

import datetime as dt
import math
import time
from types import SimpleNamespace

from controlplane.metrics import SCRAPE_SECONDS, MetricsFixture


class _Pods:
    def __init__(self, pods):
        self.listeners, self._pods = [], pods

    def pods(self, ns=None):
        return [p for p in self._pods if ns is None or p["metadata"]["namespace"] == ns]


def _pod(name: str, annotations: dict) -> dict:
    return {"metadata": {"name": name, "namespace": "demo", "labels": {"app": "web"}, "annotations": annotations},
            "spec": {"containers": [{"name": "app"}]}}


def _scrapes_around(read) -> tuple[set, object]:
    before = math.floor(time.time() / SCRAPE_SECONDS) * SCRAPE_SECONDS
    answer = read()
    after = math.floor(time.time() / SCRAPE_SECONDS) * SCRAPE_SECONDS
    stamps = {dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") for t in (before, after)}
    return stamps, answer


def test_an_annotated_pod_s_sample_is_dated_at_the_latest_scrape_and_one_scrape_wide():
    annotated = _pod("a", {"metrics.pyhpa.dev/cpu": "300m"})
    set_by_test = _pod("b", {})
    kubelet = _Pods([annotated, set_by_test])
    fixture = MetricsFixture(SimpleNamespace(metrics_ip="127.0.0.1"), kubelet)
    fixture._pod_event("ADDED", annotated)
    fixture.set_pod_metrics("demo", "b", {"app": {"cpu": "100m"}}, timestamp="2026-01-01T00:00:00Z")

    stamps, answer = _scrapes_around(lambda: fixture.pod_metrics_list("demo", {}))
    items = {i["metadata"]["name"]: i for i in answer["items"]}
    assert items["a"]["timestamp"] in stamps and items["a"]["window"] == f"{SCRAPE_SECONDS}s"
    assert items["a"]["containers"] == [{"name": "app", "usage": {"cpu": "300m"}}]
    # a value a test set keeps the timestamp and window it was given
    assert (items["b"]["timestamp"], items["b"]["window"]) == ("2026-01-01T00:00:00Z", "30s")
    stamps, one = _scrapes_around(lambda: fixture.pod_metrics_one("demo", "a"))
    assert one["timestamp"] in stamps
