//! Times, diffs and frontiers: the kernels' `(n, k)` / `(n,)` int64 times arrays and 1-D
//! int64 diffs (borrowed in place), the engine's integer times arrays (read per the uint64
//! policy), frontier arguments in their several Python forms, and times and frontiers out.

use super::columns_in::{dtype_name, readonly, slice1};
use super::{shape_err, type_err, untyped1, value_err};
use ddflow_core::lattice::{Antichain, Time, MAX_DIMS};
use ddflow_core::Error;
use numpy::ndarray::Array2;
use numpy::{
    PyArray1, PyArray2, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArray1,
    PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use std::borrow::Cow;

/// A read-only borrow of a times array: `(n, k)` int64, or `(n,)` for one coordinate.
pub struct TimesHold<'py> {
    arr: PyReadonlyArrayDyn<'py, i64>,
    /// Number of times.
    pub n: usize,
    /// Coordinates per time.
    pub k: usize,
    /// Whether the array was 1-D.
    pub one_d: bool,
}

/// A times array's values (row-major), readable without the GIL.
pub struct TimesView<'a> {
    data: Cow<'a, [i64]>,
    /// Number of times.
    pub n: usize,
    /// Coordinates per time.
    pub k: usize,
}

/// Borrows a times argument.
pub fn times<'py>(arg: &str, obj: &Bound<'py, PyAny>) -> PyResult<TimesHold<'py>> {
    let a = obj.downcast::<PyUntypedArray>().map_err(|_| {
        type_err(format!(
            "{arg}: expected a numpy int64 array of shape (n,) or (n, k), got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let d = a.dtype();
    if !(d.kind() == b'i' && d.itemsize() == 8) {
        return Err(type_err(format!(
            "{arg}: unsupported dtype {} (times must be int64)",
            dtype_name(a)
        )));
    }
    let shape = a.shape().to_vec();
    let (n, k, one_d) = match shape.as_slice() {
        [n] => (*n, 1, true),
        [n, k] => (*n, *k, false),
        _ => {
            return Err(value_err(format!(
                "{arg}: times must have shape (n,) or (n, k), got {shape:?}"
            )))
        }
    };
    if k == 0 || k > MAX_DIMS {
        return Err(value_err(format!(
            "{arg}: times have {k} coordinates; 1 to {MAX_DIMS} are supported"
        )));
    }
    let typed = a
        .downcast::<PyArrayDyn<i64>>()
        .map_err(|_| type_err(format!("{arg}: times must be native-endian int64")))?;
    let arr = typed
        .try_readonly()
        .map_err(|e| value_err(format!("{arg}: cannot borrow the array: {e}")))?;
    Ok(TimesHold { arr, n, k, one_d })
}

impl TimesHold<'_> {
    /// A view readable without the GIL.
    pub fn view(&self) -> TimesView<'_> {
        let data = match self.arr.as_slice() {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => Cow::Owned(self.arr.as_array().iter().copied().collect()),
        };
        TimesView {
            data,
            n: self.n,
            k: self.k,
        }
    }
}

impl TimesView<'_> {
    /// The times, checking that no coordinate is negative.
    pub fn to_times(&self, arg: &str) -> Result<Vec<Time>, Error> {
        let k = self.k;
        let mut out = Vec::with_capacity(self.n);
        if k == 1 {
            let mut min = 0i64;
            for &c in self.data.iter() {
                min = min.min(c);
                out.push(Time::scalar(c as u64));
            }
            if min < 0 {
                return Err(negative(arg, &self.data, k));
            }
            return Ok(out);
        }
        let mut min = 0i64;
        for row in self.data.chunks_exact(k) {
            let mut t = [0u64; MAX_DIMS];
            for (x, &c) in t.iter_mut().zip(row) {
                min = min.min(c);
                *x = c as u64;
            }
            out.push(Time(t));
        }
        if min < 0 {
            return Err(negative(arg, &self.data, k));
        }
        Ok(out)
    }
}

fn negative(arg: &str, data: &[i64], k: usize) -> Error {
    let i = data.iter().position(|&c| c < 0).unwrap_or(0);
    Error::Value(format!(
        "{arg}: time {} has negative coordinate {} (times are non-negative)",
        i / k,
        data[i]
    ))
}

/// Borrows a diffs argument (1-D int64).
pub fn diffs<'py>(arg: &str, obj: &Bound<'py, PyAny>) -> PyResult<PyReadonlyArray1<'py, i64>> {
    let a = untyped1(arg, obj)?;
    let d = a.dtype();
    if !(d.kind() == b'i' && d.itemsize() == 8) {
        return Err(type_err(format!(
            "{arg}: unsupported dtype {} (diffs must be int64)",
            dtype_name(&a)
        )));
    }
    readonly(arg, &a)
}

/// A diffs view (borrowed when contiguous).
pub fn diffs_view<'a>(d: &'a PyReadonlyArray1<'_, i64>) -> Cow<'a, [i64]> {
    slice1(d)
}

/// Times as a numpy array: `(n,)` if `one_d`, else `(n, k)`.
pub fn times_to_py<'py>(
    py: Python<'py>,
    times: &[Time],
    k: usize,
    one_d: bool,
) -> PyResult<Bound<'py, PyAny>> {
    if one_d {
        let v: Vec<i64> = times.iter().map(|t| t.0[0] as i64).collect();
        return Ok(PyArray1::from_vec(py, v).into_any());
    }
    let mut flat = Vec::with_capacity(times.len() * k);
    for t in times {
        flat.extend(t.0[..k].iter().map(|&c| c as i64));
    }
    let arr = Array2::from_shape_vec((times.len(), k), flat)
        .map_err(|e| shape_err(format!("times: {e}")))?;
    Ok(PyArray2::from_owned_array(py, arr).into_any())
}

