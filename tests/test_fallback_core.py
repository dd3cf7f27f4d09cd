"""Fallback when metrics fail, in the decision core (``pyhpa.core.fallback`` through ``decide``).

Each rule of docs/fallback.md: threshold counting (syncs and duration), every ``behavior``, the maximum
with a healthy metric (never below it, and a scale-up a healthy metric wants still happens), upstream's
invalid-metric rule for a failing metric below its threshold, recovery, per-metric overrides, CPU and
memory metrics, the status, condition and events — and that an HPA without a fallback decides exactly as
before.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from pyhpa.core import (
    HPA,
    Behavior,
    ControllerConfig,
    FallbackSpec,
    Memory,
    MetricSamples,
    MetricSpec,
    PodSample,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
    decide,
    effective_fallback,
    fallback_replicas,
    metric_key,
    with_status,
)
from pyhpa.core.model import MetricFailures
from tests.builders import NOW, cpu_pods, scale

CFG = ControllerConfig()
DOWN = "the server is currently unable to handle the request"
CPU = MetricSpec("Resource", "cpu", "Utilization", 50)
MEMORY = MetricSpec("Resource", "memory", "AverageValue", target_average_milli=100 * 2**20 * 1000)
QUEUE = MetricSpec("External", "queue", "AverageValue", target_average_milli=5000)
#: no stabilization, no rate limit: the recommendation is what is scaled to
FAST = Behavior(ScalingRules(0, "Max", (ScalingPolicy("Percent", 10000, 15),)),
                ScalingRules(0, "Max", (ScalingPolicy("Percent", 100, 15),)))


def hpa(metrics=(CPU,), fallback: FallbackSpec | None = None, behavior=FAST, min_r: int = 1, max_r: int = 20) -> HPA:
    return HPA("default", "web", min_r, max_r, tuple(metrics), behavior, fallback=fallback)


def fb(replicas=None, behavior=None, threshold=None, duration=None) -> FallbackSpec:
    return FallbackSpec(replicas=replicas, behavior=behavior, failure_threshold=threshold,
                        failure_duration_seconds=duration)


def down() -> MetricSamples:
    return MetricSamples(error=DOWN)


class World:
    """One HPA synced again and again: memory and status carry over, a rescale changes the replicas."""

    def __init__(self, h: HPA, replicas: int, usage_per_pod: int = 500):
        self.hpa, self.replicas, self.usage, self.now, self.memory = h, replicas, usage_per_pod, NOW, Memory()
        self.decisions = []

    def sync(self, *samples: MetricSamples | None, dt: float = 15.0):
        """One sync 15 s after the previous; ``None`` in ``samples``: that metric answers (CPU from the pods)."""
        self.now += dt
        pods, cpu = cpu_pods([self.usage] * self.replicas, now=self.now)
        given = [cpu if s is None else s for s in samples] or [cpu]
        d = decide(SyncInputs(hpa=self.hpa, scale=scale(self.replicas), pods=pods, samples=given, memory=self.memory,
                              now=self.now, config=CFG))
        self.memory, self.hpa = d.memory, with_status(self.hpa, d.status)
        self.replicas = d.desired_replicas
        self.decisions.append(d)
        return d


def cond(d, ctype: str):
    return next(((c.status, c.reason) for c in d.conditions if c.type == ctype), None)


def reasons(d) -> list[str]:
    return [e.reason for e in d.events]


# ----- threshold counting -------------------------------------------------------------------------------------
def test_the_fallback_applies_once_the_failures_pass_the_threshold_as_keda_counts_them():
    """failureThreshold 3: three failed syncs decide as upstream (no scaling, ScalingActive=False); the fourth
    proposes the fallback replicas; the counts, the condition and the events say so at every sync."""
    w = World(hpa(fallback=fb(replicas=8, threshold=3)), replicas=3)
    for n in (1, 2, 3):
        d = w.sync(down())
        assert (d.desired_replicas, d.rescale) == (3, False)
        assert cond(d, "ScalingActive") == ("False", "FailedGetResourceMetric")
        assert cond(d, "Fallback") == ("False", "MetricsFailing")
        assert "1 invalid out of 1" in d.error and "FailedGetResourceMetric" in reasons(d)
        [h] = d.status.metric_health
        assert (h.metric, h.number_of_failures, h.status, h.fallback_since) == ("Resource/cpu", n, "Failing", None)
        assert h.first_failure_time == NOW + 15
    d = w.sync(down())
    assert (d.desired_replicas, d.rescale) == (8, True)
    assert cond(d, "Fallback") == ("True", "FallbackActive") and cond(d, "ScalingActive") == ("True", "FallbackReplicas")
    assert "FallbackStarted" in reasons(d) and str(d.decided_by) == "Fallback/cpu resource utilization (percentage of request)"
    assert d.rescale_reason == "fallback for cpu resource utilization (percentage of request)"
    assert [s.label for s in d.sources] == ["Metric/cpu resource utilization (percentage of request)",
                                            "Fallback/cpu resource utilization (percentage of request)"]
    [h] = d.status.metric_health
    assert (h.number_of_failures, h.fallback_replicas, h.fallback_since) == (4, 8, NOW + 60)
    d = w.sync(down())  # still in fallback: no second FallbackStarted
    assert d.desired_replicas == 8 and "FallbackStarted" not in reasons(d)
    assert w.memory.metric_failures["Resource/cpu"] == MetricFailures(number_of_failures=5, first_failure_time=NOW + 15,
                                                                      fallback_since=NOW + 60)


def test_threshold_zero_is_the_first_failure_and_the_default_threshold_is_three():
    w = World(hpa(fallback=fb(replicas=6, threshold=0)), replicas=2)
    assert w.sync(down()).desired_replicas == 6
    w = World(hpa(fallback=fb(replicas=6)), replicas=2)
    assert [w.sync(down()).desired_replicas for _ in range(4)] == [2, 2, 2, 6]


def test_failure_duration_counts_seconds_since_the_first_failure_and_both_triggers_must_hold():
    w = World(hpa(fallback=fb(replicas=6, duration=60)), replicas=2)
    got = [w.sync(down(), dt=20).desired_replicas for _ in range(5)]  # failing for 0, 20, 40, 60, 80 s
    assert got == [2, 2, 2, 6, 6]
    w = World(hpa(fallback=fb(replicas=6, duration=30, threshold=4)), replicas=2)
    got = [w.sync(down(), dt=60).desired_replicas for _ in range(5)]  # duration met at the 2nd, count at the 5th
    assert got == [2, 2, 2, 2, 6]


def test_a_success_resets_the_count():
    w = World(hpa(fallback=fb(replicas=6, threshold=2)), replicas=2, usage_per_pod=500)
    w.sync(down())
    w.sync(down())
    d = w.sync(None)
    assert d.memory.metric_failures == {} and d.status.metric_health[0].status == "Happy"
    assert [w.sync(down()).desired_replicas for _ in range(3)] == [2, 2, 6]


# ----- behaviors ------------------------------------------------------------------------------------------------
def test_each_behavior_proposes_what_keda_documents():
    """static: the replicas; currentReplicas: current; IfHigher: max(current, replicas); IfLower: min."""
    cases = {("static", 3): 6, ("static", 9): 6, ("currentReplicas", 3): 3, ("currentReplicas", 9): 9,
             ("currentReplicasIfHigher", 3): 6, ("currentReplicasIfHigher", 9): 9,
             ("currentReplicasIfLower", 3): 3, ("currentReplicasIfLower", 9): 6}
    for (behavior, current), want in cases.items():
        spec = effective_fallback(fb(replicas=6, behavior=behavior, threshold=0), None)
        assert fallback_replicas(spec, current) == want, (behavior, current)
        w = World(hpa(fallback=fb(replicas=6, behavior=behavior, threshold=0)), replicas=current)
        d = w.sync(down())
        assert d.desired_replicas == want, (behavior, current)
        assert [s.replicas for s in d.sources if s.source == "Fallback"] == [want]


def test_current_replicas_needs_no_replicas_and_holds_the_count_while_a_healthy_metric_may_scale_up():
    h = hpa(metrics=(CPU, QUEUE), fallback=fb(behavior="currentReplicas", threshold=0))
    w = World(h, replicas=4)
    queue_low = MetricSamples(values=[5000], timestamp=NOW)  # 5 / 5 per replica: wants 1
    d = w.sync(None, down())  # CPU 500m of 1000m on a 50 % target: wants 4; the queue is down
    assert d.desired_replicas == 4 and cond(d, "ScalingActive") == ("True", "ValidMetricFound")
    w.usage = 1000  # CPU now wants 8
    assert w.sync(None, down()).desired_replicas == 8
    w.usage = 100  # CPU wants 2: the fallback holds the current 8
    d = w.sync(None, down())
    assert d.desired_replicas == 8 and str(d.decided_by) == "Fallback/external metric queue()"
    assert w.sync(None, queue_low).desired_replicas == 2  # the queue is back: scale-down follows


# ----- the combination rule ------------------------------------------------------------------------------------
def test_the_fallback_is_maxed_with_a_healthy_metric_and_never_scales_below_it():
    """KEDA #6659: a fallback of 4 must not scale down a deployment a healthy CPU metric wants at 9."""
    h = hpa(metrics=(CPU, QUEUE), fallback=fb(replicas=4, threshold=0))
    w = World(h, replicas=6, usage_per_pod=750)  # CPU 6 * 750 / 500: wants 9
    d = w.sync(None, down())
    assert d.desired_replicas == 9 and str(d.decided_by) == "Metric/cpu resource utilization (percentage of request)"
    assert cond(d, "Fallback") == ("True", "FallbackActive") and cond(d, "ScalingActive")[0] == "True"
    w.usage = 100  # CPU: 9 * 100 / 500 wants 2; the fallback wants 4: 4, not 2, and not blocked at 9
    d = w.sync(None, down())
    assert d.desired_replicas == 4 and str(d.decided_by) == "Fallback/external metric queue()"


