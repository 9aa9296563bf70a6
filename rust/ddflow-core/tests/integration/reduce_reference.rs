//! Oracle tests of `reduce`: the engine's output, accumulated at every time of a grid, must
//! equal a naive aggregate recomputed from scratch over the accumulated input at that time.
//!
//! Inputs are random `(key, val, time, diff)` updates with one-dimensional times (every key's
//! times form a chain, the one-pass path) and two-dimensional times (partially ordered, the
//! interesting-times path; keys whose times happen to form a chain still take the one-pass
//! path), fed in random batches. Counts may go negative: `min`/`max`/`top_k`/`distinct`
//! consider values with positive count only, `count` and `sum` are signed. `PySize` is a
//! Python-style reducer (a callback, here in Rust) writing every key's number of values with
//! non-zero count; it must never be handed a key whose input accumulates to nothing.

use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{Callbacks, Column, NoCallbacks, Payload, Reply};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::Engine;
use ddflow_core::lattice::PartialOrder;
use ddflow_core::Time;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Copy, Debug)]
enum Agg {
    Count,
    CountNoVals,
    Sum,
    Min,
    Max,
    Distinct,
    TopK,
    PySize,
}

/// The callback of `Agg::PySize`: per group, the number of values it was handed (one row
/// per group, so an empty group would show up as an output row of 0).
struct SizeReducer;

impl Callbacks for SizeReducer {
    fn call(
        &self,
        _func: u64,
        kind: &str,
        _label: &str,
        payload: Payload,
    ) -> ddflow_core::Result<Reply> {
        let Payload::Reduce { offsets, .. } = payload else {
            panic!("unexpected {kind} callback");
        };
        let sizes: Vec<u64> = offsets.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
        Ok(Reply::Columns {
            offsets: Some((0..=sizes.len() as i64).collect()),
            columns: vec![Column {
                dtype: DType::Int64,
                words: sizes,
            }],
            row_index: None,
            counts: None,
        })
    }
}

impl Agg {
    fn json(self) -> &'static str {
        match self {
            Agg::Count | Agg::CountNoVals => r#"{"kind":"count"}"#,
            Agg::Sum => r#"{"kind":"sum","column":0}"#,
            Agg::Min => r#"{"kind":"min","column":0}"#,
            Agg::Max => r#"{"kind":"max","column":0}"#,
            Agg::Distinct => r#"{"kind":"distinct"}"#,
            Agg::TopK => r#"{"kind":"top_k","k":2,"column":0,"descending":true}"#,
            Agg::PySize => r#"{"kind":"python","fn":0,"columns":1}"#,
        }
    }

    fn has_vals(self) -> bool {
        !matches!(self, Agg::CountNoVals)
    }

    /// The aggregate of one key's accumulated `val -> count` (zero counts absent), as
    /// `output val -> count`.
    fn reference(self, acc: &BTreeMap<i64, i64>) -> BTreeMap<i64, i64> {
        let positive: Vec<i64> = acc
            .iter()
            .filter(|(_, &c)| c > 0)
            .map(|(&v, _)| v)
            .collect();
        let mut out = BTreeMap::new();
        match self {
            Agg::Count | Agg::CountNoVals => {
                let s: i64 = acc.values().sum();
                if s != 0 {
                    out.insert(s, 1);
                }
            }
            Agg::Sum => {
                if !acc.is_empty() {
                    out.insert(acc.iter().map(|(v, c)| v * c).sum(), 1);
                }
            }
            Agg::Min => {
                if let Some(&m) = positive.first() {
                    out.insert(m, 1);
                }
            }
            Agg::Max => {
                if let Some(&m) = positive.last() {
                    out.insert(m, 1);
                }
            }
            Agg::Distinct => out.extend(positive.iter().map(|&v| (v, 1))),
            Agg::TopK => out.extend(positive.iter().rev().take(2).map(|&v| (v, 1))),
            Agg::PySize => {
                if !acc.is_empty() {
                    out.insert(acc.len() as i64, 1);
                }
            }
        }
        out
    }
}

