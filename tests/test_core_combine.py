"""The combination rule of the core: schedule windows (floor and cap) and prediction with upstream's metrics."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timezone
from zoneinfo import ZoneInfo

from pyhpa.core import (
    Behavior,
    ControllerConfig,
    Forecast,
    Memory,
    PredictionSpec,
    ScalingPolicy,
    ScalingRules,
    SyncInputs,
    WindowSpec,
    active_windows,
    check_window,
    decide,
    next_change,
    occurrences,
    provisioned_total,
    with_status,
)
from tests.builders import cpu_hpa, cpu_pods, scale

CFG = ControllerConfig()
UTC = ZoneInfo("UTC")
NY = ZoneInfo("America/New_York")
BEHAVIOR = Behavior(ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15))),
                    ScalingRules(300, "Max", (ScalingPolicy("Percent", 100, 15),)))


def at(y, mo, d, h, mi=0, tz=UTC) -> float:
    return datetime(y, mo, d, h, mi, tzinfo=tz).timestamp()


def window(name="w", start="0 9 * * *", end="0 17 * * *", tz=UTC, **kw) -> WindowSpec:
    return WindowSpec(name=name, start=start, end=end, time_zone=tz, **kw)


def conds(d):
    return {c.type: (c.status, c.reason) for c in d.conditions}


def run(hpa, usages, replicas, now, memory=None):
    pods, samples = cpu_pods(usages, now=now)
    return decide(SyncInputs(hpa=hpa, scale=scale(replicas), pods=pods, samples=[samples],
                             memory=memory or Memory([(now - 3600, replicas)]), now=now, config=CFG))


# ------------------------------------------------------------------ window activity

def test_window_is_active_from_start_inclusive_to_end_exclusive():
    w = window(min_replicas=5)
    assert active_windows([w], at(2026, 1, 5, 8, 59)) == ()
    assert [a.name for a in active_windows([w], at(2026, 1, 5, 9))] == ["w"]
    assert [a.name for a in active_windows([w], at(2026, 1, 5, 16, 59))] == ["w"]
    assert active_windows([w], at(2026, 1, 5, 17)) == ()


def test_window_over_midnight_runs_from_the_evening_to_the_next_morning():
    w = window(start="0 22 * * *", end="0 6 * * *", max_replicas=3)
    assert active_windows([w], at(2026, 1, 5, 23))[0].start == at(2026, 1, 5, 22)
    a = active_windows([w], at(2026, 1, 6, 5, 59))[0]
    assert (a.start, a.end) == (at(2026, 1, 5, 22), at(2026, 1, 6, 6))
    assert active_windows([w], at(2026, 1, 6, 6)) == ()
    assert active_windows([w], at(2026, 1, 6, 12)) == ()


def test_duration_is_elapsed_seconds_and_time_zone_is_the_windows():
    w = window(start="0 9 * * 1-5", end=None, duration_seconds=3600, tz=NY, min_replicas=4)
    # Monday 2026-01-05 09:00 in New York is 14:00 UTC
    assert active_windows([w], at(2026, 1, 5, 13, 59)) == ()
    assert active_windows([w], at(2026, 1, 5, 14)) != ()
    assert active_windows([w], at(2026, 1, 5, 15)) == ()
    assert active_windows([w], at(2026, 1, 10, 14, 30)) == ()  # Saturday


def test_spring_forward_start_in_the_skipped_hour_happens_right_after_the_gap():
    # 2026-03-08: clocks in New York jump from 02:00 EST to 03:00 EDT; 02:30 does not exist
    w = window(start="30 2 * * *", end="30 4 * * *", tz=NY, min_replicas=6)
    gap_end = datetime(2026, 3, 8, 3, 0, tzinfo=NY).timestamp()
    assert active_windows([w], gap_end - 1) == ()
    a = active_windows([w], gap_end)[0]
    assert a.start == gap_end and a.end == datetime(2026, 3, 8, 4, 30, tzinfo=NY).timestamp()
    # the days around it are ordinary
    assert active_windows([w], datetime(2026, 3, 9, 2, 30, tzinfo=NY).timestamp()) != ()


def test_fall_back_repeated_hour_starts_once_at_its_first_occurrence():
    # 2026-11-01: 01:00-02:00 happens twice in New York (EDT, then EST)
    w = window(start="30 1 * * *", end=None, duration_seconds=1800, tz=NY, min_replicas=6)
    first = datetime(2026, 11, 1, 1, 30, tzinfo=NY).timestamp()  # fold=0: EDT
    second = datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=NY).timestamp()  # EST, one hour later
    assert second - first == 3600
    assert active_windows([w], first)[0].start == first
    assert active_windows([w], second) == ()  # no second start in the repeated hour
    starts = [s for s, _ in occurrences(w, first - 86400, first + 86400)]
    assert starts.count(first) == 1 and second not in starts


def test_exclude_dates_skip_the_start_on_that_local_date_only():
    w = window(start="0 22 * * *", end="0 6 * * *", exclude_dates=frozenset({date(2026, 12, 24)}), max_replicas=2)
    assert active_windows([w], at(2026, 12, 24, 23)) == ()  # started on an excluded date
    assert active_windows([w], at(2026, 12, 24, 3)) != ()  # started on the 23rd
    assert active_windows([w], at(2026, 12, 25, 23)) != ()


def test_next_change_is_the_nearest_start_or_end():
    day = window("day", start="0 9 * * *", end="0 17 * * *", min_replicas=5)
    night = window("night", start="0 22 * * *", end="0 6 * * *", max_replicas=2)
    assert next_change([day, night], at(2026, 1, 5, 8)) == at(2026, 1, 5, 9)
    assert next_change([day, night], at(2026, 1, 5, 12)) == at(2026, 1, 5, 17)
    assert next_change([day, night], at(2026, 1, 5, 18)) == at(2026, 1, 5, 22)
    assert next_change([day, night], at(2026, 1, 5, 23)) == at(2026, 1, 6, 6)
    assert next_change([], at(2026, 1, 5, 23)) is None


def test_check_window_names_each_problem_by_field():
    assert check_window(window(min_replicas=1)) == []
    fields = lambda w: [f for f, _ in check_window(w)]  # noqa: E731
    assert fields(window(start="61 * * * *", min_replicas=1)) == ["start"]
    assert fields(window(start="0 9 * *", min_replicas=1)) == ["start"]
    assert fields(window(end="0 9 * * *", min_replicas=1)) == ["end"]  # start == end
    assert fields(window()) == ["minReplicas"]  # neither bound
    assert fields(window(min_replicas=5, max_replicas=3)) == ["minReplicas"]
    assert fields(window(end=None, min_replicas=1)) == ["end"]
    assert fields(window(duration_seconds=60, min_replicas=1)) == ["durationSeconds"]


# ------------------------------------------------------------------ the combination rule

def test_without_schedules_or_prediction_sources_are_the_metrics_and_the_metric_decides():
    d = run(cpu_hpa(), [1000, 1000], 2, at(2026, 1, 5, 12))
    assert d.desired_replicas == 4 and str(d.decided_by) == "Metric/cpu resource utilization (percentage of request)"
    assert [(s.source, s.replicas) for s in d.sources] == [("Metric", 4)]
    assert (d.min_replicas_effective, d.max_replicas_effective) == (1, 10)
    assert "ScheduleActive" not in conds(d) and d.status.schedules is None


def test_floor_raises_replicas_at_the_start_of_its_window_without_metrics():
    hpa = replace(cpu_hpa(), schedules=(window("business", min_replicas=6),))
    d = run(hpa, [100, 100], 2, at(2026, 1, 5, 9))
    assert d.rescale and d.desired_replicas == 6 and str(d.decided_by) == "Schedule/business"
    assert d.min_replicas_effective == 6 and d.active_schedules == ("business",)
    assert conds(d)["ScheduleActive"][0] == "True"
    assert "business" in d.rescale_reason
    assert d.status.schedules.active == ("business",) and d.status.schedules.next_change == at(2026, 1, 5, 17)
    outside = run(hpa, [100, 100], 2, at(2026, 1, 5, 8))
    assert outside.desired_replicas == 1 and conds(outside)["ScheduleActive"] == ("False", "NoActiveWindow")


def test_metrics_above_the_floor_still_scale_up():
    hpa = replace(cpu_hpa(), schedules=(window("business", min_replicas=3),))
    d = run(hpa, [1000, 1000, 1000], 3, at(2026, 1, 5, 12))
    assert d.desired_replicas == 6 and d.decided_by.kind == "Metric"


def test_cap_lowers_replicas_at_its_start_and_holds_metrics_below_it():
    hpa = replace(cpu_hpa(), schedules=(window("night", start="0 22 * * *", end="0 6 * * *", max_replicas=3),))
    d = run(hpa, [1000] * 6, 6, at(2026, 1, 5, 23))
    assert d.desired_replicas == 3 and str(d.decided_by) == "Schedule/night" and d.max_replicas_effective == 3
    held = run(hpa, [1000] * 3, 3, at(2026, 1, 5, 23, 30))
    assert held.desired_replicas == 3 and str(held.decided_by) == "Schedule/night"
    assert next(s for s in held.sources if s.source == "Metric").replicas == 6


def test_overlapping_windows_take_the_highest_floor_and_the_lowest_cap():
    hpa = replace(cpu_hpa(max_r=20), schedules=(
        window("a", min_replicas=4, max_replicas=12), window("b", start="0 10 * * *", min_replicas=7, max_replicas=9)))
    d = run(hpa, [500] * 4, 4, at(2026, 1, 5, 11))
    assert (d.min_replicas_effective, d.max_replicas_effective) == (7, 9) and d.desired_replicas == 7
    assert d.active_schedules == ("a", "b")


def test_floor_wins_over_a_conflicting_cap_and_the_decision_says_so():
    hpa = replace(cpu_hpa(), schedules=(window("floor", min_replicas=8), window("cap", max_replicas=3)))
    d = run(hpa, [100] * 4, 4, at(2026, 1, 5, 12))
    assert d.desired_replicas == 8 and (d.min_replicas_effective, d.max_replicas_effective) == (8, 8)
    assert conds(d)["ScheduleActive"] == ("True", "FloorAndCapConflict")
    assert any("floor wins" in s.note for s in d.sources if s.name == "cap")


def test_after_the_window_ends_scale_down_waits_out_the_stabilization_window():
    """The floor was the recommendation while active: the end of the window is a scale-down like any other."""
    for behavior in (None, BEHAVIOR):
        hpa = replace(cpu_hpa(behavior=behavior), schedules=(window("business", min_replicas=6),))
        t, replicas, memory = at(2026, 1, 5, 16, 50), 6, Memory([(at(2026, 1, 5, 16, 40), 6)])
        seen = []
        while t <= at(2026, 1, 5, 17, 10):
            pods, samples = cpu_pods([100] * replicas, now=t)
            d = decide(SyncInputs(hpa=hpa, scale=scale(replicas), pods=pods, samples=[samples], memory=memory, now=t,
                                  config=CFG))
            hpa, memory, replicas = with_status(hpa, d.status), d.memory, d.desired_replicas
            seen.append((t, replicas, str(d.decided_by)))
            t += 15
        end = at(2026, 1, 5, 17)
        # the last recommendation at the floor is the sync before the end: the window counts from it
        assert all(r == 6 for ts, r, _ in seen if ts < end + 300 - 15), behavior
        assert any(by.startswith("Stabilization/") for ts, _, by in seen if end <= ts < end + 300 - 15)
        assert seen[-1][1] < 6 and seen[-1][2].startswith(("Metric/", "Stabilization/")), behavior


def test_restart_mid_window_decides_the_same_from_empty_memory():
    hpa = replace(cpu_hpa(), schedules=(window("business", min_replicas=6),))
    warm = run(hpa, [100] * 6, 6, at(2026, 1, 5, 12), Memory([(at(2026, 1, 5, 11, 58), 6)]))
    cold = run(hpa, [100] * 6, 6, at(2026, 1, 5, 12), Memory(None))
    assert warm.desired_replicas == cold.desired_replicas == 6
    assert warm.active_schedules == cold.active_schedules == ("business",)


# ------------------------------------------------------------------ prediction as a source

def predicted(mode="Enforce"):
    return replace(cpu_hpa(target=50), prediction=PredictionSpec(mode=mode))


def test_forecast_becomes_replicas_as_upstream_turns_a_total_into_replicas():
    # 4 pods of 1000m request at 50 %: 500m per pod; forecast 4,600m total -> ceil(9.2) = 10
    pods, samples = cpu_pods([500] * 4)
    t = at(2026, 1, 5, 12)
    d = decide(SyncInputs(hpa=predicted(), scale=scale(4), pods=pods, samples=[samples], memory=Memory([(t - 3600, 4)]),
                          now=t, config=CFG, forecast=Forecast(total_milli=4600)))
    assert d.desired_replicas == 8  # upstream's scale-up limit without behavior: max(2 * 4, 4)
    p = next(s for s in d.sources if s.source == "Prediction")
    assert p.replicas == 10 and p.applied
    assert str(d.decided_by) == "Policy/scaleUpLimit"
    assert conds(d)["PredictionActive"] == ("True", "Predicting")
    within = decide(SyncInputs(hpa=predicted(), scale=scale(4), pods=pods, samples=[samples],
                               memory=Memory([(t - 3600, 4)]), now=t, config=CFG,
                               forecast=Forecast(total_milli=2100)))  # ratio 1.05: inside the tolerance
    assert next(s for s in within.sources if s.source == "Prediction").replicas == 4


def test_observe_mode_reports_and_never_changes_replicas():
    pods, samples = cpu_pods([500] * 4)
    t = at(2026, 1, 5, 12)
    d = decide(SyncInputs(hpa=predicted("Observe"), scale=scale(4), pods=pods, samples=[samples],
                          memory=Memory([(t - 3600, 4)]), now=t, config=CFG, forecast=Forecast(total_milli=4600)))
    assert d.desired_replicas == 4 and d.decided_by.kind == "Metric"
    assert conds(d)["PredictionActive"] == ("False", "Observing")
    assert next(s for s in d.sources if s.source == "Prediction").replicas == 10


def test_a_forecast_that_steps_aside_gives_no_proposal_and_its_reason():
    pods, samples = cpu_pods([500] * 4)
    t = at(2026, 1, 5, 12)
    for forecast, reason in ((None, "HistoryUnavailable"),
                             (Forecast(total_milli=None, reason="InsufficientHistory"), "InsufficientHistory")):
        d = decide(SyncInputs(hpa=predicted(), scale=scale(4), pods=pods, samples=[samples],
                              memory=Memory([(t - 3600, 4)]), now=t, config=CFG, forecast=forecast))
        assert d.desired_replicas == 4 and conds(d)["PredictionActive"] == ("False", reason)
        assert next(s for s in d.sources if s.source == "Prediction").replicas is None


def test_the_band_counts_in_proportion_to_the_headroom_of_a_utilization_target():
    # 4 pods of 1000m at 50 %: 500m per pod, and 100 % headroom above the load the target sizes for.
    pods, samples = cpu_pods([500] * 4)
    t = at(2026, 1, 5, 12)

    def prediction(forecast, hpa=None):
        d = decide(SyncInputs(hpa=hpa or predicted(), scale=scale(4), pods=pods, samples=[samples],
                              memory=Memory([(t - 3600, 4)]), now=t, config=CFG, forecast=forecast))
        return next(s for s in d.sources if s.source == "Prediction").replicas, d.status.prediction

    # narrow band: 3,000m expected, 3,600m quantile uses a fifth of the headroom -> 3,000 + 0.2 x 600 = 3,120m
    replicas, st = prediction(Forecast(total_milli=3600, expected_milli=3000))
    assert (replicas, st.forecast_milli, st.expected_milli, st.provisioned_milli) == (7, 3600, 3000, 3120)
    assert prediction(Forecast(total_milli=3600))[0] == 8  # no central forecast: the quantile in full
    # a band as wide as the headroom (or wider) is provisioned in full
    assert prediction(Forecast(total_milli=4600, expected_milli=2300))[1].provisioned_milli == 4600
    assert prediction(Forecast(total_milli=4600, expected_milli=1000))[0] == 10
    # an AverageValue target has no headroom the core knows of: the quantile in full
    average = replace(predicted(), metrics=(replace(predicted().metrics[0], target_type="AverageValue",
                                                    target_utilization=None, target_average_milli=500),))
    assert prediction(Forecast(total_milli=3600, expected_milli=3000), average)[1].provisioned_milli == 3600


def test_provisioned_total_keeps_expected_and_quantile_as_bounds():
    from hypothesis import given
    from hypothesis import strategies as st

    metric = predicted().metrics[0]

    @given(st.integers(1, 10**9), st.integers(0, 10**9), st.integers(1, 99))
    def check(expected, band, u):
        m = replace(metric, target_utilization=u)
        v = provisioned_total(m, Forecast(total_milli=expected + band, expected_milli=expected))
        assert expected <= v <= expected + band
        if band >= expected * (100 / u - 1):
            assert v == expected + band

    check()


def test_a_limit_basis_sizes_the_forecast_against_the_pods_limits():
    # 4 pods using 100m of 100m requests, 200m limits; target 50 % of the limit: 100m per pod.
    # The metric asks for 4 (100m / 200m = 50 %), and a forecast of the same 400m total asks for 4 too.
    pods = [replace(p, requests={("cpu", ""): 100, ("cpu", "c"): 100}, limits={("cpu", ""): 200, ("cpu", "c"): 200},
                    containers=("c",)) for p in cpu_pods([100] * 4)[0]]
    _, samples = cpu_pods([100] * 4)
    hpa = replace(predicted(), metrics=(replace(predicted().metrics[0], utilization_basis="Limit"),))
    t = at(2026, 1, 5, 12)
    d = decide(SyncInputs(hpa=hpa, scale=scale(4), pods=pods, samples=[samples], memory=Memory([(t - 3600, 4)]), now=t,
                          config=CFG, forecast=Forecast(total_milli=400)))
    assert [p.replicas for p in d.proposals] == [4]
    assert next(s for s in d.sources if s.source == "Prediction").replicas == 4
    assert d.desired_replicas == 4 and d.status.prediction.replicas == 4


def test_a_huge_forecast_saturates_the_replicas_at_int32_like_upstream():
    pods, samples = cpu_pods([500] * 4)
    t = at(2026, 1, 5, 12)
    for hpa in (predicted(), replace(predicted(), metrics=(replace(
            predicted().metrics[0], type="External", name="q", target_type="Value", target_utilization=None,
            target_value_milli=1000),))):
        d = decide(SyncInputs(hpa=hpa, scale=scale(4), pods=pods, samples=[samples], memory=Memory([(t - 3600, 4)]),
                              now=t, config=CFG, forecast=Forecast(total_milli=10**30)))
        assert next(s for s in d.sources if s.source == "Prediction").replicas == 2**31 - 1
        assert d.status.prediction.replicas == 2**31 - 1 and d.desired_replicas == 8


def test_forecast_below_the_metrics_never_lowers_the_decision():
    pods, samples = cpu_pods([1000] * 4)
    t = at(2026, 1, 5, 12)
    d = decide(SyncInputs(hpa=predicted(), scale=scale(4), pods=pods, samples=[samples], memory=Memory([(t - 3600, 4)]),
                          now=t, config=CFG, forecast=Forecast(total_milli=500)))
    assert d.desired_replicas == 8 and d.decided_by.kind == "Metric"


def test_status_time_is_utc():
    assert datetime.fromtimestamp(at(2026, 1, 5, 9), timezone.utc).hour == 9
