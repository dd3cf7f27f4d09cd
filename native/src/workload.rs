//! One simulated workload compiled: `pyhpa.simulate.cluster.Cluster`'s own instants (its load's trace rows, the
//! metrics-server scrapes, the pods' start-up transitions, the HPA sync loop and the workload controller) with the
//! decision of `decide_upstream` at each sync (with ``spec.prediction``'s forecaster, `crate::forecast`, and
//! ``spec.saturation``), for the workloads `pyhpa.simulate.compiled.uncovered` accepts.
//!
//! The Python class stays the reference: every method here follows one of `Cluster`'s by name, in the same order of
//! floating-point operations, so that every figure is the same to the last bit (the fleet's byte identity and
//! `tests/test_native_workload.py` compare both). What stays in Python is called back through the `owner` each
//! method takes (the `pyhpa.simulate.native_cluster.CompiledCluster`): its random draws (`_c_draw`: a new pod's
//! traffic weight and start-up jitter, from the workload's `random.Random`), a bound pod's transition times
//! (`_c_start_up`: the probes), the binder (`_c_created`, `_c_removed`) and the error of a rescale past the
//! simulator's bound (`_c_too_many`). Times are epoch seconds, CPU millicores, requests requests/s.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::calculator::{Pod, Sample};
use crate::decide::{decide_upstream, Extras, Metric, PredictionIn, SaturationIn, Settings};
use crate::forecast::{Model, Predictor, PyModel as PyFitModel, PySettings, Settings as ForecastSettings};
use crate::normalize::{rules_from_python, Behavior, Config, PyRules};

const INF: f64 = f64::INFINITY;
const ZERO_TIME: f64 = -62135596800.0;

/// A pod's transitions (`Cluster._start_up`'s kinds, in the order Python sorts their names at one instant).
const APP: u8 = 0;
const BOOST_END: u8 = 1;
const BOUND: u8 = 2;
const READY: u8 = 3;
const RUNNING: u8 = 4;

/// What a metric view reads of a scrape (`pyhpa.simulate.metrics.MetricView.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Cpu,
    Memory,
    Served,
    Idle,
}

#[derive(Clone, Debug)]
struct View {
    kind: Kind,
    /// the timeline's value is the utilization (percent), else the raw average times ``factor``
    utilization: bool,
    factor: f64,
}

/// (cpu, memory, served) samples of one pod and the window (`Cluster._pod_sample`).
#[derive(Clone, Copy, Debug)]
struct SampleSet {
    cpu: Option<Sample>,
    memory: Option<Sample>,
    served: Option<Sample>,
    window: f64,
}

/// `pyhpa.simulate.cluster._Group`.
#[derive(Clone, Debug)]
struct Group {
    weight: f64,
    count: i64,
    cpu: f64,
    served: f64,
    sample: Option<(f64, f64, SampleSet)>,
}

/// `pyhpa.simulate.cluster.SimPod`.
#[derive(Clone, Debug)]
struct SimPod {
    name: String,
    created: f64,
    bound_at: f64,
    weight: f64,
    events: Vec<(f64, u8)>,
    next_ev: usize,
    bound: bool,
    running: bool,
    app_up: bool,
    ready: bool,
    boosting: bool,
    steady_since: f64,
    cpu: f64,
    served: f64,
    group: Option<usize>,
    g_cpu: f64,
    g_served: f64,
    prev_t: Option<f64>,
    prev_cpu: f64,
    prev_served: f64,
    ready_at: f64,
}

impl SimPod {
    fn has_events(&self) -> bool {
        self.next_ev < self.events.len()
    }
}

/// (syncs per kind of decider, timeline columns) and the accumulated figures of `Cluster.stats`.
#[derive(Clone, Debug, Default)]
struct Stats {
    pod_seconds: f64,
    ready_pod_seconds: f64,
    requested_requests: f64,
    unserved_requests: f64,
    overloaded_seconds: f64,
    cpu_millicore_seconds: f64,
    running_pod_seconds: f64,
}

/// CPython's float floor division (``float_floor_div``), so that a minute's index is Python's.
pub(crate) fn py_floordiv(vx: f64, wx: f64) -> f64 {
    let m = vx % wx;
    let mut div = (vx - m) / wx;
    if m != 0.0 && (wx < 0.0) != (m < 0.0) {
        div -= 1.0;
    }
    if div != 0.0 {
        let mut floordiv = div.floor();
        if div - floordiv > 0.5 {
            floordiv += 1.0;
        }
        floordiv
    } else {
        (0.0f64).copysign(vx / wx)
    }
}

/// ``v`` as a Python object.
fn obj<'py, T: IntoPyObject<'py>>(py: Python<'py>, v: T) -> PyResult<Bound<'py, PyAny>> {
    v.into_bound_py_any(py)
}

/// Python's ``min(a, b)``: ``a`` unless ``b`` is less.
pub(crate) fn pymin(a: f64, b: f64) -> f64 {
    if b < a { b } else { a }
}

/// Python's ``int(x)`` of a float (toward zero), saturating at i64's range.
fn py_int(x: f64) -> i64 {
    x.trunc() as i64
}

type Scraped = (Vec<usize>, Vec<(String, Sample)>);

/// ``values`` as the bytes of C doubles (``numpy.frombuffer`` reads them without a copy).
fn doubles<'py>(py: Python<'py>, values: &[f64]) -> Bound<'py, pyo3::types::PyBytes> {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    pyo3::types::PyBytes::new(py, &bytes)
}

/// A row of the whole timeline (``Cluster._record``), its columns in timeline.csv's order.
#[derive(Clone, Debug)]
struct Row {
    t: f64,
    load: f64,
    current: i64,
    ready: i64,
    desired: i64,
    pre: Option<i64>,
    values: Vec<Option<f64>>,
    unready: Option<i64>,
    missing: Option<i64>,
    capacity: f64,
    unserved: f64,
    changed: String,
    error: Option<String>,
}

/// What the whole timeline needs besides the figures: the HPA's conditions (type, status, reason) as the core
/// keeps them, the last of each type the timeline showed (``Cluster._changed``), the HPAScaleToZero gate, each
/// metric's target, the requests unserved so far and at the last sync, the rows.
#[derive(Clone, Debug, Default)]
struct Full {
    scale_to_zero: bool,
    conditions: Vec<(String, String, String)>,
    shown: HashMap<String, (String, String)>,
    targets: Vec<f64>,
    unserved_cum: f64,
    unserved_at_sync: f64,
    rows: Vec<Row>,
}