def test_a_metric_below_its_threshold_still_blocks_a_scale_down_as_upstream():
    """Upstream's rule for invalid metrics applies to a metric not (yet) in fallback: no scale-down while it
    fails, but a scale-up another source wants happens."""
    h = hpa(metrics=(CPU, QUEUE), fallback=fb(replicas=2, threshold=3))
    w = World(h, replicas=6, usage_per_pod=100)  # CPU wants 2
    d = w.sync(None, down())
    assert d.desired_replicas == 6 and cond(d, "ScalingActive") == ("False", "FailedGetExternalMetric")
    w.usage = 1000
    assert w.sync(None, down()).desired_replicas == 12


def test_several_metrics_in_fallback_take_the_largest_and_the_bounds_still_apply():
    h = hpa(metrics=(CPU, replace(QUEUE, fallback=fb(replicas=30))), fallback=fb(replicas=5, threshold=0), max_r=12)
    d = World(h, replicas=3).sync(down(), down())
    assert d.desired_replicas == 12 and str(d.decided_by) == "Spec/maxReplicas"
    assert sorted(s.replicas for s in d.sources if s.source == "Fallback") == [5, 30]
    assert cond(d, "ScalingLimited") == ("True", "TooManyReplicas")


def test_a_failing_metric_without_a_fallback_keeps_upstreams_rule_when_only_another_metric_has_one():
    h = hpa(metrics=(CPU, replace(QUEUE, fallback=fb(replicas=7, threshold=0))))
    w = World(h, replicas=3)
    d = w.sync(down(), down())  # CPU has no fallback: it is invalid, and the queue's 7 > 3 may scale up
    assert d.desired_replicas == 7
    message = next(c.message for c in d.conditions if c.type == "Fallback")
    assert cond(d, "Fallback")[0] == "True" and message == "metrics in fallback: external metric queue(): 7 replicas"
    health = {x.metric: x for x in d.status.metric_health}
    assert health["Resource/cpu"].status == "Failing" and health["Resource/cpu"].fallback_replicas is None
    assert health["External/queue"].fallback_replicas == 7
    w.replicas = 9
    assert w.sync(down(), down()).desired_replicas == 9  # 7 < 9 with an invalid metric: blocked, as upstream


