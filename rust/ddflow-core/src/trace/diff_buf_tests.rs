//! Tests of `diff_buf`: a [`DiffBuf`] holds exactly the diffs a plain vector holds, with the
//! times moved alike, through random pushes, additions to the last diff (sums that leave
//! `i64` included), zero drops from a position on and appends from batches' implicit,
//! sparse and dense diffs; and it finishes as `compact_diffs` of that vector.

use super::DiffBuf;
use crate::lattice::Time;
use crate::trace::batch::Diffs;
use crate::trace::builder::compact_diffs;
use crate::trace::time_vec::TimeVec;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Push(i64),
    AddToLast(i64),
    DropZeros(usize),
    Extend(Vec<i64>, usize, usize, u8),
}

fn diff() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => Just(1i64),
        2 => -2i64..3,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => diff().prop_map(Op::Push),
        2 => diff().prop_map(Op::AddToLast),
        1 => (0usize..40).prop_map(Op::DropZeros),
        1 => (prop::collection::vec(diff(), 0..30), 0usize..30, 0usize..30, 0u8..3)
            .prop_map(|(v, a, b, k)| Op::Extend(v, a, b, k)),
    ]
}

/// A batch's diffs for `v` (no zeros in batches: zeros become -1) in form `kind`.
fn batch_diffs(v: &[i64], kind: u8) -> Diffs {
    let v: Vec<i64> = v.iter().map(|&d| if d == 0 { -1 } else { d }).collect();
    match kind {
        0 if v.iter().all(|&d| d == 1) => Diffs::Ones,
        1 => {
            let idx: Vec<usize> = (0..v.len()).filter(|&i| v[i] != 1).collect();
            let diffs = idx.iter().map(|&i| v[i]).collect();
            Diffs::Sparse { idx, diffs }
        }
        _ => Diffs::Dense(v),
    }
}

fn values(d: &Diffs, n: usize) -> Vec<i64> {
    let mut out = vec![1; n];
    match d {
        Diffs::Ones => {}
        Diffs::Sparse { idx, diffs } => idx.iter().zip(diffs).for_each(|(&i, &x)| out[i] = x),
        Diffs::Dense(v) => out.copy_from_slice(v),
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn diff_buf_matches_vec(ops in prop::collection::vec(op(), 0..40)) {
        let (mut buf, mut want) = (DiffBuf::Ones, Vec::<i64>::new());
        // Times mark each update, so that zero drops must move them along with the diffs.
        let (mut times, mut want_t) = (TimeVec::with_capacity(0), Vec::<Time>::new());
        let mut next_t = 0u64;
        let mut stamp = |times: &mut TimeVec, want_t: &mut Vec<Time>| {
            next_t += 1;
            times.push(Time::scalar(next_t));
            want_t.push(Time::scalar(next_t));
        };
        for op in ops {
            match op {
                Op::Push(d) => {
                    buf.push(want.len(), d, 0);
                    want.push(d);
                    stamp(&mut times, &mut want_t);
                }
                Op::AddToLast(d) if !want.is_empty() => {
                    let last = want.len() - 1;
                    match want[last].checked_add(d) {
                        Some(s) => {
                            prop_assert!(buf.add_to_last(last, d));
                            want[last] = s;
                        }
                        None => prop_assert!(!buf.add_to_last(last, d)),
                    }
                }
                Op::AddToLast(_) => {}
                Op::DropZeros(start) => {
                    let start = start.min(want.len());
                    let n = buf.drop_zeros(start, want.len(), Some(&mut times));
                    let keep: Vec<usize> = (0..want.len())
                        .filter(|&i| i < start || want[i] != 0)
                        .collect();
                    want = keep.iter().map(|&i| want[i]).collect();
                    want_t = keep.iter().map(|&i| want_t[i]).collect();
                    prop_assert_eq!(n, want.len());
                }
                Op::Extend(v, a, b, kind) => {
                    let d = batch_diffs(&v, kind);
                    let vals = values(&d, v.len());
                    let (a, b) = (a.min(b).min(v.len()), a.max(b).min(v.len()));
                    buf.extend_from(&d, (a, b), want.len(), 0);
                    want.extend_from_slice(&vals[a..b]);
                    for _ in a..b {
                        stamp(&mut times, &mut want_t);
                    }
                }
            }
            let n = want.len();
            prop_assert_eq!(values(&buf.clone().finish(n), n), want.clone());
            prop_assert_eq!((0..times.len()).map(|i| times.get(i)).collect::<Vec<_>>(), want_t.clone());
        }
        let n = want.len();
        prop_assert_eq!(buf.finish(n), compact_diffs(want));
    }
}