impl Full {
    /// ``pyhpa.core.reconcile.set_condition``: in place, or appended.
    fn cond(&mut self, ctype: &str, status: &str, reason: &str) {
        match self.conditions.iter_mut().find(|c| c.0 == ctype) {
            Some(c) => {
                c.1 = status.to_string();
                c.2 = reason.to_string();
            }
            None => self.conditions.push((ctype.to_string(), status.to_string(), reason.to_string())),
        }
    }

    /// ``Cluster._changed``: the conditions whose status or reason changed, as ``Type=Status/Reason; ...``.
    fn changed(&mut self) -> String {
        let mut out: Vec<String> = vec![];
        for (ctype, status, reason) in &self.conditions {
            let now = (status.clone(), reason.clone());
            if self.shown.get(ctype) != Some(&now) {
                self.shown.insert(ctype.clone(), now);
                out.push(format!("{ctype}={status}/{reason}"));
            }
        }
        out.join("; ")
    }
}

#[pyclass(module = "pyhpa.simulate.rustcore")]
pub struct Workload {
    // the model's constants (`Cluster._model_constants`)
    t0: f64,
    end: f64,
    sync_period: f64,
    resolution: f64,
    scrape_offset: f64,
    k_cpu: f64,
    base_cpu: f64,
    boost: f64,
    limit: f64,
    cap: f64,
    mem_base: f64,
    mem_per_rps: f64,
    need_cpu: bool,
    need_memory: bool,
    need_served: bool,
    statefulset: bool,
    ordered_ready: bool,
    has_binder: bool,
    target_name: String,
    scheduling_seconds: f64,
    times: Vec<f64>,
    rps_values: Vec<f64>,
    views: Vec<View>,
    // the decision
    min_replicas: i64,
    max_replicas: i64,
    max_pods: i64,
    behavior: Option<Behavior>,
    metrics: Vec<Metric>,
    request: i64,
    settings: Settings,
    recommendations: Option<Vec<(f64, i64)>>,
    scale_up_events: Vec<(f64, i64)>,
    scale_down_events: Vec<(f64, i64)>,
    // the state (`Cluster._init_state`)
    all: Vec<SimPod>,
    pods: Vec<usize>,
    groups: Vec<Group>,
    order: Vec<usize>,
    by_weight: HashMap<u64, usize>,
    starting: Vec<usize>,
    counter: i64,
    spec_replicas: i64,
    trace_i: usize,
    rps: f64,
    next_trace: f64,
    sync_k: i64,
    next_sync: f64,
    scrape_k: i64,
    next_scrape: f64,
    /// each metric's last scrape (None: the API's error): the pods' ids and (name, sample)
    samples: Vec<Option<Scraped>>,
    /// why a metric has no samples: 0 no scrape yet, 1 none of its pods returned one
    sample_errors: Vec<u8>,
    samples_stale: bool,
    core_pods: Vec<Pod>,
    n_live: i64,
    n_running: i64,
    n_ready: i64,
    n_serving: i64,
    w_ready: f64,
    next_pod: f64,
    t: f64,
    // what the run accumulates
    stats: Stats,
    episodes: Vec<(f64, f64, Option<f64>)>,
    episode_start: Option<f64>,
    episode_reaction: Option<f64>,
    unserved_by_minute: Vec<(i64, f64)>,
    scale_events: Vec<(f64, i64, i64)>,
    failed_syncs: i64,
    decided_by: Vec<(String, i64)>,
    /// ``owner._c_stop(stats)`` is asked after each sync whether the run ends there (``Cluster.run``'s ``stop``)
    ask_stop: bool,
    stopped: bool,
    // the whole timeline (``pyhpa simulate``'s), when kept: None keeps only the summary's columns
    full: Option<Full>,
    tl_current: Vec<f64>,
    tl_desired: Vec<f64>,
    tl_values: Vec<Vec<f64>>,
    // the sources after the metrics (``spec.prediction``, ``spec.saturation``), when the HPA has them
    prediction: Option<Prediction>,
    saturation: Option<SaturationIn>,
    saturation_record: Option<SaturationRecord>,
}