/// Times stored as flat coordinates (`k` each) as an `(n, k)` int64 numpy array (one
/// copy).
pub fn coords_to_py<'py>(py: Python<'py>, coords: &[u64], k: usize) -> PyResult<Bound<'py, PyAny>> {
    flat_times_to_py(py, coords.iter().map(|&c| c as i64).collect(), k)
}

/// Flattens times to `k` coordinates each (used to build outputs without the GIL).
pub fn flatten_times(times: &[Time], k: usize) -> Vec<i64> {
    let mut flat = Vec::with_capacity(times.len() * k);
    for t in times {
        flat.extend(t.0[..k].iter().map(|&c| c as i64));
    }
    flat
}

/// Flat `(n, k)` times to numpy.
pub fn flat_times_to_py(py: Python<'_>, flat: Vec<i64>, k: usize) -> PyResult<Bound<'_, PyAny>> {
    let n = flat.len() / k.max(1);
    let arr = Array2::from_shape_vec((n, k), flat).map_err(|e| shape_err(format!("times: {e}")))?;
    Ok(PyArray2::from_owned_array(py, arr).into_any())
}

/// Parses a frontier or single-time argument into times of at most `MAX_DIMS` coordinates:
/// an `int` (one 1-D time), a sequence of ints (one time), a sequence of sequences of ints
/// (several times), or a numpy int64 array (1-D: one time; 2-D `(m, k)`: `m` times).
/// Returns the times and their number of coordinates (0 for an empty frontier).
pub fn time_list(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<(Vec<Time>, usize)> {
    let rows: Vec<Vec<i64>> = if let Ok(a) = obj.downcast::<PyUntypedArray>() {
        let d = a.dtype();
        if !(d.kind() == b'i' || d.kind() == b'u') {
            return Err(type_err(format!(
                "{arg}: unsupported dtype {} (times must be integers)",
                dtype_name(a)
            )));
        }
        match a.ndim() {
            0 | 1 => {
                let t = obj
                    .call_method0("tolist")?
                    .extract::<Vec<i64>>()
                    .or_else(|_| -> PyResult<Vec<i64>> { Ok(vec![obj.extract::<i64>()?]) })?;
                if t.is_empty() {
                    vec![]
                } else {
                    vec![t]
                }
            }
            2 => obj.call_method0("tolist")?.extract()?,
            _ => {
                return Err(value_err(format!(
                    "{arg}: expected a 1-D (one time) or 2-D (several times) array, got shape {:?}",
                    a.shape()
                )))
            }
        }
    } else if let Ok(t) = obj.extract::<i64>() {
        vec![vec![t]]
    } else if let Ok(t) = obj.extract::<Vec<i64>>() {
        if t.is_empty() {
            vec![]
        } else {
            vec![t]
        }
    } else if let Ok(ts) = obj.extract::<Vec<Vec<i64>>>() {
        ts
    } else {
        return Err(type_err(format!(
            "{arg}: expected an int, a sequence of ints (one time) or a sequence of such sequences, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )));
    };
    let mut k = 0;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        if r.is_empty() || r.len() > MAX_DIMS {
            return Err(value_err(format!(
                "{arg}: a time has {} coordinates; 1 to {MAX_DIMS} are supported",
                r.len()
            )));
        }
        if k != 0 && r.len() != k {
            return Err(value_err(format!(
                "{arg}: times of different dimensions ({k} and {})",
                r.len()
            )));
        }
        k = r.len();
        if let Some(c) = r.iter().find(|&&c| c < 0) {
            return Err(value_err(format!(
                "{arg}: negative time coordinate {c} (times are non-negative)"
            )));
        }
        let coords: Vec<u64> = r.iter().map(|&c| c as u64).collect();
        out.push(Time::from_coords(&coords));
    }
    Ok((out, k))
}

/// A frontier argument as an antichain (its minimal elements) and its dimension.
pub fn frontier(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<(Antichain<Time>, usize)> {
    let (ts, k) = time_list(arg, obj)?;
    Ok((Antichain::from_iter_minimal(ts), k))
}

/// A frontier as `list[list[int]]` of `k` coordinates each, sorted.
pub fn frontier_to_py(f: &Antichain<Time>, k: usize) -> Vec<Vec<i64>> {
    let mut f = f.clone();
    f.sort();
    f.elements()
        .iter()
        .map(|t| t.0[..k].iter().map(|&c| c as i64).collect())
        .collect()
}

/// One time of `dims` coordinates from a list of ints (negative coordinates rejected).
pub fn time_from_list(coords: &[i64], dims: usize, what: &str) -> PyResult<Time> {
    if coords.len() != dims {
        return Err(value_err(format!(
            "{what}: time {coords:?} has {} coordinates, the dataflow's times have {dims}",
            coords.len()
        )));
    }
    if let Some(v) = coords.iter().find(|&&v| v < 0) {
        return Err(value_err(format!(
            "{what}: negative time coordinate {v} in {coords:?}"
        )));
    }
    Ok(Time::from_coords(
        &coords.iter().map(|&v| v as u64).collect::<Vec<_>>(),
    ))
}
