//! One sync of an autoscaling/v2 HPA without pyhpa's extensions (or, for the compiled workload, with
//! ``spec.prediction`` and ``spec.saturation``: `Extras`): `pyhpa.core.reconcile.decide` (upstream's
//! reconcileAutoscaler after the scale GET) for Resource and ContainerResource metrics (Utilization or AverageValue
//! targets) and Pods metrics, on the pods the HPA selects, with the HPAScaleToZero gate off: the early branches
//! (a target at zero, replicas outside the bounds), every metric's proposal, upstream's rule over them (the
//! largest; invalid metrics stop the sync), normalization and the scale event remembered. What a simulated workload
//! needs of it: the desired replicas, the memory after, whether the metrics failed, each metric's proposal.

use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;

use crate::calculator::{group_pods, plain_replicas, resource_utilization_replicas, within, Pod, Sample};
use crate::normalize::{normalize, rules_from_python, Able, Behavior, Config, Limited, Memory, Rules};

/// A metric's target (`pyhpa.core.model.MetricSpec`): an averageValue wins over a utilization, as upstream's
/// computeStatusForResourceMetricGeneric has it; neither is an invalid metric.
#[derive(Clone, Copy, Debug)]
pub enum Target {
    Utilization(i64),
    AverageValue(i64),
    Unset,
}

/// One `spec.metrics[]` item: a Resource or ContainerResource metric (its pods' requests of the resource, by pod
/// index, for a Utilization target) or a Pods metric.
#[derive(Clone, Debug)]
pub enum Metric {
    /// ``each``: every pod's request (a simulated workload's pods share one template), else ``requests`` by pod
    Resource { is_cpu: bool, target: Target, requests: Vec<i64>, each: Option<i64> },
    Pods { target: Target },
}

/// The controller's settings a sync reads (`pyhpa.core.model.ControllerConfig`), the tolerances already chosen
/// (`pyhpa.core.reconcile.tolerances`).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub normalize: Config,
    pub down: f64,
    pub up: f64,
    pub cpu_initialization_period_seconds: f64,
    pub initial_readiness_delay_seconds: f64,
}

/// What one sync decided.
#[derive(Clone, Debug)]
pub struct Decided {
    pub desired: i64,
    pub memory: Memory,
    /// the metrics stopped the sync (all invalid, or some with the rest scaling down): no normalization
    pub failed: bool,
    /// each metric's proposal (None: the metric failed; none when the sync stopped before the metrics)
    pub proposals: Vec<Option<Proposed>>,
    /// the kind of what set the final number (``Decision.decided_by``)
    pub decider: Decider,
    /// normalization's AbleToScale and ScalingLimited reasons, whether its last step was the limit's, and the
    /// recommendation it normalized (``Decision.prenormalized``); None where the sync stopped before it
    pub normalized: Option<(Able, Limited, bool, i64)>,
    /// ``status.saturation``'s reason where the Saturation source was evaluated (None: not set, or the sync stopped
    /// before the sources after the metrics)
    pub saturation: Option<SaturationReason>,
}

/// ``Decision.decided_by``'s kind (``pyhpa.core.model.SourceKind``) for the HPAs this module covers
/// (``pyhpa.core.combine.decided_by``): None where the sync decided nothing (a target at zero, failed metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decider {
    None,
    Metric,
    Prediction,
    Saturation,
    Spec,
    Stabilization,
    Policy,
}

/// The Prediction source of one sync (``spec.prediction``, `pyhpa.core.prediction.prediction_proposal`): the
/// forecast as the core receives it (``Forecast.total_milli``/``expected_milli``: None, the forecaster stepped aside)
/// for ``spec.metrics[metric]``; ``enforce``: mode Enforce (else Observe: computed, never applied).
#[derive(Clone, Copy, Debug)]
pub struct PredictionIn {
    pub metric: usize,
    pub enforce: bool,
    pub total_milli: Option<i64>,
    pub expected_milli: Option<i64>,
}

