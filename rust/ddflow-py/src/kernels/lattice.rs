//! Lattice kernels on int64 time arrays: `less_equal`, `join`, `meet`, `advance_by`,
//! `antichain`, `frontier_less_equal`, and interesting times.
//!
//! Times are `(n, k)` int64 arrays (`k` coordinates, 1 to `MAX_DIMS`) or `(n,)` arrays of
//! one-coordinate times; coordinates must be non-negative. Binary functions broadcast an
//! argument of a single time (shape `(1, k)`) against the other, and times of different
//! `k` are compared with missing coordinates taken as zero. Results have `max(k)`
//! coordinates and are 1-D when every time argument was.

use crate::convert::{
    frontier as parse_frontier, shape_err, times as parse_times, times_to_py, TimesHold,
};
use crate::errors::without_gil;
use ddflow_core::lattice::{Lattice, PartialOrder, Time};
use ddflow_core::times::{interesting_times as fast_times, interesting_times_reference};
use numpy::PyArray1;
use pyo3::prelude::*;

/// Pairs up two time arguments (broadcasting a single time); returns `n`.
fn broadcast(op: &str, a: &TimesHold<'_>, b: &TimesHold<'_>) -> PyResult<usize> {
    if a.n == b.n || b.n == 1 {
        Ok(a.n)
    } else if a.n == 1 {
        Ok(b.n)
    } else {
        Err(shape_err(format!(
            "{op}: a has {} times but b has {} (lengths must match, or one must hold a single time)",
            a.n, b.n
        )))
    }
}

#[inline]
fn at(ts: &[Time], i: usize) -> Time {
    if ts.len() == 1 {
        ts[0]
    } else {
        ts[i]
    }
}

/// Elementwise `f(a[i], b[i])` over two time arguments.
fn binary<'py, R: Send>(
    py: Python<'py>,
    op: &str,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    f: impl Fn(&Time, &Time) -> R + Send + Sync,
) -> PyResult<(Vec<R>, usize, bool)> {
    let ah = parse_times("a", a)?;
    let bh = parse_times("b", b)?;
    let n = broadcast(op, &ah, &bh)?;
    let (av, bv) = (ah.view(), bh.view());
    let out = without_gil(py, || {
        let at_ = av.to_times("a")?;
        let bt = bv.to_times("b")?;
        Ok((0..n).map(|i| f(&at(&at_, i), &at(&bt, i))).collect())
    })?;
    Ok((out, ah.k.max(bh.k), ah.one_d && bh.one_d))
}

/// `a[i] <= b[i]` in the product partial order (every coordinate `<=`): a bool array.
#[pyfunction]
pub fn less_equal<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let (v, _, _) = binary(py, "less_equal", a, b, |x, y| x.less_equal(y))?;
    Ok(PyArray1::from_vec(py, v))
}

/// Coordinate-wise max (least upper bound).
#[pyfunction]
pub fn join<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (v, k, one_d) = binary(py, "join", a, b, |x, y| x.join(y))?;
    times_to_py(py, &v, k, one_d)
}

/// Coordinate-wise min (greatest lower bound).
#[pyfunction]
pub fn meet<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let (v, k, one_d) = binary(py, "meet", a, b, |x, y| x.meet(y))?;
    times_to_py(py, &v, k, one_d)
}

fn check_dims(op: &str, k: usize, fk: usize) -> PyResult<()> {
    if fk != 0 && fk > k {
        return Err(crate::convert::value_err(format!(
            "{op}: frontier times have {fk} coordinates but times have {k}"
        )));
    }
    Ok(())
}

