//! Record columns in: numpy arrays (or anything `numpy.asarray` reads) borrowed read-only
//! as [`ColHold`]s, read without the GIL as [`ColView`]s, and interleaved into row words.
//! uint64 arrays are read as [`Unsigned`] says; the kernels' str columns may also come in
//! Arrow's layout (offsets and UTF-8 bytes, interned without a Python object per value).

use super::uint64::check_fits_i64;
use super::{encode_word, shape_err, type_err, value_err, ColType, Enc, Unsigned};
use ddflow_core::encoding::{encode_bool, encode_f64, ordered_word, DType, Interner};
use ddflow_core::expr::ColumnRef;
use numpy::{
    PyArray1, PyArrayDescrMethods, PyArrayMethods, PyReadonlyArray1, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::borrow::Cow;

/// A read-only borrow of an input column.
pub enum ColHold<'py> {
    /// int64 values.
    I64(PyReadonlyArray1<'py, i64>),
    /// uint64 values.
    U64(PyReadonlyArray1<'py, u64>),
    /// float64 values.
    F64(PyReadonlyArray1<'py, f64>),
    /// bool values.
    Bool(PyReadonlyArray1<'py, bool>),
    /// Interned string ids.
    Str(Vec<u64>),
}

/// A column's values as slices, readable without the GIL.
pub enum ColView<'a> {
    /// int64 values.
    I64(Cow<'a, [i64]>),
    /// uint64 values.
    U64(Cow<'a, [u64]>),
    /// float64 values.
    F64(Cow<'a, [f64]>),
    /// bool values.
    Bool(Cow<'a, [bool]>),
    /// Interned string ids.
    Str(&'a [u64]),
}

pub(super) fn slice1<'a, T: numpy::Element + Copy>(a: &'a PyReadonlyArray1<'_, T>) -> Cow<'a, [T]> {
    match a.as_slice() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(a.as_array().iter().copied().collect()),
    }
}

impl ColHold<'_> {
    /// The column's type.
    pub fn ty(&self) -> ColType {
        match self {
            ColHold::I64(_) => ColType::Int64,
            ColHold::U64(_) => ColType::UInt64,
            ColHold::F64(_) => ColType::Float64,
            ColHold::Bool(_) => ColType::Bool,
            ColHold::Str(_) => ColType::Str,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ColHold::I64(a) => a.len(),
            ColHold::U64(a) => a.len(),
            ColHold::F64(a) => a.len(),
            ColHold::Bool(a) => a.len(),
            ColHold::Str(v) => v.len(),
        }
    }

    /// A view readable without the GIL.
    pub fn view(&self) -> ColView<'_> {
        match self {
            ColHold::I64(a) => ColView::I64(slice1(a)),
            ColHold::U64(a) => ColView::U64(slice1(a)),
            ColHold::F64(a) => ColView::F64(slice1(a)),
            ColHold::Bool(a) => ColView::Bool(slice1(a)),
            ColHold::Str(v) => ColView::Str(v),
        }
    }
}

/// Reinterprets int64 values as their two's complement words.
#[inline]
pub fn i64_as_u64(s: &[i64]) -> &[u64] {
    // SAFETY: i64 and u64 have the same size and alignment, and every bit pattern is valid.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u64, s.len()) }
}

impl ColView<'_> {
    /// The column as the expression evaluator reads it (`None` for uint64, which
    /// [`Unsigned::AsInt64`] never yields).
    pub fn as_expr_column(&self) -> Option<ColumnRef<'_>> {
        Some(match self {
            ColView::I64(v) => ColumnRef::Int64(v),
            ColView::F64(v) => ColumnRef::Float64(v),
            ColView::Bool(v) => ColumnRef::Bool(v),
            ColView::Str(v) => ColumnRef::Str(v),
            ColView::U64(_) => return None,
        })
    }

    /// The column's words in the core's encoding (a copy; int64 words are its bits).
    pub fn core_words(&self) -> Vec<u64> {
        match self {
            ColView::I64(v) => i64_as_u64(v).to_vec(),
            ColView::U64(v) => v.to_vec(),
            ColView::F64(v) => v.iter().map(|&x| encode_f64(x)).collect(),
            ColView::Bool(v) => v.iter().map(|&x| encode_bool(x)).collect(),
            ColView::Str(v) => v.to_vec(),
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ColView::I64(a) => a.len(),
            ColView::U64(a) => a.len(),
            ColView::F64(a) => a.len(),
            ColView::Bool(a) => a.len(),
            ColView::Str(v) => v.len(),
        }
    }

    /// Calls `f(i, word)` for every value, in order.
    #[inline]
    pub fn for_each_word(&self, enc: Enc, mut f: impl FnMut(usize, u64)) {
        match (self, enc) {
            (ColView::I64(a), Enc::Core) => {
                for (i, &v) in i64_as_u64(a).iter().enumerate() {
                    f(i, v)
                }
            }
            (ColView::I64(a), Enc::Ordered) => {
                for (i, &v) in i64_as_u64(a).iter().enumerate() {
                    f(i, ordered_word(DType::Int64, v))
                }
            }
            (ColView::U64(a), _) => {
                for (i, &v) in a.iter().enumerate() {
                    f(i, v)
                }
            }
            (ColView::F64(a), _) => {
                for (i, &v) in a.iter().enumerate() {
                    f(i, encode_word(ColType::Float64, encode_f64(v), enc))
                }
            }
            (ColView::Bool(a), _) => {
                for (i, &v) in a.iter().enumerate() {
                    f(i, v as u64)
                }
            }
            (ColView::Str(a), _) => {
                for (i, &v) in a.iter().enumerate() {
                    f(i, v)
                }
            }
        }
    }
}

/// Interleaves columns into rows of `cols.len()` words (row `i` at `i * w .. (i + 1) * w`).
pub fn build_rows(cols: &[ColView<'_>], n: usize, enc: Enc) -> Vec<u64> {
    let w = cols.len();
    if w == 1 {
        let mut rows = Vec::with_capacity(n);
        cols[0].for_each_word(enc, |_, x| rows.push(x));
        return rows;
    }
    let mut rows = vec![0u64; n * w];
    for (c, col) in cols.iter().enumerate() {
        col.for_each_word(enc, |i, x| rows[i * w + c] = x);
    }
    rows
}

/// The numpy type name of an array (for messages).
pub(super) fn dtype_name(a: &Bound<'_, PyUntypedArray>) -> String {
    a.dtype().to_string()
}

/// Borrows `obj` as a 1-D numpy array, or explains why not.
pub fn untyped1<'py>(arg: &str, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    let a = obj.downcast::<PyUntypedArray>().map_err(|_| {
        type_err(format!(
            "{arg}: expected a numpy array, got {} (use ddflow.kernels to pass lists or pyarrow arrays)",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    if a.ndim() != 1 {
        return Err(shape_err(format!(
            "{arg}: expected a 1-D array, got shape {:?}",
            a.shape()
        )));
    }
    Ok(a.clone())
}

pub(super) fn readonly<'py, T: numpy::Element>(
    arg: &str,
    a: &Bound<'py, PyUntypedArray>,
) -> PyResult<PyReadonlyArray1<'py, T>> {
    let typed = a.downcast::<PyArray1<T>>().map_err(|_| {
        type_err(format!(
            "{arg}: unsupported dtype {} (byte order must be native)",
            dtype_name(a)
        ))
    })?;
    typed
        .try_readonly()
        .map_err(|e| value_err(format!("{arg}: cannot borrow the array: {e}")))
}

/// Borrows an integer column (int64 or uint64) for the sort kernels.
pub fn int_column<'py>(arg: &str, obj: &Bound<'py, PyAny>) -> PyResult<ColHold<'py>> {
    let a = untyped1(arg, obj)?;
    let d = a.dtype();
    match (d.kind(), d.itemsize()) {
        (b'i', 8) => Ok(ColHold::I64(readonly(arg, &a)?)),
        (b'u', 8) => Ok(ColHold::U64(readonly(arg, &a)?)),
        _ => Err(type_err(format!(
            "{arg}: unsupported dtype {} (expected int64 or uint64)",
            dtype_name(&a)
        ))),
    }
}

/// A 1-D column ready to borrow, and its type: numpy arrays as they are, anything else
/// through `numpy.asarray`; narrower ints (signed, or unsigned below 64 bits) widened to
/// int64 and float32 to float64 by numpy; uint64 read per `unsigned`; `U` / `T` / `object`
/// arrays are str columns (their elements are checked when the column is held).
pub fn prepare<'py>(
    arg: &str,
    obj: &Bound<'py, PyAny>,
    unsigned: Unsigned,
) -> PyResult<(Bound<'py, PyUntypedArray>, ColType)> {
    let py = obj.py();
    let arr = if obj.downcast::<PyUntypedArray>().is_ok() {
        obj.clone()
    } else {
        let np = py.import("numpy")?;
        np.call_method1("asarray", (obj,))
            .map_err(|e| type_err(format!("{arg}: cannot be read as a column ({e})")))?
    };
    let a = untyped1(arg, &arr)?;
    let d = a.dtype();
    let cast = |to: &str| -> PyResult<Bound<'py, PyUntypedArray>> {
        let c = a.call_method1("astype", (to,))?;
        Ok(c.downcast::<PyUntypedArray>()?.clone())
    };
    Ok(match (d.kind(), d.itemsize()) {
        (b'i', 8) => (a, ColType::Int64),
        (b'i', _) => (cast("int64")?, ColType::Int64),
        (b'u', 8) if unsigned == Unsigned::Keep => (a, ColType::UInt64),
        (b'u', 8) => {
            let held = readonly::<u64>(arg, &a)?;
            check_fits_i64(arg, &slice1(&held), 1)?;
            (cast("int64")?, ColType::Int64)
        }
        (b'u', _) => (cast("int64")?, ColType::Int64),
        (b'f', 8) => (a, ColType::Float64),
        (b'f', _) => (cast("float64")?, ColType::Float64),
        (b'b', 1) => (a, ColType::Bool),
        (b'O', _) | (b'U', _) | (b'T', _) => (a, ColType::Str),
        _ => {
            return Err(type_err(format!(
                "{arg}: unsupported dtype {} (expected int64, {}float64, bool or str)",
                dtype_name(&a),
                if unsigned == Unsigned::Keep {
                    "uint64, "
                } else {
                    ""
                }
            )))
        }
    })
}