/// The Saturation source (``spec.saturation``, `pyhpa.core.saturation.saturation_proposal`): ``metric`` the watched
/// cpu metric (``saturation_metric``; None: none), ``limit`` every pod's CPU limit of it (milli; None: not set, the
/// source stays out), ``pinned_percent`` and ``demand_factor`` as the spec has them.
#[derive(Clone, Copy, Debug)]
pub struct SaturationIn {
    pub metric: Option<usize>,
    pub enforce: bool,
    pub pinned_percent: i64,
    pub demand_factor: f64,
    pub limit: Option<i64>,
}

/// The sources after the metrics (`pyhpa.core.reconcile.SOURCES`' order) a sync has.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extras {
    pub prediction: Option<PredictionIn>,
    pub saturation: Option<SaturationIn>,
}

const MAX_INT32: i64 = 2147483647;

/// `pyhpa.core.calculator.ceil_saturate` with ``limit`` 2^31-1.
fn ceil_saturate(x: f64) -> i64 {
    if x.is_nan() {
        0
    } else if x >= MAX_INT32 as f64 {
        MAX_INT32
    } else if x <= -(MAX_INT32 as f64) - 1.0 {
        -MAX_INT32 - 1
    } else {
        x.ceil() as i64
    }
}

/// `pyhpa.core.combine.per_pod_target`: milli-units one pod may carry at ``metric``'s target (None: none), a
/// Utilization target's of the pods' mean request (every pod's is ``each``) over those neither deleted nor failed.
fn per_pod_target(metric: &Metric, pods: &[Pod]) -> Option<f64> {
    match metric {
        Metric::Resource { target: Target::Utilization(percent), requests, each, .. } => {
            let (mut total, mut count) = (0i64, 0i64);
            for (i, p) in pods.iter().enumerate() {
                if p.deleted || p.phase == "Failed" {
                    continue;
                }
                total += each.unwrap_or_else(|| requests[i]);
                count += 1;
            }
            if count == 0 || total <= 0 || *percent == 0 {
                return None;
            }
            Some(total as f64 / count as f64 * *percent as f64 / 100.0)
        }
        Metric::Resource { target: Target::AverageValue(milli), .. } | Metric::Pods { target: Target::AverageValue(milli) }
            if *milli != 0 => Some(*milli as f64),
        _ => None,
    }
}

/// `pyhpa.core.prediction.provisioned_total`.
fn provisioned_total(metric: &Metric, total: i64, expected: Option<i64>) -> f64 {
    let q = total as f64;
    let u = match metric {
        Metric::Resource { target: Target::Utilization(percent), .. } => *percent,
        _ => 0,
    };
    let e = match expected {
        Some(e) if u != 0 && u < 100 && e > 0 && !(q <= e as f64) => e as f64,
        _ => return q,
    };
    let band = q - e;
    let w = band / (e * (100.0 / u as f64 - 1.0));
    let weight = if w < 1.0 { w } else { 1.0 };
    e + weight * band
}

/// The Prediction source's replicas (`prediction_proposal`; None: it asks for none).
fn prediction_replicas(p: &PredictionIn, metrics: &[Metric], pods: &[Pod], current: i64, s: &Settings) -> Option<i64> {
    let total_milli = p.total_milli?;
    let m = metrics.get(p.metric)?;
    let total = provisioned_total(m, total_milli, p.expected_milli);
    let per_pod = per_pod_target(m, pods)?;
    if !(per_pod > 0.0) {
        return None;
    }
    let ratio = if current > 0 { total / (per_pod * current as f64) } else { f64::INFINITY };
    let replicas = if within(ratio, s.down, s.up) { current } else { ceil_saturate(total / per_pod) };
    Some(replicas.max(0))
}

/// ``status.saturation.reason`` (``pyhpa.core.model.SaturationReason``; pinned: ``PinnedAtLimit``, or ``Observing``
/// in Observe mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaturationReason {
    Pinned,
    BelowLimit,
    NoCpuLimit,
    NoCpuSamples,
}

impl SaturationReason {
    pub fn name(self, enforce: bool) -> &'static str {
        match self {
            SaturationReason::Pinned => if enforce { "PinnedAtLimit" } else { "Observing" },
            SaturationReason::BelowLimit => "BelowLimit",
            SaturationReason::NoCpuLimit => "NoCPULimit",
            SaturationReason::NoCpuSamples => "NoCPUSamples",
        }
    }
}

