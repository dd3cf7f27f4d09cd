"""The forecaster (pyhpa.forecast): seasonality, level, quantiles, 'not predictable', accuracy, no look-ahead."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyhpa.forecast import (
    ACCURACY_TOO_LOW,
    DAY,
    HISTORY_UNAVAILABLE,
    INSUFFICIENT_HISTORY,
    NOT_PREDICTABLE,
    PREDICTING,
    WEEK,
    ForecastLoop,
    ForecastSettings,
    Predictor,
    fit,
    replay,
    to_core_forecast,
)

T0 = 1_700_000_000.0 - (1_700_000_000.0 % DAY)  # a UTC midnight
STEP = 60.0


def daily(t, base=1000.0, amp=600.0, phase=0.0):
    return base + amp * np.sin(2 * np.pi * (t - T0) / DAY + phase)


def series(days, fn, noise=0.0, seed=0, step=STEP):
    t = T0 + np.arange(0, days * DAY, step)
    rng = np.random.default_rng(seed)
    return t, np.maximum(fn(t) + noise * rng.standard_normal(t.size), 0.0)


def predictor_with(t, v, **kw):
    p = Predictor(ForecastSettings(**kw))
    p.extend(t, v)
    return p


def test_daily_sine_is_forecast_within_a_few_percent():
    t, v = series(7, daily, noise=20.0)
    p = predictor_with(t, v)
    now = t[-1] + STEP
    for k in range(12):  # every 2 hours over the next day, feeding the truth as it happens
        f = p.forecast(now)
        assert f.reason == PREDICTING and f.usable, f.message
        assert f.fit.periods == (DAY,)
        truth = daily(np.array([now + 300.0]))[0]
        assert abs(f.point - truth) / truth < 0.04, (k, f.point, truth)
        peak = daily(np.arange(now, now + 301.0, 60.0)).max()
        assert f.upper >= peak * 0.98
        assert f.upper <= peak * 1.15
        for s in np.arange(now, now + 7200.0, STEP):
            p.observe(s, float(daily(np.array([s]))[0]))
        now += 7200.0


def test_fit_reports_periods_strength_and_heldout_score():
    t, v = series(7, daily, noise=20.0)
    f = fit(t, v, now=t[-1] + STEP)
    assert f.reason == PREDICTING
    assert f.periods == (DAY,)
    assert f.strengths[0] > 0.9
    assert f.score.wape < 0.05 < f.score.flat_wape
    assert f.model.step == 60.0 and len(f.model.profiles[0]) == 1440


def test_weekly_seasonality_is_found_with_two_weeks():
    def weekly(t):
        weekday = ((t - T0) // DAY) % 7
        return daily(t) * np.where(weekday >= 5, 0.4, 1.0)

    t, v = series(21, weekly, noise=10.0)
    # the default history (7 days) cannot show a weekly cycle; three weeks can
    assert fit(t, v, now=t[-1] + STEP).periods == (DAY,)
    three_weeks = ForecastSettings(history_seconds=21 * DAY)
    f = fit(t, v, now=t[-1] + STEP, settings=three_weeks)
    assert f.reason == PREDICTING
    assert f.periods == (DAY, WEEK)
    # Day 26 is a "weekend" day (index 5 of the week): forecast its noon from its morning.
    p = predictor_with(t, v, history_seconds=21 * DAY)
    now = T0 + 26 * DAY + 12 * 3600.0
    for s in np.arange(t[-1] + STEP, now, STEP):
        p.observe(s, float(weekly(np.array([s]))[0]))
    got = p.forecast(now)
    truth = weekly(np.array([now + 300.0]))[0]
    assert abs(got.point - truth) / truth < 0.05


def test_too_little_history_gives_insufficient_history():
    t, v = series(0.25, daily, noise=5.0)
    f = fit(t, v, now=t[-1] + STEP)
    assert f.reason == INSUFFICIENT_HISTORY and f.model is None
    assert "history" in f.message
    p = predictor_with(t[:30], v[:30])
    got = p.forecast(t[30])
    assert got.reason == INSUFFICIENT_HISTORY and got.upper is None and not got.usable


def test_flat_series_is_not_predictable():
    t = T0 + np.arange(0, 7 * DAY, STEP)
    f = fit(t, np.full(t.size, 500.0), now=t[-1] + STEP)
    assert f.reason == NOT_PREDICTABLE and "flat" in f.message
    f0 = fit(t, np.zeros(t.size), now=t[-1] + STEP)
    assert f0.reason == NOT_PREDICTABLE


def test_white_noise_is_not_predictable():
    rng = np.random.default_rng(3)
    t = T0 + np.arange(0, 7 * DAY, STEP)
    v = 1000.0 + 200.0 * rng.standard_normal(t.size)
    f = fit(t, v, now=t[-1] + STEP)
    assert f.reason == NOT_PREDICTABLE and f.model is None, f.message
    p = predictor_with(t, v)
    assert p.forecast(t[-1] + STEP).upper is None


def test_a_cycle_that_does_not_forecast_the_held_out_period_is_not_predictable():
    # six days of a daily cycle, then a day without it: the profile is strong in sample, but one hour
    # ahead on the held-out day it is worse than the recent level alone
    t, v = series(7, daily, noise=20.0)
    last = t >= t[-1] - DAY + STEP
    v[last] = 1000.0 + 20.0 * np.random.default_rng(1).standard_normal(int(last.sum()))
    f = fit(t, v, now=t[-1] + STEP)
    assert f.reason == NOT_PREDICTABLE and f.model is None
    assert "does not forecast the held-out period 1h ahead" in f.message, f.message
    assert f.score.ahead_wape > 1.05 * f.score.ahead_level_wape
    # the same cycle kept up on the last day passes the test, and says by how much
    ok = fit(*series(7, daily, noise=20.0), now=t[-1] + STEP)
    assert ok.reason == PREDICTING and ok.score.ahead_wape < 0.5 * ok.score.ahead_level_wape


def test_expected_is_the_central_forecast_below_the_quantile():
    t, v = series(7, daily, noise=20.0)
    f = predictor_with(t, v).forecast(t[-1] + STEP)
    peak = daily(np.arange(t[-1] + STEP, t[-1] + STEP + 301.0, 60.0)).max()
    assert f.expected <= f.upper and abs(f.expected - peak) / peak < 0.04
    core = to_core_forecast(f)
    assert core.expected_milli == math.ceil(f.expected) and core.total_milli == math.ceil(f.upper)


def test_outliers_and_gaps_are_ignored():
    t, v = series(7, daily, noise=10.0)
    rng = np.random.default_rng(5)
    spikes = rng.choice(t.size, size=t.size // 100, replace=False)
    v = v.copy()
    v[spikes] *= 8.0
    gap = (t > T0 + 3 * DAY) & (t < T0 + 3.5 * DAY)
    t2, v2 = t[~gap], v[~gap]
    f = fit(t2, v2, now=t2[-1] + STEP)
    assert f.reason == PREDICTING and f.periods == (DAY,)
    p = predictor_with(t2, v2)
    now = t2[-1] + STEP
    got = p.forecast(now)
    truth = daily(np.array([now + 300.0]))[0]
    assert abs(got.point - truth) / truth < 0.05


def test_level_shift_is_followed_within_the_level_window():
    t, v = series(7, daily, noise=10.0)
    p = predictor_with(t, v)
    now = t[-1] + STEP
    window = p.forecast(now).fit.model.level_seconds  # fit on the old level
    assert 600.0 <= window <= 3600.0
    for s in np.arange(now, now + window, STEP):  # the load doubles
        p.observe(s, 2.0 * float(daily(np.array([s]))[0]))
    now += window
    got = p.forecast(now)
    truth = 2.0 * daily(np.array([now + 300.0]))[0]
    assert abs(got.point - truth) / truth < 0.06


def test_trend_is_followed():
    t, v = series(7, lambda t: daily(t) * (1.0 + 0.15 * (t - T0) / DAY), noise=10.0)
    p = predictor_with(t, v)
    now = t[-1] + STEP
    got = p.forecast(now)
    truth = daily(np.array([now + 300.0]))[0] * (1.0 + 0.15 * (now + 300.0 - T0) / DAY)
    assert got.reason == PREDICTING
    assert abs(got.point - truth) / truth < 0.05


def test_broken_pattern_makes_the_prediction_step_aside_and_come_back():
    t, v = series(7, daily, noise=10.0)
    settings = dict(refresh_seconds=10 * DAY, accuracy_window_seconds=3600.0, min_evaluations=20)
    p = predictor_with(t, v, **settings)
    now = t[-1] + STEP
    assert p.forecast(now).reason == PREDICTING
    # The daily pattern turns upside down; the fitted model keeps predicting the old shape.
    seen = []
    for s in np.arange(now, now + 12 * 3600.0, STEP):
        p.observe(s, float(daily(np.array([s]), phase=math.pi)[0]))
        seen.append(p.forecast(s + STEP).reason)
    assert ACCURACY_TOO_LOW in seen
    aside = p.forecast(now + 12 * 3600.0)
    assert aside.reason == ACCURACY_TOO_LOW and not aside.usable and "steps aside" in aside.message
    # The old pattern returns: accuracy recovers within the accuracy window.
    back = now + 12 * 3600.0
    for s in np.arange(back, back + 3 * 3600.0, STEP):
        p.observe(s, float(daily(np.array([s]))[0]))
        last = p.forecast(s + STEP)
    assert last.reason == PREDICTING and last.usable


def test_no_observations_means_history_unavailable():
    t, v = series(7, daily, noise=10.0)
    p = predictor_with(t, v, stale_seconds=600.0)
    assert p.forecast(t[-1] + STEP).reason == PREDICTING
    got = p.forecast(t[-1] + 3600.0)
    assert got.reason == HISTORY_UNAVAILABLE and got.upper is None


def test_the_forecast_loop_learns_each_sample_once_and_keeps_the_last_prediction():
    from pyhpa.core import MetricSamples, PodSample, PredictionSpec

    t, v = series(7, daily, noise=10.0)
    loop = ForecastLoop(PredictionSpec(metric=1))
    loop.predictor.extend(t, v)
    now = t[-1] + STEP
    pods = {"a": PodSample(400, now - 10, 30.0), "b": PodSample(600, now - 10, 30.0)}
    samples = [MetricSamples(error="not this metric"), MetricSamples(pods=pods, timestamp=now - 10)]
    assert loop.learn(now, samples) == 1000.0 and loop.last_seen == now - 10
    assert loop.learn(now + 15, samples) == 1000.0  # the same samples again: not learnt twice
    assert loop.predictor.history()[0][-2:].tolist() == [t[-1], now - 10]
    assert loop.learn(now, [samples[0], MetricSamples(error="down")]) is None
    got = loop.forecast(now)
    assert loop.last is not None and loop.last.reason == PREDICTING and got == to_core_forecast(loop.last)
    assert got.total_milli is not None and loop.predictor.fit is not None
    aside = loop.aside(HISTORY_UNAVAILABLE, "prometheus is down")
    assert (aside.total_milli, aside.reason, aside.message, loop.last) == (None, HISTORY_UNAVAILABLE,
                                                                           "prometheus is down", None)


def test_fit_never_reads_data_after_now():
    t, v = series(8, daily, noise=10.0)
    now = T0 + 7 * DAY
    a = fit(t, v, now=now)
    w = v.copy()
    w[t > now] = 99999.0
    b = fit(t, w, now=now)
    assert a == b


def test_replay_has_no_look_ahead():
    t, v = series(9, daily, noise=30.0, seed=1)
    settings = ForecastSettings(refresh_seconds=6 * 3600.0)
    start = T0 + 7 * DAY
    a = replay(t, v, settings=settings, start=start)
    cut = T0 + 8 * DAY
    w = v.copy()
    w[t >= cut] = w[t >= cut] * 3.0 + 500.0
    b = replay(t, w, settings=settings, start=start)
    # A row at t is forecast from rows known lead seconds before its end: rows starting at or after the
    # cut can change forecasts of rows whose forecast was made after the first changed row was known.
    known = cut + STEP  # the first changed row is known at the end of its interval
    first_issue_after = t + STEP - settings.lead_seconds >= known
    same = (a.times >= start) & ~first_issue_after[np.searchsorted(t, a.times)]
    assert same.sum() > 1000
    np.testing.assert_array_equal(a.point[same], b.point[same])
    np.testing.assert_array_equal(a.upper[same], b.upper[same])
    assert not np.allclose(a.point[~same], b.point[~same])


def test_replay_accuracy_of_a_noisy_daily_series():
    t, v = series(9, daily, noise=50.0, seed=2)
    r = replay(t, v, start=T0 + 7 * DAY)
    assert r.periods == (DAY,)
    assert r.accuracy.evaluations == r.times.size
    assert r.accuracy.mape < 0.08
    # the band is calibrated: about 1 - q of the rows fall above the q quantile
    assert 0.03 < r.accuracy.under_share < 0.2


@pytest.mark.parametrize("step", [15.0, 300.0])
def test_other_sampling_steps(step):
    t, v = series(7, daily, noise=10.0, step=step)
    f = fit(t, v, now=t[-1] + step)
    assert f.reason == PREDICTING and f.periods == (DAY,)
    assert f.model.step >= step


def test_refits_reuse_the_selected_model_for_a_day_then_select_again():
    t, v = series(9, daily, noise=20.0)
    now = T0 + 7 * DAY
    first = fit(t, v, now=now)
    assert first.candidates > 1 and first.selected_at == now
    hour_later = fit(t, v, now=now + 3600.0, previous=first)
    assert hour_later.candidates == 0 and hour_later.selected_at == now
    assert hour_later.model.transform == first.model.transform
    assert hour_later.model.profiles != first.model.profiles  # re-estimated on the newer history
    day_later = fit(t, v, now=now + DAY, previous=hour_later)
    assert day_later.candidates > 1 and day_later.selected_at == now + DAY
    flat = np.full(t.size, 300.0)
    assert fit(t, flat, now=now + 3600.0, previous=first).reason == NOT_PREDICTABLE  # never reused blindly


# ------------------------------------------------------------------ recurring events at minute scale

def clock_spikes(t, height=2.0, minutes=4, days=None, hours=range(24)):
    """``daily`` with ``height``x spikes of ``minutes`` minutes at :00 and :30 of ``hours`` (on ``days`` only
    when given: day indexes from T0)."""
    v = daily(t)
    minute = ((t % 3600) // 60).astype(int)
    hour = ((t % DAY) // 3600).astype(int)
    on = np.isin(hour, list(hours)) & ((minute % 30) < minutes)
    if days is not None:
        on &= np.isin(((t - T0) // DAY).astype(int), list(days))
    return np.where(on, v * height, v)


def forecast_at(p, t, v, now, until):
    """Feed the truth up to ``until`` (as it happens), then forecast at ``until``."""
    for k in np.flatnonzero((t >= now) & (t < until)):
        p.observe(t[k] + STEP, v[k])
    return p.forecast(until, refit=False)


@pytest.mark.parametrize("hours", [range(24), range(8, 22)])
def test_spikes_at_00_and_30_are_forecast_at_their_height_and_time(hours):
    t = T0 + np.arange(0, 8 * DAY, STEP)
    rng = np.random.default_rng(3)
    v = clock_spikes(t, hours=hours) * (1 + 0.03 * rng.standard_normal(t.size))
    now = T0 + 7 * DAY
    f = fit(t[t < now], v[t < now], now=now)
    assert f.reason == PREDICTING and f.model.event_profiles >= 1, f.message
    assert "recurring events each" in f.message and "30-" in f.message and ":33" in f.message
    p = predictor_with(t[t < now], v[t < now])
    p.install(f, now)
    base = daily(np.array([now + 12 * 3600.0]))[0]
    before = forecast_at(p, t, v, now, now + 11 * 3600 + 57 * 60)  # 11:57: the 12:00 spike is in the window
    assert 1.85 * base < before.expected < 2.2 * base, (before.expected, base)
    between = forecast_at(p, t, v, now, now + 12 * 3600 + 10 * 60)  # 12:10: the next spike is 20 min away
    assert between.expected < 1.15 * base
    # the spike's timing: the central forecast at now + lead is high only when that minute is a spike minute
    p = predictor_with(t[t < now], v[t < now])
    p.install(f, now)
    fed = now
    for k in range(4, 36):
        issue = now + 12 * 3600 + k * 60 - 300
        pr = forecast_at(p, t, v, fed, issue)
        fed = issue
        spike = (k % 30) < 4
        assert (pr.point > 1.6 * base) == spike, (k, pr.point, base)


def test_spikes_on_one_day_only_are_not_forecast():
    t = T0 + np.arange(0, 8 * DAY, STEP)
    rng = np.random.default_rng(4)
    v = clock_spikes(t, days=[3]) * (1 + 0.03 * rng.standard_normal(t.size))
    now = T0 + 7 * DAY
    f = fit(t[t < now], v[t < now], now=now)
    assert f.reason == PREDICTING and f.model.event_profiles == 0, f.message
    p = predictor_with(t[t < now], v[t < now])
    p.install(f, now)
    base = daily(np.array([now + 12 * 3600.0]))[0]
    assert forecast_at(p, t, v, now, now + 11 * 3600 + 57 * 60).expected < 1.1 * base


def test_spikes_on_fewer_than_most_days_are_not_forecast_and_on_most_days_are():
    t = T0 + np.arange(0, 8 * DAY, STEP)
    rng = np.random.default_rng(5)
    now = T0 + 7 * DAY
    few = clock_spikes(t, days=[1, 4, 6], hours=[9]) * (1 + 0.03 * rng.standard_normal(t.size))
    assert fit(t[t < now], few[t < now], now=now).model.event_profiles == 0
    most = clock_spikes(t, days=[1, 2, 3, 4, 5, 6], hours=[9]) * (1 + 0.03 * rng.standard_normal(t.size))
    f = fit(t[t < now], most[t < now], now=now)
    assert f.model.event_profiles == 1 and "each day at 09:00-09:03, 09:30-09:33 UTC" in f.message, f.message


def test_a_series_without_events_keeps_the_smooth_model():
    t, v = series(8, daily, noise=30.0, seed=6)
    now = T0 + 7 * DAY
    f = fit(t[t < now], v[t < now], now=now)
    assert f.reason == PREDICTING and f.model.event_profiles == 0 and f.model.event_filter_seconds == 0
    assert "events" not in f.message
    assert len(f.model.profiles) == len(f.model.periods) == 1
