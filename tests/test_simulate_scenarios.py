"""Scenarios whose outcome follows from documented upstream HPA behaviour.

References: "Horizontal Pod Autoscaling" (kubernetes.io/docs/concepts/workloads/autoscaling/
horizontal-pod-autoscale/): algorithm details, stabilization window, default behavior,
tolerance; kube-controller-manager flags (scale-up limit max(2x, 4) without behavior).
The test workload: 100m request, 100 millicore-seconds per request, so per pod
1 request/s = 100 % utilization and the 50 % target is 0.5 requests/s per pod.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simulate_util import hpa_doc, simulate, target_doc, timeline

from pyhpa.core import ControllerConfig
from pyhpa.simulate import Settings

STEP = [(600, 0.4), (1800, 40.0)]  # 1 pod at 40 %, then load for 80 pods


def _ups(df):
    return df[df.desired_replicas > df.current_replicas]


def test_scale_up_without_behavior_is_limited_to_max_2x_or_4_per_sync(tmp_path):
    df = timeline(simulate(tmp_path, STEP))
    ups = _ups(df)
    assert len(ups) >= 4
    limit = ups.current_replicas.map(lambda c: max(2 * c, 4))
    assert (ups.desired_replicas <= limit).all()
    assert (ups.desired_replicas == limit).sum() >= 4  # the limit binds, not the metric
    assert list(ups.desired_replicas[:5]) == [4, 8, 16, 32, 64]
    assert ups.conditions_changed.iloc[0].count("ScalingLimited=True/ScaleUpLimit") == 1


def test_scale_up_with_default_behavior_is_max_100_percent_or_4_pods_per_15s(tmp_path):
    df = timeline(simulate(tmp_path, STEP, hpas=[hpa_doc(behavior={})]))
    ups = _ups(df)
    limit = ups.current_replicas.map(lambda c: max(2 * c, c + 4))
    assert (ups.desired_replicas <= limit).all()
    assert list(ups.desired_replicas[:5]) == [5, 10, 20, 40, 75]
    # the policies' period is 15 s: over any 15 s of syncs the growth stays within the limit
    assert (df.t.diff().dropna() == 15).all()


def test_scale_down_waits_for_the_300s_stabilization_window(tmp_path):
    drop = 1200.0
    df = timeline(simulate(tmp_path, [(drop, 20.0), (1800, 2.0)]))
    downs = df[df.desired_replicas < df.current_replicas]
    assert len(downs) >= 1
    assert downs.t.iloc[0] >= drop + 300
    assert downs.t.iloc[0] <= drop + 300 + 60  # metrics lag: one window, one scrape, one sync
    assert (df[(df.t >= drop) & (df.t < drop + 300)].desired_replicas == 40).all()


def test_scale_down_window_from_behavior_replaces_the_controller_default(tmp_path):
    drop = 1200.0
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    df = timeline(simulate(tmp_path, [(drop, 20.0), (1800, 2.0)], hpas=[hpa_doc(behavior=behavior)]))
    first_down = df[df.desired_replicas < df.current_replicas].t.iloc[0]
    assert drop + 60 <= first_down <= drop + 120


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(utilization=st.integers(min_value=46, max_value=54))
def test_a_ratio_inside_the_tolerance_never_scales(tmp_path, utilization):
    rps = 4 * utilization / 100  # 4 pods at `utilization` percent against a 50 % target
    sim = simulate(tmp_path, [(1800, rps)], target=target_doc(replicas=4))
    s = sim.runs[0].summary
    assert (s["scale_ups"], s["scale_downs"]) == (0, 0)
    assert s["metrics"][0]["mean"] == utilization


def test_a_ratio_outside_the_tolerance_scales(tmp_path):
    up = simulate(tmp_path, [(900, 4 * 0.57)], target=target_doc(replicas=4)).runs[0].summary
    assert up["scale_ups"] == 1 and up["max_replicas_seen"] == 5  # ratio 1.14: ceil(1.14 * 4)
    down = timeline(simulate(tmp_path, [(900, 8 * 0.42)], target=target_doc(replicas=8)))
    assert down.desired_replicas.iloc[-1] == 7  # ratio 0.84: ceil(0.84 * 8), after the 300 s window
    assert down[down.desired_replicas < down.current_replicas].t.iloc[0] >= 300


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(loads=st.lists(st.floats(min_value=0, max_value=12, allow_nan=False), min_size=3, max_size=12),
       behavior=st.sampled_from([None, {}, {"scaleUp": {"policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}]))
def test_min_and_max_replicas_always_hold(tmp_path, loads, behavior):
    sim = simulate(tmp_path, [(120, x) for x in loads], hpas=[hpa_doc(min_replicas=2, max_replicas=7, behavior=behavior)],
                   target=target_doc(replicas=3))
    df = timeline(sim)
    assert df.desired_replicas.between(2, 7).all()
    assert df.current_replicas.between(2, 7).all()
    assert (df.ready_replicas <= 7).all()
    assert 2 <= sim.runs[0].summary["min_replicas_seen"] <= sim.runs[0].summary["max_replicas_seen"] <= 7


def test_replicas_outside_min_max_are_brought_inside_at_the_first_sync(tmp_path):
    df = timeline(simulate(tmp_path, [(300, 0.0)], hpas=[hpa_doc(min_replicas=3, max_replicas=5)],
                           target=target_doc(replicas=9)))
    assert (df.current_replicas.iloc[0], df.desired_replicas.iloc[0]) == (9, 5)
    assert df.current_replicas.iloc[1:].between(3, 5).all()


def test_per_direction_tolerance_changes_only_its_own_direction(tmp_path):
    loose_up = hpa_doc(behavior={"scaleUp": {"tolerance": "0.5"}})
    plain = hpa_doc(behavior={})
    # up: 4 pods at 65 % (ratio 1.3): the default tolerance (0.1) scales up, 0.5 does not
    up = simulate(tmp_path, [(900, 4 * 0.65)], hpas=[plain, loose_up], target=target_doc(replicas=4))
    assert up.runs[0].summary["scale_ups"] >= 1
    assert up.runs[1].summary["scale_ups"] == 0
    # down: 8 pods at 30 % (ratio 0.6): both scale down, identically
    down = simulate(tmp_path, [(1200, 8 * 0.30)], hpas=[plain, loose_up], target=target_doc(replicas=8))
    a, b = timeline(down, 0), timeline(down, 1)
    assert down.runs[0].summary["scale_downs"] >= 1
    assert a.desired_replicas.tolist() == b.desired_replicas.tolist()
    assert down.runs[0].cluster.scale_events == down.runs[1].cluster.scale_events


def test_controller_wide_tolerance_flag(tmp_path):
    cfg = Settings(config=ControllerConfig(tolerance=0.5))
    s = simulate(tmp_path, [(900, 4 * 0.65)], target=target_doc(replicas=4), settings=cfg).runs[0].summary
    assert s["scale_ups"] == 0
    assert s["metrics"][0]["tolerance_band"] == [25.0, 75.0]


STARTUP = dict(startup_cpu_boost_millicores=300, startup_cpu_boost_seconds=40, app_startup_seconds=40)


def test_unready_pods_at_startup_are_left_out_as_the_core_says(tmp_path):
    """New pods burn 300m extra CPU until they turn Ready (40 s). Upstream leaves out
    Pending pods, pods without samples and, within the CPU initialization period, pods
    not Ready: the HPA settles at the 6 pods the load needs. With the initialization
    period and readiness delay set to 0 the boosted samples count and it runs to max."""
    steps, tgt = [(600, 0.8), (1800, 3.0)], target_doc(replicas=2, readiness={"periodSeconds": 5})
    hpa = [hpa_doc(max_replicas=30)]
    guarded = simulate(tmp_path, steps, hpas=hpa, target=tgt, profile=STARTUP)
    df = timeline(guarded)
    assert df.unready_pods.max() >= 2 and df.missing_pods.max() >= 2
    assert guarded.runs[0].summary["max_replicas_seen"] == 6
    assert df.desired_replicas.iloc[-1] == 6 and df.cpu_utilization_percent.iloc[-1] == 50
    off = Settings(config=ControllerConfig(cpu_initialization_period_seconds=0, initial_readiness_delay_seconds=0))
    fooled = simulate(tmp_path, steps, hpas=hpa, target=tgt, profile=STARTUP, settings=off)
    assert timeline(fooled).unready_pods.max() == 0
    assert fooled.runs[0].summary["max_replicas_seen"] == 30


def test_pods_turn_ready_after_the_readiness_probe_passes(tmp_path):
    tgt = target_doc(replicas=1, readiness={"initialDelaySeconds": 10, "periodSeconds": 10})
    sim = simulate(tmp_path, [(300, 0.4), (600, 4.0)], target=tgt, profile={"app_startup_seconds": 25})
    df = timeline(sim)
    first_up = df[df.desired_replicas > df.current_replicas].t.iloc[0]
    # created at first_up; running 3 s later; probes at +10, +20, +30 s after start: app up at +25 -> Ready at +30
    ready_at = first_up + 3 + 30
    grown = df[df.ready_replicas > 1].t.iloc[0]
    assert ready_at <= grown < ready_at + 15


def test_statefulset_ordered_ready_starts_one_pod_at_a_time(tmp_path):
    tgt = target_doc(replicas=1, kind="StatefulSet", readiness={"periodSeconds": 5})
    sim = simulate(tmp_path, [(300, 0.4), (900, 4.0)], hpas=[hpa_doc(kind="StatefulSet")], target=tgt,
                   profile={"app_startup_seconds": 20})
    df = timeline(sim)
    assert df.ready_replicas.diff().dropna().max() == 1  # a pod takes 1 + 2 + 20 s to turn Ready
    assert df.ready_replicas.iloc[-1] == df.desired_replicas.iloc[-1] == 8
    pods = sim.runs[0].cluster.pods
    assert [p.name for p in pods] == [f"web-{i}" for i in range(8)]
    for prev, pod in zip(pods[1:], pods[2:]):  # each created the moment the previous turned Ready
        assert (pod.created, pod.ready_at - pod.created) == (prev.ready_at, 23.0)


def test_steady_cpu_utilization_follows_the_workload_model(tmp_path):
    # 3 pods, 1.23 requests/s, 100 m per request/s, 7m baseline, 100m request: (7 + 41) % = 48 %
    sim = simulate(tmp_path, [(600, 1.23)], target=target_doc(replicas=3), profile={"cpu_millicore_seconds_per_request": 100,
                                                                                   "cpu_baseline_millicores": 7})
    df = timeline(sim)
    assert set(df.cpu_utilization_percent) == {48.0}
    assert math.isclose(sim.runs[0].summary["mean_cpu_utilization_percent"], 48.0, abs_tol=0.01)
    assert sim.runs[0].summary["pod_hours"] == 0.5


def test_overload_unserved_and_reaction_time(tmp_path):
    # capacity 1 request/s per pod (100 % CPU); 2 pods; the load jumps to 6 requests/s
    sim = simulate(tmp_path, [(600, 1.0), (1200, 6.0)], target=target_doc(replicas=2), profile={"pod_capacity_rps": 1.0})
    s = sim.runs[0].summary
    assert s["overload_episodes"] == 1
    assert 0 < s["reaction_time_max_seconds"] <= 30
    assert s["recovery_time_max_seconds"] == s["overloaded_seconds"]
    # until pods are added, 4 of 6 requests/s are lost
    assert s["unserved_requests"] >= 4 * s["reaction_time_max_seconds"]
    assert s["unserved_requests"] <= 4 * s["overloaded_seconds"] + 1e-6


def test_pods_saturated_below_the_target_do_not_scale(tmp_path):
    """A pod capped by its capacity (not its CPU) at 50 % CPU shows the HPA no reason to scale."""
    sim = simulate(tmp_path, [(600, 1.0), (1200, 6.0)], target=target_doc(replicas=2),
                   profile={"pod_capacity_rps": 1.0, "cpu_millicore_seconds_per_request": 50})
    s = sim.runs[0].summary
    assert s["scale_ups"] == 0 and s["overload_episodes"] == 1 and s["reaction_time_max_seconds"] is None
    # at 1 request/s the 2 pods ran at 25 %, so the HPA had scaled to 1 pod: 5 of 6 requests/s are lost
    assert timeline(sim).current_replicas.iloc[-1] == 1
    assert math.isclose(s["unserved_requests"], 5 * 1200, rel_tol=1e-9)


def test_external_and_object_metrics_from_trace_columns(tmp_path):
    ext = {"type": "External", "external": {"metric": {"name": "queue_length"},
                                            "target": {"type": "AverageValue", "averageValue": "10"}}}
    obj = {"type": "Object", "object": {"metric": {"name": "backlog"},
                                        "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
                                        "target": {"type": "Value", "value": "50"}}}
    extra = {"queue": [0, 100], "backlog": [10, 10]}
    sim = simulate(tmp_path, [(300, 0.1), (600, 0.1)], hpas=[hpa_doc(metrics=[ext]), hpa_doc(metrics=[obj])],
                   extra=extra, metric_columns=("queue_length=queue", "backlog=backlog"))
    ext_df, obj_df = timeline(sim, 0), timeline(sim, 1)
    assert ext_df.desired_replicas.iloc[-1] == 10  # 100 / 10 per replica
    assert ext_df.queue_length_average_target.iloc[0] == 10.0
    assert obj_df.desired_replicas.iloc[-1] == 1  # backlog 10 against 50: ratio 0.2 -> min
    assert obj_df.backlog_value.iloc[-1] == 10.0


def test_pods_metric_of_served_requests(tmp_path):
    pods = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "2"}}}
    sim = simulate(tmp_path, [(900, 12.0)], hpas=[hpa_doc(metrics=[pods])],
                   profile={"metrics": {"rps": {"source": "served_requests_per_second"}}})
    df = timeline(sim)
    assert df.desired_replicas.iloc[-1] == 6
    assert df.rps_average.iloc[-1] == 2.0


def test_the_hpa_never_sees_samples_of_deleted_pods(tmp_path, monkeypatch):
    """metrics-server answers for existing pods only: after a scale-down, the samples of the
    last scrape lose the deleted pods before the next scrape (syncs every 5 s, scrapes every 60 s)."""
    import pyhpa.simulate.cluster as cluster_mod

    seen = []
    real = cluster_mod.decide

    def checking(inputs):
        names = {p.name for p in inputs.pods}
        for s in inputs.samples:
            assert s.pods is None or set(s.pods) <= names
        seen.append(len(inputs.pods))
        return real(inputs)

    monkeypatch.setattr(cluster_mod, "decide", checking)
    # the Python cluster, whose every sync calls the core (the compiled one gives the same: test_compiled_cluster.py)
    monkeypatch.setenv("PYHPA_COMPILED", "0")
    pods = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1"}}}
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 100}}  # not a multiple of the 60 s resolution
    sim = simulate(tmp_path, [(900, 10.0), (900, 2.0)], hpas=[hpa_doc(metrics=[pods], behavior=behavior)],
                   target=target_doc(replicas=10), settings=Settings(sync_period_seconds=5),
                   profile={"metric_resolution_seconds": 60, "metrics_scrape_offset_seconds": 30,
                            "metrics": {"rps": {"source": "served_requests_per_second"}}})
    assert sim.runs[0].summary["scale_downs"] >= 1 and min(seen) == 2
