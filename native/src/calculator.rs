//! The replica calculator of a utilization target: `pyhpa.core.calculator.resource_utilization_replicas` with
//! `group_pods` and `utilization_ratio` (upstream's GetResourceReplicas, groupPods, GetResourceUtilizationRatio),
//! for pods whose request of the resource is known (a simulated workload's always is).
//!
//! Milli-units are i64 (Go's int64 sums wrap as upstream's do: a wrapping sum is the exact sum wrapped); ratios f64.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::normalize::{go_int32, wrap_int32};

/// A pod as the calculator sees it (`pyhpa.core.model.Pod`): its phase, deletion, start time (epoch s), Ready
/// condition (None: none; `ready_unknown`: neither True nor False), the Ready transition time (epoch s) and its
/// request of the resource (milli-units).
#[derive(Clone, Debug)]
pub struct Pod {
    pub name: String,
    pub phase: String,
    pub deleted: bool,
    pub start_time: Option<f64>,
    pub ready: Option<bool>,
    pub ready_unknown: bool,
    pub ready_transition_time: f64,
    pub request: i64,
}

/// One pod's sample (`pyhpa.core.model.PodSample`): milli-units, epoch s, window s.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub value: i64,
    pub timestamp: f64,
    pub window: f64,
}

/// The pods' groups (`pyhpa.core.calculator.PodGroups`): counted ready, and the names of the others.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    pub ready: i64,
    pub unready: Vec<String>,
    pub missing: Vec<String>,
    pub ignored: Vec<String>,
}

/// What `resource_utilization_replicas` returns (the core's tuple, with the groups).
#[derive(Clone, Debug)]
pub struct Replicas {
    pub replicas: i64,
    pub utilization: i64,
    pub raw_average: i64,
    pub ratio: f64,
    pub new_ratio: Option<f64>,
    pub filled: Vec<(String, i64)>,
    pub groups: Groups,
}

fn ceil_int32(x: f64) -> i64 {
    go_int32(if x.is_finite() { x.ceil() } else { x })
}

fn within(ratio: f64, down: f64, up: f64) -> bool {
    (1.0 - down) <= ratio && ratio <= (1.0 + up)
}

fn fdiv(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        if a == 0.0 || a.is_nan() {
            return f64::NAN;
        }
        return if a > 0.0 { f64::INFINITY } else { f64::NEG_INFINITY };
    }
    a / b
}

fn trunc_div(a: i64, b: i64) -> i64 {
    a.wrapping_div(b) // Go's (and the core's trunc_div): toward zero
}

fn cpu_unready(pod: &Pod, sample: &Sample, now: f64, init_period: f64, delay: f64) -> bool {
    let (ready, start) = match (pod.ready, pod.start_time) {
        (Some(r), Some(s)) => (r, s),
        _ => return true,
    };
    let ready_false = !ready && !pod.ready_unknown;
    if start + init_period > now {
        if ready_false {
            return true;
        }
        return sample.timestamp < pod.ready_transition_time + sample.window;
    }
    ready_false && start + delay > pod.ready_transition_time
}

/// `pyhpa.core.calculator.group_pods`.
pub fn group_pods(pods: &[Pod], samples: &HashMap<&str, Sample>, is_cpu: bool, now: f64, init_period: f64,
                  delay: f64) -> Groups {
    let mut g = Groups::default();
    for pod in pods {
        if pod.deleted || pod.phase == "Failed" {
            g.ignored.push(pod.name.clone());
            continue;
        }
        if pod.phase == "Pending" {
            g.unready.push(pod.name.clone());
            continue;
        }
        let sample = match samples.get(pod.name.as_str()) {
            None => {
                g.missing.push(pod.name.clone());
                continue;
            }
            Some(s) => s,
        };
        if is_cpu {
            let fast = pod.ready == Some(true) && matches!(pod.start_time, Some(s) if !(s + init_period > now));
            if !fast && cpu_unready(pod, sample, now, init_period, delay) {
                g.unready.push(pod.name.clone());
                continue;
            }
        }
        g.ready += 1;
    }
    g
}

/// `pyhpa.core.calculator.utilization_ratio`: (ratio, utilization %, average raw milli) over the values of pods with
/// a request; Err with the core's text when none has one.
fn utilization_ratio(values: &HashMap<String, i64>, requests: &HashMap<&str, i64>, target: i64)
                     -> Result<(f64, i64, i64), &'static str> {
    let (mut total, mut req_total, mut n) = (0i64, 0i64, 0i64);
    for (name, &value) in values {
        if let Some(&req) = requests.get(name.as_str()) {
            total = total.wrapping_add(value);
            req_total = req_total.wrapping_add(req);
            n += 1;
        }
    }
    if req_total == 0 {
        return Err("no metrics returned matched known pods");
    }
    let utilization = wrap_int32(trunc_div(total.wrapping_mul(100), req_total));
    Ok((fdiv(utilization as f64, target as f64), utilization, trunc_div(total, n)))
}