/// ``Cluster.prediction`` (`pyhpa.simulate.prediction.SimPrediction`'s loop, ``pyhpa.forecast.ForecastLoop``): the
/// forecaster of ``spec.metrics[metric]``'s workload total, refitted by ``owner._c_refit``.
struct Prediction {
    predictor: Predictor,
    metric: usize,
    enforce: bool,
    last_seen: f64,
    /// what ``SimPrediction.summary`` reads of each sync (metric-total units: milli-units times ``factor``, NaN
    /// where there is none): its time, the total observed, the point forecast and its high band; syncs per reason
    factor: f64,
    times: Vec<f64>,
    observed: Vec<f64>,
    point: Vec<f64>,
    high: Vec<f64>,
    reasons: Vec<(&'static str, i64)>,
}

/// What ``Cluster.sources["saturation"]`` (``SourceRecord``) counts: syncs per ``status.saturation`` reason, the
/// syncs it was active (pinned), its episodes (runs of such syncs).
#[derive(Default)]
struct SaturationRecord {
    reasons: Vec<(&'static str, i64)>,
    active: i64,
    episodes: i64,
    was_active: bool,
}

fn count(counts: &mut Vec<(&'static str, i64)>, key: &'static str) {
    match counts.iter_mut().find(|(k, _)| *k == key) {
        Some((_, n)) => *n += 1,
        None => counts.push((key, 1)),
    }
}

/// (metric, Enforce, the forecaster's settings, its history's times and values, the factor of its figures)
type PyPrediction = (usize, bool, PySettings, Vec<f64>, Vec<f64>, f64);
/// (the watched metric or None, Enforce, pinnedPercent, demandFactor, the pods' CPU limit of it or None)
type PySaturation = (Option<usize>, bool, i64, f64, Option<i64>);

type PyModel = (f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64, f64);
type PyShape = (bool, bool, bool, bool, bool, bool, String, f64, f64, i64);
type PyMetric = (String, bool, String, i64, i64);
/// (the HPAScaleToZero gate, the HPA's conditions (type, status, reason), each metric's target in its unit)
type PyFull = (bool, Vec<(String, String, String)>, Vec<f64>);

#[pymethods]
impl Workload {
    /// ``model``: (t0, end, sync period, metric resolution, scrape offset, CPU millicore-seconds per request,
    /// baseline millicores, start-up boost millicores, CPU limit millicores (inf: none), pod capacity requests/s,
    /// memory baseline MiB, MiB per request/s); ``shape``: (need cpu, need memory, need served, StatefulSet,
    /// OrderedReady, with a binder, the target's name, the profile's pod_scheduling_seconds, the first sync's
    /// the target's replicas at the start, the simulator's pod bound); ``times``/``rps``:
    /// the load's step function; ``views``: (kind cpu/memory/served/idle, value is the utilization, factor) per
    /// metric; ``metrics``: (kind Resource/Pods, is CPU, target kind, value, every pod's request of it (milli)) per
    /// metric; ``request``: the request the pods carry (the first Utilization metric's); ``settings`` as `decide_upstream` takes them.
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (model, shape, times, rps, views, min_replicas, max_replicas, behavior, metrics, request,
                        settings, full=None, extensions=None))]
    fn new(model: PyModel, shape: PyShape, times: Vec<f64>, rps: Vec<f64>, views: Vec<(String, bool, f64)>,
           min_replicas: i64, max_replicas: i64, behavior: Option<(PyRules, PyRules)>, metrics: Vec<PyMetric>,
           request: i64, settings: (f64, f64, f64, f64, f64, f64, f64), full: Option<PyFull>,
           extensions: Option<(Option<PyPrediction>, Option<PySaturation>)>) -> PyResult<Self> {
        let (prediction, saturation) = extensions.unwrap_or((None, None));
        let prediction = prediction.map(|(metric, enforce, settings, times, values, factor)| Prediction {
            predictor: Predictor::new(ForecastSettings::from_python(settings), times, values), metric, enforce,
            last_seen: f64::NEG_INFINITY, factor, times: vec![], observed: vec![], point: vec![], high: vec![],
            reasons: vec![] });
        let saturation_record = saturation.as_ref().map(|_| SaturationRecord::default());
        let saturation = saturation.map(|(metric, enforce, pinned_percent, demand_factor, limit)| SaturationIn {
            metric, enforce, pinned_percent, demand_factor, limit });
        let behavior = match behavior {
            None => None,
            Some((up, down)) => Some(Behavior { up: rules_from_python(up)?, down: rules_from_python(down)? }),
        };
        let metrics = metrics.into_iter().map(|(kind, is_cpu, target, value, each)| {
            let target = match target.as_str() {
                "Utilization" => crate::decide::Target::Utilization(value),
                "AverageValue" => crate::decide::Target::AverageValue(value),
                _ => crate::decide::Target::Unset,
            };
            if kind == "Pods" { Metric::Pods { target } } else { Metric::Resource { is_cpu, target, requests: vec![], each: Some(each) } }
        }).collect();
        let views: Vec<View> = views.into_iter().map(|(kind, utilization, factor)| View {
            kind: match kind.as_str() {
                "cpu" => Kind::Cpu,
                "memory" => Kind::Memory,
                "served" => Kind::Served,
                _ => Kind::Idle,
            },
            utilization, factor,
        }).collect();
        let n_views = views.len();
        let (t0, end, sync_period, resolution, scrape_offset, k_cpu, base_cpu, boost, limit, cap, mem_base,
             mem_per_rps) = model;
        let (need_cpu, need_memory, need_served, statefulset, ordered_ready, has_binder, target_name,
             scheduling_seconds, replicas, max_pods) = shape;
        let rps0 = rps[0];
        let next_trace = if times.len() > 1 { times[1] } else { INF };
        Ok(Workload {
            t0, end, sync_period, resolution, scrape_offset, k_cpu, base_cpu, boost, limit, cap, mem_base,
            mem_per_rps, need_cpu, need_memory, need_served, statefulset, ordered_ready, has_binder, target_name,
            scheduling_seconds, times, rps_values: rps, views, min_replicas, max_replicas, max_pods, behavior,
            metrics, request,
            settings: Settings {
                normalize: Config { downscale_stabilization_window_seconds: settings.0,
                                    scale_up_limit_factor: settings.1, scale_up_limit_minimum: settings.2 },
                down: settings.3, up: settings.4, cpu_initialization_period_seconds: settings.5,
                initial_readiness_delay_seconds: settings.6,
            },
            recommendations: None, scale_up_events: vec![], scale_down_events: vec![],
            all: vec![], pods: vec![], groups: vec![], order: vec![], by_weight: HashMap::new(), starting: vec![],
            counter: 0, spec_replicas: replicas as i64, trace_i: 0, rps: rps0, next_trace, sync_k: 0,
            next_sync: t0, scrape_k: -2, next_scrape: t0 + scrape_offset - 2.0 * resolution,
            samples: vec![None; n_views], samples_stale: false, core_pods: vec![], n_live: 0, n_running: 0,
            n_ready: 0, n_serving: 0, w_ready: 0.0, next_pod: INF, t: t0 - 2.0 * resolution,
            stats: Stats::default(), episodes: vec![], episode_start: None, episode_reaction: None,
            unserved_by_minute: vec![], scale_events: vec![], failed_syncs: 0, decided_by: vec![],
            tl_current: vec![], tl_desired: vec![], tl_values: vec![vec![]; n_views],
            full: full.map(|(scale_to_zero, conditions, targets)| Full { scale_to_zero, conditions, targets,
                                                                        ..Full::default() }),
            sample_errors: vec![0; n_views], ask_stop: false, stopped: false, prediction, saturation,
            saturation_record,
        })
    }

    /// The pods of the start (`Cluster._init_state`): ``spec_replicas`` pods that have run for a day at ``t``.
    fn start(&mut self, owner: &Bound<'_, PyAny>, t: f64) -> PyResult<()> {
        for _ in 0..self.spec_replicas {
            self.add_pod(owner, t, true)?;
        }
        self.recount();
        Ok(())
    }

    /// `Cluster.next_event`.
    fn next_event(&self) -> f64 {
        self.next_trace.min(self.next_sync).min(self.next_scrape).min(self.next_pod).min(self.end)
    }

    /// `Cluster._advance_to`: every event at ``limit`` or before it; returns the next event's time.
    fn advance_to(&mut self, owner: &Bound<'_, PyAny>, limit: f64) -> PyResult<f64> {
        let (mut t, end) = (self.t, self.end);
        while t < end {
            let b = self.next_event();
            if b > limit {
                break;
            }
            if b > t {
                self.advance(t, b);
                t = b;
            }
            if t >= end {
                break;
            }
            self.t = t;
            if self.next_pod <= t {
                self.transitions(owner, t)?;
            }
            if self.next_trace <= t {
                self.trace_step();
            }
            if self.next_scrape <= t {
                self.scrape(t);
            }
            if self.next_sync <= t {
                self.sync(owner, t)?;
                if self.ask_stop && owner.call_method1("_c_stop", (self.stats(),))?.extract::<bool>()? {
                    self.end = t;
                    self.stopped = true;
                    break;
                }
            }
        }
        self.t = t;
        Ok(self.next_event())
    }

