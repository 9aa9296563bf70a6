//! The bindings' one conversion module: every numpy array that enters or leaves the native
//! module goes through here (the kernels in `crate::kernels`, engine inputs and callback
//! results in `crate::engine`, captures in `crate::capture`, batch operators in
//! `crate::batch`, expressions in `crate::expr`).
//!
//! Columns are read by [`prepare`] and [`hold`]: numpy arrays are borrowed read-only in
//! place (copy-free when C-contiguous; [`ColView`] slices are read with the GIL released),
//! anything else goes through `numpy.asarray`; narrower ints are widened to int64 and
//! float32 to float64 by numpy; str columns (numpy `U`, `T` or `object` arrays of `str`,
//! or Arrow buffers, see [`column_from_py`]) are interned once per value.
//!
//! # uint64 policy
//!
//! Decided here, by [`Unsigned`], and nowhere else:
//! * the kernel API (`ddflow.kernels`: sort and consolidation kernels, `Trace`) keeps uint64
//!   columns as their own type ([`ColType::UInt64`]): traces may be keyed by uint64 ids and
//!   the sort kernels order them unsigned;
//! * everywhere else (engine inputs such as `InputSession.update_batch`, Python callbacks'
//!   results, captures, the batch operators, `eval_expr`, and integer arrays such as
//!   diffs, counts and times) the engine's dtypes are int64, float64, bool and str, so a
//!   uint64 array is read as int64 when every value fits, and otherwise raises
//!   `ddflow.errors.OverflowError`: `"<what>: value <v> at row <i> does not fit in int64"`
//!   (nothing is ever wrapped). Narrower unsigned ints always fit and are widened.
//!
//! Output: [`ColOut`] columns (decoded without the GIL) become numpy arrays in
//! [`col_to_py`]; times in [`times_to_py`] / [`flat_times_to_py`].
//!
//! Two word encodings are used:
//! * the core's ([`ddflow_core::encoding`]) in traces and the engine: int64 as its two's
//!   complement bits, so arranged int64 keys are ordered non-negative ascending, then
//!   negative ascending;
//! * an order-preserving one in the sort and consolidation kernels ([`Enc::Ordered`], the
//!   core's `encoding::ordered_word`): int64 with the sign bit flipped and float64 as its
//!   total-order bits, so their outputs come back in value order.

use crate::errors::to_py_err;
use ddflow_core::encoding::{
    decode_f64, encode_bool, encode_f64, from_ordered_word, ordered_word, DType, Interner,
};
use ddflow_core::engine::column::Column;
use ddflow_core::expr::{Column as ExprColumn, ColumnRef};
use ddflow_core::lattice::{Antichain, Time, MAX_DIMS};
use ddflow_core::{Error, Result as CoreResult};
use numpy::ndarray::Array2;
use numpy::{
    PyArray1, PyArray2, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArray1,
    PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Converts a core error into the matching `ddflow.errors` exception.
pub fn err(e: Error) -> PyErr {
    to_py_err(e)
}

/// A `ShapeError`.
pub fn shape_err(msg: String) -> PyErr {
    err(Error::Shape(msg))
}

/// A `SchemaTypeError`.
pub fn type_err(msg: String) -> PyErr {
    err(Error::Type(msg))
}

/// An `InvalidValueError`.
pub fn value_err(msg: String) -> PyErr {
    err(Error::Value(msg))
}

/// The type of a record column as seen from Python: the core's [`DType`]s, plus uint64,
/// which only the kernel API keeps (see the uint64 policy above).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColType {
    /// `numpy.int64`.
    Int64,
    /// `numpy.uint64` (same words as int64, decoded unsigned).
    UInt64,
    /// `numpy.float64`.
    Float64,
    /// `numpy.bool_`.
    Bool,
    /// Python `str` (object, `U` or `T` arrays), interned.
    Str,
}

