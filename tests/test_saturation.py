"""The Saturation source (spec.saturation): pods pinned at their CPU limit ask for more, within the policies."""

from __future__ import annotations

from dataclasses import asdict, replace

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyhpa.adapters.autoscaler import read_autoscaler
from pyhpa.adapters.errors import InputError
from pyhpa.adapters.parse import source_section
from pyhpa.api import v1alpha1 as api
from pyhpa.api.status import saturation_section, wire
from pyhpa.core import (
    Behavior,
    ControllerConfig,
    Memory,
    MetricSpec,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
    decide,
    with_status,
)
from pyhpa.core.model import ZERO_TIME, Pod
from pyhpa.core.saturation import SaturationSpec, check_saturation
from tests.builders import NOW, cpu_hpa, cpu_pods, scale

CFG = ControllerConfig()
LIMIT_MILLI = 1000


def guaranteed(usages: list[int], limit: int | None = LIMIT_MILLI, now: float = NOW):
    """Ready pods with request = limit (1 CPU) and their CPU samples; ``limit`` None: no CPU limit."""
    pods, samples = cpu_pods(usages, request_milli=1000, now=now)
    if limit is not None:
        pods = [replace(p, limits={("cpu", ""): limit, ("cpu", "c"): limit}) for p in pods]
    return pods, samples


def starting(name: str, now: float = NOW) -> Pod:
    """A pod created just now, still Pending (a new replica of the last scale-up)."""
    return Pod(name, "Pending", {"app": "x"}, False, None, None, ZERO_TIME,
               {("cpu", ""): 1000, ("cpu", "c"): 1000}, {}, limits={("cpu", ""): 1000, ("cpu", "c"): 1000})


def sat_hpa(target=70, min_r=1, max_r=100, behavior=None, **kw):
    return replace(cpu_hpa(target, min_r, max_r, behavior), saturation=SaturationSpec(**kw))


def sync(hpa, pods, samples, replicas, memory=None, now=NOW):
    return decide(SyncInputs(hpa=hpa, scale=scale(replicas), pods=pods, samples=[samples],
                             memory=memory or Memory([(now - 3600, replicas)]), now=now, config=CFG))


def source(d, name="Saturation"):
    return next(s for s in d.sources if s.source == name)


def cond(d, ctype="SaturationActive"):
    return next(((c.status, c.reason) for c in d.conditions if c.type == ctype), None)


def test_pinned_pods_ask_for_the_demand_factor_times_their_usage_at_the_target():
    pods, samples = guaranteed([1000] * 4)
    behavior = Behavior(ScalingRules(0, "Max", (ScalingPolicy("Percent", 900, 15),)),
                        ScalingRules(300, "Max", (ScalingPolicy("Percent", 100, 15),)))
    d = sync(sat_hpa(behavior=behavior), pods, samples, 4)
    upstream = sync(cpu_hpa(70, 1, 100, behavior), pods, samples, 4)
    assert upstream.desired_replicas == 6  # ceil(4 x 100 / 70): the utilization stops at the limit
    assert source(d).replicas == 12  # 2 x 4000m at 70 % of 1000m
    assert d.desired_replicas == 12 and d.decided_by.kind == "Saturation"
    assert cond(d) == ("True", "PinnedAtLimit")
    assert [e.reason for e in d.events] == ["PinnedAtLimit", "SuccessfulRescale"]
    assert d.status.saturation.pinned and d.status.saturation.usage_percent == 100


def test_the_proposal_respects_the_scale_up_limit_the_policies_and_max_replicas():
    pods, samples = guaranteed([1000] * 4)
    no_behavior = sync(sat_hpa(), pods, samples, 4)
    assert source(no_behavior).replicas == 12
    assert no_behavior.desired_replicas == 8 and str(no_behavior.decided_by) == "Policy/scaleUpLimit"  # max(2 x 4, 4)
    four_pods = Behavior(ScalingRules(0, "Max", (ScalingPolicy("Pods", 2, 60),)),
                         ScalingRules(300, "Max", (ScalingPolicy("Percent", 100, 15),)))
    assert sync(sat_hpa(behavior=four_pods), pods, samples, 4).desired_replicas == 6
    capped = sync(sat_hpa(max_r=7), pods, samples, 4)
    assert capped.desired_replicas == 7 and str(capped.decided_by) == "Spec/maxReplicas"
    disabled = Behavior(ScalingRules(0, "Disabled", ()), ScalingRules(300, "Max", (ScalingPolicy("Percent", 100, 15),)))
    assert sync(sat_hpa(behavior=disabled), pods, samples, 4).desired_replicas == 4


