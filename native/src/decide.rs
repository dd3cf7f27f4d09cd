//! One sync of an autoscaling/v2 HPA without pyhpa's extensions: `pyhpa.core.reconcile.decide` (upstream's
//! reconcileAutoscaler after the scale GET) for Resource and ContainerResource metrics (Utilization or AverageValue
//! targets) and Pods metrics, on the pods the HPA selects, with the HPAScaleToZero gate off: the early branches
//! (a target at zero, replicas outside the bounds), every metric's proposal, upstream's rule over them (the
//! largest; invalid metrics stop the sync), normalization and the scale event remembered. What a simulated workload
//! needs of it: the desired replicas, the memory after, whether the metrics failed, each metric's proposal.

use pyo3::prelude::*;

use crate::calculator::{plain_replicas, resource_utilization_replicas, Pod, Sample};
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
}

/// ``Decision.decided_by``'s kind (``pyhpa.core.model.SourceKind``) for the HPAs this module covers
/// (``pyhpa.core.combine.decided_by``): None where the sync decided nothing (a target at zero, failed metrics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decider {
    None,
    Metric,
    Spec,
    Stabilization,
    Policy,
}

impl Decider {
    pub fn kind(self) -> &'static str {
        match self {
            Decider::None => "",
            Decider::Metric => "Metric",
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
                       scale_down_events: Vec<(f64, i64)>, now: f64, s: &Settings) -> Decided {
    let mut memory = Memory { recommendations: recommendations.unwrap_or_else(|| vec![(now, current)]),
                              scale_up_events, scale_down_events };
    if current == 0 {
        // scaling is disabled since the replica count of the target is zero (HPAScaleToZero off)
        return Decided { desired: current, memory, failed: false, proposals: vec![], decider: Decider::None, normalized: None };
    }
    if current > max_replicas || current < min_replicas {
        let bound = if current > max_replicas { max_replicas } else { min_replicas };
        store_scale_event(&mut memory, behavior, current, bound, now);
        return Decided { desired: bound, memory, failed: false, proposals: vec![], decider: Decider::Spec, normalized: None };
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
        return Decided { desired: current, memory, failed: true, proposals, decider: Decider::None, normalized: None };
    }
    let pre = if replicas > 0 { replicas } else { 0 };
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
        Decider::Metric
    };
    let normalized = Some((n.able, n.limited, n.desired != n.stabilized, pre));
    Decided { desired: n.desired, memory, failed: false, proposals, decider, normalized }
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
                            recommendations, scale_up_events, scale_down_events, now, &s);
    Ok((d.desired, d.memory.recommendations, d.memory.scale_up_events, d.memory.scale_down_events, d.failed,
        d.proposals.iter().map(|p| p.map(|p| p.replicas)).collect(), d.decider.kind()))
}
