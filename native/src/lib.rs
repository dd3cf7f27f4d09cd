//! pyhpa's compiled path (`pyhpa.simulate.rustcore`): the parts of the HPA decision a simulated workload runs at every sync,
//! for the simulators (`pyhpa simulate`, `tune`, the fleet), where the Python core's speed is the limit.
//!
//! The Python core (`pyhpa.core`) is the reference: every function here follows one of it by name, and the tests
//! run both on random inputs and compare (`tests/test_native.py`). Nothing here decides anything the core does not.

use pyo3::prelude::*;

pub mod calculator;
pub mod decide;
pub mod forecast;
pub mod normalize;
pub mod workload;

#[pymodule]
fn rustcore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalize::py_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(calculator::py_resource_utilization_replicas, m)?)?;
    m.add_function(wrap_pyfunction!(calculator::py_plain_replicas, m)?)?;
    m.add_function(wrap_pyfunction!(decide::py_decide_upstream, m)?)?;
    m.add_function(wrap_pyfunction!(time_parts, m)?)?;
    m.add_class::<workload::Workload>()?;
    m.add_class::<forecast::Forecaster>()?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

/// ``benchmarks/native.py``'s inputs run ``calls`` times inside the compiled code (no conversion from Python):
/// seconds a call of (normalize, resource_utilization_replicas, plain_replicas) — the compiled path's own floor.
#[pyfunction]
fn time_parts(calls: u32) -> (f64, f64, f64) {
    use std::hint::black_box;
    use std::time::Instant;
    let now = 1_700_000_000.0;
    // the WorldCup98 example's behavior, ten minutes of recommendations, two recent scale-ups
    let n = normalize::Behavior { up: normalize::Rules { window: Some(0), select: normalize::Select::Max, policies: vec![
            normalize::Policy { kind: normalize::PolicyKind::Percent, value: 100, period_seconds: 15 },
            normalize::Policy { kind: normalize::PolicyKind::Pods, value: 8, period_seconds: 15 }] },
                   down: normalize::Rules { window: Some(300), select: normalize::Select::Max, policies: vec![
            normalize::Policy { kind: normalize::PolicyKind::Percent, value: 10, period_seconds: 60 }] } };
    let memory = normalize::Memory {
        recommendations: (0..40).map(|k| (now - 15.0 * k as f64, 10 + (k % 3) as i64)).collect(),
        scale_up_events: vec![(now - 30.0, 2), (now - 200.0, 3)],
        scale_down_events: vec![],
    };
    let config = normalize::Config { downscale_stabilization_window_seconds: 300.0, scale_up_limit_factor: 2.0,
                                     scale_up_limit_minimum: 4.0 };
    let pods: Vec<calculator::Pod> = (0..12).map(|i| calculator::Pod {
        name: format!("web-{i}"), phase: "Running".into(), deleted: false,
        start_time: Some(now - if i < 2 { 100.0 } else { 3600.0 }), ready: Some(true), ready_unknown: false,
        ready_transition_time: now - if i < 2 { 70.0 } else { 3500.0 }, request: 1000 }).collect();
    let samples: Vec<(String, calculator::Sample)> = (0..12).map(|i| (format!("web-{i}"), calculator::Sample {
        value: 600 + 17 * i, timestamp: now - 5.0, window: 30.0 })).collect();
    let time = |f: &dyn Fn()| {
        let t0 = Instant::now();
        for _ in 0..calls {
            f();
        }
        t0.elapsed().as_secs_f64() / calls.max(1) as f64
    };
    let a = time(&|| { black_box(normalize::normalize(12, 14, 4, 60, Some(&n), &memory, now, &config)); });
    let b = time(&|| { black_box(calculator::resource_utilization_replicas(&pods, &samples, 12, 0.1, 0.1, now, 300.0,
                                                                          30.0, 70, true)).ok(); });
    let c = time(&|| { black_box(calculator::plain_replicas(&pods, &samples, 12, 0.1, 0.1, now, 300.0, 30.0, 800,
                                                           false)).ok(); });
    (a, b, c)
}
