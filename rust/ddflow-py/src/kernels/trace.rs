//! The `Trace` and `TraceHandle` classes: an arranged collection (a spine of batches) built
//! from columns, compacted by frontiers, and read back as columns.
//!
//! A trace's records are `key_columns` key columns followed by value columns, each int64,
//! uint64, float64, bool or str, stored as words in the core's encoding (see
//! [`ddflow_core::encoding`]); times have `time_dims` coordinates. The `Trace` object is the
//! writer and its first reader; `Trace.handle()` adds readers, each with its own compaction
//! frontier (the trace compacts to the meet of all of them; dropping or releasing a handle
//! removes its hold). Reads return times advanced by the reader's frontier and
//! consolidated, so they do not depend on how far merging has progressed.

use super::sort::{column_list, with_sorter};
use crate::convert::{
    build_rows, check_lengths, cols_to_py, decode_rows, diffs as parse_diffs, diffs_view,
    flat_times_to_py, flatten_times, frontier as parse_frontier, frontier_to_py, i64_as_u64,
    shape_err, times as parse_times, type_err, value_err, ColOut, ColType, ColView, Enc,
};
use crate::errors::without_gil;
use ddflow_core::encoding::{encode_f64, Interner};
use ddflow_core::lattice::{Antichain, Lattice, Time, MAX_DIMS};
use ddflow_core::trace::{read, Batch, Description, Spine, TraceHandle};
use ddflow_core::{Error, Result as CoreResult, Updates};
use numpy::{PyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};
use std::sync::{Arc, Mutex, MutexGuard};

/// Column types and layout of a trace's records.
#[derive(Clone, Debug)]
pub struct Schema {
    types: Vec<ColType>,
    key_cols: usize,
    time_dims: usize,
}

impl Schema {
    fn new(types: Vec<ColType>, key_cols: usize, time_dims: usize) -> PyResult<Schema> {
        if key_cols > types.len() {
            return Err(shape_err(format!(
                "key_columns: {key_cols} key columns but only {} columns",
                types.len()
            )));
        }
        if time_dims == 0 || time_dims > MAX_DIMS {
            return Err(value_err(format!(
                "time_dims: {time_dims} coordinates; 1 to {MAX_DIMS} are supported"
            )));
        }
        Ok(Schema {
            types,
            key_cols,
            time_dims,
        })
    }

    fn width(&self) -> usize {
        self.types.len()
    }

    fn val_cols(&self) -> usize {
        self.types.len() - self.key_cols
    }

    fn names(&self) -> Vec<&'static str> {
        self.types.iter().map(|t| t.name()).collect()
    }

    fn check_frontier_dims(&self, arg: &str, k: usize) -> PyResult<()> {
        if k != 0 && k != self.time_dims {
            return Err(value_err(format!(
                "{arg}: times have {k} coordinates but the trace's have {}",
                self.time_dims
            )));
        }
        Ok(())
    }
}

/// A default upper for a batch of `times` after `lower`: the join of `lower`'s elements and
/// `(max first coordinate + 1, 0, ..)`, which no time of the batch is in the future of.
fn default_upper(lower: &Antichain<Time>, times: &[Time]) -> Antichain<Time> {
    let Some(max0) = times.iter().map(|t| t.0[0]).max() else {
        return lower.clone();
    };
    let mut u = Time::scalar(max0.saturating_add(1));
    for l in lower.elements() {
        u = u.join(l);
    }
    Antichain::from_elem(u)
}

/// A read decoded into columns, with its times flattened (the core's `trace::read` does the
/// reading, advancing and consolidating).
struct ReadOut {
    cols: Vec<ColOut>,
    times: Vec<i64>,
    diffs: Vec<i64>,
}

fn decoded(u: Updates, types: &[ColType], k: usize) -> CoreResult<ReadOut> {
    Ok(ReadOut {
        cols: decode_rows(types, &u.rows, Enc::Core)?,
        times: flatten_times(&u.times, k),
        diffs: u.diffs,
    })
}

fn read_to_py<'py>(py: Python<'py>, r: ReadOut, k: usize) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            cols_to_py(py, r.cols)?.into_any(),
            flat_times_to_py(py, r.times, k)?,
            PyArray1::from_vec(py, r.diffs).into_any(),
        ],
    )
}

