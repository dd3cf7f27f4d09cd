//! Normalization, from the metrics' recommendation to the replica count to scale to: `pyhpa.core.normalize.normalize`
//! (upstream's normalizeDesiredReplicas / normalizeDesiredReplicasWithBehaviors), without the steps' texts.
//!
//! Integers are Python's (i64 here: replica counts, changes and policy values are int32 in the API), wrapped or
//! converted to int32 where the core does (`wrap_int32`, `go_int32`); times are epoch seconds (f64).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

const MAX_INT32: i64 = i32::MAX as i64;
const MIN_INT32: i64 = i32::MIN as i64;

/// `pyhpa.core.calculator.go_int32`: Go's `int32(x)` of a float64, saturating as arm64 does (NaN 0).
pub fn go_int32(x: f64) -> i64 {
    if x.is_nan() {
        0
    } else if x >= 2147483648.0 {
        MAX_INT32
    } else if x <= -2147483649.0 {
        MIN_INT32
    } else {
        x.trunc() as i64
    }
}

/// `pyhpa.core.calculator.wrap_int32`: Go int32 arithmetic, wrapped into [-2^31, 2^31).
pub fn wrap_int32(x: i64) -> i64 {
    (x as i32) as i64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Pods,
    Percent,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Select {
    Max,
    Min,
    Disabled,
}

/// One `HPAScalingPolicy` (`pyhpa.core.model.ScalingPolicy`).
#[derive(Clone, Debug)]
pub struct Policy {
    pub kind: PolicyKind,
    pub value: i64,
    pub period_seconds: i64,
}

/// `HPAScalingRules` after defaulting (`pyhpa.core.model.ScalingRules`): `window` None means the controller's
/// default (only scale-down leaves it unset).
#[derive(Clone, Debug)]
pub struct Rules {
    pub window: Option<i64>,
    pub select: Select,
    pub policies: Vec<Policy>,
}

/// `spec.behavior` with both directions defaulted (`pyhpa.core.model.Behavior`).
#[derive(Clone, Debug)]
pub struct Behavior {
    pub up: Rules,
    pub down: Rules,
}

/// The controller flags normalization reads (`pyhpa.core.model.ControllerConfig`).
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub downscale_stabilization_window_seconds: f64,
    pub scale_up_limit_factor: f64,
    pub scale_up_limit_minimum: f64,
}

/// (epoch s, replicas) recommendations and (epoch s, replica change) scale events (`pyhpa.core.model.Memory`).
#[derive(Clone, Debug, Default)]
pub struct Memory {
    pub recommendations: Vec<(f64, i64)>,
    pub scale_up_events: Vec<(f64, i64)>,
    pub scale_down_events: Vec<(f64, i64)>,
}

/// The AbleToScale reason normalization gives (`pyhpa.core.normalize.READY`, `STABILIZED_UP`, `STABILIZED_DOWN`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Able {
    ReadyForNewScale,
    ScaleUpStabilized,
    ScaleDownStabilized,
}

impl Able {
    pub fn reason(self) -> &'static str {
        match self {
            Able::ReadyForNewScale => "ReadyForNewScale",
            Able::ScaleUpStabilized => "ScaleUpStabilized",
            Able::ScaleDownStabilized => "ScaleDownStabilized",
        }
    }
}

/// The ScalingLimited reason (`pyhpa.core.normalize.WITHIN_RANGE`, `TOO_FEW`, `TOO_MANY`, `UP_LIMIT`, `DOWN_LIMIT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limited {
    DesiredWithinRange,
    TooFewReplicas,
    TooManyReplicas,
    ScaleUpLimit,
    ScaleDownLimit,
}

impl Limited {
    pub fn reason(self) -> &'static str {
        match self {
            Limited::DesiredWithinRange => "DesiredWithinRange",
            Limited::TooFewReplicas => "TooFewReplicas",
            Limited::TooManyReplicas => "TooManyReplicas",
            Limited::ScaleUpLimit => "ScaleUpLimit",
            Limited::ScaleDownLimit => "ScaleDownLimit",
        }
    }
}

/// What `normalize` returns: the desired replicas, the new recommendation list and the two reasons.
#[derive(Clone, Debug)]
pub struct Normalized {
    pub desired: i64,
    /// the recommendation after stabilization (before the rate and the bounds)
    pub stabilized: i64,
    pub recommendations: Vec<(f64, i64)>,
    pub able: Able,
    pub limited: Limited,
}

fn record(recs: &[(f64, i64)], old_index: Option<usize>, now: f64, desired: i64) -> Vec<(f64, i64)> {
    let mut out = recs.to_vec();
    match old_index {
        Some(i) => out[i] = (now, desired),
        None => out.push((now, desired)),
    }
    out
}

/// `pyhpa.core.normalize.stabilize` (upstream stabilizeRecommendation).
pub fn stabilize(recs: &[(f64, i64)], desired: i64, now: f64, window: f64) -> (i64, Vec<(f64, i64)>) {
    let mut best = desired;
    let cutoff = now - window;
    let mut old_index = None;
    for (i, &(ts, rec)) in recs.iter().enumerate() {
        if ts < cutoff {
            old_index = Some(i);
        } else if rec > best {
            best = rec;
        }
    }
    (best, record(recs, old_index, now, desired))
}

