//! `ddflow._core.CaptureState`: a capture's state, owned by Rust (see
//! [`ddflow_core::capture`]).
//!
//! The native engine feeds it without leaving Rust (`Engine.capture_poll`); any other engine
//! (a test double, a remote executor) feeds it numpy columns through `absorb`. Output leaves
//! as numpy arrays, string columns as their Arrow buffers `(offsets, utf8 bytes)`, so Python
//! builds pyarrow arrays without touching each value.
//!
//! A poll decodes nothing it does not have to: the newly completed updates come back as a
//! [`PyCaptureBatch`], which converts them only when unpacked (a capture without
//! subscribers drops it unread), and the history is read from the columns the core keeps.

use crate::convert::{
    column_from_py, coords_to_py, flat_times_to_py, i64s_from_py, rows_to_arrow_py, time_from_list,
    times_from_py, times_to_py, words_to_arrow_py,
};
use crate::errors::IntoPyResult;
use ddflow_core::capture::{CaptureMode, CaptureState};
use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{columns_to_rows, Schema};
use ddflow_core::string_gc::Frozen;
use ddflow_core::{Antichain, Time, Updates};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyIterator, PyList, PyTuple};
use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

/// A capture's pending updates and what it keeps of completed ones.
#[pyclass(name = "CaptureState", module = "ddflow._core")]
pub struct PyCaptureState {
    /// Shared with the string collector's registry of roots (`ddflow_core::string_gc`).
    inner: Arc<Mutex<CaptureState>>,
    width: usize,
    time_dims: usize,
}

impl PyCaptureState {
    /// The state, locked for the call (a collection that finds it locked is given up).
    fn st(&self) -> MutexGuard<'_, CaptureState> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds raw updates and returns those `frontier` completes (`None` if there are none).
    pub(crate) fn poll_with(
        &mut self,
        py: Python<'_>,
        schema: Option<Schema>,
        updates: Updates,
        frontier: &Antichain<Time>,
    ) -> PyResult<Option<PyCaptureBatch>> {
        let mut guard = self.st();
        let state = &mut *guard;
        let fresh = py
            .allow_threads(|| {
                state.absorb(schema, updates)?;
                state.complete(frontier)
            })
            .py()?;
        // Registered while the state is still locked: the ids are never outside a root.
        Ok((!fresh.is_empty()).then(|| PyCaptureBatch {
            schema: self.schema_of(state),
            time_dims: self.time_dims,
            updates: frozen(fresh),
        }))
    }

    fn schema_of(&self, state: &CaptureState) -> Vec<DType> {
        state
            .schema()
            .map(|s| s.to_vec())
            .unwrap_or_else(|| vec![DType::Int64; self.width])
    }

    /// `(columns, diffs)`.
    fn untimed_batch<'py>(
        &self,
        py: Python<'py>,
        schema: &[DType],
        upd: &Updates,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let cols = rows_to_arrow_py(py, schema, &upd.rows)?;
        let diffs = PyArray1::from_slice(py, &upd.diffs);
        PyTuple::new(py, [cols.into_any(), diffs.into_any()])
    }
}

#[pymethods]
impl PyCaptureState {
    #[new]
    fn new(label: &str, columns: Vec<String>, time_dims: usize, keep: &str) -> PyResult<Self> {
        let mode = CaptureMode::parse(keep).py()?;
        Ok(PyCaptureState {
            inner: {
                let inner = Arc::new(Mutex::new(CaptureState::new(
                    label, mode, &columns, time_dims,
                )));
                ddflow_core::string_gc::register(&inner);
                inner
            },
            width: columns.len(),
            time_dims,
        })
    }