    /// Ask ``owner._c_stop`` after each sync whether the run ends there (``Cluster.run``'s ``stop``).
    fn ask_stop(&mut self) {
        self.ask_stop = true;
    }

    /// The run was ended early by ``_c_stop`` (``end`` is then when).
    #[getter]
    fn stopped(&self) -> bool {
        self.stopped
    }

    /// When the run ends (epoch s).
    #[getter]
    fn end(&self) -> f64 {
        self.end
    }

    /// `Cluster.bind`: the binder bound pod ``pid`` at ``t``; ``events``: its transitions (`Cluster._start_up`).
    fn bind(&mut self, owner: &Bound<'_, PyAny>, pid: usize, t: f64, events: Vec<(f64, u8)>) -> PyResult<f64> {
        self.catch_up(t);
        let pod = &mut self.all[pid];
        pod.bound_at = t;
        pod.events = events;
        pod.next_ev = 0;
        self.apply_events(pid, t);
        if self.ordered_ready {
            self.reconcile(owner, t)?;
        } else {
            self.recount();
        }
        Ok(self.next_event())
    }

    /// `Cluster.evict`: pod ``pid``'s node was drained at ``t``.
    fn evict(&mut self, owner: &Bound<'_, PyAny>, pid: usize, t: f64) -> PyResult<f64> {
        self.catch_up(t);
        self.remove(owner, pid)?;
        self.reconcile(owner, t)?;
        Ok(self.next_event())
    }

    /// What ``SimPrediction.summary`` reads, taken: (times, observed, point, high, syncs per reason); None without
    /// ``spec.prediction``.
    #[allow(clippy::type_complexity)]
    fn take_prediction(&mut self) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<(&'static str, i64)>)> {
        self.prediction.as_mut().map(|p| (std::mem::take(&mut p.times), std::mem::take(&mut p.observed),
                                          std::mem::take(&mut p.point), std::mem::take(&mut p.high),
                                          p.reasons.clone()))
    }

    /// What ``SourceRecord`` counts of ``spec.saturation``: (syncs per reason, active syncs, episodes); None
    /// without it.
    fn saturation_record(&self) -> Option<(Vec<(&'static str, i64)>, i64, i64)> {
        self.saturation_record.as_ref().map(|r| (r.reasons.clone(), r.active, r.episodes))
    }

    /// `Cluster.finish`: integrate to ``end`` and close an open overload episode.
    fn finish(&mut self) {
        self.catch_up(self.end);
        self.end_episode(self.end);
    }

    /// Pod ``pid`` now: (bound at, Ready since (inf: never), bound, Running, the app up, Ready).
    fn pod_state(&self, pid: usize) -> (f64, f64, bool, bool, bool, bool) {
        let p = &self.all[pid];
        (p.bound_at, p.ready_at, p.bound, p.running, p.app_up, p.ready)
    }

    /// The live pods' ids, in the workload's order.
    fn pod_ids(&self) -> Vec<usize> {
        self.pods.clone()
    }

    /// How far the run has come (epoch s).
    #[getter]
    fn t(&self) -> f64 {
        self.t
    }

    /// The pods that exist now (``len(Cluster.pods)``).
    #[getter]
    fn n_live(&self) -> i64 {
        self.n_live
    }

    /// The target's replicas now.
    #[getter]
    fn spec_replicas(&self) -> i64 {
        self.spec_replicas
    }

    /// (pod-seconds, Ready pod-seconds, requests, unserved requests, overloaded seconds, CPU millicore-seconds,
    /// Running pod-seconds), as `Cluster.stats`.
    fn stats(&self) -> (f64, f64, f64, f64, f64, f64, f64) {
        let s = &self.stats;
        (s.pod_seconds, s.ready_pod_seconds, s.requested_requests, s.unserved_requests, s.overloaded_seconds,
         s.cpu_millicore_seconds, s.running_pod_seconds)
    }

    /// The overload episodes: (start, seconds, reaction seconds or None).
    fn episodes(&self) -> Vec<(f64, f64, Option<f64>)> {
        self.episodes.clone()
    }

    /// (time, current replicas, desired replicas) of each rescale.
    fn scale_events(&self) -> Vec<(f64, i64, i64)> {
        self.scale_events.clone()
    }

    #[getter]
    fn failed_syncs(&self) -> i64 {
        self.failed_syncs
    }

    /// Syncs per kind of decider, in the order each first decided.
    fn decided_by(&self) -> Vec<(String, i64)> {
        self.decided_by.clone()
    }

    /// (minute, unserved requests) for each minute that had some, in order.
    fn unserved_by_minute(&self) -> Vec<(i64, f64)> {
        self.unserved_by_minute.clone()
    }

    /// The whole timeline's rows (``Cluster._record``'s tuples, timeline.csv's columns), or None when not kept;
    /// handed over (the actor keeps none of them after).
    fn take_rows<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Vec<Bound<'py, pyo3::types::PyTuple>>>> {
        let full = match self.full.as_mut() {
            None => return Ok(None),
            Some(f) => f,
        };
        let rows = std::mem::take(&mut full.rows);
        let full = self.full.as_ref().unwrap();
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let mut items: Vec<Bound<'py, PyAny>> = vec![obj(py, r.t)?, obj(py, r.load)?, obj(py, r.current)?,
                                                         obj(py, r.ready)?, obj(py, r.desired)?, obj(py, r.pre)?];
            for (v, target) in r.values.iter().zip(&full.targets) {
                items.push(obj(py, *v)?);
                items.push(obj(py, *target)?);
            }
            items.extend([obj(py, r.unready)?, obj(py, r.missing)?, obj(py, r.capacity)?, obj(py, r.unserved)?,
                          obj(py, r.changed.as_str())?, obj(py, r.error.as_deref().unwrap_or(""))?,
                          obj(py, self.min_replicas)?, obj(py, self.max_replicas)?, obj(py, "")?]);
            out.push(pyo3::types::PyTuple::new(py, items)?);
        }
        Ok(Some(out))
    }

    /// The summary timeline: (current replicas, desired replicas, each metric's values; NaN: none), a value a sync;
    /// handed over (the actor keeps none of it after).
    fn take_timeline(&mut self) -> (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) {
        (std::mem::take(&mut self.tl_current), std::mem::take(&mut self.tl_desired),
         std::mem::take(&mut self.tl_values))
    }
}

