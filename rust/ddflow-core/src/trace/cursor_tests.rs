//! Property tests of [`Cursor`] walks (seeks, steps and rewinds) against the union of its
//! batches, with keys of one and two words from the whole `u64` range.

use super::*;
use crate::lattice::{Lattice, Time};
use crate::updates::Updates;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Key words: small ones (stored as `u32`), one past `u32` (the batch then stores `u64`),
/// and the largest two (the cursor marks a batch read to its end with `u64::MAX`).
const WORDS: [u64; 6] = [0, 1, 7, 1 << 32, u64::MAX - 1, u64::MAX];

/// A step of a walk: seek to the key of two word indices, step to the next key, or rewind.
#[derive(Clone, Debug)]
enum Move {
    Seek(usize, usize),
    Step,
    Rewind,
}

fn moves() -> impl Strategy<Value = Vec<Move>> {
    let one = prop_oneof![
        6 => (0..WORDS.len(), 0..WORDS.len()).prop_map(|(a, b)| Move::Seek(a, b)),
        2 => Just(Move::Step),
        1 => Just(Move::Rewind),
    ];
    proptest::collection::vec(one, 1..24)
}

/// The reference seek from the union's key `at` (`keys.len()` past the end): the first
/// key at or after both, and whether it is `target`.
fn union_seek(keys: &[Vec<u64>], at: usize, target: &[u64]) -> (usize, bool) {
    let p = at + keys[at..].partition_point(|k| k.as_slice() < target);
    (p, p < keys.len() && keys[p].as_slice() == target)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A walk of seeks (forward to sorted or unsorted targets: a seek never moves back),
    /// steps and rewinds over up to six batches, each holding some of the keys: at every
    /// move the cursor is at the key the union of the batches says, reports whether a seek
    /// found its key, and reads that key's updates from every batch holding it.
    #[test]
    fn cursor_walk_matches_union(
        kw in 1usize..3,
        batches in proptest::collection::vec(
            proptest::collection::btree_set((0..WORDS.len(), 0..WORDS.len(), 0u64..3), 0..10),
            0..6,
        ),
        walk in moves(),
    ) {
        let key_of = |a: usize, b: usize| {
            if kw == 1 { vec![WORDS[a]] } else { vec![WORDS[a], WORDS[b]] }
        };
        let mut union = BTreeMap::<Vec<u64>, Vec<(u64, u64)>>::new();
        let mut built = Vec::new();
        for (s, set) in batches.iter().enumerate() {
            let mut rows: Vec<Vec<u64>> = set
                .iter()
                .map(|&(a, b, v)| {
                    let mut r = key_of(a, b);
                    r.push(v);
                    r
                })
                .collect();
            rows.sort();
            rows.dedup();
            let mut u = Updates::new(kw + 1);
            for r in &rows {
                u.push(r, Time::scalar(s as u64), 1);
                union.entry(r[..kw].to_vec()).or_default().push((r[kw], s as u64));
            }
            let desc = Description::scalar(s as u64, s as u64 + 1);
            built.push(Arc::new(Batch::from_sorted(&u, kw, desc).unwrap()));
        }
        let keys: Vec<Vec<u64>> = union.keys().cloned().collect();
        let mut c = Cursor::new(kw, 1, built);
        let mut at = 0;
        for m in &walk {
            match *m {
                Move::Seek(a, b) => {
                    let t = key_of(a, b);
                    let (p, found) = union_seek(&keys, at, &t);
                    at = p;
                    prop_assert_eq!(c.seek_key(&t), found, "seek {:?}", t);
                }
                Move::Step => {
                    if at < keys.len() {
                        at += 1;
                    }
                    c.step_key();
                }
                Move::Rewind => {
                    at = 0;
                    c.rewind();
                }
            }
            prop_assert_eq!(c.key_valid(), at < keys.len(), "after {:?}", m);
            if at < keys.len() {
                prop_assert_eq!(c.key(), keys[at].as_slice(), "after {:?}", m);
                let mut got = Vec::new();
                c.for_each_val_update(|v, t, d| got.push((v[0], t.coord(0), d)));
                got.sort();
                let mut want: Vec<(u64, u64, i64)> =
                    union[&keys[at]].iter().map(|&(v, t)| (v, t, 1)).collect();
                want.sort();
                prop_assert_eq!(&got, &want, "key {:?}", keys[at]);
                prop_assert_eq!(c.key_len(), want.len());
            }
        }
    }
}

