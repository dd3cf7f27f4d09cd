//! The online forecaster of one autoscaler between fits: `pyhpa.forecast.predictor.Predictor`'s ``observe`` and
//! ``forecast`` (the level, the cells of the lead window, the accuracy tracker and stepping aside), in the same
//! order of floating-point operations and with the same libm calls, so that every forecast is the Python one to the
//! last bit. Fitting stays in Python (`pyhpa.forecast.fitting.fit`, numpy and scipy): when a fit is due the history it
//! reads is handed to a callback, which returns the model (``Model``) or None.
//!
//! Units as the Python class has them: times epoch seconds, values the metric's workload total (milli-units here).

use std::collections::VecDeque;

use pyo3::prelude::*;

use crate::workload::{py_floordiv, pymin};

/// Hysteresis: stepped aside for accuracy, the prediction comes back below this share of the limits
/// (`pyhpa.forecast.predictor.RECOVER_FACTOR`).
const RECOVER_FACTOR: f64 = 0.8;

const PREDICTING: &str = "Predicting";
const INSUFFICIENT_HISTORY: &str = "InsufficientHistory";
const NOT_PREDICTABLE: &str = "NotPredictable";
const HISTORY_UNAVAILABLE: &str = "HistoryUnavailable";
const ACCURACY_TOO_LOW: &str = "AccuracyTooLow";

/// A fit's reason (``Fit.reason``) as one of the forecaster's (``pyhpa.forecast.model``).
fn reason_of(reason: &str) -> &'static str {
    match reason {
        PREDICTING => PREDICTING,
        NOT_PREDICTABLE => NOT_PREDICTABLE,
        HISTORY_UNAVAILABLE => HISTORY_UNAVAILABLE,
        ACCURACY_TOO_LOW => ACCURACY_TOO_LOW,
        _ => INSUFFICIENT_HISTORY,
    }
}

/// Python's ``max(a, b)``: ``a`` unless ``b`` is greater.
fn pymax(a: f64, b: f64) -> f64 {
    if b > a { b } else { a }
}

extern "C" {
    fn pow(x: f64, y: f64) -> f64;
}

/// CPython's ``x ** 2.0`` of a float: the C library's ``pow`` (the exponent hidden from the optimizer, which would
/// make it ``x * x``).
fn py_square(x: f64) -> f64 {
    unsafe { pow(x, std::hint::black_box(2.0)) }
}

/// Python's ``int(t // step)`` of two floats.
fn cell_of(t: f64, step: f64) -> i64 {
    py_floordiv(t, step) as i64
}

/// `pyhpa.forecast.model.SeasonalModel`, the fields a forecast reads.
#[derive(Clone, Debug)]
pub struct Model {
    /// ``transform == "log"`` (else ``sqrt``)
    pub log: bool,
    pub offset: f64,
    pub step: f64,
    pub profiles: Vec<Vec<f64>>,
    pub level_seconds: f64,
    pub window_error: f64,
    pub point_low: f64,
    pub point_high: f64,
    pub level: f64,
    pub dispersion: Vec<f64>,
    /// ``periods[0]`` (None: no period)
    pub period0: Option<f64>,
}

/// The model's tuple from Python (``pyhpa.simulate.compiled``): (log, offset, step, profiles, level_seconds,
/// window_error, point_low, point_high, level, dispersion, periods[0] or None).
pub type PyModel = (bool, f64, f64, Vec<Vec<f64>>, f64, f64, f64, f64, f64, Vec<f64>, Option<f64>);

impl Model {
    pub fn from_python(m: PyModel) -> Model {
        let (log, offset, step, profiles, level_seconds, window_error, point_low, point_high, level, dispersion,
             period0) = m;
        Model { log, offset, step, profiles, level_seconds, window_error, point_low, point_high, level, dispersion,
                period0 }
    }

    /// `Predictor._s`.
    fn s(&self, cell: i64) -> f64 {
        let mut total = 0.0;
        for prof in &self.profiles {
            total += prof[cell.rem_euclid(prof.len() as i64) as usize];
        }
        total
    }

    /// `SeasonalModel.spread`.
    fn spread(&self, cell: i64) -> f64 {
        let d = &self.dispersion;
        let p = match self.period0 {
            Some(period) => (period / self.step).round_ties_even() as i64,
            None => 1,
        };
        if p > 0 { d[(cell.rem_euclid(p) * d.len() as i64).div_euclid(p) as usize] } else { 1.0 }
    }

