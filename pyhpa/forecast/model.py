"""Typed settings and results of the forecaster (all built by keyword).

Units: times are epoch seconds (UTC), durations seconds, values are the metric's
workload total in the metric's own unit (e.g. millicores of CPU summed over the target's
pods; the caller decides the unit, the forecaster never converts it). Fractions are
0..1 (``0.25`` = 25 %).
"""

from __future__ import annotations

from dataclasses import dataclass, field

# PredictionActive condition reasons: the core's condition and names; the forecaster says which applies.
from ..core.model import (  # noqa: F401 - re-exported
    ACCURACY_TOO_LOW,
    HISTORY_UNAVAILABLE,
    INSUFFICIENT_HISTORY,
    NOT_PREDICTABLE,
    OBSERVING,
    PREDICTING,
)

DAY = 86400.0
WEEK = 7 * DAY


@dataclass(slots=True, frozen=True)
class ForecastSettings:
    """What to forecast and how (``spec.prediction`` minus the metric choice).

    ``history_seconds``: how much history a fit uses (default 7 days).
    ``lead_seconds``: the forecast covers [now, now + lead] (default 300 s: pod scheduling,
    start-up and a sync). ``quantile``: the forecast quantile reported as ``upper``, the highest
    over that window (default 0.9). ``refresh_seconds``: how often the model is
    refitted (default 3600 s); between fits each forecast is a cheap evaluation of the
    fitted model (period detection and model selection at most daily). Recent forecasts make
    the prediction step aside (``AccuracyTooLow``) when their weighted mean absolute
    percentage error (WAPE, a fraction) exceeds ``max_error``, when they are biased (sum of
    forecast - actual over sum of actual) beyond ``max_bias`` either way, or when they are
    worse than assuming nothing changes by ``persistence_factor`` while off by more than
    ``min_relative_error``; they come back below 0.8 times those limits. A fit whose held-out
    WAPE exceeds ``max_error`` is ``AccuracyTooLow`` too.
    ``accuracy_window_seconds``: how far back that judgement looks. ``stale_seconds``: no
    observation for longer than this means ``HistoryUnavailable``.
    """

    history_seconds: float = 7 * DAY
    lead_seconds: float = 300.0
    quantile: float = 0.9
    refresh_seconds: float = 3600.0
    max_error: float = 1.0
    max_bias: float = 0.35
    persistence_factor: float = 1.5
    min_relative_error: float = 0.15
    accuracy_window_seconds: float = 7200.0
    min_evaluations: int = 30
    stale_seconds: float = 900.0