impl ColType {
    /// The dtype name used in the Python API.
    pub fn name(self) -> &'static str {
        match self {
            ColType::Int64 => "int64",
            ColType::UInt64 => "uint64",
            ColType::Float64 => "float64",
            ColType::Bool => "bool",
            ColType::Str => "str",
        }
    }

    /// Parses a dtype name.
    pub fn parse(name: &str) -> Result<ColType, Error> {
        match name {
            "int64" | "i64" | "int" => Ok(ColType::Int64),
            "uint64" | "u64" => Ok(ColType::UInt64),
            "float64" | "f64" | "float" => Ok(ColType::Float64),
            "bool" => Ok(ColType::Bool),
            "str" | "string" | "utf8" | "object" => Ok(ColType::Str),
            other => Err(Error::Type(format!(
                "unsupported dtype {other:?} (expected int64, uint64, float64, bool or str)"
            ))),
        }
    }

    /// The core dtype of a column of this type (`None` for uint64, which the engine and
    /// expressions never see: they read it as int64).
    pub fn dtype(self) -> Option<DType> {
        match self {
            ColType::Int64 => Some(DType::Int64),
            ColType::UInt64 => None,
            ColType::Float64 => Some(DType::Float64),
            ColType::Bool => Some(DType::Bool),
            ColType::Str => Some(DType::Str),
        }
    }
}

impl From<DType> for ColType {
    fn from(d: DType) -> ColType {
        match d {
            DType::Int64 => ColType::Int64,
            DType::Float64 => ColType::Float64,
            DType::Bool => ColType::Bool,
            DType::Str => ColType::Str,
        }
    }
}

/// How column values become words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enc {
    /// The core's encoding (traces).
    Core,
    /// Order-preserving words (sort and consolidation kernels).
    Ordered,
}

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

fn slice1<'a, T: numpy::Element + Copy>(a: &'a PyReadonlyArray1<'_, T>) -> Cow<'a, [T]> {
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

/// Maps a core word of type `ty` to the encoding `enc` (the core's
/// [`ordered_word`] for [`Enc::Ordered`]; uint64 words are already in value order).
#[inline]
pub fn encode_word(ty: ColType, w: u64, enc: Enc) -> u64 {
    match (enc, ty.dtype()) {
        (Enc::Ordered, Some(d)) => ordered_word(d, w),
        _ => w,
    }
}

/// Inverse of [`encode_word`]: the core word of a word in encoding `enc`.
#[inline]
pub fn decode_word(ty: ColType, w: u64, enc: Enc) -> u64 {
    match (enc, ty.dtype()) {
        (Enc::Ordered, Some(d)) => from_ordered_word(d, w),
        _ => w,
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
fn dtype_name(a: &Bound<'_, PyUntypedArray>) -> String {
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

fn readonly<'py, T: numpy::Element>(
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

/// How uint64 arrays are read: the one uint64 policy of the bindings (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsigned {
    /// As their own type: the kernel API (`ddflow.kernels`) keys traces by uint64.
    Keep,
    /// As int64, every value checked to fit (an `OverflowError` naming the first value that
    /// does not; nothing is wrapped): engine inputs, callbacks' results, captures, batch
    /// operators, expressions and integer arrays, whose dtypes are int64, float64, bool and
    /// str.
    AsInt64,
}

/// The uint64 -> int64 check of [`Unsigned::AsInt64`]: the first value above `i64::MAX`
/// raises `OverflowError` naming it and its row (`per_row` values per row).
fn check_fits_i64(arg: &str, values: &[u64], per_row: usize) -> PyResult<()> {
    match values.iter().position(|&v| v > i64::MAX as u64) {
        None => Ok(()),
        Some(i) => Err(err(Error::Overflow(format!(
            "{arg}: value {} at row {} does not fit in int64",
            values[i],
            i / per_row.max(1)
        )))),
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
/// the declared type, if any).
pub fn column<'py>(
    arg: &str,
    obj: &Bound<'py, PyAny>,
    expect: Option<ColType>,
) -> PyResult<ColHold<'py>> {
    let (a, ty) = prepare(arg, obj, Unsigned::Keep)?;
    let hold = hold(arg, &a, ty)?;
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
                "{arg}: dtype {} does not match the column's declared type {}",
                dtype_name(&a),
                t.name()
            )));
        }
    }
    Ok(hold)
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

/// An output column, decoded without the GIL.
pub enum ColOut {
    /// int64 values.
    I64(Vec<i64>),
    /// uint64 values.
    U64(Vec<u64>),
    /// float64 values.
    F64(Vec<f64>),
    /// bool values.
    Bool(Vec<bool>),
    /// Strings.
    Str(Vec<Arc<str>>),
}

