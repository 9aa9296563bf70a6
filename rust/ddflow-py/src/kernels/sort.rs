//! Sorting and consolidation kernels: `sort_values`, `sort_pairs`, `consolidate`,
//! `consolidate_pairs`.
//!
//! Integer and float columns are sorted by value (order-preserving words, see
//! [`Enc::Ordered`]); strings are grouped by their interned id (equal strings adjacent, in
//! no particular order). Every call runs with the GIL released and reuses a per-thread
//! [`RadixSorter`] (its buffers grow to the largest input seen; `release_sort_buffers`
//! frees them).

use crate::convert::{
    check_lengths, cols_to_py, column, decode_rows, diffs_view, flat_times_to_py, flatten_times,
    int_column, ColHold, ColOut, ColType, ColView, Enc,
};
use crate::errors::without_gil;
use ddflow_core::encoding::{from_ordered_word, ordered_word, DType};
use ddflow_core::sort::{sort_pairs_by_key, RadixSorter};
use ddflow_core::{Error, Updates};
use numpy::{PyArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// Runs `f` with this thread's sorter (the core's one per thread,
/// `ddflow_core::sort::with_thread_sorter`).
pub fn with_sorter<R>(f: impl FnOnce(&mut RadixSorter) -> R) -> R {
    ddflow_core::sort::with_thread_sorter(f)
}

/// Order-preserving word of value `i` of an integer column view.
#[inline]
fn ordered_int(v: &ColView<'_>, i: usize) -> u64 {
    match v {
        ColView::I64(a) => ordered_word(DType::Int64, a[i] as u64),
        ColView::U64(a) => a[i],
        _ => unreachable!("integer column"),
    }
}

fn int_out(ty: ColType, words: Vec<u64>) -> ColOut {
    match ty {
        ColType::Int64 => ColOut::I64(
            words
                .into_iter()
                .map(|w| from_ordered_word(DType::Int64, w) as i64)
                .collect(),
        ),
        _ => ColOut::U64(words),
    }
}

fn int_array(py: Python<'_>, col: ColOut) -> Bound<'_, PyAny> {
    crate::convert::col_to_py(py, col)
}

/// Sorts an int64 or uint64 array ascending (LSD radix sort over the bits that vary).
#[pyfunction]
pub fn sort_values<'py>(
    py: Python<'py>,
    values: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let h = int_column("values", values)?;
    let ty = h.ty();
    let v = h.view();
    let out = without_gil(py, || {
        let mut words: Vec<u64> = (0..v.len()).map(|i| ordered_int(&v, i)).collect();
        with_sorter(|s| s.sort_u64(&mut words));
        Ok(int_out(ty, words))
    })?;
    Ok(int_array(py, out))
}

/// Sorts `(key, val)` pairs by key, then val; returns `(keys, vals)`.
#[pyfunction]
pub fn sort_pairs<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    vals: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let kh = int_column("keys", keys)?;
    let vh = int_column("vals", vals)?;
    let n = check_lengths(
        "sort_pairs",
        &[("keys".into(), kh.len()), ("vals".into(), vh.len())],
    )?;
    let (kt, vt) = (kh.ty(), vh.ty());
    let (kv, vv) = (kh.view(), vh.view());
    let (ko, vo) = without_gil(py, || {
        let kw: Vec<u64> = (0..n).map(|i| ordered_int(&kv, i)).collect();
        let vw: Vec<u64> = (0..n).map(|i| ordered_int(&vv, i)).collect();
        let (ko, vo) = with_sorter(|s| sort_pairs_by_key(s, &kw, &vw));
        Ok((int_out(kt, ko), int_out(vt, vo)))
    })?;
    PyTuple::new(py, [int_array(py, ko), int_array(py, vo)])
}