/// Advances every time by a frontier: the meet over `f` in `frontier` of `join(t, f)`.
#[pyfunction]
pub fn advance_by<'py>(
    py: Python<'py>,
    times: &Bound<'py, PyAny>,
    frontier: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let th = parse_times("times", times)?;
    let (f, fk) = parse_frontier("frontier", frontier)?;
    check_dims("advance_by", th.k, fk)?;
    let tv = th.view();
    let out = without_gil(py, || {
        let ts = tv.to_times("times")?;
        let fe = f.elements();
        Ok(ts.iter().map(|t| t.advance_by(fe)).collect::<Vec<_>>())
    })?;
    times_to_py(py, &out, th.k, th.one_d)
}

/// The minimal elements of a set of times (an antichain), sorted lexicographically.
#[pyfunction]
pub fn antichain<'py>(py: Python<'py>, times: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let th = parse_times("times", times)?;
    let tv = th.view();
    let out = without_gil(py, || {
        let mut ts = tv.to_times("times")?;
        // Sorted lexicographically, a minimal element is never preceded by a time above it,
        // so each time need only be checked against the minimal elements found so far.
        ts.sort_unstable();
        ts.dedup();
        let mut mins: Vec<Time> = Vec::new();
        for t in ts {
            if !mins.iter().any(|m| m.less_equal(&t)) {
                mins.push(t);
            }
        }
        Ok(mins)
    })?;
    times_to_py(py, &out, th.k, th.one_d)
}

/// Whether each time is in the future of `frontier` (some frontier element `<=` it).
#[pyfunction]
pub fn frontier_less_equal<'py>(
    py: Python<'py>,
    frontier: &Bound<'py, PyAny>,
    times: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArray1<bool>>> {
    let (f, fk) = parse_frontier("frontier", frontier)?;
    let th = parse_times("times", times)?;
    check_dims("frontier_less_equal", th.k, fk)?;
    let tv = th.view();
    let out = without_gil(py, || {
        let ts = tv.to_times("times")?;
        Ok(ts.iter().map(|t| f.less_equal(t)).collect::<Vec<_>>())
    })?;
    Ok(PyArray1::from_vec(py, out))
}

fn interesting<'py>(
    py: Python<'py>,
    edits: &Bound<'py, PyAny>,
    new_times: &Bound<'py, PyAny>,
    reference: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let eh = parse_times("edits", edits)?;
    let nh = parse_times("new_times", new_times)?;
    let (ev, nv) = (eh.view(), nh.view());
    let out = without_gil(py, || {
        let e = ev.to_times("edits")?;
        let n = nv.to_times("new_times")?;
        if reference {
            Ok(interesting_times_reference(&e, &n))
        } else {
            let mut out = Vec::new();
            fast_times(&e, &n, &mut out)?;
            Ok(out)
        }
    })?;
    times_to_py(py, &out, eh.k.max(nh.k), eh.one_d && nh.one_d)
}

/// Interesting times (output-sensitive sweep): the joins of a subset of `edits` with a
/// non-empty subset of `new_times`, sorted lexicographically and deduplicated.
#[pyfunction]
pub fn interesting_times<'py>(
    py: Python<'py>,
    edits: &Bound<'py, PyAny>,
    new_times: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    interesting(py, edits, new_times, false)
}

/// Interesting times by the quadratic reference algorithm (same result as
/// `interesting_times`; for tests).
#[pyfunction]
#[pyo3(name = "interesting_times_reference")]
pub fn interesting_times_ref<'py>(
    py: Python<'py>,
    edits: &Bound<'py, PyAny>,
    new_times: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    interesting(py, edits, new_times, true)
}

/// Registers the functions of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(less_equal, m)?)?;
    m.add_function(wrap_pyfunction!(join, m)?)?;
    m.add_function(wrap_pyfunction!(meet, m)?)?;
    m.add_function(wrap_pyfunction!(advance_by, m)?)?;
    m.add_function(wrap_pyfunction!(antichain, m)?)?;
    m.add_function(wrap_pyfunction!(frontier_less_equal, m)?)?;
    m.add_function(wrap_pyfunction!(interesting_times, m)?)?;
    m.add_function(wrap_pyfunction!(interesting_times_ref, m)?)?;
    Ok(())
}