/// Decodes column `c` of rows of `w` words (encoding `enc`) as type `ty`.
pub fn decode_column(
    ty: ColType,
    rows: &[u64],
    w: usize,
    c: usize,
    enc: Enc,
) -> Result<ColOut, Error> {
    let words = rows.iter().skip(c).step_by(w.max(1));
    Ok(match ty {
        ColType::Int64 => ColOut::I64(words.map(|&x| decode_word(ty, x, enc) as i64).collect()),
        ColType::UInt64 => ColOut::U64(words.copied().collect()),
        ColType::Float64 => ColOut::F64(
            words
                .map(|&x| decode_f64(decode_word(ty, x, enc)))
                .collect(),
        ),
        ColType::Bool => ColOut::Bool(words.map(|&x| x != 0).collect()),
        ColType::Str => {
            let ids: Vec<u64> = words.copied().collect();
            ColOut::Str(Interner::resolve_all(&ids)?)
        }
    })
}

/// Decodes every column of rows of `types.len()` words.
pub fn decode_rows(types: &[ColType], rows: &[u64], enc: Enc) -> Result<Vec<ColOut>, Error> {
    let w = types.len();
    if w == 0 {
        return Ok(Vec::new());
    }
    types
        .iter()
        .enumerate()
        .map(|(c, &t)| decode_column(t, rows, w, c, enc))
        .collect()
}