/// Reads the whole trace.
fn read_all(h: &TraceHandle, s: &Schema) -> CoreResult<ReadOut> {
    decoded(read::read_all(h)?, &s.types, s.time_dims)
}

/// Reads the histories of the given key rows (any order, duplicates allowed).
fn read_keys(h: &TraceHandle, s: &Schema, keys: &[u64], n: usize) -> CoreResult<ReadOut> {
    let u = read::read_keys(h, &keys[..n * s.key_cols], s.key_cols, s.width())?;
    decoded(u, &s.types, s.time_dims)
}

/// Reads the keys in the word ranges `ranges`, in the order given.
fn read_ranges(h: &TraceHandle, s: &Schema, ranges: &[(u64, Option<u64>)]) -> CoreResult<ReadOut> {
    decoded(
        read::read_word_ranges(h, ranges, s.width())?,
        &s.types,
        s.time_dims,
    )
}

/// The word of a Python scalar as a value of a column of type `ty`.
fn scalar_word(arg: &str, ty: ColType, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    let bad = || {
        type_err(format!(
            "{arg}: {} is not a {} value",
            v.repr().map(|r| r.to_string()).unwrap_or_default(),
            ty.name()
        ))
    };
    Ok(match ty {
        ColType::Int64 => v.extract::<i64>().map_err(|_| bad())? as u64,
        ColType::UInt64 => v.extract::<u64>().map_err(|_| bad())?,
        ColType::Float64 => encode_f64(v.extract::<f64>().map_err(|_| bad())?),
        ColType::Bool => v.extract::<bool>().map_err(|_| bad())? as u64,
        ColType::Str => Interner::intern(&v.extract::<String>().map_err(|_| bad())?),
    })
}

/// Parses an int range bound.
fn bound(arg: &str, v: Option<&Bound<'_, PyAny>>, ty: ColType) -> PyResult<Option<i128>> {
    match v {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => {
            let x: i128 = v
                .extract()
                .map_err(|_| type_err(format!("{arg}: expected an int or None")))?;
            let ok = match ty {
                ColType::Int64 => (i64::MIN as i128..=i64::MAX as i128 + 1).contains(&x),
                _ => (0..=u64::MAX as i128 + 1).contains(&x),
            };
            if !ok {
                return Err(value_err(format!(
                    "{arg}: {x} is outside the range of a {} key",
                    ty.name()
                )));
            }
            Ok(Some(x))
        }
    }
}

/// The word ranges covering the key values `[lo, hi)`, in value order.
fn word_ranges(ty: ColType, lo: Option<i128>, hi: Option<i128>) -> Vec<(u64, Option<u64>)> {
    match ty {
        ColType::UInt64 => read::uint64_word_ranges(lo, hi),
        _ => read::int64_word_ranges(lo, hi),
    }
}

