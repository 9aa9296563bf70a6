//! Test support shared by the reduce's tests: one activation of a [`ReduceState`] on a batch
//! of `(key, val)` updates over an input arrangement, and what it emitted.

use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::NoCallbacks;
use crate::engine::operators::reduce::{ReduceInput, ReduceState};
use crate::engine::plan::Agg;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

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