# ----- recovery, overrides, CPU and memory --------------------------------------------------------------------
def test_recovery_ends_the_fallback_and_the_metric_decides_again():
    w = World(hpa(fallback=fb(replicas=8, threshold=1)), replicas=4, usage_per_pod=250)
    assert [w.sync(down()).desired_replicas for _ in range(2)] == [4, 8]
    d = w.sync(None)  # 8 pods at 250m of 1000m on a 50 % target: wants 4
    assert d.desired_replicas == 4 and "FallbackEnded" in reasons(d)
    assert "after 2 failed syncs" in next(e.message for e in d.events if e.reason == "FallbackEnded")
    assert cond(d, "Fallback") == ("False", "MetricsHealthy") and cond(d, "ScalingActive") == ("True", "ValidMetricFound")
    assert d.memory.metric_failures == {} and [(x.number_of_failures, x.status) for x in d.status.metric_health] == [(0, "Happy")]
    assert "FallbackEnded" not in reasons(w.sync(None))


def test_a_metrics_own_fallback_overrides_the_spec_wide_one_field_by_field():
    spec_wide = fb(replicas=4, behavior="currentReplicasIfHigher", threshold=3)
    assert effective_fallback(spec_wide, fb(replicas=10)) == fb(replicas=10, behavior="currentReplicasIfHigher",
                                                                threshold=3)
    assert effective_fallback(spec_wide, fb(duration=120)) == fb(replicas=4, behavior="currentReplicasIfHigher",
                                                                  duration=120)
    assert effective_fallback(None, fb(replicas=2)) == fb(replicas=2, behavior="static", threshold=3)
    assert effective_fallback(None, None) is None
    h = hpa(metrics=(CPU, replace(QUEUE, fallback=fb(replicas=10, threshold=0))), fallback=spec_wide)
    w = World(h, replicas=3)
    assert w.sync(None, down()).desired_replicas == 10  # the queue's own threshold (0) and replicas (10)