@dataclass(slots=True, frozen=True)
class SeasonalModel:
    """A fitted robust seasonal model on a regular grid of ``step`` seconds.

    The series is transformed (``transform``: ``log`` = log(x + ``offset``), ``sqrt`` =
    sqrt(x)); in that space it is ``level + sum_k profile_k[phase_k(t)] + noise``, where
    ``phase_k(t) = floor(t / step) mod len(profile_k)`` (epoch-aligned, so a profile holds for
    any time) and the level is tracked from the most recent observations (median of the
    de-seasonalized values over ``level_seconds``). ``periods`` are seconds (one per
    profile). ``window_error`` (= ``point_high``) and ``point_low`` are the ``quantile`` and
    (1 - q)-quantile of pointwise errors at the lead horizon on the held-out period, in
    transformed space and divided by the relative noise level of their time of day:
    ``dispersion`` holds that level for up to 24 bins of the shortest period (mean 1).
    The last ``event_profiles`` profiles (and periods) are sparse *event* profiles: recurring short
    events at fixed clock times (an hourly and a daily profile, 0 outside the events), found in what
    the smooth profiles leave; ``event_filter_seconds`` > 0 marks a model that looks for them (its
    smooth profiles are median-filtered over that span first, so that short events stay out of them).
    """

    transform: str
    offset: float
    step: float
    periods: tuple[float, ...]
    profiles: tuple[tuple[float, ...], ...]
    smooth_seconds: float
    level_seconds: float
    window_error: float
    point_low: float
    point_high: float
    level: float
    level_time: float
    dispersion: tuple[float, ...] = (1.0,)
    event_profiles: int = 0
    event_filter_seconds: float = 0.0

    @property
    def seasonal_periods(self) -> tuple[float, ...]:
        """The periods (s) of the smooth seasonal profiles, without the event profiles."""
        return self.periods[:len(self.periods) - self.event_profiles]

    def events(self) -> list[tuple[float, float, float]]:
        """Recurring events as ``(period s, offset s into the period, effect in the model's space)``, one per
        grid cell of an event profile that is not 0, in the order of the profiles."""
        out = []
        for period, prof in zip(self.periods[len(self.periods) - self.event_profiles:],
                                self.profiles[len(self.profiles) - self.event_profiles:]):
            out.extend((period, k * self.step, v) for k, v in enumerate(prof) if v != 0.0)
        return out

    def spread(self, cell: int) -> float:
        """Relative noise level of grid cell ``cell`` (absolute index): bands are errors times this."""
        d = self.dispersion
        p = int(round(self.periods[0] / self.step)) if self.periods else 1
        return d[(cell % p) * len(d) // p] if p > 0 else 1.0

    @property
    def name(self) -> str:
        return f"robust-seasonal/{self.transform}"


@dataclass(slots=True, frozen=True)
class HoldoutScore:
    """Accuracy of a candidate on the held-out period: ``wape`` (sum |error| / sum actual,
    point forecasts at the lead horizon), ``flat_wape`` of the training median (the
    "no model" baseline), ``persistence_wape`` of "the last value goes on";
    ``ahead_wape`` and ``ahead_level_wape``: the model's and its recent level's WAPE one hour
    ahead (``fitting.SKILL_HORIZON_SECONDS``), the test of a usable pattern."""

    wape: float
    flat_wape: float
    persistence_wape: float
    evaluations: int
    ahead_wape: float | None = None
    ahead_level_wape: float | None = None


@dataclass(slots=True, frozen=True)
class Fit:
    """The result of one fit at ``fitted_at`` (epoch s).

    ``model`` is None when the history shows nothing usable: ``reason`` is then
    ``InsufficientHistory``, ``NotPredictable`` or ``AccuracyTooLow`` (held-out accuracy)
    and ``message`` says why in one sentence; with a model ``reason`` is ``Predicting``.
    ``periods`` are the detected seasonal periods (s), ``strengths`` their seasonal
    strength (0..1, share of the de-trended variance the profile explains); ``score`` the
    chosen model's held-out accuracy; ``history_seconds`` the span of data used, ``points``
    grid points with data; ``candidates`` how many models were compared (0: a refit of the
    model selected at ``selected_at``, see ``fitting.fit``'s ``previous``).
    """

    fitted_at: float
    reason: str
    message: str
    model: SeasonalModel | None = None
    periods: tuple[float, ...] = ()
    strengths: tuple[float, ...] = ()
    score: HoldoutScore | None = None
    history_seconds: float = 0.0
    points: int = 0
    candidates: int = 0
    selected_at: float | None = None


@dataclass(slots=True, frozen=True)
class Accuracy:
    """Recent accuracy: forecasts made at least one lead ago compared with what happened.

    ``mape`` mean absolute percentage error of the point forecasts (fraction; rows whose
    actual is 0 are left out), ``wape`` sum |error| / sum actual, ``persistence_wape`` the
    same for "the value at the time of the forecast goes on", ``under_share`` the share of
    forecasts whose upper band (the ``quantile``) was below what happened, ``evaluations``
    how many forecasts were judged, ``bias`` sum (forecast - actual) / sum actual. None
    fields: nothing judged yet.
    """

    evaluations: int = 0
    mape: float | None = None
    wape: float | None = None
    persistence_wape: float | None = None
    under_share: float | None = None
    bias: float | None = None


@dataclass(slots=True, frozen=True)
class Prediction:
    """One forecast at ``now`` for the window [now, now + lead].

    ``upper``: the highest ``quantile`` of the workload total over the window (metric
    units), None unless ``reason`` is ``Predicting``/``AccuracyTooLow`` with a model (it is
    computed while stepping aside too, so that accuracy can recover; ``usable`` says
    whether the caller should act on it). ``expected``: the highest central (median) forecast
    over the same window (the decision core provisions for the band between the two in
    proportion to the target's headroom, ``pyhpa.core.provisioned_total``). ``point`` the
    central forecast at now + lead, ``low``/``high`` its (1 - q, q) band. ``fit`` the fit in use,
    ``accuracy`` the recent accuracy.
    """

    now: float
    reason: str
    message: str
    usable: bool = False
    upper: float | None = None
    expected: float | None = None
    point: float | None = None
    low: float | None = None
    high: float | None = None
    fit: Fit | None = None
    accuracy: Accuracy = field(default_factory=Accuracy)


def settings_for(spec) -> ForecastSettings:
    """``ForecastSettings`` of a ``spec.prediction`` (the core's ``PredictionSpec``: seconds and quantile)."""
    return ForecastSettings(history_seconds=float(spec.history_seconds), lead_seconds=float(spec.lead_seconds),
                            quantile=float(spec.quantile), refresh_seconds=float(spec.refresh_seconds))
