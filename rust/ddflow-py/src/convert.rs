//! Conversions between numpy arrays and core columns and times, for engine inputs, captures
//! and the batch operators.
//!
//! Columns are read by the bindings' one column reader (`kernels::convert::prepare` and
//! `hold`: other widths cast by numpy, uint64 read as int64 with every value checked to
//! fit, strings interned once per value); Arrow string columns arrive as their two buffers
//! (`ddflow.dtypes.Utf8Column`: int64 offsets and UTF-8 bytes) and are validated and interned
//! here with the GIL released, without any per-value Python object. Times are int64 arrays of
//! shape `(n,)` or `(n, k)`; negative coordinates are rejected.

use crate::kernels::convert::{hold, i64_as_u64, prepare, ColHold, ColView, Unsigned};
use ddflow_core::encoding::{decode_f64, encode_bool, encode_f64, DType, Interner};
use ddflow_core::engine::column::Column;
use ddflow_core::lattice::MAX_DIMS;
use ddflow_core::{Error, Result as CoreResult, Time};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyList;

fn err(e: Error) -> PyErr {
    crate::errors::to_py_err(e)
}

/// Converts one numpy array (or sequence) to a column; `what` names it in errors.
pub fn column_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Column> {
    let py = obj.py();
    if let Ok(buffers) = obj.getattr("_ddflow_utf8") {
        let (offsets, data): (PyReadonlyArray1<i64>, PyReadonlyArray1<u8>) = buffers.extract()?;
        let (offsets, data) = (offsets.as_slice()?, data.as_slice()?);
        let words = py.allow_threads(|| utf8_column(offsets, data, what));
        return Ok(Column {
            dtype: DType::Str,
            words: words.map_err(err)?,
        });
    }
    let (arr, ty) = prepare(what, obj, Unsigned::AsInt64)?;
    Ok(match hold(what, &arr, ty)? {
        ColHold::Str(ids) => Column {
            dtype: DType::Str,
            words: ids,
        },
        held => {
            let (dtype, words) = match held.view() {
                ColView::I64(v) => (DType::Int64, i64_as_u64(&v).to_vec()),
                ColView::F64(v) => (DType::Float64, v.iter().map(|&x| encode_f64(x)).collect()),
                ColView::Bool(v) => (DType::Bool, v.iter().map(|&x| encode_bool(x)).collect()),
                // `Unsigned::AsInt64` reads uint64 as int64; strings are matched above.
                ColView::U64(_) | ColView::Str(_) => unreachable!("read as int64 or str"),
            };
            Column { dtype, words }
        }
    })
}

/// Interns the strings of an Arrow-layout column: value `i` is `data[offsets[i]..offsets[i +
/// 1]]`. Offsets must be non-decreasing and within `data`; the bytes must be UTF-8, each
/// value starting and ending on a character boundary.
pub fn utf8_column(offsets: &[i64], data: &[u8], what: &str) -> CoreResult<Vec<u64>> {
    let n = offsets.len().saturating_sub(1);
    let bad = |i: usize, why: &str| {
        Error::Value(format!(
            "{what}: string buffers are malformed at row {i} ({why})"
        ))
    };
    let (lo, hi) = match (offsets.first(), offsets.last()) {
        (Some(&lo), Some(&hi)) => (lo, hi),
        _ => return Ok(Vec::new()),
    };
    if lo < 0 || hi < lo || hi as usize > data.len() {
        return Err(bad(0, "offsets outside the data buffer"));
    }
    let text = std::str::from_utf8(&data[lo as usize..hi as usize]).map_err(|e| {
        let at = lo as usize + e.valid_up_to();
        let row = offsets
            .partition_point(|&o| (o as usize) <= at)
            .saturating_sub(1);
        Error::Value(format!(
            "{what}: value at row {row} is not valid UTF-8 text (byte {at})"
        ))
    })?;
    let mut strings: Vec<&str> = Vec::with_capacity(n);
    for i in 0..n {
        let (a, b) = (offsets[i], offsets[i + 1]);
        if b < a {
            return Err(bad(i, "offsets decrease"));
        }
        let (a, b) = ((a - lo) as usize, (b - lo) as usize);
        match text.get(a..b) {
            Some(s) => strings.push(s),
            None => return Err(bad(i, "a value splits a character")),
        }
    }
    let mut words = Vec::with_capacity(n);
    Interner::intern_all(strings, &mut words);
    Ok(words)
}

