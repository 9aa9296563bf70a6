//! The bindings' one conversion module: every numpy array that enters or leaves the native
//! module goes through here (the kernels in `crate::kernels`, engine inputs and callback
//! results in `crate::engine`, captures in `crate::capture`, expressions in `crate::expr`).
//! One file per thing converted:
//!
//! * [`columns_in`]: record columns in. Columns are read by [`prepare`] and [`hold`]: numpy
//!   arrays are borrowed read-only in place (copy-free when C-contiguous; [`ColView`]
//!   slices are read with the GIL released), anything else goes through `numpy.asarray`;
//!   narrower ints are widened to int64 and float32 to float64 by numpy; str columns
//!   (numpy `U`, `T` or `object` arrays of `str`) are interned once per value.
//! * [`columns_out`]: record columns out: [`ColOut`] columns (decoded without the GIL)
//!   become numpy arrays in [`col_to_py`].
//! * [`engine_columns`]: the engine's typed [`Column`]s in and out, including Arrow string
//!   buffers (offsets and UTF-8 bytes) in both directions, and callbacks' bool masks.
//! * [`input_rows`]: an input batch straight into the engine's rows, and times or diffs
//!   given as one repeated row (`np.broadcast_to`) converted once.
//! * [`times`]: times, diffs and frontiers, in and out.
//! * [`uint64`]: the bindings' one uint64 policy ([`Unsigned`]) and the integer arrays it
//!   governs; its module doc is where the policy is stated.
//!
//! Two word encodings are used:
//! * the core's ([`ddflow_core::encoding`]) in traces and the engine: int64 as its two's
//!   complement bits, so arranged int64 keys are ordered non-negative ascending, then
//!   negative ascending;
//! * an order-preserving one in the sort and consolidation kernels ([`Enc::Ordered`], the
//!   core's `encoding::ordered_word`): int64 with the sign bit flipped and float64 as its
//!   total-order bits, so their outputs come back in value order.
//!
//! [`Column`]: ddflow_core::engine::column::Column

mod columns_in;
mod columns_out;
mod engine_columns;
mod input_rows;
mod times;
mod uint64;

pub use columns_in::*;
pub use columns_out::*;
pub use engine_columns::*;
pub use input_rows::*;
pub use times::*;
pub use uint64::*;

use crate::errors::to_py_err;
use ddflow_core::encoding::{from_ordered_word, ordered_word, DType};
use ddflow_core::Error;
use pyo3::prelude::*;

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
/// which only the kernel API keeps (see the uint64 policy in [`uint64`]).
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
        match d.physical() {
            DType::Int64 => ColType::Int64,
            DType::Float64 => ColType::Float64,
            DType::Bool => ColType::Bool,
            _ => ColType::Str,
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