    /// `Predictor._deseason`.
    fn deseason(&self, t: f64, value: f64) -> f64 {
        let y = if self.log { (pymax(value, 0.0) + self.offset).ln() } else { pymax(value, 0.0).sqrt() };
        y - self.s(cell_of(t, self.step))
    }

    /// `pyhpa.forecast.predictor._back`.
    fn back(&self, y: f64) -> f64 {
        if self.log { pymax(y.exp() - self.offset, 0.0) } else { py_square(pymax(y, 0.0)) }
    }
}

/// `pyhpa.forecast.model.Accuracy`, the fields the judgement reads.
#[derive(Clone, Copy, Debug, Default)]
struct Accuracy {
    evaluations: usize,
    wape: Option<f64>,
    persistence_wape: Option<f64>,
    bias: Option<f64>,
}

/// `pyhpa.forecast.predictor.AccuracyTracker` (running sums, as the Python class adds and takes away).
#[derive(Clone, Debug)]
struct Tracker {
    window: f64,
    /// (target time, issued, point, high, last value)
    pending: VecDeque<(f64, f64, f64, f64, f64)>,
    /// (issued, |err|, actual, |persistence err|, under, signed err)
    done: VecDeque<(f64, f64, f64, f64, bool, f64)>,
    err: f64,
    signed: f64,
    total: f64,
    pers: f64,
    rel: f64,
    rel_n: i64,
    under: i64,
    cached: Option<Accuracy>,
}

impl Tracker {
    fn new(window: f64) -> Tracker {
        Tracker { window, pending: VecDeque::new(), done: VecDeque::new(), err: 0.0, signed: 0.0, total: 0.0,
                  pers: 0.0, rel: 0.0, rel_n: 0, under: 0, cached: Some(Accuracy::default()) }
    }

    fn issue(&mut self, t: f64, target: f64, point: f64, high: f64, last: f64) {
        self.pending.push_back((target, t, point, high, last));
    }

    fn observe(&mut self, t: f64, value: f64) {
        while let Some(&(target, issued, point, high, last)) = self.pending.front() {
            if target > t {
                break;
            }
            self.pending.pop_front();
            let item = (issued, (point - value).abs(), value, (last - value).abs(), value > high, point - value);
            self.done.push_back(item);
            self.add(item, 1);
        }
    }

    fn add(&mut self, item: (f64, f64, f64, f64, bool, f64), sign: i64) {
        let (_, err, actual, pers, under, signed) = item;
        let s = sign as f64;
        self.err += s * err;
        self.signed += s * signed;
        self.total += s * actual;
        self.pers += s * pers;
        if actual > 0.0 {
            self.rel += s * err / actual;
            self.rel_n += sign;
        }
        self.under += sign * under as i64;
        self.cached = None;
    }

    fn accuracy(&mut self, now: f64) -> Accuracy {
        let cutoff = now - self.window;
        while let Some(&item) = self.done.front() {
            if !(item.0 < cutoff) {
                break;
            }
            self.done.pop_front();
            self.add(item, -1);
        }
        if let Some(a) = self.cached {
            return a;
        }
        let n = self.done.len();
        if n == 0 {
            self.err = 0.0;
            self.signed = 0.0;
            self.total = 0.0;
            self.pers = 0.0;
            self.rel = 0.0;
            self.rel_n = 0;
            self.under = 0;
            let a = Accuracy::default();
            self.cached = Some(a);
            return a;
        }
        let total = self.total;
        let of_total = |x: f64| if total > 0.0 { Some(x / total) } else { None };
        let a = Accuracy { evaluations: n, wape: of_total(self.err), persistence_wape: of_total(self.pers),
                           bias: of_total(self.signed) };
        self.cached = Some(a);
        a
    }
}

/// `pyhpa.forecast.model.ForecastSettings`, the fields the online part reads.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub history_seconds: f64,
    pub lead_seconds: f64,
    pub refresh_seconds: f64,
    pub max_error: f64,
    pub max_bias: f64,
    pub persistence_factor: f64,
    pub min_relative_error: f64,
    pub accuracy_window_seconds: f64,
    pub min_evaluations: usize,
    pub stale_seconds: f64,
}

