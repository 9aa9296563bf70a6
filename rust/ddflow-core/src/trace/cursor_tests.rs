//! Property tests of [`Cursor`] walks (seeks, steps and rewinds) against the union of its
//! batches, with keys of one and two words from the whole `u64` range.

use super::*;
use crate::lattice::Time;
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
