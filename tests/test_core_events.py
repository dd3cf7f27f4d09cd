"""Conditions, events and memory of the core around failures and rescales."""

from __future__ import annotations

from pyhpa.core import (
    Behavior,
    ControllerConfig,
    Memory,
    MetricSamples,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
    decide,
    rescale_failed,
)
from pyhpa.core.model import Scale
from tests.builders import NOW, cpu_hpa, cpu_pods, old_memory, scale

CFG = ControllerConfig()
BEHAVIOR = Behavior(ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))),
                    ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),)))


def conds(d):
    return {c.type: (c.status, c.reason) for c in d.conditions}


def test_failed_metric_gives_condition_and_both_events():
    pods, _ = cpu_pods([500, 500])
    d = decide(SyncInputs(hpa=cpu_hpa(), scale=scale(2), pods=pods, samples=[MetricSamples(error="boom")],
                          memory=old_memory(2), now=NOW, config=CFG))
    assert not d.rescale and d.desired_replicas == 2
    assert conds(d)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    reasons = [(e.type, e.reason) for e in d.events]
    assert reasons == [("Warning", "FailedGetResourceMetric"), ("Warning", "FailedComputeMetricsReplicas")]
    assert d.events[0].message == "failed to get cpu utilization: unable to get metrics for resource cpu: boom"
    assert d.error.startswith("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value")


def test_missing_selector_is_invalid_selector():
    pods, samples = cpu_pods([500])
    d = decide(SyncInputs(hpa=cpu_hpa(), scale=Scale(1, 1, ""), pods=pods, samples=[samples], memory=old_memory(1),
                          now=NOW, config=CFG))
    assert conds(d)["ScalingActive"] == ("False", "InvalidSelector")
    assert [e.reason for e in d.events] == ["SelectorRequired", "FailedComputeMetricsReplicas"]


def test_rescale_records_scale_event_only_with_behavior_and_failure_undoes_it():
    pods, samples = cpu_pods([1000, 1000])  # 100 % against 50 %: scale up to 4
    d = decide(SyncInputs(hpa=cpu_hpa(behavior=BEHAVIOR), scale=scale(2), pods=pods, samples=[samples],
                          memory=old_memory(2), now=NOW, config=CFG))
    assert d.rescale and d.desired_replicas == 4
    assert d.memory.scale_up_events == [(NOW, 2)]
    assert [e.reason for e in d.events] == ["SuccessfulRescale"]
    assert d.status.last_scale_time == NOW and d.status.desired_replicas == 4
    failed = rescale_failed(d, cpu_hpa(behavior=BEHAVIOR), "conflict", NOW)
    assert not failed.rescale and failed.memory.scale_up_events == []
    assert conds(failed)["AbleToScale"] == ("False", "FailedUpdateScale")
    assert [e.reason for e in failed.events] == ["FailedRescale"]
    assert failed.events[0].message.startswith("New size: 4; reason: cpu resource utilization")
    plain = decide(SyncInputs(hpa=cpu_hpa(), scale=scale(2), pods=pods, samples=[samples], memory=old_memory(2),
                              now=NOW, config=CFG))
    assert plain.rescale and plain.memory.scale_up_events == []


def test_condition_transition_time_kept_while_status_unchanged():
    pods, samples = cpu_pods([500, 500])
    first = decide(SyncInputs(hpa=cpu_hpa(), scale=scale(2), pods=pods, samples=[samples], memory=old_memory(2),
                              now=NOW, config=CFG))
    from dataclasses import replace

    hpa = replace(cpu_hpa(), conditions=tuple(first.conditions))
    later = decide(SyncInputs(hpa=hpa, scale=scale(2), pods=pods, samples=[samples], memory=first.memory, now=NOW + 15,
                              config=CFG))
    times = {c.type: c.last_transition_time for c in later.conditions}
    assert times["ScalingActive"] == NOW  # still True: the transition time stays
    assert later.memory.recommendations[-1] == (NOW + 15, 2)


def test_input_memory_is_not_mutated():
    pods, samples = cpu_pods([100, 100])
    mem = Memory([(NOW - 10, 5)])
    decide(SyncInputs(hpa=cpu_hpa(), scale=scale(2), pods=pods, samples=[samples], memory=mem, now=NOW, config=CFG))
    assert mem.recommendations == [(NOW - 10, 5)]
