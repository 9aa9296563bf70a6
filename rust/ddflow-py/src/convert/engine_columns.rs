//! The engine's typed columns ([`Column`]: a dtype and core words) in and out: from numpy
//! arrays or Arrow string buffers (offsets and UTF-8 bytes, interned without the GIL), to
//! numpy arrays or, for a capture's string columns, Arrow buffers again; and a callback's
//! bool mask. uint64 is read as int64 ([`Unsigned::AsInt64`]).

use super::columns_in::{readonly, slice1};
use super::{
    col_to_py, decode_column, err, hold, prepare, untyped1, ColHold, ColOut, Enc, Unsigned,
};
use ddflow_core::encoding::{is_null_word, DType, Interner, NULL_STR};
use ddflow_core::engine::column::Column;
use ddflow_core::{Error, Result as CoreResult};
use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::borrow::Cow;

/// Reads one engine column (an input's, a callback result's or a capture's) from a numpy
/// array, a sequence, or Arrow string buffers; `what` names it in errors. uint64 is read as int64 ([`Unsigned::AsInt64`]).
pub fn column_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Column> {
    let py = obj.py();
    // A numpy array is read as one below; the package's own column classes are not arrays,
    // and asking an array for their attributes would raise (and format) three errors.
    if obj.downcast::<PyUntypedArray>().is_ok() {
        return numpy_column(obj, what);
    }
    // Arrow's variable-width layout (`ddflow.dtypes.Utf8Column` / `BinaryColumn`): offsets,
    // bytes and null flags; a binary value is interned as its Latin-1 text
    // (`ddflow_core::encoding::binary_text`).
    let layout = obj
        .getattr("_ddflow_utf8")
        .map(|b| (b, DType::Str))
        .or_else(|_| obj.getattr("_ddflow_binary").map(|b| (b, DType::Binary)));
    if let Ok((buffers, dtype)) = layout {
        let (offsets, data, nulls): (
            PyReadonlyArray1<i64>,
            PyReadonlyArray1<u8>,
            Option<PyReadonlyArray1<bool>>,
        ) = buffers.extract()?;
        let (offsets, data) = (offsets.as_slice()?, data.as_slice()?);
        let words = py.allow_threads(|| match dtype {
            DType::Str => utf8_column(offsets, data, what),
            _ => binary_column(offsets, data, what),
        });
        let mut words = words.map_err(err)?;
        if let Some(nulls) = nulls {
            let nulls = nulls.as_slice()?;
            if nulls.len() != words.len() {
                return Err(err(Error::Shape(format!(
                    "{what}: {} null flags for {} values",
                    nulls.len(),
                    words.len()
                ))));
            }
            for (w, &null) in words.iter_mut().zip(nulls) {
                if null {
                    *w = NULL_STR;
                }
            }
        }
        return Ok(Column { dtype, words });
    }
    if let Ok(encoded) = obj.getattr("_ddflow_words") {
        // A nullable column the package encoded already (`ddflow.dtypes.WordColumn`): core
        // words, null rows holding their dtype's null word.
        let (name, words): (String, PyReadonlyArray1<u64>) = encoded.extract()?;
        let dtype = DType::parse(&name).map_err(err)?;
        return Ok(Column {
            dtype,
            words: words.as_slice()?.to_vec(),
        });
    }
    numpy_column(obj, what)
}

/// A column from a numpy array, or from what `numpy.asarray` makes of `obj`.
fn numpy_column(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Column> {
    let (arr, ty) = prepare(what, obj, Unsigned::AsInt64)?;
    let dtype = ty.dtype().expect("Unsigned::AsInt64 reads uint64 as int64");
    Ok(match hold(what, &arr, ty)? {
        // Interned ids are the words already.
        ColHold::Str(ids) => Column { dtype, words: ids },
        held => Column {
            dtype,
            words: held.view().core_words(),
        },
    })
}

/// Interns the values of an Arrow-layout binary column (int64 offsets into `data`) as their
/// Latin-1 texts (built back to back in one buffer, not one `String` per value).
pub fn binary_column(offsets: &[i64], data: &[u8], what: &str) -> CoreResult<Vec<u64>> {
    let n = offsets.len().saturating_sub(1);
    let mut text = String::new();
    let mut ends: Vec<usize> = Vec::with_capacity(n + 1);
    ends.push(0);
    for i in 0..n {
        let (a, b) = (offsets[i], offsets[i + 1]);
        if a < 0 || b < a || b as usize > data.len() {
            return Err(Error::Value(format!(
                "{what}: binary buffers are malformed at row {i} (offsets {a}..{b}, {} bytes)",
                data.len()
            )));
        }
        text.extend(data[a as usize..b as usize].iter().map(|&c| c as char));
        ends.push(text.len());
    }
    let mut words = Vec::with_capacity(n);
    Interner::intern_with(n, |i| &text[ends[i]..ends[i + 1]], &mut words);
    Ok(words)
}

/// Interns the strings of an Arrow-layout column (`ddflow.dtypes.Utf8Column`: int64 offsets
/// and UTF-8 bytes): value `i` is `data[offsets[i]..offsets[i + 1]]`. Offsets must be
/// non-decreasing and within `data`; the bytes must be UTF-8, each value starting and ending
/// on a character boundary. Runs without the GIL and without any per-value Python object or
/// allocation: the interner reads each value straight from the buffer.
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
    // Check every value once here, so that the interner's reads below cannot fail.
    for i in 0..n {
        let (a, b) = (offsets[i], offsets[i + 1]);
        if b < a {
            return Err(bad(i, "offsets decrease"));
        }
        let (a, b) = ((a - lo) as usize, (b - lo) as usize);
        if !(text.is_char_boundary(a) && text.is_char_boundary(b)) {
            return Err(bad(i, "a value splits a character"));
        }
    }
    let value = |i: usize| &text[(offsets[i] - lo) as usize..(offsets[i + 1] - lo) as usize];
    let mut words = Vec::with_capacity(n);
    Interner::intern_with(n, value, &mut words);
    Ok(words)
}