def test_pods_below_the_limit_leave_the_source_out_and_the_metric_decides():
    pods, samples = guaranteed([800] * 4)
    d = sync(sat_hpa(), pods, samples, 4)
    assert source(d).replicas is None and source(d).error == "BelowLimit"
    assert cond(d) == ("False", "BelowLimit")
    assert d.desired_replicas == sync(cpu_hpa(70, 1, 100), pods, samples, 4).desired_replicas == 5
    assert d.decided_by.kind == "Metric" and not any(e.reason == "PinnedAtLimit" for e in d.events)


def test_pods_without_a_cpu_limit_are_never_pinned_and_the_source_says_why():
    pods, samples = guaranteed([3000] * 4, limit=None)  # Burstable: 300 % of the request, no cap
    d = sync(sat_hpa(), pods, samples, 4)
    assert source(d).replicas is None and source(d).error == "NoCPULimit"
    assert source(d).note.startswith("no CPU limit to be pinned at (missing limit for cpu in Pod pod-0)")
    assert cond(d) == ("False", "NoCPULimit")
    assert d.desired_replicas == sync(cpu_hpa(70, 1, 100), pods, samples, 4).desired_replicas


def test_the_threshold_is_pinned_percent_of_the_limit():
    pods, samples = guaranteed([900] * 4)
    assert source(sync(sat_hpa(), pods, samples, 4)).replicas is None
    assert source(sync(sat_hpa(pinned_percent=90), pods, samples, 4)).replicas == 11  # ceil(7200 / 700)


def test_pods_still_starting_do_not_make_the_proposal_compound():
    pods, samples = guaranteed([1000] * 4)
    hpa = sat_hpa()
    first = sync(hpa, pods, samples, 4)
    assert first.desired_replicas == 8
    # next sync: 4 new pods are starting (no sample, Pending), the 4 ready ones are still pinned
    pods2 = pods + [starting(f"new-{i}") for i in range(4)]
    second = sync(with_status(hpa, first.status), pods2, samples, 8, memory=first.memory, now=NOW + 15)
    assert source(second).replicas == 12  # still 2 x the 4 ready pods' usage, not 2 x 8
    assert not any(e.reason == "PinnedAtLimit" for e in second.events)  # an event when it starts, not every sync
    assert cond(second) == ("True", "PinnedAtLimit")


def test_it_never_asks_below_the_current_replicas():
    pods, samples = guaranteed([1000] * 2)
    d = sync(sat_hpa(), pods, samples, 10)  # 2 ready of 10: the rest starting, without samples
    assert source(d).replicas == 10


def test_observe_mode_reports_and_never_changes_the_decision():
    pods, samples = guaranteed([1000] * 4)
    d = sync(sat_hpa(mode="Observe"), pods, samples, 4)
    assert source(d).replicas == 12 and not source(d).applied
    assert cond(d) == ("False", "Observing")
    assert d.desired_replicas == sync(cpu_hpa(70, 1, 100), pods, samples, 4).desired_replicas


def test_average_value_and_container_resource_targets():
    pods, samples = guaranteed([1000] * 4)
    avg = replace(sat_hpa(), metrics=(MetricSpec("Resource", "cpu", "AverageValue", target_average_milli=500),))
    assert source(sync(avg, pods, samples, 4)).replicas == 16  # 8000m / 500m
    cont = replace(sat_hpa(), metrics=(MetricSpec("ContainerResource", "cpu", "Utilization", 50, container="c"),))
    assert source(sync(cont, pods, samples, 4)).replicas == 16  # 8000m at 50 % of 1000m


@settings(max_examples=60, deadline=None)
@given(usages=st.lists(st.integers(0, 1000), min_size=1, max_size=8), replicas=st.integers(1, 12),
       target=st.integers(10, 100))
def test_the_source_never_lowers_a_decision(usages, replicas, target):
    pods, samples = guaranteed(usages)
    with_sat = sync(sat_hpa(target=target, max_r=1000), pods, samples, replicas)
    without = sync(cpu_hpa(target, 1, 1000), pods, samples, replicas)
    assert with_sat.desired_replicas >= without.desired_replicas
    if source(with_sat).replicas is None:  # not pinned: exactly upstream's decision
        assert with_sat.desired_replicas == without.desired_replicas
        assert with_sat.steps == without.steps


# ------------------------------------------------------------------ spec.saturation in the adapter