/// A time coordinate: mostly small, sometimes past 32 bits (the batch then stores full
/// times, which do not pack).
fn coord() -> impl Strategy<Value = u64> {
    prop_oneof![30 => 0u64..24, 1 => Just(1u64 << 32)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Packed reads of a key (one-word keys, vals of no word or one narrow or wide word)
    /// over up to four batches whose times are one time, a few indexed ones or one per
    /// update (2-D, some past 32 bits or 3-D), with implicit, sparse or dense diffs: the
    /// updates of every batch holding the key, oldest batch first, each batch's by val and
    /// time, with times joined with the meet; false exactly when a batch holding the key
    /// stores a time that does not pack, with the earlier batches' updates read.
    #[test]
    fn gather_packed_matches_batches(
        vw in 0usize..2,
        wide_val in any::<bool>(),
        batches in proptest::collection::vec(
            (
                0u64..3,
                proptest::collection::vec(
                    (0u64..4, 0u64..3, coord(), coord(), 0u64..2, -2i64..3),
                    0..30,
                ),
            ),
            0..4,
        ),
        (mx, my) in (0u64..24, 0u64..8),
    ) {
        let meet = Time([mx, my, 0, 0]);
        let mut built = Vec::new();
        let mut stored = Vec::new();
        for (shape, ups) in &batches {
            let mut u = Updates::new(1 + vw);
            for &(k, v, x, y, z, d) in ups {
                let mut row = vec![k];
                if vw == 1 {
                    row.push(if wide_val && v == 2 { 1 << 40 } else { v });
                }
                // Shapes: one time for all, a few distinct times, or any times.
                let t = match shape {
                    0 => Time([3, 1, 0, 0]),
                    1 => Time([x % 3, 0, 0, 0]),
                    _ => Time([x, y, z, 0]),
                };
                // Diffs: mostly ones (implicit or sparse), or any.
                let d = if *shape == 2 || d == 0 { d } else { 1 };
                u.push(&row, t, d);
            }
            crate::engine::util::consolidate(&mut u).unwrap();
            if u.is_empty() {
                continue;
            }
            let desc = Description::new(
                crate::lattice::Antichain::from_elem(Time::minimum()),
                crate::lattice::Antichain::new(),
                crate::lattice::Antichain::from_elem(Time::minimum()),
            );
            built.push(Arc::new(Batch::from_sorted(&u, 1, desc).unwrap()));
            stored.push(u);
        }
        let mut c = Cursor::new(1, vw, built);
        for key in 0..4u64 {
            let mut want = Vec::new();
            let mut packs = true;
            for u in &stored {
                let rows: Vec<usize> = (0..u.len()).filter(|&i| u.row(i)[0] == key).collect();
                if rows.is_empty() {
                    continue;
                }
                if (0..u.len()).any(|i| packed::pack(&u.times[i]).is_none()) {
                    packs = false;
                    break;
                }
                for i in rows {
                    let t = packed::pack(&u.times[i].join(&meet)).unwrap();
                    want.push((u.row(i).get(1).copied().unwrap_or(0), t, u.diffs[i]));
                }
            }
            let mut got = Vec::new();
            let read = !c.seek_key(&[key]) || c.gather_packed(packed::pack(&meet).unwrap(), &mut got);
            prop_assert_eq!(read, packs, "key {}", key);
            prop_assert_eq!(&got, &want, "key {}", key);
        }
    }
}