impl Workload {
    // ------------------------------------------------------------------------------------------------ pods
    fn pod_name(&mut self) -> String {
        if self.statefulset {
            return format!("{}-{}", self.target_name, self.pods.len());
        }
        self.counter += 1;
        format!("{}-{:05}", self.target_name, self.counter)
    }

    /// `Cluster._add_pod`.
    fn add_pod(&mut self, owner: &Bound<'_, PyAny>, t: f64, initial: bool) -> PyResult<()> {
        let name = self.pod_name();
        let pid = self.all.len();
        let (weight, f0): (f64, f64) = owner.call_method1("_c_draw", (pid, name.as_str(), t))?.extract()?;
        self.all.push(SimPod {
            name, created: t, bound_at: INF, weight, events: vec![], next_ev: 0, bound: false, running: false,
            app_up: false, ready: false, boosting: false, steady_since: INF, cpu: 0.0, served: 0.0, group: None,
            g_cpu: 0.0, g_served: 0.0, prev_t: None, prev_cpu: 0.0, prev_served: 0.0, ready_at: INF,
        });
        self.pods.push(pid);
        self.starting.push(pid);
        if self.has_binder && !initial {
            owner.call_method1("_c_created", (pid, t))?;
            return Ok(());
        }
        let origin = if initial { t - 86400.0 } else { t };
        let bound_at = origin + self.scheduling_seconds * f0;
        let events: Vec<(f64, u8)> = owner.call_method1("_c_start_up", (pid, bound_at))?.extract()?;
        let pod = &mut self.all[pid];
        pod.bound_at = bound_at;
        pod.events = events;
        self.apply_events(pid, t);
        Ok(())
    }

    /// `Cluster._apply_events`.
    fn apply_events(&mut self, pid: usize, t: f64) {
        let boost = self.boost;
        let pod = &mut self.all[pid];
        while pod.has_events() && pod.events[pod.next_ev].0 <= t {
            let (when, kind) = pod.events[pod.next_ev];
            pod.next_ev += 1;
            match kind {
                BOUND => pod.bound = true,
                RUNNING => {
                    pod.running = true;
                    pod.boosting = boost > 0.0;
                }
                APP => pod.app_up = true,
                READY => {
                    pod.ready = true;
                    pod.ready_at = when;
                }
                BOOST_END => pod.boosting = false,
                _ => {}
            }
        }
        if !pod.has_events() && pod.bound {
            self.make_steady(pid, t);
        }
    }

    /// `Cluster._make_steady`.
    fn make_steady(&mut self, pid: usize, t: f64) {
        let weight = self.all[pid].weight;
        let gi = match self.by_weight.get(&weight.to_bits()) {
            Some(&g) => g,
            None => {
                let g = self.groups.len();
                self.groups.push(Group { weight, count: 0, cpu: 0.0, served: 0.0, sample: None });
                self.order.push(g);
                self.by_weight.insert(weight.to_bits(), g);
                g
            }
        };
        let group = &mut self.groups[gi];
        group.count += 1;
        let pod = &mut self.all[pid];
        pod.steady_since = t;
        pod.group = Some(gi);
        pod.g_cpu = group.cpu;
        pod.g_served = group.served;
        if let Some(i) = self.starting.iter().position(|&p| p == pid) {
            self.starting.remove(i);
        }
    }

    /// `Cluster._remove`.
    fn remove(&mut self, owner: &Bound<'_, PyAny>, pid: usize) -> PyResult<()> {
        if let Some(i) = self.pods.iter().position(|&p| p == pid) {
            self.pods.remove(i);
        }
        self.samples_stale = true;
        owner.call_method1("_c_removed", (pid,))?;
        match self.all[pid].group {
            None => {
                if let Some(i) = self.starting.iter().position(|&p| p == pid) {
                    self.starting.remove(i);
                }
            }
            Some(gi) => {
                let g = &mut self.groups[gi];
                g.count -= 1;
                if g.count == 0 {
                    self.by_weight.remove(&g.weight.to_bits());
                    if let Some(i) = self.order.iter().position(|&x| x == gi) {
                        self.order.remove(i);
                    }
                }
            }
        }
        Ok(())
    }

    /// `Cluster._reconcile`: the workload controller.
    fn reconcile(&mut self, owner: &Bound<'_, PyAny>, t: f64) -> PyResult<()> {
        let want = self.spec_replicas.max(0) as usize;
        if self.pods.len() > want {
            let extra = self.pods.len() - want;
            let victims: Vec<usize> = if self.statefulset {
                self.pods[self.pods.len() - extra..].to_vec()
            } else {
                let mut ranked = self.pods.clone();
                let all = &self.all;
                ranked.sort_by(|&a, &b| {
                    let (p, q) = (&all[a], &all[b]);
                    (p.bound, p.running, p.ready).cmp(&(q.bound, q.running, q.ready))
                        .then_with(|| (-p.ready_at).partial_cmp(&-q.ready_at).unwrap_or(std::cmp::Ordering::Equal))
                        .then_with(|| (-p.created).partial_cmp(&-q.created).unwrap_or(std::cmp::Ordering::Equal))
                });
                ranked.truncate(extra);
                ranked
            };
            for pid in victims {
                self.remove(owner, pid)?;
            }
        }
        while self.pods.len() < want {
            if self.ordered_ready && !self.pods.iter().all(|&p| self.all[p].running && self.all[p].ready) {
                break;
            }
            self.add_pod(owner, t, false)?;
        }
        self.recount();
        Ok(())
    }

