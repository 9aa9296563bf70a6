//! Live columns: which columns of each node some operator reads, directly or downstream.
//!
//! A column no operator reads need not be converted, interned or stored: an input can take
//! such a column as all nulls (the Python package does, at `update_batch`). TPC-H's
//! `lineitem` has sixteen columns and Q1 reads seven; its `l_comment` alone, a fresh string
//! per row, cost more to intern than the rest of a refresh batch.
//!
//! The analysis runs backwards from the sinks to a fixed point (loops feed back through
//! `variable`). It is exact about results and about errors as data:
//!
//! * operators that see whole records keep every column of their input live: captures,
//!   Python functions, `distinct`, `top_k`, row-level `min`/`max` and Python reduces;
//! * a `select` keeps the columns of all its expressions live, used or not, so that an
//!   expression that fails still reports its error update;
//! * linear operators (filters, `concat`, `negate`, joins, `count`, `sum` and the group
//!   aggregates, whose `min`/`max`/`count_distinct` read a column's values and counts only)
//!   read their own columns and pass the rest of the need upstream. Records that differ only
//!   in columns nobody reads then merge, which changes no result: each of these operators
//!   gives the same output on the merged records.
//!
//! The error record of a failing operator renders a column nobody reads as `null`.

use super::plan::{Agg, GroupAgg, JoinKind, Op, Plan};

