//! Typed columns: the inputs ([`ColumnRef`]) and outputs ([`Column`]) of
//! [`BoundExpr::eval_columns`](super::BoundExpr::eval_columns), and the typed temporaries
//! ([`Vals`], [`Value`]) evaluation works on.

use crate::encoding::{encode_bool, encode_f64, encode_i64, DType};

/// An owned typed column.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    /// int64 values.
    Int64(Vec<i64>),
    /// float64 values (not canonicalised: `-0.0` and NaN payloads are kept).
    Float64(Vec<f64>),
    /// bool values.
    Bool(Vec<bool>),
    /// Interned string ids (see [`crate::encoding::Interner`]).
    Str(Vec<u64>),
}

impl Column {
    /// The column's dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Column::Int64(_) => DType::Int64,
            Column::Float64(_) => DType::Float64,
            Column::Bool(_) => DType::Bool,
            Column::Str(_) => DType::Str,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Column::Int64(v) => v.len(),
            Column::Float64(v) => v.len(),
            Column::Bool(v) => v.len(),
            Column::Str(v) => v.len(),
        }
    }

    /// Whether the column is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// An empty column with room for `n` values.
    pub fn with_capacity(dtype: DType, n: usize) -> Column {
        match dtype.physical() {
            DType::Int64 => Column::Int64(Vec::with_capacity(n)),
            DType::Float64 => Column::Float64(Vec::with_capacity(n)),
            DType::Bool => Column::Bool(Vec::with_capacity(n)),
            _ => Column::Str(Vec::with_capacity(n)),
        }
    }

    /// A borrowed view.
    pub fn view(&self) -> ColumnRef<'_> {
        match self {
            Column::Int64(v) => ColumnRef::Int64(v),
            Column::Float64(v) => ColumnRef::Float64(v),
            Column::Bool(v) => ColumnRef::Bool(v),
            Column::Str(v) => ColumnRef::Str(v),
        }
    }

    /// Decodes column `index` of `n` rows of `width` words (see [`crate::encoding`]).
    pub fn from_words(dtype: DType, words: &[u64], width: usize, index: usize) -> Column {
        let it = words.chunks_exact(width).map(|row| row[index]);
        match dtype.physical() {
            DType::Int64 => Column::Int64(it.map(|w| w as i64).collect()),
            DType::Float64 => Column::Float64(it.map(f64::from_bits).collect()),
            DType::Bool => Column::Bool(it.map(|w| w != 0).collect()),
            _ => Column::Str(it.collect()),
        }
    }

    /// Encodes the values as words (canonical float zero and NaN).
    pub fn into_words(self) -> Vec<u64> {
        match self {
            Column::Int64(v) => v.into_iter().map(encode_i64).collect(),
            Column::Float64(v) => v.into_iter().map(encode_f64).collect(),
            Column::Bool(v) => v.into_iter().map(encode_bool).collect(),
            Column::Str(v) => v,
        }
    }
}

/// A borrowed typed column.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColumnRef<'a> {
    /// int64 values.
    Int64(&'a [i64]),
    /// float64 values.
    Float64(&'a [f64]),
    /// bool values.
    Bool(&'a [bool]),
    /// Interned string ids.
    Str(&'a [u64]),
}

impl<'a> ColumnRef<'a> {
    /// The values in `range`.
    pub fn slice(&self, range: std::ops::Range<usize>) -> ColumnRef<'a> {
        match *self {
            ColumnRef::Int64(v) => ColumnRef::Int64(&v[range]),
            ColumnRef::Float64(v) => ColumnRef::Float64(&v[range]),
            ColumnRef::Bool(v) => ColumnRef::Bool(&v[range]),
            ColumnRef::Str(v) => ColumnRef::Str(&v[range]),
        }
    }

    /// The column's dtype.
    pub fn dtype(&self) -> DType {
        match self {
            ColumnRef::Int64(_) => DType::Int64,
            ColumnRef::Float64(_) => DType::Float64,
            ColumnRef::Bool(_) => DType::Bool,
            ColumnRef::Str(_) => DType::Str,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            ColumnRef::Int64(v) => v.len(),
            ColumnRef::Float64(v) => v.len(),
            ColumnRef::Bool(v) => v.len(),
            ColumnRef::Str(v) => v.len(),
        }
    }

    /// Whether the column is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The values of one dtype during evaluation: a broadcast constant, a borrowed input column
/// or an owned temporary.
#[derive(Clone, Debug)]
pub(crate) enum Vals<'a, T> {
    /// The same value on every row.
    Const(T),
    /// An input column.
    Slice(&'a [T]),
    /// A computed column.
    Owned(Vec<T>),
}

impl<T: Copy> Vals<'_, T> {
    /// The value of row `i`.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> T {
        match self {
            Vals::Const(v) => *v,
            Vals::Slice(s) => s[i],
            Vals::Owned(s) => s[i],
        }
    }

    /// The values as a slice, unless constant.
    #[inline]
    pub(crate) fn slice(&self) -> Option<&[T]> {
        match self {
            Vals::Const(_) => None,
            Vals::Slice(s) => Some(s),
            Vals::Owned(s) => Some(s),
        }
    }

    /// Appends `f` of `n` values to `out`.
    pub(crate) fn append_mapped<O: Clone>(&self, out: &mut Vec<O>, n: usize, f: impl Fn(T) -> O) {
        match self.slice() {
            None => out.resize(out.len() + n, f(self.get(0))),
            Some(s) => out.extend(s.iter().map(|&x| f(x))),
        }
    }

    /// Appends `n` values to `out`.
    pub(crate) fn append_to(self, out: &mut Vec<T>, n: usize) {
        match self {
            Vals::Const(v) => out.resize(out.len() + n, v),
            Vals::Slice(s) => out.extend_from_slice(s),
            Vals::Owned(v) => out.extend_from_slice(&v),
        }
    }
}

/// A typed temporary.
#[derive(Clone, Debug)]
pub(crate) enum Value<'a> {
    Int(Vals<'a, i64>),
    Float(Vals<'a, f64>),
    Bool(Vals<'a, bool>),
    Str(Vals<'a, u64>),
}

impl Value<'_> {
    /// Appends `n` rows to `out` as encoded words.
    pub(crate) fn append_words(self, out: &mut Vec<u64>, n: usize) {
        match self {
            Value::Int(v) => v.append_mapped(out, n, encode_i64),
            Value::Float(v) => v.append_mapped(out, n, encode_f64),
            Value::Bool(v) => v.append_mapped(out, n, encode_bool),
            Value::Str(v) => v.append_to(out, n),
        }
    }

    /// Appends `n` rows to `out` (of the same dtype).
    pub(crate) fn append_to(self, out: &mut Column, n: usize) {
        match (self, out) {
            (Value::Int(v), Column::Int64(o)) => v.append_to(o, n),
            (Value::Float(v), Column::Float64(o)) => v.append_to(o, n),
            (Value::Bool(v), Column::Bool(o)) => v.append_to(o, n),
            (Value::Str(v), Column::Str(o)) => v.append_to(o, n),
            _ => unreachable!("dtype checked at bind time"),
        }
    }
}