    /// `Cluster._recount` (and each pod's `_core_pod`).
    fn recount(&mut self) {
        let (mut running, mut ready, mut serving, mut w_ready) = (0, 0, 0, 0.0f64);
        let mut core = Vec::with_capacity(self.pods.len());
        for &pid in &self.pods {
            let p = &self.all[pid];
            running += p.running as i64;
            ready += p.ready as i64;
            serving += (p.ready && p.app_up) as i64;
            if p.ready {
                w_ready += p.weight;
            }
            let start = if p.bound { Some(p.bound_at) } else { None };
            core.push(Pod {
                name: p.name.clone(),
                phase: if p.running { "Running".into() } else { "Pending".into() },
                deleted: false,
                start_time: start,
                ready: if p.bound { Some(p.ready) } else { None },
                ready_unknown: false,
                ready_transition_time: if p.ready { p.ready_at } else { start.unwrap_or(ZERO_TIME) },
                request: self.request,
            });
        }
        self.n_live = self.pods.len() as i64;
        self.n_running = running;
        self.n_ready = ready;
        self.n_serving = serving;
        self.w_ready = w_ready;
        self.core_pods = core;
        let mut next = INF;
        for &pid in &self.starting {
            let p = &self.all[pid];
            if p.has_events() {
                next = pymin(next, p.events[p.next_ev].0);
            }
        }
        self.next_pod = next;
    }

    // ------------------------------------------------------------------------------------------------ main loop
    /// `Cluster._catch_up`.
    fn catch_up(&mut self, t: f64) {
        let t = pymin(t, self.end);
        if t > self.t {
            self.advance(self.t, t);
            self.t = t;
        }
    }

    /// `Cluster._advance`: integrate CPU and served requests over [a, b).
    fn advance(&mut self, a: f64, b: f64) {
        let dt = b - a;
        let (demand, w_ready, cap, k, base, limit) = (self.rps, self.w_ready, self.cap, self.k_cpu, self.base_cpu,
                                                      self.limit);
        let per_w = if w_ready > 0.0 { demand / w_ready } else { 0.0 };
        let (mut served_total, mut cpu_total) = (0.0f64, 0.0f64);
        for &gi in &self.order {
            let g = &mut self.groups[gi];
            let mut served = per_w * g.weight;
            if served > cap {
                served = cap;
            }
            let mut cpu = base + k * served;
            if cpu > limit {
                cpu = limit;
            }
            g.cpu += cpu * dt;
            g.served += served * dt;
            served_total += served * g.count as f64;
            cpu_total += cpu * g.count as f64;
        }
        for &pid in &self.starting {
            let pod = &mut self.all[pid];
            if pod.running {
                let served = if pod.ready && pod.app_up { pymin(per_w * pod.weight, cap) } else { 0.0 };
                let cpu = pymin(base + (if pod.boosting { self.boost } else { 0.0 }) + k * served, limit);
                pod.cpu += cpu * dt;
                pod.served += served * dt;
                served_total += served;
                cpu_total += cpu;
            }
        }
        if a >= self.t0 {
            self.account(a, dt, demand, served_total, cpu_total);
        }
    }

    /// `Cluster._account`.
    fn account(&mut self, a: f64, dt: f64, demand: f64, served: f64, cpu: f64) {
        let s = &mut self.stats;
        s.pod_seconds += self.n_live as f64 * dt;
        s.ready_pod_seconds += self.n_ready as f64 * dt;
        s.running_pod_seconds += self.n_running as f64 * dt;
        s.cpu_millicore_seconds += cpu * dt;
        s.requested_requests += demand * dt;
        let unserved = demand - served;
        if unserved > 1e-12 * demand {
            s.unserved_requests += unserved * dt;
            if let Some(f) = self.full.as_mut() {
                f.unserved_cum += unserved * dt;
            }
            self.unserved_minutes(a, dt, unserved);
        }
        if demand > self.n_serving as f64 * self.cap * (1.0 + 1e-12) {
            self.stats.overloaded_seconds += dt;
            if self.episode_start.is_none() {
                self.episode_start = Some(a);
                self.episode_reaction = None;
            }
        } else if self.episode_start.is_some() {
            self.end_episode(a);
        }
    }

    /// `Cluster._unserved_minutes` with `pyhpa.simulate.timeline.minute_spans`.
    fn unserved_minutes(&mut self, a: f64, dt: f64, unserved: f64) {
        let (t0, b) = (self.t0, a + dt);
        let mut a = a;
        let mut k = py_floordiv(a - t0, 60.0) as i64;
        while a < b {
            let edge = pymin(b, t0 + 60.0 * (k + 1) as f64);
            let add = unserved * (edge - a);
            match self.unserved_by_minute.last_mut() {
                Some((last, v)) if *last == k => *v += add,
                _ => match self.unserved_by_minute.iter_mut().find(|(m, _)| *m == k) {
                    Some((_, v)) => *v += add,
                    None => self.unserved_by_minute.push((k, 0.0 + add)),
                },
            }
            a = edge;
            k += 1;
        }
    }

    fn end_episode(&mut self, t: f64) {
        if let Some(start) = self.episode_start.take() {
            self.episodes.push((start, t - start, self.episode_reaction));
        }
    }

    fn trace_step(&mut self) {
        self.trace_i += 1;
        let i = self.trace_i;
        self.rps = self.rps_values[i];
        self.next_trace = if i + 1 < self.times.len() { self.times[i + 1] } else { INF };
    }

    /// `Cluster._transitions`.
    fn transitions(&mut self, owner: &Bound<'_, PyAny>, t: f64) -> PyResult<()> {
        for pid in self.starting.clone() {
            let p = &self.all[pid];
            if p.has_events() && p.events[p.next_ev].0 <= t {
                self.apply_events(pid, t);
            }
        }
        if self.ordered_ready {
            self.reconcile(owner, t)
        } else {
            self.recount();
            Ok(())
        }
    }

    // ------------------------------------------------------------------------------------------------ metrics-server
    /// `Cluster._scrape`.
    fn scrape(&mut self, t: f64) {
        self.scrape_k += 1;
        self.next_scrape = self.t0 + self.scrape_offset + self.scrape_k as f64 * self.resolution;
        let per_w = if self.w_ready > 0.0 { self.rps / self.w_ready } else { 0.0 };
        let mut found: Vec<(usize, SampleSet)> = Vec::with_capacity(self.pods.len());
        for i in 0..self.pods.len() {
            let pid = self.pods[i];
            if !self.all[pid].running {
                continue;
            }
            let (cpu, served) = self.totals(pid);
            if let Some(prev) = self.all[pid].prev_t {
                let s = self.pod_sample(pid, t, prev, cpu, served, per_w);
                found.push((pid, s));
            }
            let pod = &mut self.all[pid];
            pod.prev_t = Some(t);
            pod.prev_cpu = cpu;
            pod.prev_served = served;
        }
        // the metrics APIs answer a pod per name, as ``Cluster._metric_samples``' dicts: where two pods share one
        // (a StatefulSet's ordinal given again), the first's place and the last's sample
        let mut keep: Vec<usize> = Vec::with_capacity(found.len());
        if self.statefulset {
            let mut at: HashMap<&str, usize> = HashMap::with_capacity(found.len());
            for (i, (pid, _)) in found.iter().enumerate() {
                match at.get(self.all[*pid].name.as_str()) {
                    Some(&j) => keep[j] = i,
                    None => {
                        at.insert(self.all[*pid].name.as_str(), keep.len());
                        keep.push(i);
                    }
                }
            }
        } else {
            keep.extend(0..found.len());
        }
        for v in 0..self.views.len() {
            let kind = self.views[v].kind;
            self.sample_errors[v] = 1;
            self.samples[v] = if found.is_empty() {
                None
            } else {
                let ids: Vec<usize> = keep.iter().map(|&i| found[i].0).collect();
                let list = keep.iter().map(|&i| {
                    let (p, s) = &found[i];
                    let sample = match kind {
                        Kind::Cpu => s.cpu.unwrap(),
                        Kind::Memory => s.memory.unwrap(),
                        Kind::Served => s.served.unwrap(),
                        Kind::Idle => Sample { value: 0, timestamp: t, window: s.window },
                    };
                    (self.all[*p].name.clone(), sample)
                }).collect();
                Some((ids, list))
            };
        }
        self.samples_stale = false;
    }