/// The Saturation source's replicas (`saturation_proposal`; None: it stays out) and its status's reason.
fn saturation_replicas(x: &SaturationIn, metrics: &[Metric], pods: &[Pod], samples: &[Option<&[(String, Sample)]>],
                       current: i64, s: &Settings, now: f64) -> (SaturationReason, Option<i64>) {
    use SaturationReason::*;
    let i = match x.metric {
        Some(i) => i,
        None => return (NoCpuSamples, None),
    };
    let list = match samples.get(i).copied().flatten() {
        Some(l) if !l.is_empty() => l,
        _ => return (NoCpuSamples, None),
    };
    let by_name: HashMap<&str, Sample> = list.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let g = group_pods(pods, &by_name, true, now, s.cpu_initialization_period_seconds,
                       s.initial_readiness_delay_seconds);
    let skip: HashSet<&str> = g.unready.iter().chain(&g.ignored).map(|n| n.as_str()).collect();
    let (mut usage, mut limit, mut ready) = (0i64, 0i64, 0i64);
    for p in pods {
        let sample = match by_name.get(p.name.as_str()) {
            Some(v) if !skip.contains(p.name.as_str()) => v,
            _ => continue,
        };
        match x.limit {
            Some(l) => limit += l,
            None => return (NoCpuLimit, None), // no CPU limit to be pinned at: the source stays out
        }
        usage += sample.value;
        ready += 1;
    }
    if ready == 0 || limit <= 0 {
        return (NoCpuSamples, None);
    }
    if (usage * 100).div_euclid(limit) < x.pinned_percent {
        return (BelowLimit, None);
    }
    match per_pod_target(&metrics[i], pods) {
        Some(per_pod) if per_pod > 0.0 =>
            (Pinned, Some(ceil_saturate(usage as f64 * x.demand_factor / per_pod - 1e-9).max(current))),
        _ => (NoCpuSamples, None),
    }
}

impl Decider {
    pub fn kind(self) -> &'static str {
        match self {
            Decider::None => "",
            Decider::Metric => "Metric",
            Decider::Prediction => "Prediction",
            Decider::Saturation => "Saturation",
            Decider::Spec => "Spec",
            Decider::Stabilization => "Stabilization",
            Decider::Policy => "Policy",
        }
    }
}

/// One metric's proposal (`pyhpa.core.model.Proposal`): the replicas, the utilization (percent of the request; a
/// Utilization target's only) and the raw average (milli-units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proposed {
    pub replicas: i64,
    pub utilization: Option<i64>,
    pub raw_milli: i64,
    /// the unready and missing pods the calculator found (``PodGroups``)
    pub unready: i64,
    pub missing: i64,
}

fn proposal(metric: &Metric, pods: &[Pod], samples: Option<&[(String, Sample)]>, current: i64, s: &Settings,
            now: f64) -> Option<Proposed> {
    let samples = samples?; // the metrics API failed
    let (init, delay) = (s.cpu_initialization_period_seconds, s.initial_readiness_delay_seconds);
    let plain = |milli: i64, is_cpu: bool| {
        plain_replicas(pods, samples, current, s.down, s.up, now, init, delay, milli, is_cpu).ok()
            .map(|r| Proposed { replicas: r.0, utilization: None, raw_milli: r.1, unready: r.5.unready.len() as i64,
                                missing: r.5.missing.len() as i64 })
    };
    match metric {
        Metric::Resource { is_cpu, target, requests, each } => match *target {
            Target::AverageValue(milli) => plain(milli, *is_cpu),
            Target::Utilization(percent) => {
                let with: Vec<Pod>;
                let pods = match each {
                    Some(r) if pods.iter().all(|p| p.request == *r) => pods,
                    Some(r) => {
                        with = pods.iter().map(|p| Pod { request: *r, ..p.clone() }).collect();
                        &with
                    }
                    None => {
                        with = pods.iter().zip(requests).map(|(p, &r)| Pod { request: r, ..p.clone() }).collect();
                        &with
                    }
                };
                resource_utilization_replicas(pods, samples, current, s.down, s.up, now, init, delay, percent, *is_cpu)
                    .ok().map(|r| Proposed { replicas: r.replicas, utilization: Some(r.utilization),
                                             raw_milli: r.raw_average, unready: r.groups.unready.len() as i64,
                                             missing: r.groups.missing.len() as i64 })
            }
            Target::Unset => None,
        },
        Metric::Pods { target } => match *target {
            Target::AverageValue(milli) => plain(milli, false),
            _ => None,
        },
    }
}

