//! Test support shared by the reduce's tests: random steps (updates, frontier moves, lag,
//! compaction) and one activation of a [`ReduceState`] on a batch of `(key, val)` updates
//! over an input arrangement, with what it emitted.

use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::NoCallbacks;
use crate::engine::operators::reduce::{ReduceInput, ReduceState};
use crate::engine::plan::Agg;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use proptest::prelude::*;

/// The output updates `(row, time, diff)` of one activation.
pub(crate) type Output = Vec<(Vec<u64>, Time, i64)>;

/// Consolidates `batch` (rows `(key, val)`, int64 both), inserts it into `input` with upper
/// `upper`, and activates `st` at `frontier`; returns its output updates and its error
/// updates (formatted, in emission order). With `compact`, both traces then compact to
/// `frontier`.
pub(crate) fn activate(
    st: &mut ReduceState,
    input: &mut Arrangement,
    agg: &Agg,
    mut batch: Updates,
    upper: Time,
    frontier: Time,
    compact: bool,
) -> (Output, Vec<String>) {
    let names = ["k".to_string(), "v".to_string()];
    crate::engine::util::consolidate(&mut batch).expect("consolidate");
    input.insert(&batch, &Antichain::from_elem(upper));
    let frontier = Antichain::from_elem(frontier);
    let out = st
        .activate(&ReduceInput {
            agg,
            key_width: 1,
            key_dtypes: &[DType::Int64],
            val_dtypes: &[DType::Int64],
            key_names: &names[..1],
            val_names: &names[1..],
            trace: input,
            batch: &batch,
            frontier: &frontier,
            callbacks: &NoCallbacks,
            label: "reduce",
        })
        .expect("activate");
    let output = (0..out.len())
        .map(|i| (out.row(i).to_vec(), out.times[i], out.diffs[i]))
        .collect();
    let errors = st.errors.new.drain(..).map(|e| format!("{e:?}")).collect();
    if compact {
        input.set_compaction(&frontier);
        st.out.set_compaction(&frontier);
    }
    (output, errors)
}

/// The aggregate a test's JSON names (`{"kind":"count"}`, ...).
pub(crate) fn agg_of(json: &str) -> Agg {
    serde_json::from_str(json).expect("agg")
}

/// Per activation: its output updates and its error updates.
pub(crate) type Emitted = (Vec<Output>, Vec<Vec<String>>);

/// Runs `steps` through `st` over a fresh input arrangement (one-word keys, rows `(key,
/// val)`): per step, `push` writes each update into the batch (given the step and the input
/// frontier's first coordinate before it; only when the frontier moves), the input's upper
/// moves by the step's `advance` and the reduce's frontier stays `lag` behind it, both at
/// times `at(x)`. Returns what each activation emitted.
pub(crate) fn run_steps<U>(
    st: &mut ReduceState,
    agg: &Agg,
    steps: &[Step<U>],
    at: fn(u64) -> Time,
    mut push: impl FnMut(&mut Updates, &Step<U>, u64, &U),
) -> Emitted {
    let mut input = Arrangement::new(1, 2);
    let (mut upper, mut reduce_at) = (0u64, 0u64);
    let (mut outs, mut errs) = (Vec::new(), Vec::new());
    for step in steps {
        let mut batch = Updates::new(2);
        if step.advance > 0 {
            for up in &step.ups {
                push(&mut batch, step, upper, up);
            }
        }
        upper += step.advance;
        reduce_at = reduce_at.max(upper.saturating_sub(step.lag));
        let (out, err) = activate(
            st,
            &mut input,
            agg,
            batch,
            at(upper),
            at(reduce_at),
            step.compact,
        );
        outs.push(out);
        errs.push(err);
    }
    (outs, errs)
}

/// One activation of a random test: its updates (the test's own tuples), how far the input
/// frontier moves, how far the reduce's frontier stays behind it (its times stay pending),
/// and whether both traces compact after it.
#[derive(Clone, Debug)]
pub(crate) struct Step<U> {
    pub(crate) ups: Vec<U>,
    pub(crate) advance: u64,
    pub(crate) lag: u64,
    pub(crate) compact: bool,
}

impl<U> Step<U> {
    /// A step with no updates that closes the reduce's lag (every pending time is then
    /// processed).
    pub(crate) fn closing() -> Step<U> {
        Step {
            ups: Vec::new(),
            advance: 1,
            lag: 0,
            compact: false,
        }
    }
}

/// Random steps: up to `max_ups` updates drawn from `up`, the frontier moving 0 to 3, the
/// reduce lagging by `lag`.
pub(crate) fn step<U: Clone + std::fmt::Debug>(
    up: impl Strategy<Value = U>,
    max_ups: usize,
    lag: impl Strategy<Value = u64>,
) -> impl Strategy<Value = Step<U>> {
    (
        prop::collection::vec(up, 0..max_ups),
        0u64..4,
        lag,
        any::<bool>(),
    )
        .prop_map(|(ups, advance, lag, compact)| Step {
            ups,
            advance,
            lag,
            compact,
        })
}
