//! The layer-by-layer build of consolidated updates against the update-by-update one.

use super::batch::Batch;
use super::description::Description;
use super::layer_build::from_consolidated;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use proptest::prelude::*;

fn desc() -> Description {
    Description::new(
        Antichain::from_elem(Time::minimum()),
        Antichain::new(),
        Antichain::from_elem(Time::minimum()),
    )
}

/// A word: mostly small (narrow storage), sometimes past `u32`.
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![8 => 0u64..4, 1 => Just(1u64 << 40)]
}

/// A time of up to two coordinates, sometimes one that does not fit two `u32`s.
fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        8 => (0u64..3, 0u64..3).prop_map(|(a, b)| Time::from_coords(&[a, b])),
        1 => Just(Time::from_coords(&[1u64 << 33, 0])),
        1 => Just(Time::from_coords(&[0, 0, 1])),
    ]
}

/// Sorted updates: `(width, key width, updates, whether they were consolidated)`.
fn sorted_updates() -> impl Strategy<Value = (usize, usize, Updates, bool)> {
    (0usize..4, any::<bool>(), any::<bool>(), time())
        .prop_flat_map(|(width, one_time, consolidate, t0)| {
            let update = (
                proptest::collection::vec(word(), width),
                time(),
                prop_oneof![6 => Just(1i64), 2 => -2i64..3],
            );
            (
                Just(width),
                0..=width,
                proptest::collection::vec(update, 0..40),
                Just(one_time),
                Just(consolidate),
                Just(t0),
            )
        })
        .prop_map(|(width, key_width, mut ups, one_time, consolidate, t0)| {
            if one_time {
                for u in ups.iter_mut() {
                    u.1 = t0;
                }
            }
            ups.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
            if consolidate {
                let mut out: Vec<(Vec<u64>, Time, i64)> = Vec::new();
                for (r, t, d) in ups {
                    match out.last_mut() {
                        Some(last) if last.0 == r && last.1 == t => last.2 += d,
                        _ => out.push((r, t, d)),
                    }
                }
                out.retain(|u| u.2 != 0);
                ups = out;
            }
            let mut updates = Updates::new(width);
            for (r, t, d) in &ups {
                updates.push(r, *t, *d);
            }
            (width, key_width, updates, consolidate)
        })
}

/// Whether sorted `updates` hold two of one row and time, or a zero diff.
fn has_duplicate_or_zero(updates: &Updates) -> bool {
    updates.diffs.contains(&0)
        || (1..updates.len()).any(|i| {
            updates.row(i) == updates.row(i - 1) && updates.times[i] == updates.times[i - 1]
        })
}

fn narrow(words: impl Iterator<Item = u64>) -> bool {
    words.fold(0, |m, w| m | w) >> 32 == 0
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Consolidated updates build the batch the builder builds (the same layers, in the
    /// same compact forms); anything else is left to the builder.
    #[test]
    fn layers_match_the_builder((width, key_width, updates, consolidated) in sorted_updates()) {
        let keys = narrow(updates.rows.chunks_exact(width.max(1)).flat_map(|r| r[..key_width].to_vec()));
        let vals = narrow(updates.rows.chunks_exact(width.max(1)).flat_map(|r| r[key_width..].to_vec()));
        let by_update = Batch::from_sorted_by_update(&updates, key_width, keys, vals, desc()).unwrap();
        let layered = from_consolidated(&updates, key_width, keys, vals, &desc());
        let expected_layered = !updates.is_empty() && !has_duplicate_or_zero(&updates);
        prop_assert_eq!(layered.is_some(), expected_layered);
        if consolidated && !updates.is_empty() {
            prop_assert!(layered.is_some());
        }
        if let Some(b) = layered {
            prop_assert_eq!(&b, &by_update);
        }
        prop_assert_eq!(Batch::from_sorted(&updates, key_width, desc()).unwrap(), by_update);
    }
}

#[test]
fn rows_out_of_order_take_the_builder_and_fail() {
    let mut u = Updates::new(2);
    u.push(&[1, 5], Time::minimum(), 1);
    u.push(&[0, 7], Time::minimum(), 1);
    assert!(from_consolidated(&u, 1, true, true, &desc()).is_none());
    assert!(Batch::from_sorted(&u, 1, desc()).is_err());
    let mut u = Updates::new(1);
    u.push(&[3], Time::from_coords(&[2]), 1);
    u.push(&[3], Time::from_coords(&[1]), 1);
    assert!(from_consolidated(&u, 1, true, true, &desc()).is_none());
    assert!(Batch::from_sorted(&u, 1, desc()).is_err());
}