def test_cpu_and_memory_resource_metrics_fall_back_like_any_other():
    """KEDA has no fallback for CPU and memory triggers; here they are metrics like the others."""
    h = hpa(metrics=(CPU, MEMORY), fallback=fb(replicas=7, threshold=1))
    w = World(h, replicas=2)
    got = [w.sync(down(), down()).desired_replicas for _ in range(3)]
    assert got == [2, 7, 7]
    assert [x.metric for x in w.decisions[-1].status.metric_health] == ["Resource/cpu", "Resource/memory"]
    assert [s.label for s in w.decisions[-1].sources if s.source == "Fallback"] == [
        "Fallback/cpu resource utilization (percentage of request)", "Fallback/memory resource"]
    memory_ok = MetricSamples(pods={f"pod-{i}": PodSample(50 * 2**20 * 1000, w.now, 30.0) for i in range(7)},
                              timestamp=w.now)
    d = w.sync(down(), memory_ok)  # memory back (wants 4), CPU still in fallback (7)
    assert d.desired_replicas == 7 and [x.status for x in d.status.metric_health] == ["Failing", "Happy"]


def test_metric_keys_name_what_is_queried():
    assert metric_key(CPU) == "Resource/cpu"
    assert metric_key(MetricSpec("ContainerResource", "cpu", "Utilization", 50, container="app")) == \
        "ContainerResource/cpu/app"
    assert metric_key(MetricSpec("Object", "hits", "Value", target_value_milli=1, described_object=("Ingress", "main"))) \
        == "Object/Ingress/main/hits"
    assert metric_key(MetricSpec("External", "queue", "Value", target_value_milli=1, selector="q=a")) == \
        "External/queue{q=a}"


# ----- objects without fallback --------------------------------------------------------------------------------
def test_removing_the_fallback_removes_its_condition_and_memory():
    w = World(hpa(fallback=fb(replicas=8, threshold=0)), replicas=2)
    w.sync(down())
    w.hpa = replace(w.hpa, fallback=None)
    d = w.sync(down())
    assert cond(d, "Fallback") is None and d.memory.metric_failures == {} and d.status.metric_health is None
    assert d.desired_replicas == 8  # no scale-down while the metric fails: upstream's rule


usage = st.integers(0, 3000)
sample = st.one_of(st.none(), st.just("down"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(usage, sample, sample), min_size=1, max_size=12), st.integers(1, 8))
def test_a_fallback_that_never_applies_changes_nothing_but_its_own_status(syncs, replicas):
    """An HPA whose fallback never applies (an unreachable threshold) decides every sync exactly as the same
    HPA without the field: replicas, rescale, events and conditions (the Fallback condition aside); and the
    one without it gets no condition, no metric health and no failure memory."""
    with_fb = World(hpa(metrics=(CPU, QUEUE), fallback=fb(replicas=50, threshold=10**6)), replicas)
    plain = World(hpa(metrics=(CPU, QUEUE)), replicas)
    for u, cpu, queue in syncs:
        samples = (down() if cpu else None, down() if queue else MetricSamples(values=[u * 10], timestamp=NOW))
        a, b = with_fb.sync(*samples), plain.sync(*samples)
        with_fb.usage = plain.usage = u
        assert (a.desired_replicas, a.rescale, a.error, a.rescale_reason) == \
            (b.desired_replicas, b.rescale, b.error, b.rescale_reason)
        assert [e for e in a.events] == b.events
        assert [c for c in a.conditions if c.type != "Fallback"] == b.conditions
        assert b.status.metric_health is None and b.memory.metric_failures == {}
        assert all(c.type != "Fallback" for c in b.conditions)


def test_when_upstreams_rule_blocks_scalingactive_names_the_metric_that_blocks():
    """The queue (first in the spec) is in fallback, CPU fails without one: ScalingActive=False names CPU."""
    h = hpa(metrics=(replace(QUEUE, fallback=fb(replicas=2, threshold=0)), CPU))
    d = World(h, replicas=5).sync(down(), down())
    assert d.desired_replicas == 5 and cond(d, "ScalingActive") == ("False", "FailedGetResourceMetric")
    assert d.error.startswith("invalid metrics (2 invalid out of 2), first error is: failed to get queue external")
