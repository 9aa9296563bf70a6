//! Tests of `time_vec`: a [`TimeVec`] reads back exactly what a plain `Vec<Time>` holds
//! through random pushes (narrow times, and times with a coordinate past `u32` or a third
//! coordinate, which widen it), repeated pushes, appends from narrow and wide vectors,
//! mapped appends, in-place moves and truncations.

use super::TimeVec;
use crate::lattice::Time;
use proptest::prelude::*;

/// A time: mostly narrow, sometimes past `u32` in a coordinate or with a third one.
fn time() -> impl Strategy<Value = Time> {
    prop_oneof![
        8 => (0u64..4, 0u64..4).prop_map(|(x, y)| Time([x, y, 0, 0])),
        1 => (0u64..2, 0u64..2).prop_map(|(x, y)| Time([x + u32::MAX as u64, y, 0, 0])),
        1 => (0u64..2, 1u64..3).prop_map(|(x, z)| Time([x, 0, z, 0])),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Push(Time),
    PushN(Time, usize),
    /// Appends a range of another vector built from these times.
    Extend(Vec<Time>, usize, usize),
    /// The same, each time moved up by one in its second coordinate.
    ExtendMapped(Vec<Time>, usize, usize),
    MoveBack(usize, usize),
    Truncate(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let ts = || prop::collection::vec(time(), 0..6);
    prop_oneof![
        4 => time().prop_map(Op::Push),
        1 => (time(), 0usize..4).prop_map(|(t, n)| Op::PushN(t, n)),
        1 => (ts(), 0usize..7, 0usize..7).prop_map(|(v, a, b)| Op::Extend(v, a, b)),
        1 => (ts(), 0usize..7, 0usize..7).prop_map(|(v, a, b)| Op::ExtendMapped(v, a, b)),
        1 => (0usize..20, 0usize..20).prop_map(|(a, b)| Op::MoveBack(a, b)),
        1 => (0usize..20).prop_map(Op::Truncate),
    ]
}

fn build(ts: &[Time]) -> TimeVec {
    let mut v = TimeVec::with_capacity(ts.len());
    ts.iter().for_each(|&t| v.push(t));
    v
}

fn read(v: &TimeVec) -> Vec<Time> {
    (0..v.len()).map(|i| v.get(i)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn time_vec_matches_vec(ops in prop::collection::vec(op(), 0..30)) {
        let (mut v, mut want) = (TimeVec::with_capacity(2), Vec::<Time>::new());
        let up = |t: Time| Time([t.0[0], t.0[1] + 1, t.0[2], t.0[3]]);
        for op in ops {
            match op {
                Op::Push(t) => {
                    v.push(t);
                    want.push(t);
                }
                Op::PushN(t, n) => {
                    v.push_n(t, n);
                    want.extend(std::iter::repeat_n(t, n));
                }
                Op::Extend(ts, a, b) | Op::ExtendMapped(ts, a, b) if a.max(b) > ts.len() => {
                    let _ = ts;
                }
                Op::Extend(ts, a, b) => {
                    let (a, b) = (a.min(b), a.max(b));
                    v.extend_from(&build(&ts), a..b);
                    want.extend_from_slice(&ts[a..b]);
                }
                Op::ExtendMapped(ts, a, b) => {
                    let (a, b) = (a.min(b), a.max(b));
                    v.extend_mapped(&build(&ts), a..b, up);
                    want.extend(ts[a..b].iter().map(|&t| up(t)));
                }
                Op::MoveBack(a, b) if a.max(b) < want.len() => {
                    let (to, from) = (a.min(b), a.max(b));
                    v.move_back(from, to);
                    want[to] = want[from];
                }
                Op::MoveBack(..) => {}
                Op::Truncate(n) => {
                    v.truncate(n);
                    want.truncate(n);
                }
            }
            prop_assert_eq!(v.len(), want.len());
            prop_assert_eq!(read(&v), want.clone());
            let narrow = want.iter().all(|t| t.0[2] == 0 && t.0[3] == 0 && t.0[0] <= u32::MAX as u64);
            if narrow && want.iter().all(|t| t.0[1] <= u32::MAX as u64) {
                // Narrow data pushed into a vector that never saw a wide time stays narrow.
                let fresh = build(&want);
                prop_assert!(matches!(fresh, TimeVec::Narrow(_)));
            }
        }
        v.shrink_to_fit();
        prop_assert_eq!(read(&v), want);
    }
}
