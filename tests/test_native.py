"""Issue 55's shadow mode: the simulators' compiled path (``pyhpa.simulate.rustcore``, Rust, built by ``pip install``)
gives what the Python core gives, on random inputs, on every test run. The core is the reference; a difference is
the compiled path's bug.

- ``normalize`` against ``pyhpa.core.normalize.normalize``: stabilization with and without behavior, the scaling
  policies (Pods and Percent, Max, Min and Disabled, periods counting both directions' events), the spec's bounds
  and the scale-up limit without behavior, with recommendations and events on the windows' and periods' edges and
  counts and values out to int32's limits;
- ``resource_utilization_replicas`` against ``pyhpa.core.calculator.resource_utilization_replicas``: pods Pending,
  Failed, deleted, without a sample, not Ready, Ready Unknown, inside the CPU initialization period or on its edge,
  samples of pods the selector did not select, the tolerance, scale-up with unready pods and the fill-in of missing
  ones in both directions, and the core's errors; ``plain_replicas`` (Pods metrics, AverageValue targets) against
  the core's on the same pods;
- ``decide_upstream`` against ``pyhpa.core.decide``: whole syncs of autoscaling/v2 HPAs of one to three Resource,
  ContainerResource and Pods metrics, with and without behavior, the metrics API failing, targets at zero and
  outside the bounds, memory or none: the desired replicas, the memory after and every metric's proposal.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from native_gate import require_compiled_path

from pyhpa.core import decide, normalize
from pyhpa.core.calculator import MetricError, ReplicaCalculator, plain_replicas, resource_utilization_replicas
from pyhpa.core.model import (
    HPA,
    Behavior,
    ControllerConfig,
    Memory,
    MetricSamples,
    MetricSpec,
    Pod,
    PodSample,
    Scale,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
)
from pyhpa.simulate import native

require_compiled_path()

NOW = 1_700_000_000.0
INT32 = 2**31 - 1

counts = st.one_of(st.integers(0, 60), st.integers(0, INT32), st.sampled_from([0, 1, INT32 - 1, INT32]))
periods = st.one_of(st.sampled_from([15, 60, 300, 1800]), st.integers(1, 1800))
policies = st.builds(ScalingPolicy, st.sampled_from(["Pods", "Percent"]),
                     st.one_of(st.integers(1, 1000), st.integers(1, INT32)), periods)


def rules(window):
    return st.builds(ScalingRules, window, st.sampled_from(["Max", "Min", "Disabled"]),
                     st.lists(policies, max_size=4).map(tuple))


behaviors = st.one_of(st.none(), st.builds(Behavior, rules(st.one_of(st.just(0), st.integers(0, 3600))),
                                           rules(st.one_of(st.none(), st.just(300), st.integers(0, 3600)))))
#: ages (s before now) on the usual 15 s grid, on the windows' and periods' own edges, and anywhere
ages = st.one_of(st.integers(0, 240).map(lambda k: 15.0 * k), st.sampled_from([0.0, 60.0, 300.0, 1800.0, 3600.0]),
                 st.floats(0, 7200, allow_nan=False))
entries = st.lists(st.tuples(ages.map(lambda a: NOW - a), counts), max_size=12)
changes = st.lists(st.tuples(ages.map(lambda a: NOW - a), st.one_of(st.integers(1, 50), st.integers(1, INT32))),
                   max_size=8)
configs = st.builds(ControllerConfig, downscale_stabilization_window_seconds=st.sampled_from([0.0, 60.0, 300.0, 450.5]),
                    scale_up_limit_factor=st.sampled_from([2.0, 1.5, 10.0]),
                    scale_up_limit_minimum=st.sampled_from([4.0, 1.0, 0.0]))


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(current=counts, prenormalized=counts, low=counts, high=counts, behavior=behaviors,
       recs=entries.filter(bool), up=changes, down=changes, config=configs)
def test_normalize_compiled_is_the_cores(current, prenormalized, low, high, behavior, recs, up, down, config):
    min_replicas, max_replicas = min(low, high), max(low, high)
    memory = Memory(recommendations=recs, scale_up_events=up, scale_down_events=down)
    desired, new_recs, able, limited, _ = normalize(current, prenormalized, min_replicas, max_replicas, behavior,
                                                    memory, NOW, config)
    got = native.normalize(current, prenormalized, min_replicas, max_replicas, behavior, memory, NOW, config)
    assert got == (desired, new_recs, able[0], limited[0])


def test_normalize_compiled_holds_the_window_and_the_policy_period_as_the_core():
    """Two hand-picked cases the property test covers only by chance: a recommendation exactly on the scale-down
    window's edge, and a scale-up limited by events inside one policy's period."""
    config = ControllerConfig()
    on_edge = Memory(recommendations=[(NOW - 300.0, 9), (NOW - 15.0, 5)])
    assert native.normalize(5, 3, 1, 20, None, on_edge, NOW, config)[:1] == normalize(5, 3, 1, 20, None, on_edge, NOW,
                                                                                      config)[:1] == (9,)
    up = ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 60), ScalingPolicy("Percent", 100, 60)))
    behavior = Behavior(up, ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),)))
    events = Memory(recommendations=[(NOW - 15.0, 4)], scale_up_events=[(NOW - 30.0, 2), (NOW - 61.0, 8)])
    core = normalize(4, 40, 1, 100, behavior, events, NOW, config)
    assert native.normalize(4, 40, 1, 100, behavior, events, NOW, config) == (core[0], core[1], core[2][0], core[3][0])
    assert core[0] == 6 and core[3][0] == "ScaleUpLimit"  # the period's start: 4 - 2 = 2, doubled: 4, or + 4: 6
    with pytest.raises(ValueError, match="selectPolicy"):
        native.normalize(4, 5, 1, 10, Behavior(ScalingRules(0, "Sometimes", ()), behavior.scale_down), events, NOW,
                         config)


INIT, DELAY = 300.0, 30.0  # the controller's --horizontal-pod-autoscaler-cpu-initialization-period, readiness delay


@st.composite
def pod_sets(draw):
    """Pods of every state the calculator tells apart, their requests, and samples (some of pods not selected)."""
    n = draw(st.integers(0, 8))
    pods, requests, samples = [], {}, {}
    for i in range(n):
        name = f"p{i}"
        start = draw(st.one_of(st.none(), st.sampled_from([NOW - INIT, NOW - INIT + 1, NOW - 3600.0, NOW - 60.0]),
                               st.floats(NOW - 7200, NOW, allow_nan=False)))
        transition = (start if start is not None else NOW - 7200) + draw(st.sampled_from([0.0, DELAY, DELAY + 1, 45.0,
                                                                                          600.0]))
        ready = draw(st.sampled_from([True, True, True, False, None]))
        pods.append(Pod(name, draw(st.sampled_from(["Running"] * 6 + ["Pending", "Failed", "Succeeded", "Unknown"])),
                        {}, deleted=draw(st.booleans().filter(lambda b: True)) and draw(st.integers(0, 9)) == 0,
                        start_time=start, ready=ready, ready_transition_time=transition,
                        ready_unknown=ready is False and draw(st.integers(0, 4)) == 0))
        requests[name] = draw(st.one_of(st.integers(1, 4000), st.sampled_from([100, 250, 1000, 2**40])))
        if draw(st.integers(0, 5)):
            window = draw(st.sampled_from([15.0, 30.0, 60.0]))
            samples[name] = PodSample(draw(st.one_of(st.integers(0, 8000), st.sampled_from([0, 50, 100, 2**40]))),
                                      draw(st.sampled_from([NOW, NOW - 15.0, transition + window,
                                                            transition + window - 1])), window)
    if draw(st.integers(0, 4)) == 0:
        samples["not-selected"] = PodSample(draw(st.integers(0, 8000)), NOW, 30.0)
    return [Pod(p.name, p.phase, p.labels, p.deleted, p.start_time, p.ready, p.ready_transition_time,
                {("cpu", ""): requests[p.name], ("memory", ""): requests[p.name]}, ready_unknown=p.ready_unknown)
            for p in pods], requests, samples


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=pod_sets(), current=st.integers(0, 20), tolerance=st.sampled_from([(0.1, 0.1), (0.0, 0.0), (0.05, 0.3)]),
       target=st.one_of(st.integers(1, 200), st.sampled_from([50, 100, 101])), is_cpu=st.booleans())
def test_resource_utilization_replicas_compiled_is_the_cores(case, current, tolerance, target, is_cpu):
    pods, requests, samples = case
    config = ControllerConfig(cpu_initialization_period_seconds=INIT, initial_readiness_delay_seconds=DELAY)
    down, up = tolerance
    calc = ReplicaCalculator(pods, samples, current, down, up, NOW, config)
    _as_the_core(calc, lambda: resource_utilization_replicas(calc, "cpu" if is_cpu else "memory", "", target),
                 lambda: native.resource_utilization_replicas(pods, samples, requests, current, down, up, NOW, config,
                                                              target, is_cpu), 5)


def _as_the_core(calc, core, compiled, filled_at: int) -> None:
    """``compiled()`` gives what ``core()`` gives (its figures up to the filled values at ``filled_at``, then
    ``calc``'s pod groups), or raises ValueError with the core's MetricError text."""
    try:
        want = core()
    except MetricError as err:
        with pytest.raises(ValueError) as raised:
            compiled()
        assert str(raised.value) == str(err)
        return
    got = compiled()
    g = calc.groups
    want = (*want[:filled_at], dict(want[filled_at] or {}), g.ready, list(g.unready), list(g.missing), list(g.ignored))
    assert len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want)), (got, want)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=pod_sets(), current=st.integers(0, 20), tolerance=st.sampled_from([(0.1, 0.1), (0.0, 0.0), (0.05, 0.3)]),
       target=st.one_of(st.integers(1, 5000), st.sampled_from([100, 1000, 2**40])), is_cpu=st.booleans())
def test_plain_replicas_compiled_is_the_cores(case, current, tolerance, target, is_cpu):
    pods, _, samples = case
    config = ControllerConfig(cpu_initialization_period_seconds=INIT, initial_readiness_delay_seconds=DELAY)
    down, up = tolerance
    calc = ReplicaCalculator(pods, samples, current, down, up, NOW, config)
    _as_the_core(calc, lambda: plain_replicas(calc, target, is_cpu),
                 lambda: native.plain_replicas(pods, samples, current, down, up, NOW, config, target, is_cpu), 4)


METRICS = st.sampled_from([
    MetricSpec("Resource", "cpu", "Utilization", target_utilization=50),
    MetricSpec("Resource", "cpu", "Utilization", target_utilization=80),
    MetricSpec("Resource", "cpu", "AverageValue", target_average_milli=300),
    MetricSpec("Resource", "memory", "Utilization", target_utilization=70),
    MetricSpec("ContainerResource", "cpu", "Utilization", target_utilization=60, container="web"),
    MetricSpec("Pods", "http_requests_per_second", "AverageValue", target_average_milli=80_000),
    MetricSpec("Pods", "queue", "AverageValue", target_average_milli=500),
])


@st.composite
def syncs(draw):
    """A sync of an autoscaling/v2 HPA of Resource, ContainerResource and Pods metrics, with its pods, samples
    (each metric's: an API error, or some pods' values) and a memory of recommendations and scale events."""
    pods, requests, samples = draw(pod_sets())
    pods = [Pod(p.name, p.phase, {"app": "web"}, p.deleted, p.start_time, p.ready, p.ready_transition_time,
                {("cpu", ""): requests[p.name], ("memory", ""): 4 * requests[p.name], ("cpu", "web"): requests[p.name]},
                containers=("web",), ready_unknown=p.ready_unknown) for p in pods]
    metrics = tuple(draw(st.lists(METRICS, min_size=1, max_size=3)))
    per_metric = []
    for _ in metrics:
        if draw(st.integers(0, 9)) == 0:
            per_metric.append(MetricSamples(error="the metrics API failed"))
        else:
            every = sorted(samples)  # usually every sample the pods have, sometimes some of them
            keep = draw(st.one_of(st.just(every), st.just(every), st.lists(st.sampled_from(every), unique=True))) \
                if samples else []
            scale = draw(st.sampled_from([1, 1, 3, 100]))
            per_metric.append(MetricSamples(pods={n: PodSample(samples[n].value * scale, samples[n].timestamp,
                                                               samples[n].window) for n in keep}))
    low, high = sorted((draw(st.integers(1, 12)), draw(st.integers(1, 40))))
    hpa = HPA("ns", "web", low, high, metrics, behavior=draw(behaviors))
    # mostly within the bounds (the metrics and normalization decide), sometimes at zero or outside them
    current = draw(st.one_of(st.integers(low, high), st.integers(low, high), st.integers(low, high),
                             st.just(max(len(pods), low)), st.integers(0, 45)))
    recs = draw(st.one_of(st.none(), entries))
    memory = Memory(recommendations=recs, scale_up_events=draw(changes), scale_down_events=draw(changes))
    return SyncInputs(hpa=hpa, scale=Scale(current, len(pods), "app=web"), pods=pods, samples=per_metric,
                      memory=memory, now=NOW, config=ControllerConfig(cpu_initialization_period_seconds=INIT,
                                                                      initial_readiness_delay_seconds=DELAY))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=syncs())
def test_decide_upstream_compiled_is_the_cores(inputs):
    """The whole sync of an autoscaling/v2 HPA: the desired replicas, the memory after (recommendations and scale
    events), each metric's proposal and the kind of what set the final number, as ``pyhpa.core.decide`` gives them."""
    assert native.covers(inputs)
    d = decide(inputs)
    desired, recs, up, down, failed, proposals, decider = native.decide_upstream(inputs)
    assert decider == ("" if d.decided_by is None else d.decided_by.kind.value)
    assert (desired, recs, up, down) == (d.desired_replicas, d.memory.recommendations, d.memory.scale_up_events,
                                         d.memory.scale_down_events)
    assert proposals == [None if p.error is not None else p.replicas for p in d.proposals]
    current, hpa = inputs.scale.spec_replicas, inputs.hpa
    assert failed == (d.prenormalized is None and current != 0 and hpa.min_replicas <= current <= hpa.max_replicas)


def test_the_compiled_decision_covers_only_what_it_decides():
    """An HPA with an extension, an Object metric, a Limit basis, a recommendation given, or a selector that leaves a
    pod out is not covered (the simulator runs the core for it)."""
    from dataclasses import replace

    from pyhpa.core.model import FallbackSpec, PauseSpec

    pods = [Pod("a", "Running", {"app": "web"}, start_time=NOW - 3600, ready=True, requests={("cpu", ""): 100})]
    hpa = HPA("ns", "web", 1, 10, (MetricSpec("Resource", "cpu", "Utilization", target_utilization=50),))
    base = SyncInputs(hpa=hpa, scale=Scale(1, 1, "app=web"), pods=pods,
                      samples=[MetricSamples(pods={"a": PodSample(80, NOW, 30.0)})], memory=Memory(), now=NOW,
                      config=ControllerConfig())
    assert native.covers(base) and native.decide_upstream(base)[0] == decide(base).desired_replicas == 2
    for other in (replace(base, hpa=replace(hpa, pause=PauseSpec())), replace(base, prenormalized=3),
                  replace(base, hpa=replace(hpa, fallback=FallbackSpec(replicas=2))),
                  replace(base, hpa=replace(hpa, metrics=(MetricSpec("Object", "q", "Value", target_value_milli=1),))),
                  replace(base, hpa=replace(hpa, metrics=(replace(hpa.metrics[0], utilization_basis="Limit"),))),
                  replace(base, scale=Scale(1, 1, "app=api")), replace(base, scale=Scale(1, 1, ""))):
        assert not native.covers(other)
        with pytest.raises(ValueError, match="covers"):
            native.decide_upstream(other)


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
#: the documented simulations (docs/simulate.md): (hpa, target, profile, trace, column, where, start, end, gaps, scale)
SIMULATIONS = {
    "php-apache on NASA": (None, None, None, None, None, (), None, None, "error", 1.0),
    "worldcup98": (EX / "simulate/worldcup98/hpa.yaml", EX / "simulate/worldcup98/deployment.yaml",
                   EX / "simulate/worldcup98/profile.yaml", EX / "traces/worldcup98_1998-06-29_07-05_per_minute.csv",
                   "requests_per_second", (), "1998-06-30T00:00:00Z", "1998-07-01T00:00:00Z", "error", 1.0),
    "bitbrains (StatefulSet)": (EX / "simulate/bitbrains/hpa.yaml", EX / "simulate/bitbrains/statefulset.yaml",
                                EX / "simulate/bitbrains/profile.yaml", EX / "traces/bitbrains_rnd-411_2013-08_cpu.csv",
                                "cpu_usage_percent", ("vm=rnd-411",), None, "2013-08-03T00:00:00Z", "hold", 1.0),
    "nasa (behavior)": (EX / "simulate/nasa/hpa.yaml", EX / "simulate/nasa/deployment.yaml",
                        EX / "simulate/nasa/profile.yaml", EX / "traces/nasa_http_1995-07-10_16_per_minute.csv",
                        "requests_per_second", (), "1995-07-11T00:00:00-04:00", "1995-07-12T00:00:00-04:00",
                        "error", 8.0),
}


@pytest.mark.parametrize("name", list(SIMULATIONS))
def test_the_compiled_decision_shadows_every_sync_of_a_simulation(name):
    """Issue 55's shadow mode on real runs: the documented simulations with ``Cluster(shadow=True)`` decide every
    sync with the core and the compiled decision and find them equal (``ShadowMismatch`` otherwise); every sync of
    these autoscaling/v2 HPAs is covered, and the run's timeline is the run without the shadow's."""
    from pyhpa.adapters.autoscaler import find_autoscaler
    from pyhpa.adapters.snapshot import read_document
    from pyhpa.simulate import Settings, input_files, load_autoscaler, read_load, read_workload
    from pyhpa.simulate.cluster import Cluster

    hpa, target, profile, trace, column, where, start, end, gaps, scale = SIMULATIONS[name]
    files = input_files([hpa] if hpa else [], target, trace, column, profile)
    prof, tgt = read_workload(files)
    settings = Settings()
    h = load_autoscaler(find_autoscaler(read_document(str(files.hpa[0])), str(files.hpa[0])), str(files.hpa[0]), tgt,
                        settings)
    load = read_load(files, [h], prof, tgt, where=where, start=start, end=end, gaps=gaps, load_scale=scale)
    tr = load.trace

    def run(shadow: bool) -> Cluster:
        c = Cluster(h.hpa, tgt, prof, h.config, tr.times, load.rps, tr.values, tr.start, tr.end, h.sync_period_seconds,
                    settings.seed, load.outages, history=load.history, shadow=shadow)
        c.run()
        return c

    shadowed = run(True)
    assert shadowed.shadow_checks == shadowed.sync_k > 1000 and len(shadowed.scale_events) > 3
    assert shadowed.timeline == run(False).timeline