/// (history, lead, refresh, max_error, max_bias, persistence_factor, min_relative_error, accuracy window,
/// min_evaluations, stale) seconds and fractions, as ``ForecastSettings`` has them.
pub type PySettings = (f64, f64, f64, f64, f64, f64, f64, f64, usize, f64);

impl Settings {
    pub fn from_python(s: PySettings) -> Settings {
        Settings { history_seconds: s.0, lead_seconds: s.1, refresh_seconds: s.2, max_error: s.3, max_bias: s.4,
                   persistence_factor: s.5, min_relative_error: s.6, accuracy_window_seconds: s.7,
                   min_evaluations: s.8, stale_seconds: s.9 }
    }
}

/// One forecast (`pyhpa.forecast.model.Prediction`'s numbers): ``upper``/``expected``/``point``/``high`` are None
/// without a model or a recent observation; ``usable`` false also when stepping aside (``AccuracyTooLow``).
#[derive(Clone, Copy, Debug, Default)]
pub struct Forecast {
    /// ``Prediction.reason`` (a ``PredictionActive`` reason: ``pyhpa.core.model.PredictionReason``)
    pub reason: &'static str,
    pub usable: bool,
    pub upper: Option<f64>,
    pub expected: Option<f64>,
    pub point: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl Forecast {
    /// `pyhpa.forecast.bridge.to_core_forecast`'s numbers: (total milli, expected milli), rounded up as
    /// ``MilliValue()``; (None, None) when the forecast is not usable.
    pub fn core(&self) -> (Option<i64>, Option<i64>) {
        match (self.usable, self.upper) {
            (true, Some(upper)) => (Some((upper - 1e-9).ceil() as i64), self.expected.map(|e| (e - 1e-9).ceil() as i64)),
            _ => (None, None),
        }
    }
}

/// The cells of the last forecast's window (`Predictor._cells`): (c0, c1, the model's generation, top, seasonal at
/// c1, spread at c1, point top).
type Cells = (i64, i64, u64, f64, f64, f64, f64);

/// `pyhpa.forecast.predictor.Predictor` between fits (see the module's docs).
#[derive(Clone, Debug)]
pub struct Predictor {
    pub settings: Settings,
    times: Vec<f64>,
    values: Vec<f64>,
    start: usize,
    /// a fit was installed (``self.fit`` is not None), and its model
    fitted: bool,
    /// the fit's reason (``Fit.reason``)
    fit_reason: &'static str,
    model: Option<Model>,
    generation: u64,
    next_fit: f64,
    recent: VecDeque<(f64, f64)>,
    ordered: Vec<f64>,
    tracker: Tracker,
    last_issue_cell: Option<i64>,
    aside: bool,
    level_key: Option<(i64, usize, f64)>,
    level_value: f64,
    cells: Option<Cells>,
}

impl Predictor {
    /// A predictor holding ``times``/``values`` (in time order, finite: what ``Predictor.extend`` kept), never
    /// fitted.
    pub fn new(settings: Settings, times: Vec<f64>, values: Vec<f64>) -> Predictor {
        Predictor { settings, times, values, start: 0, fitted: false, fit_reason: INSUFFICIENT_HISTORY, model: None,
                    generation: 0,
                    next_fit: f64::NEG_INFINITY, recent: VecDeque::new(), ordered: vec![],
                    tracker: Tracker::new(settings.accuracy_window_seconds), last_issue_cell: None, aside: false,
                    level_key: None, level_value: 0.0, cells: None }
    }

    /// `_History.index`: the position (0 = oldest kept) of the first observation at or after ``t``, from ``lo``.
    fn index(&self, t: f64, lo: usize) -> usize {
        lo + self.times[self.start + lo..].partition_point(|&x| x < t)
    }

    fn last(&self) -> Option<(f64, f64)> {
        if self.times.len() == self.start {
            None
        } else {
            Some((self.times[self.times.len() - 1], self.values[self.values.len() - 1]))
        }
    }

    /// Time (epoch s) of the newest observation.
    pub fn last_observation(&self) -> Option<f64> {
        self.last().map(|x| x.0)
    }

    fn insort(&mut self, d: f64) {
        let at = self.ordered.partition_point(|&x| !(d < x));
        self.ordered.insert(at, d);
    }

