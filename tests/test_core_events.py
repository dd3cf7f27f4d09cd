"""Conditions, events and memory of the core around failures and rescales."""

from __future__ import annotations

from pyhpa.core import (
    Behavior,
    ControllerConfig,
    Memory,
    MetricSamples,
    ScalingPolicy,
    ScalingRules,
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
    d = decide(cpu_hpa(), scale(2), pods, [MetricSamples(error="boom")], old_memory(2), NOW, CFG)
    assert not d.rescale and d.desired_replicas == 2
    assert conds(d)["ScalingActive"] == ("False", "FailedGetResourceMetric")
    reasons = [(e.type, e.reason) for e in d.events]
    assert reasons == [("Warning", "FailedGetResourceMetric"), ("Warning", "FailedComputeMetricsReplicas")]
    assert d.events[0].message == "failed to get cpu utilization: unable to get metrics for resource cpu: boom"
    assert d.error.startswith("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value")


def test_missing_selector_is_invalid_selector():
    pods, samples = cpu_pods([500])
    d = decide(cpu_hpa(), Scale(1, 1, ""), pods, [samples], old_memory(1), NOW, CFG)
    assert conds(d)["ScalingActive"] == ("False", "InvalidSelector")
    assert [e.reason for e in d.events] == ["SelectorRequired", "FailedComputeMetricsReplicas"]


def test_rescale_records_scale_event_only_with_behavior_and_failure_undoes_it():
    pods, samples = cpu_pods([1000, 1000])  # 100 % against 50 %: scale up to 4
    d = decide(cpu_hpa(behavior=BEHAVIOR), scale(2), pods, [samples], old_memory(2), NOW, CFG)
    assert d.rescale and d.desired_replicas == 4
    assert d.memory.scale_up_events == [(NOW, 2)]
    assert [e.reason for e in d.events] == ["SuccessfulRescale"]
    assert d.status.last_scale_time == NOW and d.status.desired_replicas == 4
    failed = rescale_failed(d, cpu_hpa(behavior=BEHAVIOR), "conflict", NOW)
    assert not failed.rescale and failed.memory.scale_up_events == []
    assert conds(failed)["AbleToScale"] == ("False", "FailedUpdateScale")
    assert [e.reason for e in failed.events] == ["FailedRescale"]
    assert failed.events[0].message.startswith("New size: 4; reason: cpu resource utilization")
    plain = decide(cpu_hpa(), scale(2), pods, [samples], old_memory(2), NOW, CFG)
    assert plain.rescale and plain.memory.scale_up_events == []


def test_condition_transition_time_kept_while_status_unchanged():
    pods, samples = cpu_pods([500, 500])
    first = decide(cpu_hpa(), scale(2), pods, [samples], old_memory(2), NOW, CFG)
    from dataclasses import replace

    hpa = replace(cpu_hpa(), conditions=tuple(first.conditions))
    later = decide(hpa, scale(2), pods, [samples], first.memory, NOW + 15, CFG)
    times = {c.type: c.last_transition_time for c in later.conditions}
    assert times["ScalingActive"] == NOW  # still True: the transition time stays
    assert later.memory.recommendations[-1] == (NOW + 15, 2)


def test_input_memory_is_not_mutated():
    pods, samples = cpu_pods([100, 100])
    mem = Memory([(NOW - 10, 5)])
    decide(cpu_hpa(), scale(2), pods, [samples], mem, NOW, CFG)
    assert mem.recommendations == [(NOW - 10, 5)]