/// `pyhpa.core.normalize.stabilize_with_behavior` (upstream stabilizeRecommendationWithBehaviors).
pub fn stabilize_with_behavior(recs: &[(f64, i64)], desired: i64, current: i64, now: f64, up_window: f64,
                               down_window: f64) -> (i64, Vec<(f64, i64)>, Able) {
    let up_cutoff = now - up_window;
    let down_cutoff = now - down_window;
    let (mut up_rec, mut down_rec) = (desired, desired);
    let mut old_index = None;
    for (i, &(ts, rec)) in recs.iter().enumerate() {
        if ts > up_cutoff && rec < up_rec {
            up_rec = rec;
        }
        if ts > down_cutoff && rec > down_rec {
            down_rec = rec;
        }
        if ts < up_cutoff && ts < down_cutoff {
            old_index = Some(i);
        }
    }
    let mut result = current;
    if result < up_rec {
        result = up_rec;
    }
    if result > down_rec {
        result = down_rec;
    }
    let why = if desired >= current { Able::ScaleUpStabilized } else { Able::ScaleDownStabilized };
    (result, record(recs, old_index, now, desired), why)
}

/// `pyhpa.core.normalize.stabilization_windows`: (scale-up, scale-down) windows in seconds.
pub fn stabilization_windows(behavior: Option<&Behavior>, config: &Config) -> (f64, f64) {
    match behavior {
        None => (0.0, config.downscale_stabilization_window_seconds),
        Some(b) => (
            b.up.window.unwrap_or(0) as f64,
            match b.down.window {
                None => config.downscale_stabilization_window_seconds,
                Some(w) => w as f64,
            },
        ),
    }
}

/// `pyhpa.core.normalize.convert_with_rules` (convertDesiredReplicasWithRules).
pub fn convert_with_rules(current: i64, desired: i64, min_replicas: i64, max_replicas: i64, config: &Config)
                          -> (i64, Limited) {
    let scaled = config.scale_up_limit_factor * current as f64;
    // Python's max(a, b): a unless b is greater
    let limit = go_int32(if config.scale_up_limit_minimum > scaled { config.scale_up_limit_minimum } else { scaled });
    let (maximum, why) = if max_replicas > limit { (limit, Limited::ScaleUpLimit) } else { (max_replicas, Limited::TooManyReplicas) };
    if desired < min_replicas {
        return (min_replicas, Limited::TooFewReplicas);
    }
    if desired > maximum {
        return (maximum, why);
    }
    (desired, Limited::DesiredWithinRange)
}

/// `pyhpa.core.normalize.change_in_period` (getReplicasChangePerPeriod).
pub fn change_in_period(events: &[(f64, i64)], period: i64, now: f64) -> i64 {
    let cutoff = now - period as f64;
    let mut total: i64 = 0;
    for &(ts, change) in events {
        if ts > cutoff {
            total += change;
        }
    }
    wrap_int32(total)
}

fn period_start(current: i64, period: i64, memory: &Memory, now: f64) -> i64 {
    let added = change_in_period(&memory.scale_up_events, period, now);
    let deleted = change_in_period(&memory.scale_down_events, period, now);
    wrap_int32(current - added + deleted)
}

/// `pyhpa.core.normalize.behavior_scale_up_limit` (calculateScaleUpLimitWithScalingRules).
pub fn behavior_scale_up_limit(current: i64, memory: &Memory, rules: &Rules, now: f64) -> i64 {
    if rules.select == Select::Disabled {
        return current;
    }
    let use_min = rules.select == Select::Min;
    let mut result = if use_min { MAX_INT32 } else { MIN_INT32 };
    for p in &rules.policies {
        let start = period_start(current, p.period_seconds, memory, now);
        let proposed = match p.kind {
            PolicyKind::Pods => wrap_int32(start + p.value),
            PolicyKind::Percent => {
                let x = start as f64 * (1.0 + p.value as f64 / 100.0);
                go_int32(if x.is_finite() { x.ceil() } else { x })
            }
        };
        result = if use_min { result.min(proposed) } else { result.max(proposed) };
    }
    result
}

/// `pyhpa.core.normalize.behavior_scale_down_limit` (calculateScaleDownLimitWithBehaviors).
pub fn behavior_scale_down_limit(current: i64, memory: &Memory, rules: &Rules, now: f64) -> i64 {
    if rules.select == Select::Disabled {
        return current;
    }
    let use_min = rules.select == Select::Min;
    let mut result = if use_min { MIN_INT32 } else { MAX_INT32 };
    for p in &rules.policies {
        let start = period_start(current, p.period_seconds, memory, now);
        let proposed = match p.kind {
            PolicyKind::Pods => wrap_int32(start - p.value),
            PolicyKind::Percent => go_int32(start as f64 * (1.0 - p.value as f64 / 100.0)),
        };
        result = if use_min { result.max(proposed) } else { result.min(proposed) };
    }
    result
}