    /// `Predictor.observe`: one observation at ``t`` (not before the previous one); NaN is ignored.
    pub fn observe(&mut self, t: f64, value: f64) {
        if !value.is_finite() {
            return;
        }
        if let Some((newest, _)) = self.last() {
            if t < newest {
                return;
            }
        }
        self.times.push(t);
        self.values.push(value);
        self.tracker.observe(t, value);
        if let Some(m) = &self.model {
            let d = m.deseason(t, value);
            self.recent.push_back((t, d));
            self.insort(d);
        }
    }

    /// `Predictor._trim`, and the kept arrays moved to the front once half of them is gone.
    fn trim(&mut self, now: f64) {
        let s = self.settings;
        self.start += self.index(now - s.history_seconds - s.refresh_seconds, 0);
        if self.start > 4096 && self.start * 2 > self.times.len() {
            self.times.drain(..self.start);
            self.values.drain(..self.start);
            self.start = 0;
        }
    }

    /// `Predictor.refit`: the history of (now - history_seconds, now] handed to ``fit`` (times, values, now), which
    /// returns the model (None: the fit found none), installed from now on.
    pub fn refit<F>(&mut self, now: f64, fit: &mut F) -> PyResult<()>
    where F: FnMut(&[f64], &[f64], f64) -> PyResult<(String, Option<Model>)> {
        self.trim(now);
        let lo = self.index(now - self.settings.history_seconds, 0);
        let hi = self.index(now + 1e-9, lo);
        let (a, b) = (self.start + lo, self.start + hi);
        let (reason, model) = fit(&self.times[a..b], &self.values[a..b], now)?;
        self.fit_reason = reason_of(&reason);
        self.install(model, now);
        Ok(())
    }

    /// `Predictor.install`.
    fn install(&mut self, model: Option<Model>, now: f64) {
        let lo = self.index(now - self.settings.history_seconds, 0);
        self.fitted = true;
        self.generation += 1;
        self.next_fit = now + self.settings.refresh_seconds;
        self.recent.clear();
        self.ordered.clear();
        self.level_key = None;
        self.model = model;
        if let Some(m) = self.model.take() {
            let from = self.start + self.index(now - m.level_seconds, lo);
            for i in from..self.times.len() {
                let (t, v) = (self.times[i], self.values[i]);
                let d = m.deseason(t, v);
                self.recent.push_back((t, d));
                self.insort(d);
            }
            self.model = Some(m);
        }
    }

    /// `Predictor._level`.
    fn level(&mut self, now: f64) -> f64 {
        let m = self.model.as_ref().unwrap();
        let (level_seconds, step, fallback) = (m.level_seconds, m.step, m.level);
        let cutoff = now - level_seconds;
        while self.recent.len() > 1 && self.recent[0].0 < cutoff {
            let (_, d) = self.recent.pop_front().unwrap();
            let at = self.ordered.partition_point(|&x| x < d);
            self.ordered.remove(at);
        }
        if self.recent.is_empty() {
            return fallback;
        }
        let key = (cell_of(now, step), self.recent.len(), self.recent[self.recent.len() - 1].0);
        if self.level_key != Some(key) {
            if self.level_key.map(|k| k.0) != Some(key.0) || self.recent.len() < 32 {
                let o = &self.ordered;
                let n = o.len();
                self.level_value = if n % 2 == 1 { o[n / 2] } else { (o[n / 2 - 1] + o[n / 2]) / 2.0 };
            }
            self.level_key = Some(key);
        }
        self.level_value
    }

