//! Constant collections (`constant` nodes): rows written into the plan, typed by the node's
//! `dtypes` with the literal encoding of expressions (`crate::expr::json`). The engine runs
//! a constant as an input that it feeds itself: when the dataflow starts (or a plan holding
//! it is attached) it pushes every row with diff +1 at the least time and closes the input,
//! so the constant's frontier is empty from then on and it never holds progress back.

use super::column::Column;
use super::plan::{Node, Op};
use super::Engine;
use crate::encoding::{self, DType, Interner};
use crate::error::{Error, Result};
use crate::expr::{Expr, Scalar};
use crate::lattice::Time;
use serde_json::{json, Value};

/// The columns of constant node `node` (`None` for any other node); errors name the node,
/// the row and the column of a value that does not fit its dtype.
pub(super) fn columns(node: &Node) -> Result<Option<Vec<Column>>> {
    let Op::Constant { rows, dtypes } = &node.op else {
        return Ok(None);
    };
    let ctx = &node.label;
    if dtypes.len() != node.columns.len() {
        return Err(Error::Plan(format!(
            "{ctx}: {} dtypes for {} columns",
            dtypes.len(),
            node.columns.len()
        )));
    }
    let types = dtypes
        .iter()
        .zip(&node.columns)
        .map(|(d, c)| DType::parse(d).map_err(|e| Error::Plan(format!("{ctx}: column {c:?}: {e}"))))
        .collect::<Result<Vec<DType>>>()?;
    let mut cols: Vec<Column> = types
        .iter()
        .map(|&dtype| Column {
            dtype,
            words: Vec::with_capacity(rows.len()),
        })
        .collect();
    for (r, row) in rows.iter().enumerate() {
        if row.len() != types.len() {
            return Err(Error::Plan(format!(
                "{ctx}: row {r} has {} values, the constant has {} columns {:?}",
                row.len(),
                types.len(),
                node.columns
            )));
        }
        for (c, value) in row.iter().enumerate() {
            let word = word(value, types[c]).map_err(|e| {
                Error::Plan(format!(
                    "{ctx}: row {r}, column {:?}: {}",
                    node.columns[c],
                    e.message()
                ))
            })?;
            cols[c].words.push(word);
        }
    }
    Ok(Some(cols))
}

/// The engine word of one JSON value of `dtype` (as a literal of that dtype reads it).
fn word(value: &Value, dtype: DType) -> Result<u64> {
    let lit = json!({"op": "lit", "value": value, "dtype": dtype.name()});
    let scalar = match Expr::from_json(&lit)? {
        Expr::Null(_) => return Ok(encoding::null_word(dtype)),
        Expr::Lit(s) => s,
        other => return Err(Error::Plan(format!("{other} is not a value"))),
    };
    Ok(match scalar {
        Scalar::Int64(i64::MIN) => {
            return Err(Error::Overflow(format!(
                "{} is outside int64's values (it is the null word)",
                i64::MIN
            )))
        }
        Scalar::Int64(v) => encoding::encode_i64(v),
        Scalar::Float64(v) => encoding::encode_f64(v),
        Scalar::Bool(v) => encoding::encode_bool(v),
        Scalar::Str(s) => Interner::intern(&s),
        Scalar::Binary(b) => Interner::intern(&encoding::binary_text(&b)),
        Scalar::Word(v, _) => encoding::encode_i64(v),
    })
}

impl Engine {
    /// Feeds every constant node from `from` on: its rows at the least time, then closed.
    pub(super) fn feed_constants(&mut self, from: usize) -> Result<()> {
        for node in from..self.plan.nodes.len() {
            let Some(cols) = columns(&self.plan.nodes[node])? else {
                continue;
            };
            let n = cols.first().map_or(0, |c| c.words.len());
            self.push(node, cols, vec![Time::minimum(); n], vec![1; n])?;
            self.close_input(node)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rows: Value, dtypes: &[&str], names: &[&str]) -> Result<Option<Vec<Column>>> {
        let n: Node = serde_json::from_value(json!({
            "id": 0, "op": "constant", "scope": 0, "inputs": [], "label": "k",
            "columns": names, "rows": rows, "dtypes": dtypes,
        }))
        .expect("a node");
        columns(&n)
    }

    #[test]
    fn typed_values_and_nulls() {
        let cols = node(
            json!([[1, 1.5, true, "a", null], [null, "nan", false, "b", 3]]),
            &["int64", "float64", "bool", "str", "date32"],
            &["i", "f", "b", "s", "d"],
        )
        .unwrap()
        .unwrap();
        assert_eq!(cols[0].words, vec![1, encoding::NULL_I64]);
        assert_eq!(cols[1].words[0], 1.5f64.to_bits());
        assert!(f64::from_bits(cols[1].words[1]).is_nan());
        assert_eq!(cols[2].words, vec![1, 0]);
        assert_eq!(cols[3].words[0], Interner::intern("a"));
        assert_eq!(cols[4].words, vec![encoding::NULL_I64, 3]);
        assert_eq!(cols[4].dtype, DType::Date32);
    }

    #[test]
    fn bad_rows_name_the_row_and_column() {
        let e = node(json!([[1, 2], [3]]), &["int64", "int64"], &["a", "b"]).unwrap_err();
        assert!(e.to_string().contains("row 1 has 1 values"), "{e}");
        let e = node(json!([[1, "x"]]), &["int64", "int64"], &["a", "b"]).unwrap_err();
        assert!(e.to_string().contains("row 0, column \"b\""), "{e}");
        let e = node(json!([[1]]), &["int64", "str"], &["a"]).unwrap_err();
        assert!(e.to_string().contains("2 dtypes for 1 columns"), "{e}");
        let e = node(json!([[300]]), &["int8"], &["a"]).unwrap_err();
        assert!(e.to_string().contains("column \"a\""), "{e}");
    }
}
