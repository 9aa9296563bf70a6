//! `ddflow._core.Engine`: a running dataflow, and the bridge for Python callbacks.
//!
//! Every long call (`push`, `step`, `run_until`, `run`) releases the GIL; user functions
//! re-acquire it inside [`PyCallbacks::call`]. A Python exception raised by a user function
//! is kept aside and re-raised as itself (with a note naming the operator) when the engine
//! call returns.

use crate::capture::{PyCaptureBatch, PyCaptureState};
use crate::convert::{
    batch_diffs, batch_times, bools_from_py, column_from_py, column_to_py, i64s_from_py,
    rows_from_py, time_from_list, times_to_py,
};
use crate::errors::{to_py_err, IntoPyResult};
use ddflow_core::engine::column::{Callbacks, Column, Payload, Reply};
use ddflow_core::engine::plan::Plan;
use ddflow_core::{Error, Result as CoreResult};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use std::sync::{Arc, Mutex, MutexGuard};

/// Callbacks into Python through one dispatcher function.
struct PyCallbacks {
    dispatcher: Py<PyAny>,
    pending: Mutex<Option<PyErr>>,
}

fn columns_dict<'py>(
    py: Python<'py>,
    names: &[String],
    cols: &[Column],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (i, c) in cols.iter().enumerate() {
        let name = names
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("column_{i}"));
        d.set_item(name, column_to_py(py, c)?)?;
    }
    Ok(d)
}

fn payload_to_py<'py>(py: Python<'py>, payload: Payload) -> PyResult<Bound<'py, PyAny>> {
    Ok(match payload {
        Payload::Columns { names, columns } => columns_dict(py, &names, &columns)?.into_any(),
        Payload::Inspect {
            names,
            columns,
            times,
            time_dims,
            diffs,
        } => {
            let d = PyDict::new(py);
            d.set_item("columns", columns_dict(py, &names, &columns)?)?;
            d.set_item("time", times_to_py(py, &times, time_dims, false)?)?;
            d.set_item("diff", numpy::PyArray1::from_vec(py, diffs))?;
            d.into_any()
        }
        Payload::Reduce {
            key_names,
            keys,
            offsets,
            val_names,
            values,
            counts,
        } => {
            let d = PyDict::new(py);
            d.set_item("keys", columns_dict(py, &key_names, &keys)?)?;
            d.set_item("offsets", numpy::PyArray1::from_vec(py, offsets))?;
            d.set_item("values", columns_dict(py, &val_names, &values)?)?;
            d.set_item("counts", numpy::PyArray1::from_vec(py, counts))?;
            d.into_any()
        }
        Payload::Counts(c) => numpy::PyArray1::from_vec(py, c).into_any(),
    })
}

fn reply_from_py(kind: &str, label: &str, obj: &Bound<'_, PyAny>) -> PyResult<Reply> {
    match kind {
        "filter_py" => Ok(Reply::Mask(bools_from_py(
            obj,
            &format!("{label}: filter result"),
        )?)),
        "threshold_py" => Ok(Reply::Counts(i64s_from_py(
            obj,
            &format!("{label}: threshold result"),
        )?)),
        "inspect_py" => Ok(Reply::Unit),
        _ => {
            let d = obj.downcast::<PyDict>().map_err(|_| {
                to_py_err(Error::User(format!(
                    "{label}: function must return a dict of columns"
                )))
            })?;
            let mut columns = Vec::new();
            let mut row_index = None;
            let mut offsets = None;
            let mut counts = None;
            for (k, v) in d.iter() {
                let name: String = k.extract()?;
                match name.as_str() {
                    "__row__" => row_index = Some(i64s_from_py(&v, &format!("{label}: __row__"))?),
                    "__offsets__" if kind == "reduce_py" => {
                        offsets = Some(i64s_from_py(&v, &format!("{label}: offsets"))?)
                    }
                    "__count__" if kind == "reduce_py" => {
                        counts = Some(i64s_from_py(&v, &format!("{label}: counts"))?)
                    }
                    _ => columns.push(column_from_py(&v, &format!("{label}: column {name:?}"))?),
                }
            }
            Ok(Reply::Columns {
                columns,
                row_index,
                offsets,
                counts,
            })
        }
    }
}