/// Converts a column to a numpy array (str columns become object arrays of str).
pub fn column_to_py<'py>(py: Python<'py>, col: &Column) -> PyResult<Bound<'py, PyAny>> {
    Ok(match col.dtype {
        DType::Int64 => PyArray1::from_vec(
            py,
            col.words.iter().map(|&w| w as i64).collect::<Vec<i64>>(),
        )
        .into_any(),
        DType::Float64 => PyArray1::from_vec(
            py,
            col.words
                .iter()
                .map(|&w| decode_f64(w))
                .collect::<Vec<f64>>(),
        )
        .into_any(),
        DType::Bool => {
            PyArray1::from_vec(py, col.words.iter().map(|&w| w != 0).collect::<Vec<bool>>())
                .into_any()
        }
        DType::Str => {
            let strings = Interner::resolve_all(&col.words).map_err(err)?;
            let list = PyList::new(py, strings.iter().map(|s| &**s))?;
            let np = py.import("numpy")?;
            let arr = np.call_method1("empty", (strings.len(), "object"))?;
            arr.call_method1("__setitem__", (pyo3::types::PySlice::full(py), list))?;
            arr
        }
    })
}

/// Converts an int64 time array of shape `(n,)` or `(n, dims)` to times.
pub fn times_from_py(obj: &Bound<'_, PyAny>, dims: usize, what: &str) -> PyResult<Vec<Time>> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let arr = np.call_method1("ascontiguousarray", (obj, "int64"))?;
    let ndim: usize = arr.getattr("ndim")?.extract()?;
    let convert = |vals: &[i64], k: usize| -> CoreResult<Vec<Time>> {
        if k != dims {
            return Err(Error::Value(format!(
                "{what}: times have {k} coordinates, the dataflow's times have {dims}"
            )));
        }
        if k > MAX_DIMS {
            return Err(Error::Value(format!(
                "{what}: at most {MAX_DIMS} time coordinates"
            )));
        }
        let mut out = Vec::with_capacity(vals.len() / k.max(1));
        for (i, row) in vals.chunks(k.max(1)).enumerate() {
            let mut t = Time::minimum();
            for (c, &v) in row.iter().enumerate() {
                if v < 0 {
                    return Err(Error::Value(format!(
                        "{what}: negative time coordinate {v} at row {i}"
                    )));
                }
                t.0[c] = v as u64;
            }
            out.push(t);
        }
        Ok(out)
    };
    match ndim {
        1 => {
            let a: PyReadonlyArray1<i64> = arr.extract()?;
            convert(a.as_slice()?, 1).map_err(err)
        }
        2 => {
            let a: PyReadonlyArray2<i64> = arr.extract()?;
            let k = a.shape()[1];
            convert(a.as_slice()?, k).map_err(err)
        }
        _ => Err(err(Error::Shape(format!(
            "{what}: times must have shape (n,) or (n, k), got {ndim} dimensions"
        )))),
    }
}

/// Converts a list of ints to a time with `dims` coordinates.
pub fn time_from_list(coords: &[i64], dims: usize, what: &str) -> PyResult<Time> {
    if coords.len() != dims {
        return Err(err(Error::Value(format!(
            "{what}: time {coords:?} has {} coordinates, the dataflow's times have {dims}",
            coords.len()
        ))));
    }
    if let Some(v) = coords.iter().find(|&&v| v < 0) {
        return Err(err(Error::Value(format!(
            "{what}: negative time coordinate {v} in {coords:?}"
        ))));
    }
    Ok(Time::from_coords(
        &coords.iter().map(|&v| v as u64).collect::<Vec<_>>(),
    ))
}

/// Converts times to an int64 array of shape `(n, dims)`.
pub fn times_to_py<'py>(
    py: Python<'py>,
    times: &[Time],
    dims: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let mut flat = Vec::with_capacity(times.len() * dims);
    for t in times {
        flat.extend(t.0[..dims].iter().map(|&v| v as i64));
    }
    PyArray1::from_vec(py, flat)
        .reshape([times.len(), dims])
        .map(|a| a.into_any())
}

/// An int64 array of diffs or counts.
pub fn i64s_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    let np = obj.py().import("numpy")?;
    let arr = np.call_method1("asarray", (obj,)).map_err(|e| {
        err(Error::Overflow(format!(
            "{what}: cannot be read as 64-bit integers ({e})"
        )))
    })?;
    let kind: String = arr.getattr("dtype")?.getattr("kind")?.extract()?;
    if !matches!(kind.as_str(), "i" | "u" | "b") {
        return Err(err(Error::Type(format!(
            "{what}: expected integers, got dtype kind {kind:?}"
        ))));
    }
    if kind == "u" && arr.getattr("size")?.extract::<usize>()? > 0 {
        let max: u64 = arr.call_method0("max")?.extract()?;
        if max > i64::MAX as u64 {
            return Err(err(Error::Overflow(format!(
                "{what}: value {max} does not fit in int64"
            ))));
        }
    }
    let arr = np.call_method1("ascontiguousarray", (arr, "int64"))?;
    let a: PyReadonlyArray1<i64> = arr.extract()?;
    Ok(a.as_slice()?.to_vec())
}