/// Borrows a column `prepare` returned as type `ty` (str columns are interned here).
pub fn hold<'py>(arg: &str, a: &Bound<'py, PyUntypedArray>, ty: ColType) -> PyResult<ColHold<'py>> {
    Ok(match ty {
        ColType::Int64 => ColHold::I64(readonly(arg, a)?),
        ColType::UInt64 => ColHold::U64(readonly(arg, a)?),
        ColType::Float64 => ColHold::F64(readonly(arg, a)?),
        ColType::Bool => ColHold::Bool(readonly(arg, a)?),
        ColType::Str if a.dtype().kind() == b'O' => ColHold::Str(intern_objects(arg, a)?),
        ColType::Str => {
            let objs = a.call_method1("astype", ("object",))?;
            ColHold::Str(intern_objects(arg, objs.downcast::<PyUntypedArray>()?)?)
        }
    })
}

/// Borrows a record column of any supported type for the kernels (uint64 kept; `expect`:
/// the declared type, if any). A str column in Arrow's layout (`ddflow.dtypes.Utf8Column`,
/// without nulls) is interned from its buffers without the GIL.
pub fn column<'py>(
    arg: &str,
    obj: &Bound<'py, PyAny>,
    expect: Option<ColType>,
) -> PyResult<ColHold<'py>> {
    let (hold, dtype) = match utf8_buffers(arg, obj)? {
        Some(words) => (ColHold::Str(words), "str (Arrow)".to_string()),
        None => {
            let (a, ty) = prepare(arg, obj, Unsigned::Keep)?;
            (hold(arg, &a, ty)?, dtype_name(&a))
        }
    };
    if let Some(t) = expect {
        let got = hold.ty();
        // An int64 column accepts uint64 arrays and vice versa (same words).
        let compatible = got == t
            || matches!(
                (got, t),
                (ColType::Int64, ColType::UInt64) | (ColType::UInt64, ColType::Int64)
            );
        if !compatible {
            return Err(type_err(format!(
                "{arg}: dtype {dtype} does not match the column's declared type {}",
                t.name()
            )));
        }
    }
    Ok(hold)
}