/// `pyhpa.core.normalize.store_scale_event` (upstream storeScaleEvent): kept only with a behavior.
pub fn store_scale_event(memory: &mut Memory, behavior: Option<&Behavior>, prev: i64, new: i64, now: f64) {
    let b = match behavior {
        None => return,
        Some(b) => b,
    };
    let up = new > prev;
    let rules: &Rules = if up { &b.up } else { &b.down };
    let longest = rules.policies.iter().map(|p| p.period_seconds).max().unwrap_or(0);
    let events = if up { &mut memory.scale_up_events } else { &mut memory.scale_down_events };
    let cutoff = now - longest as f64;
    let old = events.iter().rposition(|&(ts, _)| ts < cutoff);
    let event = (now, if up { new - prev } else { prev - new });
    match old {
        Some(i) => events[i] = event,
        None => events.push(event),
    }
}

/// `pyhpa.core.reconcile.decide` for the specs this module covers (see above). ``recommendations`` None: no memory
/// yet (seeded with ``current`` at ``now``, as the core does).
#[allow(clippy::too_many_arguments)]
pub fn decide_upstream(current: i64, min_replicas: i64, max_replicas: i64, behavior: Option<&Behavior>,
                       metrics: &[Metric], pods: &[Pod], samples: &[Option<&[(String, Sample)]>],
                       recommendations: Option<Vec<(f64, i64)>>, scale_up_events: Vec<(f64, i64)>,
                       scale_down_events: Vec<(f64, i64)>, now: f64, s: &Settings, extras: &Extras) -> Decided {
    let mut memory = Memory { recommendations: recommendations.unwrap_or_else(|| vec![(now, current)]),
                              scale_up_events, scale_down_events };
    if current == 0 {
        // scaling is disabled since the replica count of the target is zero (HPAScaleToZero off)
        return Decided { desired: current, memory, failed: false, proposals: vec![], decider: Decider::None, normalized: None, saturation: None };
    }
    if current > max_replicas || current < min_replicas {
        let bound = if current > max_replicas { max_replicas } else { min_replicas };
        store_scale_event(&mut memory, behavior, current, bound, now);
        return Decided { desired: bound, memory, failed: false, proposals: vec![], decider: Decider::Spec, normalized: None, saturation: None };
    }
    let proposals: Vec<Option<Proposed>> = metrics.iter().enumerate()
        .map(|(i, m)| proposal(m, pods, samples.get(i).copied().flatten(), current, s, now)).collect();
    let (mut replicas, mut invalid) = (0i64, 0usize);
    for p in &proposals {
        match *p {
            None => invalid += 1,
            Some(Proposed { replicas: r, .. }) => {
                if replicas == 0 || r > replicas {
                    replicas = r;
                }
            }
        }
    }
    if invalid >= metrics.len() || (invalid > 0 && replicas < current) {
        return Decided { desired: current, memory, failed: true, proposals, decider: Decider::None, normalized: None, saturation: None };
    }
    // the recommendation (``pyhpa.core.combine.recommend``): the largest applied proposal, the first of equals
    let (mut pre, mut winner) = (replicas, Decider::Metric);
    if let Some(p) = &extras.prediction {
        match prediction_replicas(p, metrics, pods, current, s) {
            Some(r) if p.enforce && r > pre => (pre, winner) = (r, Decider::Prediction),
            _ => {}
        }
    }
    let mut saturation = None;
    if let Some(x) = &extras.saturation {
        let (reason, replicas) = saturation_replicas(x, metrics, pods, samples, current, s, now);
        saturation = Some(reason);
        match replicas {
            Some(r) if x.enforce && r > pre => (pre, winner) = (r, Decider::Saturation),
            _ => {}
        }
    }
    let pre = if pre > 0 { pre } else { 0 };
    let n = normalize(current, pre, min_replicas, max_replicas, behavior, &memory, now, &s.normalize);
    memory.recommendations = n.recommendations;
    if n.desired != current {
        store_scale_event(&mut memory, behavior, current, n.desired, now);
    }
    // the last step of normalization that changed the number, else the winning metric (``decided_by``)
    let decider = if n.desired != n.stabilized {
        match n.limited {
            Limited::TooFewReplicas | Limited::TooManyReplicas => Decider::Spec,
            _ => Decider::Policy,
        }
    } else if n.stabilized != pre {
        Decider::Stabilization
    } else {
        winner
    };
    let normalized = Some((n.able, n.limited, n.desired != n.stabilized, pre));
    Decided { desired: n.desired, memory, failed: false, proposals, decider, normalized, saturation }
}