    /// `SimPod.totals`.
    fn totals(&self, pid: usize) -> (f64, f64) {
        let p = &self.all[pid];
        match p.group {
            None => (p.cpu, p.served),
            Some(gi) => {
                let g = &self.groups[gi];
                (p.cpu + g.cpu - p.g_cpu, p.served + g.served - p.g_served)
            }
        }
    }

    /// `Cluster._pod_sample`.
    fn pod_sample(&mut self, pid: usize, t: f64, prev: f64, cpu: f64, served: f64, per_w: f64) -> SampleSet {
        let p = &self.all[pid];
        let shared = p.group.is_some() && p.steady_since <= prev;
        if shared {
            if let Some((st, sp, out)) = self.groups[p.group.unwrap()].sample {
                if st == t && sp == prev {
                    return out;
                }
            }
        }
        let window = t - prev;
        let mut out = SampleSet { cpu: None, memory: None, served: None, window };
        if self.need_cpu {
            let nanocores = py_int((cpu - p.prev_cpu) / window * 1e6);
            out.cpu = Some(Sample { value: -((-nanocores).div_euclid(1_000_000)), timestamp: t, window });
        }
        if self.need_memory {
            let now_served = if p.ready && p.app_up { pymin(per_w * p.weight, self.cap) } else { 0.0 };
            let mib = self.mem_base + self.mem_per_rps * now_served;
            out.memory = Some(Sample { value: py_int(mib * 1048576.0) * 1000, timestamp: t, window });
        }
        if self.need_served {
            let v = ((served - p.prev_served) / window * 1000.0).round_ties_even() as i64;
            out.served = Some(Sample { value: v, timestamp: t, window });
        }
        if shared {
            let gi = p.group.unwrap();
            self.groups[gi].sample = Some((t, prev, out));
        }
        out
    }

    /// `Cluster._live_samples` (``_only``): the last scrape's samples of the pods that still exist.
    fn live_samples(&mut self) {
        if !self.samples_stale {
            return;
        }
        // by name, as ``Cluster._only``
        let live: std::collections::HashSet<&str> = self.pods.iter().map(|&p| self.all[p].name.as_str()).collect();
        for s in self.samples.iter_mut() {
            if let Some((ids, list)) = s.take() {
                let mut keep_ids = Vec::with_capacity(ids.len());
                let mut keep = Vec::with_capacity(ids.len());
                for (pid, item) in ids.into_iter().zip(list) {
                    if live.contains(item.0.as_str()) {
                        keep_ids.push(pid);
                        keep.push(item);
                    }
                }
                *s = if keep.is_empty() { None } else { Some((keep_ids, keep)) };
            }
        }
        self.samples_stale = false;
    }