/// The interned strings of a column in Arrow's layout (an object with `_ddflow_utf8`:
/// offsets, UTF-8 bytes, null flags), or `None` for anything else (a numpy array is not
/// asked). Null rows are refused.
fn utf8_buffers(arg: &str, obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u64>>> {
    if obj.downcast::<PyUntypedArray>().is_ok() {
        return Ok(None);
    }
    let Ok(buffers) = obj.getattr("_ddflow_utf8") else {
        return Ok(None);
    };
    let (offsets, data, nulls): (
        PyReadonlyArray1<i64>,
        PyReadonlyArray1<u8>,
        Option<PyReadonlyArray1<bool>>,
    ) = buffers.extract()?;
    if let Some(nulls) = nulls {
        let count = nulls.as_slice()?.iter().filter(|&&x| x).count();
        if count > 0 {
            return Err(value_err(format!(
                "{arg}: {count} null values (nulls are not supported)"
            )));
        }
    }
    let (offsets, data) = (offsets.as_slice()?, data.as_slice()?);
    let words = obj
        .py()
        .allow_threads(|| super::utf8_column(offsets, data, arg));
    Ok(Some(words.map_err(super::err)?))
}

/// Interns the `str` elements of an object array.
fn intern_objects(arg: &str, a: &Bound<'_, PyUntypedArray>) -> PyResult<Vec<u64>> {
    let py = a.py();
    let typed = readonly::<PyObject>(arg, a)?;
    let view = typed.as_array();
    let mut strs: Vec<&str> = Vec::with_capacity(view.len());
    // Keep the bound strings alive while their `&str`s are in use.
    let mut bound: Vec<Bound<'_, PyString>> = Vec::with_capacity(view.len());
    for (i, o) in view.iter().enumerate() {
        let o = o.bind(py);
        match o.downcast::<PyString>() {
            Ok(s) => bound.push(s.clone()),
            Err(_) => {
                let what = if o.is_none() {
                    "None (nulls are not supported)".to_string()
                } else {
                    o.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                };
                return Err(type_err(format!(
                    "{arg}: value at row {i} is {what}; str columns must hold only str"
                )));
            }
        }
    }
    for s in bound.iter() {
        strs.push(s.to_str()?);
    }
    let mut out = Vec::with_capacity(strs.len());
    Interner::intern_all(strs.iter().copied(), &mut out);
    Ok(out)
}

/// Checks that every column has `n` values.
pub fn check_lengths(what: &str, lens: &[(String, usize)]) -> PyResult<usize> {
    let Some((first, n)) = lens.first() else {
        return Ok(0);
    };
    for (name, len) in lens.iter().skip(1) {
        if len != n {
            return Err(shape_err(format!(
                "{what}: {first} has {n} values but {name} has {len}"
            )));
        }
    }
    Ok(*n)
}