use crate::normalize::PyRules;
/// (kind "Resource" or "Pods", is CPU, target kind "Utilization", "AverageValue" or "", target value, requests)
type PyMetric = (String, bool, String, i64, Vec<i64>);
type PyPod = (String, String, bool, Option<f64>, Option<bool>, bool, f64);
type PyDecided = (i64, Vec<(f64, i64)>, Vec<(f64, i64)>, Vec<(f64, i64)>, bool, Vec<Option<i64>>, &'static str);

/// `decide_upstream` for Python (``pyhpa.simulate.native.decide_upstream`` builds its arguments from the core's
/// objects). Returns (desired, recommendations, scale-up events, scale-down events, failed, proposals, the decider's kind).
#[pyfunction]
#[pyo3(name = "decide_upstream", signature = (current, min_replicas, max_replicas, behavior, metrics, pods, samples,
    recommendations, scale_up_events, scale_down_events, now, settings))]
#[allow(clippy::too_many_arguments)]
pub fn py_decide_upstream(current: i64, min_replicas: i64, max_replicas: i64, behavior: Option<(PyRules, PyRules)>,
                          metrics: Vec<PyMetric>, pods: Vec<PyPod>,
                          samples: Vec<Option<Vec<(String, i64, f64, f64)>>>,
                          recommendations: Option<Vec<(f64, i64)>>, scale_up_events: Vec<(f64, i64)>,
                          scale_down_events: Vec<(f64, i64)>, now: f64, settings: (f64, f64, f64, f64, f64, f64, f64))
                          -> PyResult<PyDecided> {
    let behavior = match behavior {
        None => None,
        Some((up, down)) => Some(Behavior { up: rules_from_python(up)?, down: rules_from_python(down)? }),
    };
    let metrics: Vec<Metric> = metrics.into_iter().map(|(kind, is_cpu, target, value, requests)| {
        let target = match target.as_str() {
            "Utilization" => Target::Utilization(value),
            "AverageValue" => Target::AverageValue(value),
            _ => Target::Unset,
        };
        if kind == "Pods" { Metric::Pods { target } } else { Metric::Resource { is_cpu, target, requests, each: None } }
    }).collect();
    let pods: Vec<Pod> = pods.into_iter().map(|p| Pod { name: p.0, phase: p.1, deleted: p.2, start_time: p.3,
                                                        ready: p.4, ready_unknown: p.5, ready_transition_time: p.6,
                                                        request: 0 }).collect();
    let samples: Vec<Option<Vec<(String, Sample)>>> = samples.into_iter().map(|x| x.map(|v| v.into_iter()
        .map(|(n, value, timestamp, window)| (n, Sample { value, timestamp, window })).collect())).collect();
    let s = Settings {
        normalize: Config { downscale_stabilization_window_seconds: settings.0, scale_up_limit_factor: settings.1,
                            scale_up_limit_minimum: settings.2 },
        down: settings.3, up: settings.4, cpu_initialization_period_seconds: settings.5,
        initial_readiness_delay_seconds: settings.6,
    };
    let samples: Vec<Option<&[(String, Sample)]>> = samples.iter().map(|x| x.as_deref()).collect();
    let d = decide_upstream(current, min_replicas, max_replicas, behavior.as_ref(), &metrics, &pods, &samples,
                            recommendations, scale_up_events, scale_down_events, now, &s, &Extras::default());
    Ok((d.desired, d.memory.recommendations, d.memory.scale_up_events, d.memory.scale_down_events, d.failed,
        d.proposals.iter().map(|p| p.map(|p| p.replicas)).collect(), d.decider.kind()))
}