fn plan(agg: Agg, dims: usize) -> Plan {
    let (cols, out) = if agg.has_vals() {
        (r#"["k","v"]"#, r#"["k","out"]"#)
    } else {
        (r#"["k"]"#, r#"["k","count"]"#)
    };
    let json = format!(
        r#"{{"version":1,"time_dims":{dims},"scopes":[{{"id":0,"parent":null}}],"nodes":[
        {{"id":0,"op":"input","name":"in","scope":0,"inputs":[],"columns":{cols}}},
        {{"id":1,"op":"arrange","scope":0,"inputs":[0],"columns":{cols},"key":[0]}},
        {{"id":2,"op":"reduce","scope":0,"inputs":[1],"columns":{out},"agg":{}}},
        {{"id":3,"op":"capture","scope":0,"inputs":[2],"columns":{out}}}]}}"#,
        agg.json()
    );
    Plan::from_json(&json).expect("plan parses")
}

/// One input update: key, val, time coordinates, diff.
type Upd = (i64, i64, [u64; 2], i64);

fn int_col(v: Vec<i64>) -> Column {
    Column {
        dtype: DType::Int64,
        words: v.into_iter().map(|x| x as u64).collect(),
    }
}

fn time(c: [u64; 2], dims: usize) -> Time {
    Time::from_coords(&c[..dims])
}

/// Runs the reduce, feeding updates grouped by first time coordinate, `per_step` distinct
/// first coordinates per engine run. Returns captured `(key, out, time, diff)`.
fn run(agg: Agg, dims: usize, updates: &[Upd], per_step: u64) -> Vec<(i64, i64, Time, i64)> {
    let callbacks: Arc<dyn Callbacks> = match agg {
        Agg::PySize => Arc::new(SizeReducer),
        _ => Arc::new(NoCallbacks),
    };
    let mut e = Engine::new(plan(agg, dims), 1, callbacks).expect("engine");
    let mut sorted = updates.to_vec();
    sorted.sort_by_key(|u| u.2);
    let mut out = Vec::new();
    let mut take = |e: &mut Engine| {
        let c = e.capture_take(3).expect("capture");
        for i in 0..c.times.len() {
            out.push((
                c.columns[0].words[i] as i64,
                c.columns[1].words[i] as i64,
                c.times[i],
                c.diffs[i],
            ));
        }
    };
    let max_x = sorted.iter().map(|u| u.2[0]).max().unwrap_or(0);
    let mut x = 0;
    while x <= max_x {
        let hi = x + per_step;
        let chunk: Vec<&Upd> = sorted
            .iter()
            .filter(|u| u.2[0] >= x && u.2[0] < hi)
            .collect();
        if !chunk.is_empty() {
            let mut cols = vec![int_col(chunk.iter().map(|u| u.0).collect())];
            if agg.has_vals() {
                cols.push(int_col(chunk.iter().map(|u| u.1).collect()));
            }
            let times = chunk.iter().map(|u| time(u.2, dims)).collect();
            e.push(0, cols, times, chunk.iter().map(|u| u.3).collect())
                .expect("push");
        }
        e.advance_input(0, time([hi, 0], dims)).expect("advance");
        e.run_until(time([hi, 0], dims)).expect("run");
        take(&mut e);
        x = hi;
    }
    e.close_input(0).expect("close");
    e.run().expect("run");
    take(&mut e);
    out
}