/// `pyhpa.core.normalize.convert_with_behavior` (convertDesiredReplicasWithBehaviorRate).
pub fn convert_with_behavior(current: i64, desired: i64, min_replicas: i64, max_replicas: i64, memory: &Memory,
                             behavior: &Behavior, now: f64) -> (i64, Limited) {
    if desired > current {
        let limit = behavior_scale_up_limit(current, memory, &behavior.up, now).max(current);
        let (maximum, why) = if max_replicas > limit { (limit, Limited::ScaleUpLimit) } else { (max_replicas, Limited::TooManyReplicas) };
        if desired > maximum {
            return (maximum, why);
        }
    } else if desired < current {
        let limit = behavior_scale_down_limit(current, memory, &behavior.down, now).min(current);
        let (minimum, why) = if min_replicas < limit { (limit, Limited::ScaleDownLimit) } else { (min_replicas, Limited::TooFewReplicas) };
        if desired < minimum {
            return (minimum, why);
        }
    }
    (desired, Limited::DesiredWithinRange)
}

/// `pyhpa.core.normalize.normalize`: one recommendation normalized (``memory.recommendations`` as the core has them:
/// seeded before the first sync).
pub fn normalize(current: i64, prenormalized: i64, min_replicas: i64, max_replicas: i64, behavior: Option<&Behavior>,
                 memory: &Memory, now: f64, config: &Config) -> Normalized {
    let recs = &memory.recommendations;
    match behavior {
        None => {
            let (_, window) = stabilization_windows(None, config);
            let (stabilized, new_recs) = stabilize(recs, prenormalized, now, window);
            let able = if stabilized != prenormalized { Able::ScaleDownStabilized } else { Able::ReadyForNewScale };
            let (desired, limited) = convert_with_rules(current, stabilized, min_replicas, max_replicas, config);
            Normalized { desired, stabilized, recommendations: new_recs, able, limited }
        }
        Some(b) => {
            let (up_w, down_w) = stabilization_windows(Some(b), config);
            let (stabilized, new_recs, why) = stabilize_with_behavior(recs, prenormalized, current, now, up_w, down_w);
            let able = if stabilized != prenormalized { why } else { Able::ReadyForNewScale };
            let (desired, limited) = convert_with_behavior(current, stabilized, min_replicas, max_replicas, memory, b, now);
            Normalized { desired, stabilized, recommendations: new_recs, able, limited }
        }
    }
}

type PyPolicy = (String, i64, i64);
/// A direction's rules as Python passes them: (window or None, selectPolicy, [(type, value, periodSeconds)]).
pub type PyRules = (Option<i64>, String, Vec<PyPolicy>);

/// ``PyRules`` as ``Rules``; ValueError for a selectPolicy or policy type the API has not.
pub fn rules_from_python(r: PyRules) -> PyResult<Rules> {
    let select = match r.1.as_str() {
        "Max" => Select::Max,
        "Min" => Select::Min,
        "Disabled" => Select::Disabled,
        other => return Err(PyValueError::new_err(format!("selectPolicy {other:?}"))),
    };
    let mut policies = Vec::with_capacity(r.2.len());
    for (kind, value, period_seconds) in r.2 {
        let kind = match kind.as_str() {
            "Pods" => PolicyKind::Pods,
            "Percent" => PolicyKind::Percent,
            other => return Err(PyValueError::new_err(format!("policy type {other:?}"))),
        };
        policies.push(Policy { kind, value, period_seconds });
    }
    Ok(Rules { window: r.0, select, policies })
}

/// `normalize` for Python: ``behavior`` None or ((window or None, selectPolicy, [(type, value, periodSeconds)]) for
/// scale-up, the same for scale-down); ``config`` (downscale window s, scale-up limit factor, minimum). Returns
/// (desired replicas, new recommendations, AbleToScale reason, ScalingLimited reason). Raises ValueError for a
/// selectPolicy or policy type the API does not have.
#[pyfunction]
#[pyo3(name = "normalize", signature = (current, prenormalized, min_replicas, max_replicas, behavior,
    recommendations, scale_up_events, scale_down_events, now, config))]
#[allow(clippy::too_many_arguments)]
pub fn py_normalize(current: i64, prenormalized: i64, min_replicas: i64, max_replicas: i64,
                    behavior: Option<(PyRules, PyRules)>, recommendations: Vec<(f64, i64)>,
                    scale_up_events: Vec<(f64, i64)>, scale_down_events: Vec<(f64, i64)>, now: f64,
                    config: (f64, f64, f64)) -> PyResult<(i64, Vec<(f64, i64)>, &'static str, &'static str)> {
    let behavior = match behavior {
        None => None,
        Some((up, down)) => Some(Behavior { up: rules_from_python(up)?, down: rules_from_python(down)? }),
    };
    let memory = Memory { recommendations, scale_up_events, scale_down_events };
    let config = Config { downscale_stabilization_window_seconds: config.0, scale_up_limit_factor: config.1,
                          scale_up_limit_minimum: config.2 };
    let n = normalize(current, prenormalized, min_replicas, max_replicas, behavior.as_ref(), &memory, now, &config);
    Ok((n.desired, n.recommendations, n.able.reason(), n.limited.reason()))
}