/// An engine column as a numpy array (str columns become object arrays of str, `None` for
/// a null). Python callbacks do not take int64 / float64 / bool nulls yet (numpy has no
/// null for them): such a column is refused, never handed over as its null word.
pub fn column_to_py<'py>(py: Python<'py>, col: &Column) -> PyResult<Bound<'py, PyAny>> {
    if col.dtype != DType::Str {
        if let Some(i) = col.words.iter().position(|&w| is_null_word(col.dtype, w)) {
            return Err(err(Error::Value(format!(
                "a null {} value (row {i}) reaches a Python function, which does not take \
                 nulls yet; filter them (is_not_null) or fill them (fill_null) first",
                col.dtype.name()
            ))));
        }
    }
    let out = decode_column(col.dtype.into(), &col.words, 1, 0, Enc::Core).map_err(err)?;
    Ok(col_to_py(py, out))
}

/// Record columns of row-major `rows` (`schema.len()` words each) for a capture: see
/// [`arrow_column_py`]. One strided pass per column.
pub fn rows_to_arrow_py<'py>(
    py: Python<'py>,
    schema: &[DType],
    rows: &[u64],
) -> PyResult<Bound<'py, PyList>> {
    let w = schema.len();
    let cols = schema
        .iter()
        .enumerate()
        .map(|(c, &d)| {
            let nulls = null_flags(d, rows.iter().skip(c).step_by(w.max(1)));
            arrow_column_py(py, decode_column(d.into(), rows, w, c, Enc::Core), nulls)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, cols)
}

/// Record columns already split by column (one slice of core words each) for a capture:
/// see [`arrow_column_py`]. One contiguous pass per column.
pub fn words_to_arrow_py<'py>(
    py: Python<'py>,
    schema: &[DType],
    columns: &[Cow<'_, [u64]>],
) -> PyResult<Bound<'py, PyList>> {
    let cols = schema
        .iter()
        .zip(columns)
        .map(|(&d, words)| {
            let nulls = null_flags(d, words.iter());
            arrow_column_py(py, decode_column(d.into(), words, 1, 0, Enc::Core), nulls)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, cols)
}

/// Which words of a column of `dtype` are null (`None` when none is).
fn null_flags<'a>(dtype: DType, words: impl Iterator<Item = &'a u64> + Clone) -> Option<Vec<bool>> {
    let mut words = words;
    if !words.clone().any(|&w| is_null_word(dtype, w)) {
        return None;
    }
    Some(words.by_ref().map(|&w| is_null_word(dtype, w)).collect())
}

/// One decoded capture column as Python receives it: a numpy array, or a str column as the
/// tuple `(int32 or int64 offsets, uint8 UTF-8 bytes)` of its Arrow layout (so Python
/// builds a pyarrow array without touching each value). A column with nulls (`nulls`) comes
/// as a dict `{"values": ..., "nulls": bool array}` (the values of null rows are
/// meaningless; a null string is empty in the buffers).
fn arrow_column_py(
    py: Python<'_>,
    col: CoreResult<ColOut>,
    nulls: Option<Vec<bool>>,
) -> PyResult<Bound<'_, PyAny>> {
    let values = arrow_values_py(py, col)?;
    let Some(nulls) = nulls else {
        return Ok(values);
    };
    let d = pyo3::types::PyDict::new(py);
    d.set_item("values", values)?;
    d.set_item("nulls", PyArray1::from_vec(py, nulls))?;
    Ok(d.into_any())
}

fn arrow_values_py(py: Python<'_>, col: CoreResult<ColOut>) -> PyResult<Bound<'_, PyAny>> {
    let strings = match col.map_err(err)? {
        ColOut::Str(strings) => strings,
        other => return Ok(col_to_py(py, other)),
    };
    // The resolved strings are Arrow's layout already: hand over the offsets and the text.
    let offsets = if strings.text.len() <= i32::MAX as usize {
        PyArray1::from_iter(py, strings.ends.iter().map(|&e| e as i32)).into_any()
    } else {
        PyArray1::from_iter(py, strings.ends.iter().map(|&e| e as i64)).into_any()
    };
    let data = PyArray1::from_vec(py, strings.text.into_bytes()).into_any();
    Ok(PyTuple::new(py, [offsets, data])?.into_any())
}

/// A 1-D bool mask (a filter callback's result): any array or sequence numpy casts to bool.
pub fn bools_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<bool>> {
    let np = obj.py().import("numpy")?;
    let a = np.call_method1("ascontiguousarray", (obj, "bool"))?;
    let a = untyped1(what, &a)?;
    let held = readonly::<bool>(what, &a)?;
    Ok(slice1(&held).into_owned())
}