/// Builds and inserts a batch from borrowed columns (GIL released by the caller).
#[allow(clippy::too_many_arguments)]
fn insert_views(
    h: &TraceHandle,
    s: &Schema,
    views: &[ColView<'_>],
    n: usize,
    times: Option<Vec<Time>>,
    diffs: Option<&[i64]>,
    upper: Option<Antichain<Time>>,
    sorted: bool,
) -> CoreResult<()> {
    let rows = build_rows(views, n, Enc::Core);
    let times = times.unwrap_or_else(|| vec![Time::minimum(); n]);
    let diffs = match diffs {
        Some(d) => d.to_vec(),
        None => vec![1; n],
    };
    let since = h.trace_compaction();
    if let Some(i) = times.iter().position(|t| !since.less_equal(t)) {
        return Err(Error::Time(format!(
            "times: time {:?} (update {i}) is not in the future of the trace's compaction frontier {:?}",
            times[i], since
        )));
    }
    let lower = h.upper();
    let upper = match upper {
        Some(u) => {
            if !lower.dominates(&u) {
                return Err(Error::Time(format!(
                    "upper: {u:?} is not in the future of the trace's upper {lower:?}"
                )));
            }
            if let Some(i) = times.iter().position(|t| u.less_equal(t)) {
                return Err(Error::Time(format!(
                    "times: time {:?} (update {i}) is not before upper {u:?}",
                    times[i]
                )));
            }
            u
        }
        None => default_upper(&lower, &times),
    };
    let desc = Description::new(lower, upper, Antichain::from_elem(Time::minimum()));
    let mut u = Updates::from_parts(s.width(), rows, times, diffs)?;
    let batch = if sorted {
        Batch::from_sorted(&u, s.key_cols, desc).map_err(|e| e.context("insert(sorted=True)"))?
    } else {
        with_sorter(|so| Batch::from_updates_with(so, &mut u, s.key_cols, desc))
            .map_err(|e| e.context("insert: diffs"))?
    };
    h.insert(Arc::new(batch));
    Ok(())
}

/// Words of an integer column view.
fn int_words<'a>(v: &'a ColView<'_>) -> Option<&'a [u64]> {
    match v {
        ColView::I64(a) => Some(i64_as_u64(a)),
        ColView::U64(a) => Some(a),
        _ => None,
    }
}

/// An arranged collection: a spine of immutable batches indexed by key, then value, with
/// fueled merging that compacts times by the meet of its readers' frontiers.
///
/// The `Trace` object is the writer and a reader; `handle()` makes more readers.
#[pyclass(module = "ddflow._core", name = "Trace", frozen)]
pub struct PyTrace {
    handle: TraceHandle,
    schema: Arc<Schema>,
}

impl PyTrace {
    fn with_schema(schema: Schema) -> PyTrace {
        let spine = Spine::new(schema.key_cols, schema.val_cols());
        PyTrace {
            handle: TraceHandle::new(spine),
            schema: Arc::new(schema),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn insert_py(
    py: Python<'_>,
    h: &TraceHandle,
    s: &Schema,
    columns: &Bound<'_, PyAny>,
    times: Option<&Bound<'_, PyAny>>,
    diffs: Option<&Bound<'_, PyAny>>,
    upper: Option<&Bound<'_, PyAny>>,
    sorted: bool,
) -> PyResult<()> {
    let cols = column_list("columns", columns, Some(&s.types))?;
    let th = times.map(|t| parse_times("times", t)).transpose()?;
    let dh = diffs.map(|d| parse_diffs("diffs", d)).transpose()?;
    let mut lens: Vec<(String, usize)> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("columns[{i}]"), c.len()))
        .collect();
    if let Some(t) = &th {
        if t.k != s.time_dims {
            return Err(value_err(format!(
                "times: {} coordinates per time but the trace's times have {}",
                t.k, s.time_dims
            )));
        }
        lens.push(("times".into(), t.n));
    }
    if let Some(d) = &dh {
        lens.push(("diffs".into(), d.len()));
    }
    if lens.is_empty() {
        return Err(shape_err(
            "insert: no columns, times or diffs to take the number of updates from".into(),
        ));
    }
    let n = check_lengths("insert", &lens)?;
    let upper = match upper {
        Some(u) if !u.is_none() => {
            let (f, k) = parse_frontier("upper", u)?;
            s.check_frontier_dims("upper", k)?;
            Some(f)
        }
        _ => None,
    };
    let views: Vec<ColView<'_>> = cols.iter().map(|c| c.view()).collect();
    let tv = th.as_ref().map(|t| t.view());
    let dv = dh.as_ref().map(diffs_view);
    without_gil(py, || {
        let ts = tv.as_ref().map(|t| t.to_times("times")).transpose()?;
        insert_views(h, s, &views, n, ts, dv.as_deref(), upper, sorted)
    })
}

/// A `#[pymethods]` block for `$ty` with its own methods `$extra` and the methods shared by
/// `Trace` and `TraceHandle` (reading and compaction).
macro_rules! trace_pymethods {
    ($ty:ty, { $($extra:tt)* }) => {
        #[pymethods]
        impl $ty {
        $($extra)*
        /// The whole trace as `(columns, times (n, time_dims), diffs)`: consolidated, sorted
        /// by key then value (in trace order) then time, times advanced by this reader's
        /// compaction frontier.
        fn to_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
            let s = &*self.schema;
            let r = self.with_handle(py, |h| read_all(h, s))?;
            read_to_py(py, r, s.time_dims)
        }

        /// The histories of the given keys (`keys`: one array per key column; any order,
        /// duplicates ignored) as `(columns, times, diffs)` with key and value columns.
        fn read_keys<'py>(
            &self,
            py: Python<'py>,
            keys: &Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyTuple>> {
            let s = &*self.schema;
            let cols = column_list("keys", keys, Some(&s.types[..s.key_cols]))?;
            let lens: Vec<(String, usize)> = cols
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("keys[{i}]"), c.len()))
                .collect();
            let n = check_lengths("read_keys", &lens)?;
            let views: Vec<ColView<'_>> = cols.iter().map(|c| c.view()).collect();
            let r = self.with_handle(py, |h| {
                let rows = build_rows(&views, n, Enc::Core);
                read_keys(h, s, &rows, n)
            })?;
            read_to_py(py, r, s.time_dims)
        }

        /// The updates of keys in `[lo, hi)` (`None`: unbounded) in value order, for traces
        /// keyed by one int64 or uint64 column, as `(columns, times, diffs)`.
        #[pyo3(signature = (lo=None, hi=None))]
        fn read_range<'py>(
            &self,
            py: Python<'py>,
            lo: Option<&Bound<'py, PyAny>>,
            hi: Option<&Bound<'py, PyAny>>,
        ) -> PyResult<Bound<'py, PyTuple>> {
            let s = &*self.schema;
            let ty = match (s.key_cols, s.types.first()) {
                (1, Some(t @ (ColType::Int64 | ColType::UInt64))) => *t,
                _ => {
                    return Err(type_err(format!(
                        "read_range: needs a trace keyed by one int64 or uint64 column, not {:?}",
                        &s.names()[..s.key_cols]
                    )))
                }
            };
            let lo = bound("lo", lo, ty)?;
            let hi = bound("hi", hi, ty)?;
            let ranges = word_ranges(ty, lo, hi);
            let r = self.with_handle(py, |h| read_ranges(h, s, &ranges))?;
            read_to_py(py, r, s.time_dims)
        }

        /// The history of one key (a scalar, or a tuple with one value per key column) as
        /// `(value columns, times, diffs)`.
        fn key_history<'py>(
            &self,
            py: Python<'py>,
            key: &Bound<'py, PyAny>,
        ) -> PyResult<Bound<'py, PyTuple>> {
            let s = &*self.schema;
            let kc = s.key_cols;
            let parts: Vec<Bound<'py, PyAny>> = if kc == 1 {
                match key.downcast::<PyTuple>() {
                    Ok(t) if t.len() == 1 => vec![t.get_item(0)?],
                    _ => vec![key.clone()],
                }
            } else {
                let t: Vec<Bound<'py, PyAny>> = key
                    .try_iter()
                    .and_then(|it| it.collect::<PyResult<Vec<_>>>())
                    .map_err(|_| {
                        type_err(format!("key: expected a tuple of {kc} key values"))
                    })?;
                t
            };
            if parts.len() != kc {
                return Err(shape_err(format!(
                    "key: {} values given but the trace has {kc} key columns",
                    parts.len()
                )));
            }
            let words: Vec<u64> = parts
                .iter()
                .enumerate()
                .map(|(i, p)| scalar_word(&format!("key[{i}]"), s.types[i], p))
                .collect::<PyResult<_>>()?;
            let r = self.with_handle(py, |h| {
                let hist = read::read_key_history(h, &words, s.val_cols())?;
                decoded(hist, &s.types[kc..], s.time_dims)
            })?;
            read_to_py(py, r, s.time_dims)
        }

        /// Advances this reader's compaction frontier: it will only ask about times in the
        /// future of `frontier` (an int, one time as a list of ints, or a list of times).
        /// The trace compacts to the meet of all readers' frontiers.
        fn advance_compaction(&self, py: Python<'_>, frontier: &Bound<'_, PyAny>) -> PyResult<()> {
            let (f, k) = parse_frontier("frontier", frontier)?;
            self.schema.check_frontier_dims("frontier", k)?;
            self.with_handle(py, |h| {
                h.set_logical_compaction(&f)
                    .map_err(|e| e.context("advance_compaction"))
            })
        }

        /// This reader's compaction frontier, as a list of times.
        fn compaction_frontier(&self, py: Python<'_>) -> PyResult<Vec<Vec<i64>>> {
            let k = self.schema.time_dims;
            self.with_handle(py, |h| Ok(frontier_to_py(&h.logical_compaction(), k)))
        }

        /// The trace's upper frontier: every inserted time is not in its future.
        fn upper(&self, py: Python<'_>) -> PyResult<Vec<Vec<i64>>> {
            let k = self.schema.time_dims;
            self.with_handle(py, |h| Ok(frontier_to_py(&h.upper(), k)))
        }

        /// Updates physically stored (across batches and merges in progress).
        fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
            self.with_handle(py, |h| Ok(h.len()))
        }

        /// Updates physically stored (same as `len(trace)`).
        fn len(&self, py: Python<'_>) -> PyResult<usize> {
            self.with_handle(py, |h| Ok(h.len()))
        }

        /// Heap bytes held by the trace's batches and merges in progress.
        fn heap_bytes(&self, py: Python<'_>) -> PyResult<usize> {
            self.with_handle(py, |h| Ok(h.heap_bytes()))
        }

        /// Column dtype names.
        #[getter]
        fn dtypes(&self) -> Vec<&'static str> {
            self.schema.names()
        }

        /// Number of leading key columns.
        #[getter]
        fn key_columns(&self) -> usize {
            self.schema.key_cols
        }

        /// Coordinates per time.
        #[getter]
        fn time_dims(&self) -> usize {
            self.schema.time_dims
        }
        }
    };
}

