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

/// `pyhpa.core.calculator.within` (upstream Tolerances.isWithin).
pub(crate) fn within(ratio: f64, down: f64, up: f64) -> bool {
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
    let (groups, mut values) = grouped_values(pods, samples, is_cpu, now, init_period, delay)?;
    let requests: HashMap<&str, i64> = pods.iter().map(|p| (p.name.as_str(), p.request)).collect();
    let (ratio, utilization, raw_average) = utilization_ratio(&values, &requests, target)?;
    let (replicas, new_ratio, filled) = finish(ratio, &mut values, &groups, current, down, up, |r, vals| {
        let mut filled = Vec::new();
        if r < 1.0 {
            let fallback = target.max(100);
            for name in &groups.missing {
                let v = trunc_div(requests.get(name.as_str()).copied().unwrap_or(0).wrapping_mul(fallback), 100);
                vals.insert(name.clone(), v);
                filled.push((name.clone(), v));
            }
        } else if r > 1.0 {
            for name in &groups.missing {
                vals.insert(name.clone(), 0);
                filled.push((name.clone(), 0));
            }
        }
        filled
    }, |vals| utilization_ratio(vals, &requests, target).map(|x| x.0))?;
    Ok(Replicas { replicas, utilization, raw_average, ratio, new_ratio, filled, groups })
}

/// `pyhpa.core.calculator.ReplicaCalculator.finish`: the fill-in of missing pods (``fill_missing``), unready pods
/// at 0 on a scale-up, and the direction guard; (replicas, new ratio or None, filled values).
#[allow(clippy::type_complexity)]
fn finish(ratio: f64, values: &mut HashMap<String, i64>, groups: &Groups, current: i64, down: f64, up: f64,
          fill_missing: impl Fn(f64, &mut HashMap<String, i64>) -> Vec<(String, i64)>,
          recompute: impl Fn(&HashMap<String, i64>) -> Result<f64, &'static str>)
          -> Result<(i64, Option<f64>, Vec<(String, i64)>), &'static str> {
    let scale_up_unready = !groups.unready.is_empty() && ratio > 1.0;
    if !scale_up_unready && groups.missing.is_empty() {
        if within(ratio, down, up) {
            return Ok((current, None, vec![]));
        }
        return Ok((ceil_int32(ratio * groups.ready as f64), None, vec![]));
    }
    let mut filled = if groups.missing.is_empty() { Vec::new() } else { fill_missing(ratio, values) };
    if scale_up_unready {
        for name in &groups.unready {
            values.insert(name.clone(), 0);
            filled.push((name.clone(), 0));
        }
    }
    let new_ratio = recompute(values)?;
    if within(new_ratio, down, up) || (ratio > 1.0 && new_ratio < 1.0) || (ratio < 1.0 && new_ratio > 1.0) {
        return Ok((current, Some(new_ratio), filled));
    }
    let replicas = ceil_int32(new_ratio * values.len() as f64);
    if (new_ratio < 1.0 && replicas > current) || (new_ratio > 1.0 && replicas < current) {
        return Ok((current, Some(new_ratio), filled));
    }
    Ok((replicas, Some(new_ratio), filled))
}

/// `pyhpa.core.calculator.grouped_values`: the pods grouped and the values of those that count (ready, sampled);
/// Err with the core's text.
fn grouped_values(pods: &[Pod], samples: &[(String, Sample)], is_cpu: bool, now: f64, init_period: f64, delay: f64)
                  -> Result<(Groups, HashMap<String, i64>), &'static str> {
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
    Ok((groups, values))
}

/// `pyhpa.core.calculator.usage_ratio`: (ratio, average milli) of plain per-pod values.
fn usage_ratio(values: &HashMap<String, i64>, target: i64) -> (f64, i64) {
    let mut total = 0i64;
    for &v in values.values() {
        total = total.wrapping_add(v);
    }
    let average = trunc_div(total, values.len() as i64);
    (fdiv(average as f64, target as f64), average)
}

/// `pyhpa.core.calculator.plain_replicas` (upstream calcPlainMetricReplicas: Pods metrics, Resource AverageValue):
/// (replicas, average milli, ratio, new ratio or None, filled, groups); Err with the core's text.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn plain_replicas(pods: &[Pod], samples: &[(String, Sample)], current: i64, down: f64, up: f64, now: f64,
                      init_period: f64, delay: f64, target_milli: i64, is_cpu: bool)
                      -> Result<(i64, i64, f64, Option<f64>, Vec<(String, i64)>, Groups), &'static str> {
    let (groups, mut values) = grouped_values(pods, samples, is_cpu, now, init_period, delay)?;
    let (ratio, usage) = usage_ratio(&values, target_milli);
    let (replicas, new_ratio, filled) = finish(ratio, &mut values, &groups, current, down, up, |r, vals| {
        let mut filled = Vec::new();
        if r == 1.0 {
            return filled;
        }
        let value = if r < 1.0 { target_milli } else { 0 };
        for name in &groups.missing {
            vals.insert(name.clone(), value);
            filled.push((name.clone(), value));
        }
        filled
    }, |vals| Ok(usage_ratio(vals, target_milli).0))?;
    Ok((replicas, usage, ratio, new_ratio, filled, groups))
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
    let (pods, samples) = from_python(pods, samples);
    match resource_utilization_replicas(&pods, &samples, current, down, up, now, init_period, delay, target, is_cpu) {
        Err(text) => Err(PyValueError::new_err(text)),
        Ok(r) => Ok((r.replicas, r.utilization, r.raw_average, r.ratio, r.new_ratio, r.filled, r.groups.ready,
                     r.groups.unready, r.groups.missing, r.groups.ignored)),
    }
}

type PyPlain = (i64, i64, f64, Option<f64>, Vec<(String, i64)>, i64, Vec<String>, Vec<String>, Vec<String>);

/// `plain_replicas` for Python, as ``resource_utilization_replicas`` takes its pods (their requests unused) and
/// samples: (replicas, average milli, ratio, new ratio or None, filled, ready count, unready, missing, ignored).
#[pyfunction]
#[pyo3(name = "plain_replicas")]
#[allow(clippy::too_many_arguments)]
pub fn py_plain_replicas(pods: Vec<PyPod>, samples: Vec<(String, i64, f64, f64)>, current: i64, down: f64, up: f64,
                         now: f64, init_period: f64, delay: f64, target_milli: i64, is_cpu: bool) -> PyResult<PyPlain> {
    let (pods, samples) = from_python(pods, samples);
    match plain_replicas(&pods, &samples, current, down, up, now, init_period, delay, target_milli, is_cpu) {
        Err(text) => Err(PyValueError::new_err(text)),
        Ok((replicas, usage, ratio, new_ratio, filled, g)) => Ok((replicas, usage, ratio, new_ratio, filled, g.ready,
                                                                  g.unready, g.missing, g.ignored)),
    }
}

fn from_python(pods: Vec<PyPod>, samples: Vec<(String, i64, f64, f64)>) -> (Vec<Pod>, Vec<(String, Sample)>) {
    (pods.into_iter().map(|p| Pod { name: p.0, phase: p.1, deleted: p.2, start_time: p.3, ready: p.4,
                                    ready_unknown: p.5, ready_transition_time: p.6, request: p.7 }).collect(),
     samples.into_iter().map(|(n, value, timestamp, window)| (n, Sample { value, timestamp, window })).collect())
}