    /// `Predictor.forecast` with ``refit``: the forecast of [now, now + lead], refitting first when due (``fit`` as
    /// ``refit`` takes it).
    pub fn forecast<F>(&mut self, now: f64, fit: &mut F) -> PyResult<Forecast>
    where F: FnMut(&[f64], &[f64], f64) -> PyResult<(String, Option<Model>)> {
        if now >= self.next_fit {
            self.refit(now, fit)?;
        }
        let acc = self.tracker.accuracy(now);
        if !self.fitted || self.model.is_none() {
            let reason = if self.fitted { self.fit_reason } else { INSUFFICIENT_HISTORY };
            return Ok(Forecast { reason, ..Forecast::default() });
        }
        let s = self.settings;
        match self.last_observation() {
            Some(last) if !(now - last > s.stale_seconds) => {}
            _ => return Ok(Forecast { reason: HISTORY_UNAVAILABLE, ..Forecast::default() }),
        }
        let level = self.level(now);
        let m = self.model.as_ref().unwrap();
        let step = m.step;
        let (c0, c1) = (cell_of(now, step), cell_of(now + s.lead_seconds, step));
        let cells = match self.cells {
            Some(c) if c.0 == c0 && c.1 == c1 && c.2 == self.generation => c,
            _ => {
                let werr = m.window_error;
                let mut top = f64::NAN;
                let mut top_point = f64::NAN;
                for c in c0..=c1 {
                    let x = m.s(c) + werr * m.spread(c);
                    top = if c == c0 { x } else { pymax(top, x) };
                    let y = m.s(c);
                    top_point = if c == c0 { y } else { pymax(top_point, y) };
                }
                let c = (c0, c1, self.generation, top, m.s(c1), m.spread(c1), top_point);
                self.cells = Some(c);
                c
            }
        };
        let (top, seas, spread) = (cells.3, cells.4, cells.5);
        let upper = m.back(level + top);
        let expected = pymin(m.back(level + cells.6), upper);
        let point_y = level + seas;
        let point = m.back(point_y);
        let low = m.back(point_y + m.point_low * spread);
        let high = m.back(point_y + m.point_high * spread);
        if self.last_issue_cell != Some(c0) {
            self.last_issue_cell = Some(c0);
            let last_value = self.last().unwrap().1;
            self.tracker.issue(now, now + s.lead_seconds, point, high, last_value);
        }
        let usable = self.judge(acc);
        Ok(Forecast { reason: if usable { PREDICTING } else { ACCURACY_TOO_LOW }, usable, upper: Some(upper), expected: Some(expected), point: Some(point), low: Some(low),
                      high: Some(high) })
    }

    /// `Predictor._judge`: whether the forecast is usable (not stepping aside for recent accuracy).
    fn judge(&mut self, acc: Accuracy) -> bool {
        let s = self.settings;
        let mut bad = false;
        if let (true, Some(wape)) = (acc.evaluations >= s.min_evaluations, acc.wape) {
            let k = if self.aside { RECOVER_FACTOR } else { 1.0 };
            let worse = match acc.persistence_wape {
                Some(pers) => pers > 0.0 && wape > s.persistence_factor * pers * k && wape > s.min_relative_error,
                None => false,
            };
            let bias = acc.bias.unwrap_or(0.0);
            bad = wape > s.max_error * k || bias.abs() > s.max_bias * k || worse;
        }
        self.aside = bad;
        !bad
    }
}

/// `Predictor` for Python, to compare with ``pyhpa.forecast.predictor.Predictor`` on random series
/// (``tests/test_compiled_forecast.py``): ``fit(times, values, now)`` (two lists of floats and a float) returns the
/// fit's reason and the model's tuple (``PyModel``) or None.
#[pyclass(module = "pyhpa.simulate.rustcore")]
pub struct Forecaster {
    inner: Predictor,
    fit: PyObject,
}

#[pymethods]
impl Forecaster {
    #[new]
    fn new(settings: PySettings, times: Vec<f64>, values: Vec<f64>, fit: PyObject) -> Forecaster {
        Forecaster { inner: Predictor::new(Settings::from_python(settings), times, values), fit }
    }

    fn observe(&mut self, t: f64, value: f64) {
        self.inner.observe(t, value);
    }

    /// (reason, usable, upper, expected, point, low, high) of the forecast at ``now``.
    #[allow(clippy::type_complexity)]
    fn forecast(&mut self, py: Python<'_>, now: f64)
                -> PyResult<(&'static str, bool, Option<f64>, Option<f64>, Option<f64>, Option<f64>, Option<f64>)> {
        let fit = self.fit.clone_ref(py);
        let mut call = |t: &[f64], v: &[f64], at: f64| -> PyResult<(String, Option<Model>)> {
            let (reason, m): (String, Option<PyModel>) = fit.call1(py, (t.to_vec(), v.to_vec(), at))?.extract(py)?;
            Ok((reason, m.map(Model::from_python)))
        };
        let f = self.inner.forecast(now, &mut call)?;
        Ok((f.reason, f.usable, f.upper, f.expected, f.point, f.low, f.high))
    }
}
