"""Upstream's AmbiguousSelector: no HPA scales pods that another HPA's selector also selects."""

from __future__ import annotations

from controller_util import autoscaler, deployment, wait_for
from lightkube import codecs
from test_controller_e2e import Running, events, put_pods, replicas, set_cpu

from pyhpa.controller.cache.selectors import SelectorIndex
from pyhpa.core import ControllerConfig, Pod, SyncInputs, decide
from tests.builders import NOW, cpu_hpa, cpu_pods, old_memory, scale


def test_core_refuses_pods_selected_by_another_hpa():
    pods, samples = cpu_pods([1000, 1000])  # pods labelled app=x; would scale up
    others = [("default/other", "app=x"), ("default/unrelated", "app=y"), ("default/broken", "a in (")]
    d = decide(SyncInputs(hpa=cpu_hpa(), scale=scale(2), pods=pods, samples=[samples], memory=old_memory(2), now=NOW,
                          config=ControllerConfig(), other_selectors=others))
    assert not d.rescale and d.desired_replicas == 2
    msg = "pods by selector app=x are controlled by more than one HPA (e.g. [default/other default/x])"
    active = {c.type: c for c in d.conditions}["ScalingActive"]
    assert (active.status, active.reason, active.message) == ("False", "AmbiguousSelector", msg)
    assert [(e.reason, e.message) for e in d.events][0] == ("AmbiguousSelector", msg)
    alone = decide(SyncInputs(hpa=cpu_hpa(), scale=scale(2), pods=pods, samples=[samples], memory=old_memory(2),
                              now=NOW, config=ControllerConfig(), other_selectors=others[1:]))
    assert alone.rescale and alone.desired_replicas == 4


def test_index_finds_candidates_by_label_and_forgets_deleted_autoscalers():
    idx = SelectorIndex()
    idx.put("ns/a", "ns", "app=web,tier=front")
    idx.put("ns/b", "ns", "tier in (front)")  # no equality: scanned
    idx.put("ns/c", "ns", "app=api")
    idx.put("other/d", "other", "app=web")
    pod = Pod("p", "Running", {"app": "web", "tier": "front"})
    assert idx.candidates("ns/x", "ns", [pod]) == [("ns/a", "app=web,tier=front"), ("ns/b", "tier in (front)")]
    idx.remove("ns/a")
    idx.put("ns/b", "ns", "app=api")  # selector changed
    assert idx.candidates("ns/x", "ns", [pod]) == []
    # several selectors under one first requirement, removed one by one
    api = Pod("q", "Running", {"app": "api"})
    idx.put("ns/e", "ns", "app=api,tier=back")
    assert idx.candidates("ns/x", "ns", [api]) == [("ns/b", "app=api"), ("ns/c", "app=api"),
                                                   ("ns/e", "app=api,tier=back")]
    idx.remove("ns/c")
    idx.remove("ns/b")
    assert idx.candidates("ns/x", "ns", [api]) == [("ns/e", "app=api,tier=back")]
    assert idx.candidates("ns/e", "ns", [api]) == []
    idx.remove("ns/e")
    idx.put("ns/c", "ns", "app=api")
    assert idx.candidates("ns/x", "ns", [api]) == [("ns/c", "app=api")]


async def test_controller_reports_ambiguous_selector_and_scales_once_resolved(kd):  # noqa: F811
    client = kd.async_client()
    await client.create(codecs.from_dict(deployment("web", 2)))
    put_pods(kd, "web", 0, 2)
    set_cpu(kd, "web", 2, "100m")  # at target: no scaling while both autoscalers register their selectors
    kd.put_object(autoscaler("first", "web", syncPeriodSeconds=1))
    kd.put_object(autoscaler("second", "web", syncPeriodSeconds=1))
    async with Running(kd, sync_period_seconds=1) as run:
        def ambiguous(key, after=0):
            return sum(1 for r in run.results[after:] if r.key == key and r.decision is not None and r.decision.error
                       and "more than one HPA" in r.decision.error)

        await wait_for(lambda: ambiguous("default/first") and ambiguous("default/second"), what="both ambiguous")
        set_cpu(kd, "web", 2, "200m")  # 100 % against 50 %: either would scale 2 -> 4 on its own
        mark = len(run.results)
        await wait_for(lambda: ambiguous("default/first", mark) >= 2 and ambiguous("default/second", mark) >= 2,
                       what="ambiguous syncs after the load rose")
        assert replicas(kd, "web") == 2
        status = kd.get_object("pyhpa.dev/v1alpha1", "horizontalautoscalers", "default", "first")["status"]
        active = {c["type"]: c for c in status["conditions"]}["ScalingActive"]
        assert (active["status"], active["reason"]) == ("False", "AmbiguousSelector")
        assert "[default/first default/second]" in active["message"]
        assert any(e["reason"] == "AmbiguousSelector" for e in events(kd, "first"))
        kd.delete_object("pyhpa.dev/v1alpha1", "horizontalautoscalers", "default", "second")
        await wait_for(lambda: replicas(kd, "web") == 4, what="scale-up once the other HPA is gone")
    assert kd.invalid_requests == []