trace_pymethods!(PyTrace, {
    /// An empty trace of records with columns of `dtypes` (the first `key_columns` form the
    /// key) and times of `time_dims` coordinates.
    #[new]
    #[pyo3(signature = (dtypes, key_columns, time_dims=1))]
    fn new(dtypes: Vec<String>, key_columns: usize, time_dims: usize) -> PyResult<PyTrace> {
        let types = dtypes
            .iter()
            .enumerate()
            .map(|(i, d)| {
                ColType::parse(d)
                    .map_err(|e| crate::convert::err(e.context(&format!("dtypes[{i}]"))))
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTrace::with_schema(Schema::new(
            types,
            key_columns,
            time_dims,
        )?))
    }

    /// A trace holding one batch built from columns (dtypes taken from the arrays).
    #[classmethod]
    #[pyo3(signature = (columns, key_columns, times=None, diffs=None))]
    fn from_columns(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        columns: &Bound<'_, PyAny>,
        key_columns: usize,
        times: Option<&Bound<'_, PyAny>>,
        diffs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTrace> {
        let types: Vec<ColType> = column_list("columns", columns, None)?
            .iter()
            .map(|c| c.ty())
            .collect();
        let time_dims = match times {
            Some(t) => parse_times("times", t)?.k,
            None => 1,
        };
        let trace = PyTrace::with_schema(Schema::new(types, key_columns, time_dims)?);
        insert_py(
            py,
            &trace.handle,
            &trace.schema,
            columns,
            times,
            diffs,
            None,
            false,
        )?;
        Ok(trace)
    }

    /// A trace of a static graph: `(src, dst)` edges at the least time with diff 1 (repeated
    /// edges counted), keyed by `src`. int64/uint64 ids take a packed radix-sort path and
    /// are stored narrowed to 32 bits when they fit; other dtypes use `from_columns`.
    #[classmethod]
    #[pyo3(signature = (src, dst, time_dims=1))]
    fn from_static_pairs(
        cls: &Bound<'_, PyType>,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        dst: &Bound<'_, PyAny>,
        time_dims: usize,
    ) -> PyResult<PyTrace> {
        let sh = crate::convert::column("src", src, None)?;
        let dh = crate::convert::column("dst", dst, None)?;
        check_lengths(
            "from_static_pairs",
            &[("src".into(), sh.len()), ("dst".into(), dh.len())],
        )?;
        let schema = Schema::new(vec![sh.ty(), dh.ty()], 1, time_dims)?;
        let (sv, dv) = (sh.view(), dh.view());
        let (Some(sw), Some(dw)) = (int_words(&sv), int_words(&dv)) else {
            let cols = pyo3::types::PyList::new(py, [src, dst])?;
            let trace = PyTrace::with_schema(schema);
            insert_py(
                py,
                &trace.handle,
                &trace.schema,
                cols.as_any(),
                None,
                None,
                None,
                false,
            )?;
            let _ = cls;
            return Ok(trace);
        };
        let batch = without_gil(py, || Batch::from_static_pairs_in(sw, dw, time_dims))?;
        let trace = PyTrace::with_schema(schema);
        trace.handle.insert(Arc::new(batch));
        Ok(trace)
    }

    /// Builds a batch from columns and inserts it. `times`: `(n, time_dims)` or `(n,)`
    /// int64 (default: the least time); `diffs`: int64 (default: 1). Times must be in the
    /// future of the trace's compaction frontier. `upper` (default: after the batch's
    /// largest first coordinate) becomes the trace's upper. With `sorted=True` the updates
    /// must already be in trace order (checked) and are not sorted again.
    #[pyo3(signature = (columns, times=None, diffs=None, *, upper=None, sorted=false))]
    fn insert(
        &self,
        py: Python<'_>,
        columns: &Bound<'_, PyAny>,
        times: Option<&Bound<'_, PyAny>>,
        diffs: Option<&Bound<'_, PyAny>>,
        upper: Option<&Bound<'_, PyAny>>,
        sorted: bool,
    ) -> PyResult<()> {
        insert_py(
            py,
            &self.handle,
            &self.schema,
            columns,
            times,
            diffs,
            upper,
            sorted,
        )
    }

    /// Does up to `fuel` units of merge work (all pending work if `None`): finishes merges
    /// in progress, merges batches into one, compacts. Returns whether work remains.
    #[pyo3(signature = (fuel=None))]
    fn exert(&self, py: Python<'_>, fuel: Option<usize>) -> PyResult<bool> {
        let h = &self.handle;
        without_gil(py, || Ok(h.exert(fuel.unwrap_or(usize::MAX))))
    }

    /// Number of batches (the inputs of a merge in progress count separately).
    fn n_batches(&self, py: Python<'_>) -> PyResult<usize> {
        self.with_handle(py, |h| Ok(h.batches().len()))
    }

    /// Number of live readers (this trace and its handles).
    fn readers(&self) -> usize {
        self.handle.readers()
    }

    /// A new reader with this trace's current compaction frontier. The trace will not
    /// compact past the handle's frontier until the handle advances, is released, or is
    /// garbage collected.
    fn handle(&self) -> PyTraceHandle {
        PyTraceHandle {
            handle: Mutex::new(Some(self.handle.clone())),
            schema: self.schema.clone(),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Trace(dtypes={:?}, key_columns={}, time_dims={}, len={})",
            self.schema.names(),
            self.schema.key_cols,
            self.schema.time_dims,
            self.handle.len()
        )
    }
});

impl PyTrace {
    fn with_handle<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&TraceHandle) -> CoreResult<R> + Send,
    ) -> PyResult<R> {
        let h = &self.handle;
        without_gil(py, || f(h))
    }
}