/// Per node, per column: whether some operator reads it. `pinned` nodes (arrangements with
/// trace handles that other dataflows may import) keep all their columns live.
pub fn live_columns(plan: &Plan, pinned: &[usize]) -> Vec<Vec<bool>> {
    let mut live: Vec<Vec<bool>> = plan
        .nodes
        .iter()
        .map(|n| vec![false; n.columns.len()])
        .collect();
    for &p in pinned {
        if let Some(cols) = live.get_mut(p) {
            cols.iter_mut().for_each(|c| *c = true);
        }
    }
    loop {
        let mut changed = false;
        for n in (0..plan.nodes.len()).rev() {
            for (input, needed) in needs(plan, n, &live[n]) {
                let cols = &mut live[input];
                for (c, need) in needed.into_iter().enumerate() {
                    if need && c < cols.len() && !cols[c] {
                        cols[c] = true;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return live;
        }
    }
}

/// The columns of each upstream node that node `n` reads, given that `out` of its own
/// columns are read downstream.
fn needs(plan: &Plan, n: usize, out: &[bool]) -> Vec<(usize, Vec<bool>)> {
    let node = &plan.nodes[n];
    let width_of = |i: usize| plan.nodes[i].columns.len();
    let all = |i: usize| (i, vec![true; width_of(i)]);
    let same = |i: usize| {
        let mut v = vec![false; width_of(i)];
        for (c, &o) in out.iter().enumerate() {
            if o && c < v.len() {
                v[c] = true;
            }
        }
        (i, v)
    };
    let named = |i: usize, mut v: Vec<bool>, names: &[String]| {
        for name in names {
            if let Some(c) = plan.nodes[i].columns.iter().position(|x| x == name) {
                v[c] = true;
            }
        }
        (i, v)
    };
    let first = node.inputs.first().copied();
    match &node.op {
        Op::Input { .. } | Op::Constant { .. } => vec![],
        Op::Capture
        | Op::MapPy { .. }
        | Op::FlatMapPy { .. }
        | Op::FilterPy { .. }
        | Op::InspectPy { .. } => node.inputs.iter().map(|&i| all(i)).collect(),
        Op::Probe => vec![],
        Op::Negate
        | Op::Scale { .. }
        | Op::Consolidate
        | Op::Delay
        | Op::Enter
        | Op::EnterArrangement
        | Op::Leave
        | Op::Concat => node.inputs.iter().map(|&i| same(i)).collect(),
        // Read whole: the watermark counts rows by their net diff per time, and the
        // released rows are emitted as they are.
        Op::Watermark { .. } => node.inputs.iter().map(|&i| all(i)).collect(),
        Op::Filter { predicate } => first
            .map(|i| {
                let (i, v) = same(i);
                named(i, v, &predicate.columns())
            })
            .into_iter()
            .collect(),
        Op::TemporalFilter { lower, upper } => first
            .map(|i| {
                let (i, v) = same(i);
                let names: Vec<String> = lower
                    .iter()
                    .chain(upper)
                    .flat_map(|b| b.expr.columns())
                    .collect();
                named(i, v, &names)
            })
            .into_iter()
            .collect(),
        Op::AdvanceIteration { expr } => first
            .map(|i| {
                let (i, v) = same(i);
                named(i, v, &expr.columns())
            })
            .into_iter()
            .collect(),
        Op::Select { exprs } => first
            .map(|i| {
                let names: Vec<String> = exprs.iter().flat_map(|e| e.columns()).collect();
                named(i, vec![false; width_of(i)], &names)
            })
            .into_iter()
            .collect(),
        Op::Arrange { key } => first
            .map(|i| {
                let mut v = vec![false; width_of(i)];
                let rest = (0..width_of(i)).filter(|c| !key.contains(c));
                for (j, c) in key.iter().copied().chain(rest).enumerate() {
                    if key.contains(&c) || out.get(j).copied().unwrap_or(true) {
                        v[c] = true;
                    }
                }
                (i, v)
            })
            .into_iter()
            .collect(),
        Op::Join { kind, .. } => {
            let (a, b) = (node.inputs[0], node.inputs[1]);
            let Some(kw) = key_width(plan, a) else {
                return vec![all(a), all(b)];
            };
            let (wa, wb) = (width_of(a), width_of(b));
            let left: Vec<bool> = (0..wa)
                .map(|c| c < kw || out.get(c).copied().unwrap_or(true))
                .collect();
            let right: Vec<bool> = (0..wb)
                .map(|c| {
                    c < kw
                        || (*kind == JoinKind::Join
                            && out.get(wa + c - kw).copied().unwrap_or(true))
                })
                .collect();
            vec![(a, left), (b, right)]
        }
        Op::Reduce { agg } => {
            let Some(i) = first else { return vec![] };
            let Some(kw) = key_width(plan, i) else {
                return vec![all(i)];
            };
            let mut v: Vec<bool> = (0..width_of(i)).map(|c| c < kw).collect();
            let mut val = |c: usize| {
                if let Some(slot) = v.get_mut(kw + c) {
                    *slot = true;
                }
            };
            match agg {
                Agg::Count => {}
                Agg::Sum { column } => val(*column),
                Agg::Group { aggs } => {
                    for part in aggs {
                        match part {
                            GroupAgg::Count { column, .. } => {
                                if let Some(c) = column {
                                    val(*c)
                                }
                            }
                            GroupAgg::Sum { column, .. }
                            | GroupAgg::Mean { column, .. }
                            | GroupAgg::Min { column, .. }
                            | GroupAgg::Max { column, .. }
                            | GroupAgg::CountDistinct { column, .. } => val(*column),
                        }
                    }
                }
                // Row-level semantics (a val row with positive count): every column.
                Agg::Min { .. }
                | Agg::Max { .. }
                | Agg::Distinct
                | Agg::TopK { .. }
                | Agg::Rank { .. }
                | Agg::ThresholdPy { .. }
                | Agg::Python { .. } => return vec![all(i)],
            }
            vec![(i, v)]
        }
        Op::Variable { result } => {
            let mut v = Vec::new();
            if let Some(i) = first {
                v.push(same(i));
            }
            v.push(same(*result));
            v
        }
        Op::ImportTrace { source } if *source < n => vec![all(*source)],
        Op::ImportTrace { .. } => vec![],
    }
}

/// Key width of the arrangement a join or reduce reads (through `enter_arrangement`).
fn key_width(plan: &Plan, mut node: usize) -> Option<usize> {
    loop {
        match &plan.nodes[node].op {
            Op::EnterArrangement => node = plan.nodes[node].inputs[0],
            Op::Arrange { key } => return Some(key.len()),
            _ => return None,
        }
    }
}

#[cfg(test)]
#[path = "live_columns_tests.rs"]
mod tests;