impl Callbacks for PyCallbacks {
    fn call(&self, func: u64, kind: &str, label: &str, payload: Payload) -> CoreResult<Reply> {
        Python::with_gil(|py| {
            let result = (|| -> PyResult<Reply> {
                let p = payload_to_py(py, payload)?;
                let r = self.dispatcher.bind(py).call1((func, kind, p))?;
                reply_from_py(kind, label, &r)
            })();
            result.map_err(|e| {
                let msg = e.to_string();
                // An ordinary exception is about the data: the engine makes the records that
                // cause it error updates. Anything else (KeyboardInterrupt, a callback calling
                // back into the running dataflow) stops the run and is re-raised as itself.
                let data = e.is_instance_of::<pyo3::exceptions::PyException>(py)
                    && !py
                        .import("ddflow.errors")
                        .and_then(|m| m.getattr("ReentrancyError"))
                        .is_ok_and(|cls| e.value(py).is_instance(&cls).unwrap_or(false));
                if data {
                    Error::User(format!("{label}: {msg}"))
                } else {
                    *self.pending.lock().expect("callback error slot") = Some(e);
                    Error::Internal(format!("{label}: {msg}"))
                }
            })
        })
    }
}

/// Passes run with the GIL released between checks for Ctrl-C.
const PASSES_PER_SLICE: usize = 256;

/// A running dataflow.
#[pyclass(name = "Engine", module = "ddflow._core")]
pub struct PyEngine {
    /// Shared with the string collector's registry of roots (`ddflow_core::string_gc`),
    /// which marks the strings the engine holds when it can lock it.
    engine: Arc<Mutex<ddflow_core::engine::Engine>>,
    callbacks: Arc<PyCallbacks>,
    time_dims: usize,
}

impl PyEngine {
    /// The engine, locked for the call (a collection that finds it locked is given up).
    fn eng(&self) -> MutexGuard<'_, ddflow_core::engine::Engine> {
        self.engine.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the engine with the GIL released and maps errors, re-raising a pending
    /// Python exception from a user function as itself.
    fn run<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut ddflow_core::engine::Engine) -> CoreResult<T> + Send,
    ) -> PyResult<T> {
        // A safe point: this thread holds no string ids yet.
        ddflow_core::string_gc::collect_if_due();
        let mut guard = self.eng();
        let engine = &mut *guard;
        self.callbacks.pending.lock().expect("slot").take();
        let r = crate::errors::without_gil_core(py, || f(engine));
        match r {
            Ok(v) => Ok(v),
            Err(e) => {
                if let Some(pyerr) = self.callbacks.pending.lock().expect("slot").take() {
                    let value = pyerr.value(py);
                    let note = match e.operator() {
                        Some(op) => format!("raised in ddflow operator {op}"),
                        None => "raised in ddflow a user function".to_string(),
                    };
                    let _ = value.call_method1("add_note", (note,));
                    return Err(pyerr);
                }
                Err(to_py_err(e))
            }
        }
    }
}

#[pymethods]
impl PyEngine {
    #[new]
    fn new(plan_json: &str, workers: usize, callback: Py<PyAny>) -> PyResult<Self> {
        let plan = Plan::from_json(plan_json).py()?;
        let time_dims = plan.time_dims;
        let callbacks = Arc::new(PyCallbacks {
            dispatcher: callback,
            pending: Mutex::new(None),
        });
        let engine = ddflow_core::engine::Engine::new(plan, workers, callbacks.clone()).py()?;
        let engine = Arc::new(Mutex::new(engine));
        ddflow_core::string_gc::register(&engine);
        Ok(PyEngine {
            engine,
            callbacks,
            time_dims,
        })
    }