/// A reader of a `Trace` with its own compaction frontier (see `Trace.handle()`).
#[pyclass(module = "ddflow._core", name = "TraceHandle", frozen)]
pub struct PyTraceHandle {
    handle: Mutex<Option<TraceHandle>>,
    schema: Arc<Schema>,
}

impl PyTraceHandle {
    fn lock(&self) -> MutexGuard<'_, Option<TraceHandle>> {
        self.handle.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn with_handle<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&TraceHandle) -> CoreResult<R> + Send,
    ) -> PyResult<R> {
        without_gil(py, || {
            let g = self.lock();
            let h = g
                .as_ref()
                .ok_or_else(|| Error::Value("this trace handle was released".into()))?;
            f(h)
        })
    }
}

trace_pymethods!(PyTraceHandle, {
    /// Releases this reader's hold on the trace's compaction (idempotent); reading
    /// afterwards raises `InvalidValueError`.
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.lock().take();
        py.allow_threads(move || drop(taken));
        Ok(())
    }

    /// Whether `release()` was called.
    #[getter]
    fn released(&self) -> bool {
        self.lock().is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.release(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        match &*self.lock() {
            Some(h) => format!(
                "TraceHandle(frontier={:?}, len={})",
                frontier_to_py(&h.logical_compaction(), self.schema.time_dims),
                h.len()
            ),
            None => "TraceHandle(released)".into(),
        }
    }
});

/// Registers the classes of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTrace>()?;
    m.add_class::<PyTraceHandle>()?;
    Ok(())
}
