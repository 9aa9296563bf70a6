//! `scale`: every diff multiplied by a constant integer factor (the collection counted
//! `factor` times; `negate` is `factor = -1`). Linear, so it commutes with every time and
//! batching. A product outside `i64` stays exact as several updates of the same row and
//! time that sum to it; `factor = 0` emits nothing.

use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A `scale` node: its factor.
pub struct Scale {
    factor: i64,
}

impl Scale {
    /// Multiplies diffs by `factor`.
    pub fn new(factor: i64) -> Self {
        Scale { factor }
    }
}

/// `m` with every diff multiplied by `factor` (exact, see the module docs).
fn scale(m: &Msg, factor: i64) -> Msg {
    let mut out = Msg::empty(m.schema.clone());
    out.upd.width = m.upd.width;
    for i in 0..m.upd.len() {
        let d = m.upd.diffs[i] as i128 * factor as i128;
        crate::sort::consolidate::pieces(d, |p| out.upd.push(m.upd.row(i), m.upd.times[i], p));
    }
    out
}

impl Operator for Scale {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let msgs = take_all(inputs)
            .iter()
            .map(|m| scale(m, self.factor))
            .collect();
        Ok(Output::pass(msgs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::DType;
    use crate::updates::Updates;
    use std::sync::Arc;

    #[test]
    fn multiplies_diffs_exactly() {
        let mut upd = Updates::new(1);
        upd.push(&[7], Time::minimum(), 3);
        upd.push(&[8], Time::minimum(), i64::MAX);
        let m = Msg {
            schema: Arc::new(vec![DType::Int64]),
            upd,
        };
        let out = scale(&m, -2);
        let total: i128 = out.upd.diffs[1..].iter().map(|&d| d as i128).sum();
        assert_eq!(out.upd.diffs[0], -6);
        assert_eq!(total, -2 * i64::MAX as i128);
        assert!(out.upd.rows[1..].iter().all(|&r| r == 8));
        assert!(scale(&m, 0).upd.is_empty());
    }
}