/// Consolidates `(key, val, diff)` triples (no times): sorts by key then val, sums the
/// diffs of equal pairs, drops zero sums.
#[pyfunction]
pub fn consolidate_pairs<'py>(
    py: Python<'py>,
    keys: &Bound<'py, PyAny>,
    vals: &Bound<'py, PyAny>,
    diffs: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let kh = int_column("keys", keys)?;
    let vh = int_column("vals", vals)?;
    let dh = crate::convert::diffs("diffs", diffs)?;
    let n = check_lengths(
        "consolidate_pairs",
        &[
            ("keys".into(), kh.len()),
            ("vals".into(), vh.len()),
            ("diffs".into(), dh.len()),
        ],
    )?;
    let (kt, vt) = (kh.ty(), vh.ty());
    let (kv, vv, dv) = (kh.view(), vh.view(), diffs_view(&dh));
    let (ko, vo, d) = without_gil(py, || {
        let mut t: Vec<(u64, u64, i64)> = (0..n)
            .map(|i| (ordered_int(&kv, i), ordered_int(&vv, i), dv[i]))
            .collect();
        with_sorter(|s| s.consolidate_pairs_with_diffs(&mut t))
            .map_err(|e| e.context("consolidate_pairs: diffs"))?;
        let ko = t.iter().map(|x| x.0).collect();
        let vo = t.iter().map(|x| x.1).collect();
        let d: Vec<i64> = t.iter().map(|x| x.2).collect();
        Ok((int_out(kt, ko), int_out(vt, vo), d))
    })?;
    PyTuple::new(
        py,
        [
            int_array(py, ko),
            int_array(py, vo),
            PyArray1::from_vec(py, d).into_any(),
        ],
    )
}

/// Borrows a list of record columns.
pub fn column_list<'py>(
    arg: &str,
    columns: &Bound<'py, PyAny>,
    expect: Option<&[ColType]>,
) -> PyResult<Vec<ColHold<'py>>> {
    let list: Vec<Bound<'py, PyAny>> = if let Ok(l) = columns.downcast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = columns.downcast::<PyTuple>() {
        t.iter().collect()
    } else {
        return Err(crate::convert::type_err(format!(
            "{arg}: expected a list of numpy arrays, got {}",
            columns
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )));
    };
    if let Some(e) = expect {
        if e.len() != list.len() {
            return Err(crate::convert::shape_err(format!(
                "{arg}: expected {} columns, got {}",
                e.len(),
                list.len()
            )));
        }
    }
    list.iter()
        .enumerate()
        .map(|(i, c)| column(&format!("{arg}[{i}]"), c, expect.map(|e| e[i])))
        .collect()
}

/// Consolidates updates: sorts by (record, time), sums the diffs of equal (record, time),
/// drops zero sums. Returns `(columns, times, diffs)`.
#[pyfunction]
pub fn consolidate<'py>(
    py: Python<'py>,
    columns: &Bound<'py, PyAny>,
    times: &Bound<'py, PyAny>,
    diffs: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let cols = column_list("columns", columns, None)?;
    let th = crate::convert::times("times", times)?;
    let dh = crate::convert::diffs("diffs", diffs)?;
    let mut lens: Vec<(String, usize)> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| (format!("columns[{i}]"), c.len()))
        .collect();
    lens.push(("times".into(), th.n));
    lens.push(("diffs".into(), dh.len()));
    let n = check_lengths("consolidate", &lens)?;
    let types: Vec<ColType> = cols.iter().map(|c| c.ty()).collect();
    let views: Vec<ColView<'_>> = cols.iter().map(|c| c.view()).collect();
    let tv = th.view();
    let dv = diffs_view(&dh);
    let (k, one_d) = (th.k, th.one_d);
    let (outc, flat, d) = without_gil(py, || {
        let rows = crate::convert::build_rows(&views, n, Enc::Ordered);
        let ts = tv.to_times("times")?;
        let mut u = Updates::from_parts(types.len(), rows, ts, dv.to_vec())?;
        with_sorter(|s| s.consolidate_updates(&mut u))
            .map_err(|e: Error| e.context("consolidate: diffs"))?;
        let outc = decode_rows(&types, &u.rows, Enc::Ordered)?;
        let flat = flatten_times(&u.times, k);
        Ok((outc, flat, u.diffs))
    })?;
    let times_out = if one_d {
        PyArray1::from_vec(py, flat).into_any()
    } else {
        flat_times_to_py(py, flat, k)?
    };
    PyTuple::new(
        py,
        [
            cols_to_py(py, outc)?.into_any(),
            times_out,
            PyArray1::from_vec(py, d).into_any(),
        ],
    )
}

/// Frees this thread's sort buffers (they otherwise stay at the largest input's size).
#[pyfunction]
pub fn release_sort_buffers() {
    ddflow_core::sort::release_thread_sorter();
}

/// Registers the functions of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort_values, m)?)?;
    m.add_function(wrap_pyfunction!(sort_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(consolidate_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(consolidate, m)?)?;
    m.add_function(wrap_pyfunction!(release_sort_buffers, m)?)?;
    Ok(())
}