    /// Adds raw updates given as numpy columns, times `(n, time_dims)` and diffs, and returns
    /// the updates `frontier` completes, consolidated (`None` if there are none).
    fn absorb<'py>(
        &mut self,
        py: Python<'py>,
        columns: Vec<Bound<'py, PyAny>>,
        times: Bound<'py, PyAny>,
        diffs: Bound<'py, PyAny>,
        frontier: Vec<Vec<i64>>,
    ) -> PyResult<Option<PyCaptureBatch>> {
        // A safe point before the conversion interns the columns.
        ddflow_core::string_gc::collect_if_due();
        let what = "capture";
        let cols = columns
            .iter()
            .enumerate()
            .map(|(i, c)| column_from_py(c, &format!("{what}: column {i}")))
            .collect::<PyResult<Vec<_>>>()?;
        let diffs = i64s_from_py(&diffs, &format!("{what}: diffs"))?;
        let times = if diffs.is_empty() {
            Vec::new() // an empty batch may come with times of any width
        } else {
            times_from_py(&times, self.time_dims, what)?
        };
        let schema = (!cols.is_empty()).then(|| Arc::new(cols.iter().map(|c| c.dtype).collect()));
        let rows = columns_to_rows(&cols, diffs.len(), what).py()?;
        let updates = Updates::from_parts(self.width, rows, times, diffs).py()?;
        let frontier = frontier_from(&frontier, self.time_dims)?;
        self.poll_with(py, schema, updates, &frontier)
    }

    /// Everything kept: `History`: `(columns, times, diffs)` of every completed update;
    /// `State`: `(columns, times, diffs)` of the accumulated collection (times all zero).
    fn kept<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let g = self.st();
        let kept = g.kept();
        let cols = words_to_arrow_py(py, &self.schema_of(&g), &kept.columns)?;
        let times = coords_to_py(py, &kept.coords, kept.dims)?;
        let diffs = PyArray1::from_slice(py, &kept.diffs);
        PyTuple::new(py, [cols.into_any(), times, diffs.into_any()])
    }

    /// As `kept`, plus whether the updates come sorted by time, then record values:
    /// `(columns, times, diffs, sorted)` (sorted in Rust where the record dtypes allow).
    fn kept_ordered<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let g = self.st();
        let schema = self.schema_of(&g);
        let Some(view) = g.history_ordered() else {
            let kept = g.kept();
            let cols = words_to_arrow_py(py, &schema, &kept.columns)?;
            let times = coords_to_py(py, &kept.coords, kept.dims)?;
            let diffs = PyArray1::from_slice(py, &kept.diffs);
            let sorted = PyBool::new(py, false).to_owned();
            return PyTuple::new(
                py,
                [cols.into_any(), times, diffs.into_any(), sorted.into_any()],
            );
        };
        // One column at a time: its 64-bit words are dropped once converted.
        let cols = PyList::empty(py);
        for (c, d) in schema.iter().enumerate().take(view.width()) {
            let words = [Cow::Owned(view.column(c))];
            cols.append(words_to_arrow_py(py, &[*d], &words)?.get_item(0)?)?;
        }
        let coords: Vec<i64> = view.coords().into_iter().map(|c| c as i64).collect();
        let times = flat_times_to_py(py, coords, view.dims())?;
        let diffs = PyArray1::from_vec(py, view.diffs());
        let sorted = PyBool::new(py, view.sorted()).to_owned();
        PyTuple::new(
            py,
            [cols.into_any(), times, diffs.into_any(), sorted.into_any()],
        )
    }

    /// The accumulated collection at a completed `time`: `(columns, diffs)`.
    fn at<'py>(&mut self, py: Python<'py>, time: Vec<i64>) -> PyResult<Bound<'py, PyTuple>> {
        let t = time_from_list(&time, self.time_dims, "at")?;
        let mut g = self.st();
        let acc = g.at(&t).py()?;
        self.untimed_batch(py, &self.schema_of(&g), &acc)
    }

    /// The accumulated collection of everything completed: `(columns, diffs)`.
    fn state<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut g = self.st();
        let acc = g.state().py()?;
        self.untimed_batch(py, &self.schema_of(&g), &acc)
    }

    /// The record dtypes (`None` before the first update).
    fn dtypes(&self) -> Option<Vec<&'static str>> {
        self.st()
            .schema()
            .map(|s| s.iter().map(|d| d.name()).collect())
    }

    /// The least upper bound of the completed updates' times (`None` before any).
    fn completed_upper(&self) -> Option<Vec<i64>> {
        self.st()
            .completed_upper()
            .map(|t| t.0[..self.time_dims].iter().map(|&c| c as i64).collect())
    }

    /// Heap bytes held.
    fn heap_bytes(&self) -> usize {
        self.st().heap_bytes()
    }
}

/// Newly completed updates, consolidated, held in Rust until unpacked as
/// `columns, times, diffs = batch` (converted to numpy then, once per unpacking).
#[pyclass(name = "CaptureBatch", module = "ddflow._core")]
pub struct PyCaptureBatch {
    schema: Vec<DType>,
    time_dims: usize,
    /// Registered with the string collector (read without a lock: never changed).
    updates: Arc<Frozen<Updates>>,
}

/// `updates` as a registered, read-only root of the string collector.
fn frozen(updates: Updates) -> Arc<Frozen<Updates>> {
    let f = Arc::new(Frozen(updates));
    ddflow_core::string_gc::register(&f);
    f
}

#[pymethods]
impl PyCaptureBatch {
    /// Number of updates.
    fn __len__(&self) -> usize {
        self.updates.0.len()
    }

    /// `(columns, times (n, time_dims), diffs)`, converted now.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        let cols = rows_to_arrow_py(py, &self.schema, &self.updates.0.rows)?;
        let times = times_to_py(py, &self.updates.0.times, self.time_dims, false)?;
        let diffs = PyArray1::from_slice(py, &self.updates.0.diffs);
        PyTuple::new(py, [cols.into_any(), times, diffs.into_any()])?.try_iter()
    }
}

fn frontier_from(elems: &[Vec<i64>], dims: usize) -> PyResult<Antichain<Time>> {
    let times = elems
        .iter()
        .map(|e| time_from_list(e, dims, "capture frontier"))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Antichain::from_iter_minimal(times))
}

/// Registers the class.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCaptureState>()?;
    m.add_class::<PyCaptureBatch>()
}
