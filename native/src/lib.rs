//! pyhpa's compiled path (`pyhpa.simulate.rustcore`): the parts of the HPA decision a simulated workload runs at every sync,
//! for the simulators (`pyhpa simulate`, `tune`, the fleet), where the Python core's speed is the limit.
//!
//! The Python core (`pyhpa.core`) is the reference: every function here follows one of it by name, and the tests
//! run both on random inputs and compare (`tests/test_native.py`). Nothing here decides anything the core does not.

use pyo3::prelude::*;

pub mod calculator;
pub mod normalize;

#[pymodule]
fn rustcore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalize::py_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(calculator::py_resource_utilization_replicas, m)?)?;
    m.add_function(wrap_pyfunction!(calculator::py_plain_replicas, m)?)?;
    m.add("VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