HZA = {
    "apiVersion": "pyhpa.dev/v1alpha1", "kind": "HorizontalAutoscaler",
    "metadata": {"name": "web", "namespace": "shop"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
             "minReplicas": 2, "maxReplicas": 40,
             "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                 "type": "Utilization", "averageUtilization": 70}}}]},
}


def with_saturation(value, metrics=None):
    doc = {**HZA, "spec": {**HZA["spec"], "saturation": value}}
    if metrics is not None:
        doc["spec"]["metrics"] = metrics
    return doc


def saturation_from_dict(d):
    return source_section("saturation", d, None, "spec.saturation")


def saturation_to_dict(spec):
    return msgspec.to_builtins(api.Saturation(**asdict(spec)))


def test_empty_saturation_gives_the_defaults_and_round_trips():
    spec = read_autoscaler(with_saturation({})).hpa.saturation
    assert spec == SaturationSpec(pinned_percent=95, demand_factor=2.0, mode="Enforce")
    assert saturation_from_dict(saturation_to_dict(spec)) == spec
    assert saturation_from_dict({"pinnedPercent": 90.0, "demandFactor": 3}) == SaturationSpec(pinned_percent=90,
                                                                                               demand_factor=3.0)


@pytest.mark.parametrize("value, field, words", [
    ({"pinnedPercent": 40}, "spec.saturation.pinnedPercent", "[50, 100]"),
    ({"pinnedPercent": 101}, "spec.saturation.pinnedPercent", "[50, 100]"),
    ({"pinnedPercent": "95"}, "spec.saturation.pinnedPercent", "integer"),
    ({"demandFactor": 1}, "spec.saturation.demandFactor", "above 1"),
    ({"demandFactor": 11}, "spec.saturation.demandFactor", "at most 10"),
    ({"demandFactor": True}, "spec.saturation.demandFactor", "number"),
    ({"mode": "Panic"}, "spec.saturation.mode", "Enforce or Observe"),
    ({"metric": 3}, "spec.saturation.metric", "names no entry"),
    ({"burst": 2}, "spec.saturation.burst", "unknown field"),
    ([], "spec.saturation", "must be an object"),
])
def test_bad_saturation_fields_are_one_error_naming_the_field(value, field, words):
    with pytest.raises(InputError) as err:
        read_autoscaler(with_saturation(value))
    assert err.value.field == field and words in err.value.message
    assert "HorizontalAutoscaler shop/web" in str(err.value)


def test_saturation_needs_a_cpu_metric():
    memory = [{"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "Utilization", "averageUtilization": 70}}}]
    with pytest.raises(InputError) as err:
        read_autoscaler(with_saturation({}, memory))
    assert err.value.field == "spec.saturation.metric" and "cpu" in err.value.message
    spec = SaturationSpec(metric=0)
    assert check_saturation(spec, (MetricSpec("Resource", "memory", "Utilization", 70),))[0][0] == "metric"


def test_saturation_is_a_horizontal_autoscaler_field_only():
    doc = with_saturation({})
    doc = {**doc, "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"}
    with pytest.raises(InputError) as err:
        read_autoscaler(doc)
    assert err.value.field == "spec.saturation"


def written(st) -> dict:
    """``status.saturation`` as the controller writes it."""
    return wire(saturation_section(st))


def test_status_carries_the_usage_only_while_pinned():
    pods, samples = guaranteed([1000] * 4)
    pinned = written(sync(sat_hpa(), pods, samples, 4).status.saturation)
    assert pinned["pinned"] and pinned["usagePercentOfLimit"] == 100 and pinned["replicas"] == 12
    pods, samples = guaranteed([500] * 4)
    calm = written(sync(sat_hpa(), pods, samples, 4).status.saturation)
    assert calm == {"reason": "BelowLimit", "mode": "Enforce", "pinned": False,
                    "message": "the ready pods use less than 95 % of their CPU limit: their usage shows the demand"}
    pods, samples = guaranteed([600] * 4)  # another usage below the limit: the same status, no rewrite
    assert written(sync(sat_hpa(), pods, samples, 4).status.saturation) == calm


def test_removing_spec_saturation_removes_its_condition_and_status_and_a_given_recommendation_keeps_them():
    pods, samples = guaranteed([1000] * 4)
    hpa = sat_hpa()
    d = sync(hpa, pods, samples, 4)
    assert cond(d) == ("True", "PinnedAtLimit")
    written = with_status(hpa, d.status)
    kept = decide(SyncInputs(hpa=written, scale=scale(4), pods=pods, samples=[samples], memory=d.memory, now=NOW + 15,
                             config=CFG, prenormalized=4))
    assert cond(kept) == ("True", "PinnedAtLimit")  # a given recommendation skips the source: nothing to undo
    again = sync(replace(written, saturation=None), pods, samples, 4, d.memory, NOW + 15)
    assert cond(again) is None and again.status.saturation is None
    assert [c.type for c in again.conditions] == [c.type for c in sync(cpu_hpa(70, 1, 100), pods, samples, 4).conditions]