    // ------------------------------------------------------------------------------------------------ HPA
    /// `Cluster._sync`: one HPA sync with `decide_upstream`, then rescale. With the whole timeline kept, a sync that
    /// stops before normalization or whose metrics failed is decided by the Python core instead (``_c_decide``:
    /// its texts, the error and the conditions, are the core's own), the others here, conditions included.
    fn sync(&mut self, owner: &Bound<'_, PyAny>, t: f64) -> PyResult<()> {
        self.sync_k += 1;
        self.next_sync = self.t0 + self.sync_k as f64 * self.sync_period;
        self.live_samples();
        let extras = Extras { prediction: self.forecast(owner, t)?, saturation: self.saturation };
        let samples: Vec<Option<&[(String, Sample)]>> =
            self.samples.iter().map(|s| s.as_ref().map(|(_, l)| l.as_slice())).collect();
        let current = self.spec_replicas;
        let before = self.full.as_ref().map(|_| (self.recommendations.clone(), self.scale_up_events.clone(),
                                                  self.scale_down_events.clone()));
        let d = decide_upstream(current, self.min_replicas, self.max_replicas, self.behavior.as_ref(), &self.metrics,
                                &self.core_pods, &samples, self.recommendations.take(),
                                std::mem::take(&mut self.scale_up_events),
                                std::mem::take(&mut self.scale_down_events), t, &self.settings, &extras);
        if let (Some(r), Some(x)) = (self.saturation_record.as_mut(), self.saturation.as_ref()) {
            let active = d.saturation == Some(crate::decide::SaturationReason::Pinned);
            if let Some(reason) = d.saturation {
                count(&mut r.reasons, reason.name(x.enforce));
            }
            if active {
                r.active += 1;
                r.episodes += !r.was_active as i64;
            }
            r.was_active = active;
        }
        let failed = d.proposals.iter().any(|p| p.is_none());
        let by_core = self.full.is_some() && (failed || d.normalized.is_none());
        let (desired, kind, values) = if by_core {
            let (recs, ups, downs) = before.unwrap();
            self.core_sync(owner, t, current, recs, ups, downs)?
        } else {
            self.recommendations = Some(d.memory.recommendations);
            self.scale_up_events = d.memory.scale_up_events;
            self.scale_down_events = d.memory.scale_down_events;
            if failed {
                self.failed_syncs += 1;
            }
            let full = d.proposals.len() == self.views.len();
            let values: Vec<Option<f64>> = self.views.iter().enumerate().map(|(i, view)| {
                match if full { d.proposals[i] } else { None } {
                    None => None,
                    Some(p) => if view.utilization { p.utilization.map(|u| u as f64) } else {
                        Some(p.raw_milli as f64 * view.factor)
                    },
                }
            }).collect();
            if let (Some(f), Some((able, limited, limit_last, pre))) = (self.full.as_mut(), d.normalized) {
                f.cond("AbleToScale", "True", "SucceededGetScale");
                f.cond("ScalingActive", "True", "ValidMetricFound");
                f.cond("AbleToScale", "True", able.reason());
                f.cond("ScalingLimited", if limit_last { "True" } else { "False" }, limited.reason());
                if d.desired != current {
                    if f.scale_to_zero {
                        f.cond("ScaledToZero", "False", "NotScaledToZero");
                    } else if let Some(i) = f.conditions.iter().position(|c| c.0 == "ScaledToZero") {
                        f.conditions.remove(i);
                    }
                    f.cond("AbleToScale", "True", "SucceededRescale");
                }
                let first = d.proposals.iter().flatten().next();
                let changed = f.changed();
                let unserved = f.unserved_cum - f.unserved_at_sync;
                f.unserved_at_sync = f.unserved_cum;
                f.rows.push(Row { t, load: self.rps, current, ready: self.n_ready, desired: d.desired, pre: Some(pre),
                                  values: values.clone(), unready: first.map(|p| p.unready),
                                  missing: first.map(|p| p.missing), capacity: self.n_serving as f64 * self.cap,
                                  unserved, changed, error: None });
            }
            (d.desired, d.decider.kind().to_string(), values)
        };
        match self.decided_by.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, n)) => *n += 1,
            None => self.decided_by.push((kind, 1)),
        }
        if self.full.is_none() {
            self.tl_current.push(current as f64);
            self.tl_desired.push(desired as f64);
            for (i, v) in values.iter().enumerate() {
                self.tl_values[i].push(v.unwrap_or(f64::NAN));
            }
        }
        if desired != current {
            if desired > self.max_pods {
                owner.call_method1("_c_too_many", (t, desired))?;
            }
            self.scale_events.push((t, current, desired));
            if let (true, Some(start), None) = (desired > current, self.episode_start, self.episode_reaction) {
                self.episode_reaction = Some(t - start);
            }
            self.spec_replicas = desired;
            self.reconcile(owner, t)?;
        }
        Ok(())
    }

    /// `SimPrediction.step` (``ForecastLoop.learn`` then ``forecast``): the predicted metric's newest total learnt,
    /// then the forecast of [t, t + lead] as the core receives it; None without ``spec.prediction``.
    fn forecast(&mut self, owner: &Bound<'_, PyAny>, t: f64) -> PyResult<Option<PredictionIn>> {
        let p = match self.prediction.as_mut() {
            None => return Ok(None),
            Some(p) => p,
        };
        let mut observed = f64::NAN;
        if let Some(Some((_, list))) = self.samples.get(p.metric) {
            if let Some((_, first)) = list.first() {
                let total = list.iter().map(|(_, s)| s.value).sum::<i64>() as f64;
                observed = total * p.factor;
                let seen = first.timestamp;
                if seen > p.last_seen {
                    p.predictor.observe(seen, total);
                    p.last_seen = seen;
                }
            }
        }
        let py = owner.py();
        let mut fit = |times: &[f64], values: &[f64], now: f64| -> PyResult<(String, Option<Model>)> {
            let (reason, m): (String, Option<PyFitModel>) =
                owner.call_method1("_c_refit", (now, doubles(py, times), doubles(py, values)))?.extract()?;
            Ok((reason, m.map(Model::from_python)))
        };
        let f = p.predictor.forecast(t, &mut fit)?;
        let scaled = |x: Option<f64>| x.map_or(f64::NAN, |v| v * p.factor);
        p.times.push(t);
        p.observed.push(observed);
        p.point.push(scaled(f.point));
        p.high.push(scaled(f.high));
        count(&mut p.reasons, f.reason);
        let (total_milli, expected_milli) = f.core();
        Ok(Some(PredictionIn { metric: p.metric, enforce: p.enforce, total_milli, expected_milli }))
    }

    /// A sync decided by the Python core (``CompiledCluster._c_decide``) on this workload's pods and samples and the
    /// memory before it: its row of the timeline, its memory and conditions kept; (desired, decider kind, values).
    fn core_sync(&mut self, owner: &Bound<'_, PyAny>, t: f64, current: i64, recs: Option<Vec<(f64, i64)>>,
                 ups: Vec<(f64, i64)>, downs: Vec<(f64, i64)>) -> PyResult<(i64, String, Vec<Option<f64>>)> {
        let pods: Vec<(String, bool, Option<f64>, Option<bool>, f64)> = self.core_pods.iter()
            .map(|p| (p.name.clone(), p.phase == "Running", p.start_time, p.ready, p.ready_transition_time)).collect();
        let samples: Vec<(u8, Vec<(String, i64, f64, f64)>)> = self.samples.iter().zip(&self.sample_errors)
            .map(|(s, &e)| match s {
                None => (e, vec![]),
                Some((_, l)) => (2, l.iter().map(|(n, x)| (n.clone(), x.value, x.timestamp, x.window)).collect()),
            }).collect();
        let f = self.full.as_ref().unwrap();
        type Out = (i64, Option<Vec<(f64, i64)>>, Vec<(f64, i64)>, Vec<(f64, i64)>, Vec<Option<f64>>, String,
                    Option<i64>, Option<i64>, Option<i64>, Option<String>, Vec<(String, String, String)>);
        let out: Out = owner.call_method1("_c_decide", (t, current, self.n_live, pods, samples, recs, ups, downs,
                                                         f.conditions.clone()))?.extract()?;
        let (desired, recs, ups, downs, values, kind, pre, unready, missing, error, conditions) = out;
        self.recommendations = recs;
        self.scale_up_events = ups;
        self.scale_down_events = downs;
        if error.is_some() {
            self.failed_syncs += 1;
        }
        let (ready, load, capacity) = (self.n_ready, self.rps, self.n_serving as f64 * self.cap);
        let f = self.full.as_mut().unwrap();
        f.conditions = conditions;
        let changed = f.changed();
        let unserved = f.unserved_cum - f.unserved_at_sync;
        f.unserved_at_sync = f.unserved_cum;
        f.rows.push(Row { t, load, current, ready, desired, pre, values: values.clone(), unready, missing, capacity,
                          unserved, changed, error });
        Ok((desired, kind, values))
    }
}