/// `pyhpa.core.calculator.resource_utilization_replicas` for pods with known requests; Err with the core's
/// MetricError text.
#[allow(clippy::too_many_arguments)]
pub fn resource_utilization_replicas(pods: &[Pod], samples: &[(String, Sample)], current: i64, down: f64, up: f64,
                                     now: f64, init_period: f64, delay: f64, target: i64, is_cpu: bool)
                                     -> Result<Replicas, &'static str> {
    if pods.is_empty() {
        return Err("no pods returned by selector while calculating replica count");
    }
    let by_name: HashMap<&str, Sample> = samples.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let groups = group_pods(pods, &by_name, is_cpu, now, init_period, delay);
    let mut values: HashMap<String, i64> = samples.iter().map(|(n, s)| (n.clone(), s.value)).collect();
    for name in groups.ignored.iter().chain(groups.unready.iter()) {
        values.remove(name);
    }
    if values.is_empty() {
        return Err("did not receive metrics for targeted pods (pods might be unready)");
    }
    let requests: HashMap<&str, i64> = pods.iter().map(|p| (p.name.as_str(), p.request)).collect();
    let (ratio, utilization, raw_average) = utilization_ratio(&values, &requests, target)?;
    let done = |replicas, new_ratio, filled, groups| Ok(Replicas { replicas, utilization, raw_average, ratio,
                                                                  new_ratio, filled, groups });
    let scale_up_unready = !groups.unready.is_empty() && ratio > 1.0;
    if !scale_up_unready && groups.missing.is_empty() {
        if within(ratio, down, up) {
            return done(current, None, vec![], groups);
        }
        return done(ceil_int32(ratio * groups.ready as f64), None, vec![], groups);
    }
    let mut filled: Vec<(String, i64)> = Vec::new();
    if !groups.missing.is_empty() {
        if ratio < 1.0 {
            let fallback = target.max(100);
            for name in &groups.missing {
                let v = trunc_div(requests.get(name.as_str()).copied().unwrap_or(0).wrapping_mul(fallback), 100);
                values.insert(name.clone(), v);
                filled.push((name.clone(), v));
            }
        } else if ratio > 1.0 {
            for name in &groups.missing {
                values.insert(name.clone(), 0);
                filled.push((name.clone(), 0));
            }
        }
    }
    if scale_up_unready {
        for name in &groups.unready {
            values.insert(name.clone(), 0);
            filled.push((name.clone(), 0));
        }
    }
    let new_ratio = utilization_ratio(&values, &requests, target)?.0;
    if within(new_ratio, down, up) || (ratio > 1.0 && new_ratio < 1.0) || (ratio < 1.0 && new_ratio > 1.0) {
        return done(current, Some(new_ratio), filled, groups);
    }
    let replicas = ceil_int32(new_ratio * values.len() as f64);
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return done(current, Some(new_ratio), filled, groups);
    }
    done(replicas, Some(new_ratio), filled, groups)
}

type PyPod = (String, String, bool, Option<f64>, Option<bool>, bool, f64, i64);
type PyReplicas = (i64, i64, i64, f64, Option<f64>, Vec<(String, i64)>, i64, Vec<String>, Vec<String>, Vec<String>);

/// `resource_utilization_replicas` for Python: ``pods`` as (name, phase, deleted, start time or None, Ready or None,
/// Ready Unknown, Ready transition time, request milli); ``samples`` as (name, value milli, timestamp, window).
/// Returns (replicas, utilization %, raw average milli, ratio, new ratio or None, filled (name, milli), ready count,
/// unready, missing, ignored names); raises ValueError with the core's MetricError text.
#[pyfunction]
#[pyo3(name = "resource_utilization_replicas")]
#[allow(clippy::too_many_arguments)]
pub fn py_resource_utilization_replicas(pods: Vec<PyPod>, samples: Vec<(String, i64, f64, f64)>, current: i64,
                                        down: f64, up: f64, now: f64, init_period: f64, delay: f64, target: i64,
                                        is_cpu: bool) -> PyResult<PyReplicas> {
    let pods: Vec<Pod> = pods.into_iter().map(|p| Pod { name: p.0, phase: p.1, deleted: p.2, start_time: p.3,
                                                        ready: p.4, ready_unknown: p.5, ready_transition_time: p.6,
                                                        request: p.7 }).collect();
    let samples: Vec<(String, Sample)> = samples.into_iter()
        .map(|(n, value, timestamp, window)| (n, Sample { value, timestamp, window })).collect();
    match resource_utilization_replicas(&pods, &samples, current, down, up, now, init_period, delay, target, is_cpu) {
        Err(text) => Err(PyValueError::new_err(text)),
        Ok(r) => Ok((r.replicas, r.utilization, r.raw_average, r.ratio, r.new_ratio, r.filled, r.groups.ready,
                     r.groups.unready, r.groups.missing, r.groups.ignored)),
    }
}