    /// Adds updates to an input.
    fn push(
        &mut self,
        py: Python<'_>,
        input_node: usize,
        columns: Vec<Bound<'_, PyAny>>,
        times: Bound<'_, PyAny>,
        diffs: Bound<'_, PyAny>,
    ) -> PyResult<()> {
        // A safe point before the conversion interns the columns (see `run`).
        ddflow_core::string_gc::collect_if_due();
        let what = format!("input node {input_node}");
        let (dtypes, rows, n) = rows_from_py(&columns, &what)?;
        let times = batch_times(&times, n, self.time_dims, &what)?;
        let diffs = batch_diffs(&diffs, n, &format!("{what}: diffs"))?;
        self.run(py, move |e| {
            e.push_rows(input_node, dtypes, rows, times, diffs)
        })
    }

    /// Pushes an input's buffered single updates as they were buffered: `rows` a list of
    /// tuples of `width` Python ints (every column int64), `times` a list of tuples of
    /// non-negative ints (one per time coordinate), `diffs` a list of ints. A handful of
    /// updates costs no numpy arrays this way. Returns `False`, pushing nothing, at the first
    /// value that is not an int64 or time that is not the dataflow's shape: the caller then
    /// pushes the same buffer as arrays, which reports what is wrong.
    fn push_int_rows(
        &mut self,
        py: Python<'_>,
        input_node: usize,
        width: usize,
        rows: &Bound<'_, PyList>,
        times: &Bound<'_, PyList>,
        diffs: &Bound<'_, PyList>,
    ) -> PyResult<bool> {
        let n = rows.len();
        if times.len() != n || diffs.len() != n {
            return Ok(false);
        }
        let mut words = Vec::with_capacity(n * width);
        let mut take = |v: Bound<'_, PyAny>| match v.extract::<i64>() {
            Ok(v) => {
                words.push(v as u64);
                true
            }
            Err(_) => false,
        };
        for row in rows.iter() {
            // A row is a tuple (`update_at`'s fast path) or a list (its checked path).
            let ok = if let Ok(t) = row.downcast::<PyTuple>() {
                t.len() == width && t.iter().all(&mut take)
            } else if let Ok(l) = row.downcast::<PyList>() {
                l.len() == width && l.iter().all(&mut take)
            } else {
                false
            };
            if !ok {
                return Ok(false);
            }
        }
        let dims = self.time_dims;
        let mut ts = Vec::with_capacity(n);
        for t in times.iter() {
            let Ok(t) = t.downcast_into::<PyTuple>() else {
                return Ok(false);
            };
            if t.len() != dims {
                return Ok(false);
            }
            let mut coords = [0u64; ddflow_core::lattice::MAX_DIMS];
            for (c, v) in coords.iter_mut().zip(t.iter()) {
                match v.extract::<i64>() {
                    Ok(v) if v >= 0 => *c = v as u64,
                    _ => return Ok(false),
                }
            }
            ts.push(ddflow_core::lattice::Time(coords));
        }
        let mut ds = Vec::with_capacity(n);
        for d in diffs.iter() {
            let Ok(d) = d.extract::<i64>() else {
                return Ok(false);
            };
            ds.push(d);
        }
        let dtypes = vec![ddflow_core::encoding::DType::Int64; width];
        self.run(py, move |e| {
            e.push_rows(input_node, dtypes, words, ts.into(), ds)
        })?;
        Ok(true)
    }

    /// Advances an input's frontier.
    fn advance_input(&mut self, input_node: usize, time: Vec<i64>) -> PyResult<()> {
        let t = time_from_list(
            &time,
            self.time_dims,
            &format!("advance_to of input node {input_node}"),
        )?;
        self.eng().advance_input(input_node, t).py()
    }

    /// Closes an input.
    fn close_input(&mut self, input_node: usize) -> PyResult<()> {
        self.eng().close_input(input_node).py()
    }

    /// Sets the memory limit in bytes (`None`: no limit).
    #[pyo3(signature = (limit))]
    fn set_memory_limit(&mut self, limit: Option<usize>) {
        self.eng().set_memory_limit(limit);
    }

    /// The memory limit in bytes (`None`: no limit).
    fn memory_limit(&self) -> Option<usize> {
        self.eng().memory_limit()
    }

    /// Sets the directory cold trace batches are spilled to (`None`: the default).
    #[pyo3(signature = (dir))]
    fn set_spill_dir(&mut self, dir: Option<std::path::PathBuf>) {
        self.eng().set_spill_dir(dir);
    }

    /// Bytes of the engine's traces held in spill files.
    fn spilled_bytes(&self) -> usize {
        self.eng().spilled_bytes()
    }

    /// One scheduling pass; returns whether another pass may make progress.
    fn step(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |e| e.step())
    }

    /// Runs until no capture/probe frontier holds a time strictly less than `time`.
    /// Checks for Ctrl-C between slices of passes (the engine stays usable afterwards).
    fn run_until(&mut self, py: Python<'_>, time: Vec<i64>) -> PyResult<()> {
        let t = time_from_list(&time, self.time_dims, "run_until")?;
        while !self.run(py, move |e| e.run_until_bounded(t, PASSES_PER_SLICE))? {
            py.check_signals()?;
        }
        Ok(())
    }

    /// Runs until all inputs are closed and all work is done (checking for Ctrl-C).
    #[pyo3(name = "run")]
    fn run_py(&mut self, py: Python<'_>) -> PyResult<()> {
        while !self.run(py, |e| e.run_bounded(PASSES_PER_SLICE))? {
            py.check_signals()?;
        }
        Ok(())
    }

    /// The frontier at a node's inputs, as lists of outer time coordinates.
    fn frontier(&self, node: usize) -> PyResult<Vec<Vec<i64>>> {
        let f = self.eng().frontier(node).py()?;
        let mut v: Vec<Vec<i64>> = f
            .elements()
            .iter()
            .map(|t| t.0[..self.time_dims].iter().map(|&c| c as i64).collect())
            .collect();
        v.sort();
        Ok(v)
    }

    /// Takes captured updates: (columns, times (n, time_dims), diffs).
    fn capture_take<'py>(
        &mut self,
        py: Python<'py>,
        node: usize,
    ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        // The engine stays locked while the strings are read (no collection meanwhile).
        let mut g = self.eng();
        let c = g.capture_take(node).py()?;
        let cols = c
            .columns
            .iter()
            .map(|col| column_to_py(py, col))
            .collect::<PyResult<Vec<_>>>()?;
        Ok((
            PyList::new(py, cols)?,
            times_to_py(py, &c.times, self.time_dims, false)?,
            numpy::PyArray1::from_vec(py, c.diffs).into_any(),
        ))
    }

    /// Takes a capture's new updates into `state` and returns those its frontier completes,
    /// consolidated (`None` if there are none); see `CaptureState`.
    fn capture_poll<'py>(
        &mut self,
        py: Python<'py>,
        node: usize,
        mut state: PyRefMut<'py, PyCaptureState>,
    ) -> PyResult<Option<PyCaptureBatch>> {
        // The engine stays locked until `state` (a root itself) holds the updates.
        let mut g = self.eng();
        let (schema, updates) = g.capture_take_updates(node).py()?;
        let frontier = g.frontier(node).py()?;
        state.poll_with(py, schema, updates, &frontier)
    }

    /// Takes the error updates produced since the last call: a list of
    /// `(node, label, message, values, time, diff)` with `time` the outer coordinates
    /// followed by one iteration coordinate per `iterate` around the node.
    #[allow(clippy::type_complexity)]
    fn errors_take(&mut self) -> Vec<(usize, String, String, String, Vec<i64>, i64)> {
        let mut g = self.eng();
        let plan = g.plan();
        let dims: Vec<usize> = plan
            .nodes
            .iter()
            .map(|n| plan.time_dims + plan.scopes[n.scope].depth)
            .collect();
        let plan_labels: Vec<String> = plan.nodes.iter().map(|n| n.label.clone()).collect();
        g.errors_take()
            .into_iter()
            .map(|e| {
                (
                    e.node,
                    plan_labels.get(e.node).cloned().unwrap_or_default(),
                    e.message,
                    e.values,
                    e.time.0[..dims.get(e.node).copied().unwrap_or(self.time_dims)]
                        .iter()
                        .map(|&c| c as i64)
                        .collect(),
                    e.diff,
                )
            })
            .collect()
    }

    /// The operator log: one dict per operator invocation.
    fn log<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let g = self.eng();
        let plan = g.plan();
        let full_dims = |t: &ddflow_core::Time| -> Vec<i64> {
            let mut n = ddflow_core::lattice::MAX_DIMS;
            while n > self.time_dims && t.0[n - 1] == 0 {
                n -= 1;
            }
            t.0[..n].iter().map(|&c| c as i64).collect()
        };
        let entries = g.log();
        let list = PyList::empty(py);
        for e in entries {
            let d = PyDict::new(py);
            let node = &plan.nodes[e.node];
            d.set_item("node", e.node)?;
            d.set_item("label", &node.label)?;
            d.set_item("op", node.op_name())?;
            d.set_item("worker", e.worker)?;
            d.set_item(
                "lower",
                e.lower.elements().iter().map(full_dims).collect::<Vec<_>>(),
            )?;
            d.set_item(
                "upper",
                e.upper.elements().iter().map(full_dims).collect::<Vec<_>>(),
            )?;
            d.set_item("updates_in", e.updates_in)?;
            d.set_item("updates_out", e.updates_out)?;
            d.set_item("nanos", e.nanos)?;
            d.set_item("python", e.python)?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Heap bytes held by the engine's traces.
    fn heap_bytes(&self) -> usize {
        self.eng().heap_bytes()
    }

    /// Heap bytes per plan node: `(state, queued)` (traces and operator state; updates
    /// waiting at its inputs), summed over workers.
    fn node_heap_bytes(&self) -> Vec<(usize, usize)> {
        self.eng().node_heap_bytes()
    }

    /// The dtype names of a node's columns known so far (`None` where no data has shown
    /// one yet); a capture with no update yet reports these.
    fn column_dtypes(&self, node: usize) -> Vec<Option<&'static str>> {
        self.eng()
            .column_dtypes(node)
            .into_iter()
            .map(|d| d.map(|d| d.name()))
            .collect()
    }

    /// Number of scheduling passes run.
    fn passes(&self) -> u64 {
        self.eng().passes()
    }

    /// Enables or disables the operator log (on by default).
    fn set_logging(&mut self, on: bool) {
        self.eng().set_logging(on)
    }

    /// Attaches another dataflow's plan (with `import_trace` nodes naming this engine's
    /// arrangements); returns the offset of its node ids in this engine.
    fn attach(&mut self, plan_json: &str) -> PyResult<usize> {
        let plan = Plan::from_json(plan_json).py()?;
        self.eng().attach(plan).py()
    }

    /// A handle holding back compaction of a top-level arrangement's trace; returns its id.
    fn trace_handle(&mut self, node: usize) -> PyResult<usize> {
        self.eng().trace_handle(node).py()
    }

    /// Moves a trace handle's frontier forward.
    fn set_handle_frontier(&mut self, handle: usize, time: Vec<i64>) -> PyResult<()> {
        let t = time_from_list(&time, self.time_dims, "trace handle set_frontier")?;
        self.eng().set_handle_frontier(handle, t).py()
    }

    /// Releases a trace handle.
    fn close_handle(&mut self, handle: usize) -> PyResult<()> {
        self.eng().close_handle(handle).py()
    }

    /// Updates stored in an arrangement's trace (all workers).
    fn trace_len(&self, node: usize) -> PyResult<usize> {
        self.eng().trace_len(node).py()
    }
}

/// `_core._plan_round_trip(plan_json)`: the plan as the engine reads it and writes it back
/// (`Plan::from_json`, then `Plan::to_json`), so that tests can check that the Python builder
/// writes exactly what the serde plan types expect.
#[pyfunction]
fn _plan_round_trip(plan_json: &str) -> PyResult<String> {
    Ok(Plan::from_json(plan_json).py()?.to_json())
}

/// Registers the engine class and the plan round-trip test hook.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEngine>()?;
    m.add_function(wrap_pyfunction!(_plan_round_trip, m)?)
}