/// One output column as a numpy array.
pub fn col_to_py(py: Python<'_>, col: ColOut) -> Bound<'_, PyAny> {
    match col {
        ColOut::I64(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::U64(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::F64(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::Bool(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::Str(v) => {
            // Strings with the same id share one Python object.
            let mut cache: HashMap<*const u8, PyObject> = HashMap::new();
            let objs: Vec<PyObject> = v
                .iter()
                .map(|s| {
                    cache
                        .entry(s.as_ptr())
                        .or_insert_with(|| PyString::new(py, s).into_any().unbind())
                        .clone_ref(py)
                })
                .collect();
            PyArray1::from_vec(py, objs).into_any()
        }
    }
}

/// Output columns as a Python list of numpy arrays.
pub fn cols_to_py(py: Python<'_>, cols: Vec<ColOut>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, cols.into_iter().map(|c| col_to_py(py, c)))
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

impl ColOut {
    /// An expression's result column (strings resolved; call without the GIL).
    pub fn from_expr(c: ExprColumn) -> CoreResult<ColOut> {
        Ok(match c {
            ExprColumn::Int64(v) => ColOut::I64(v),
            ExprColumn::Float64(v) => ColOut::F64(v),
            ExprColumn::Bool(v) => ColOut::Bool(v),
            ExprColumn::Str(ids) => ColOut::Str(Interner::resolve_all(&ids)?),
        })
    }
}

/// Reads one engine column (an input's, a callback result's, a capture's or a batch
/// operator's) from a numpy array, a sequence, or Arrow string buffers; `what` names it in
/// errors. uint64 is read as int64 ([`Unsigned::AsInt64`]).
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

/// Interns the strings of an Arrow-layout column (`ddflow.dtypes.Utf8Column`: int64 offsets
/// and UTF-8 bytes): value `i` is `data[offsets[i]..offsets[i + 1]]`. Offsets must be
/// non-decreasing and within `data`; the bytes must be UTF-8, each value starting and ending
/// on a character boundary. Runs without the GIL and without any per-value Python object.
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

/// An engine column as a numpy array (str columns become object arrays of str).
pub fn column_to_py<'py>(py: Python<'py>, col: &Column) -> PyResult<Bound<'py, PyAny>> {
    let out = decode_column(col.dtype.into(), &col.words, 1, 0, Enc::Core).map_err(err)?;
    Ok(col_to_py(py, out))
}

/// Record columns of row-major `rows` (`schema.len()` words each) for a capture: numpy
/// arrays, a str column as the tuple `(int32 or int64 offsets, uint8 UTF-8 bytes)` of its
/// Arrow layout (so Python builds a pyarrow array without touching each value).
pub fn rows_to_arrow_py<'py>(
    py: Python<'py>,
    schema: &[DType],
    rows: &[u64],
) -> PyResult<Bound<'py, PyList>> {
    let w = schema.len();
    let cols = schema
        .iter()
        .enumerate()
        .map(|(c, &d)| -> PyResult<Bound<'py, PyAny>> {
            let col = decode_column(d.into(), rows, w, c, Enc::Core).map_err(err)?;
            let ColOut::Str(strings) = col else {
                return Ok(col_to_py(py, col));
            };
            let total: usize = strings.iter().map(|s| s.len()).sum();
            let mut data = Vec::with_capacity(total);
            let mut ends = Vec::with_capacity(strings.len() + 1);
            ends.push(0usize);
            for s in &strings {
                data.extend_from_slice(s.as_bytes());
                ends.push(data.len());
            }
            let offsets = if total <= i32::MAX as usize {
                PyArray1::from_iter(py, ends.iter().map(|&e| e as i32)).into_any()
            } else {
                PyArray1::from_iter(py, ends.iter().map(|&e| e as i64)).into_any()
            };
            Ok(PyTuple::new(py, [offsets, PyArray1::from_vec(py, data).into_any()])?.into_any())
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, cols)
}

/// An integer array of any shape (or a sequence numpy reads) as a C-contiguous int64
/// array: ints and bools cast, uint64 per [`Unsigned::AsInt64`] (the row its message names
/// is the first index); other dtypes raise `SchemaTypeError`.
fn int64_array<'py>(what: &str, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    let np = obj.py().import("numpy")?;
    let arr = if obj.downcast::<PyUntypedArray>().is_ok() {
        obj.clone()
    } else {
        np.call_method1("asarray", (obj,)).map_err(|e| {
            err(Error::Overflow(format!(
                "{what}: cannot be read as 64-bit integers ({e})"
            )))
        })?
    };
    let a = arr.downcast::<PyUntypedArray>()?;
    let d = a.dtype();
    match (d.kind(), d.itemsize()) {
        (b'u', 8) => {
            let per_row = if a.ndim() == 2 { a.shape()[1] } else { 1 };
            let flat = np
                .call_method1("ascontiguousarray", (a,))?
                .call_method1("reshape", (-1,))?;
            let flat = flat.downcast::<PyUntypedArray>()?;
            let held = readonly::<u64>(what, flat)?;
            check_fits_i64(what, &slice1(&held), per_row)?;
        }
        (b'i' | b'u' | b'b', _) => {}
        _ => {
            return Err(type_err(format!(
                "{what}: expected integers, got dtype {}",
                dtype_name(a)
            )))
        }
    }
    let c = np.call_method1("ascontiguousarray", (a, "int64"))?;
    Ok(c.downcast::<PyUntypedArray>()?.clone())
}

/// A 1-D integer array of diffs, counts, offsets or row indexes for the engine (see
/// [`int64_array`]).
pub fn i64s_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    let a = int64_array(what, obj)?;
    let a = untyped1(what, a.as_any())?;
    let held = readonly::<i64>(what, &a)?;
    Ok(slice1(&held).into_owned())
}

/// A 1-D bool mask (a filter callback's result): any array or sequence numpy casts to bool.
pub fn bools_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<bool>> {
    let np = obj.py().import("numpy")?;
    let a = np.call_method1("ascontiguousarray", (obj, "bool"))?;
    let a = untyped1(what, &a)?;
    let held = readonly::<bool>(what, &a)?;
    Ok(slice1(&held).into_owned())
}

/// Engine times: an integer array of shape `(n,)` or `(n, dims)` (see [`int64_array`]) as
/// times of `dims` coordinates; negative coordinates are rejected.
pub fn times_from_py(obj: &Bound<'_, PyAny>, dims: usize, what: &str) -> PyResult<Vec<Time>> {
    let arr = int64_array(what, obj)?;
    let held = times(what, arr.as_any())?;
    if held.k != dims {
        return Err(value_err(format!(
            "{what}: times have {} coordinates, the dataflow's times have {dims}",
            held.k
        )));
    }
    held.view().to_times(what).map_err(err)
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