/// Checks the output accumulated at every grid time against the reference.
fn check(agg: Agg, dims: usize, updates: &[Upd], per_step: u64) -> Result<(), TestCaseError> {
    let out = run(agg, dims, updates, per_step);
    let grid: Vec<Time> = if dims == 1 {
        (0..10).map(Time::scalar).collect()
    } else {
        (0..6)
            .flat_map(|a| (0..6).map(move |b| Time::from_coords(&[a, b])))
            .collect()
    };
    for p in &grid {
        let mut acc: BTreeMap<i64, BTreeMap<i64, i64>> = BTreeMap::new();
        for u in updates {
            if time(u.2, dims).less_equal(p) {
                *acc.entry(u.0).or_default().entry(u.1).or_default() += u.3;
            }
        }
        let mut want: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for (k, vals) in acc.iter_mut() {
            vals.retain(|_, c| *c != 0);
            for (o, c) in agg.reference(vals) {
                want.insert((*k, o), c);
            }
        }
        let mut got: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for &(k, o, t, d) in &out {
            if t.less_equal(p) {
                *got.entry((k, o)).or_default() += d;
            }
        }
        got.retain(|_, c| *c != 0);
        prop_assert_eq!(&got, &want, "{:?} at {:?}", agg, p);
    }
    Ok(())
}

fn updates(dims: usize) -> impl Strategy<Value = Vec<Upd>> {
    let ymax = if dims == 1 { 1 } else { 5 };
    let xmax = if dims == 1 { 9 } else { 5 };
    proptest::collection::vec((0i64..3, -3i64..4, 0u64..xmax, 0u64..ymax, -2i64..3), 0..40)
        .prop_map(|v| {
            v.into_iter()
                .filter(|u| u.4 != 0)
                .map(|(k, val, a, b, d)| (k, val, [a, b], d))
                .collect()
        })
}

fn agg() -> impl Strategy<Value = Agg> {
    prop_oneof![
        Just(Agg::Count),
        Just(Agg::CountNoVals),
        Just(Agg::Sum),
        Just(Agg::Min),
        Just(Agg::Max),
        Just(Agg::Distinct),
        Just(Agg::TopK),
        Just(Agg::PySize),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn reduce_matches_reference_1d(agg in agg(), upd in updates(1), per_step in 1u64..5) {
        check(agg, 1, &upd, per_step)?;
    }

    #[test]
    fn reduce_matches_reference_2d(agg in agg(), upd in updates(2), per_step in 1u64..4) {
        check(agg, 2, &upd, per_step)?;
    }

    /// The same with every 2-D key accumulating by the sweep (`reduce_index.rs`), which the
    /// small inputs above never reach at the default threshold. The variable is read when a
    /// reduce is built; other tests of this binary may then take the sweep too, which is
    /// allowed (both paths must agree with the reference).
    #[test]
    fn reduce_sweep_matches_reference_2d(agg in agg(), upd in updates(2), per_step in 1u64..4) {
        std::env::set_var("DDFLOW_REDUCE_SWEEP_MIN", "0");
        check(agg, 2, &upd, per_step)?;
    }

    /// The same with every key its own chunk of an activation (`reduce_work.rs`: phases 1-3
    /// run chunk by chunk and the output goes into the trace at the end). Read when a reduce
    /// is built, like the sweep's variable: other tests may then run chunked too.
    #[test]
    fn reduce_chunked_matches_reference_1d(agg in agg(), upd in updates(1), per_step in 1u64..5) {
        std::env::set_var("DDFLOW_REDUCE_CHUNK_KEYS", "1");
        check(agg, 1, &upd, per_step)?;
    }

    #[test]
    fn reduce_chunked_matches_reference_2d(agg in agg(), upd in updates(2), per_step in 1u64..4) {
        std::env::set_var("DDFLOW_REDUCE_CHUNK_KEYS", "1");
        check(agg, 2, &upd, per_step)?;
    }
}

/// Many times on few keys in one batch (the case the one-pass path exists for).
#[test]
fn count_many_times_per_key() {
    let mut upd = Vec::new();
    for t in 0..9u64 {
        for k in 0..3 {
            for r in 0..4 {
                let d = if (t + r) % 3 == 0 { -1 } else { 1 };
                upd.push((k, r as i64, [t, 0], d));
            }
        }
    }
    for agg in [Agg::Count, Agg::CountNoVals, Agg::Sum, Agg::Max, Agg::TopK] {
        check(agg, 1, &upd, 9).unwrap();
        check(agg, 1, &upd, 1).unwrap();
    }
}
