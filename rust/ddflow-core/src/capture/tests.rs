//! Capture state against a naive reference: random updates at random product times arrive
//! in random chunks while the frontier advances; after every step the completed output, the
//! kept history or state, and `at(t)` must equal a recomputation from scratch with
//! `BTreeMap`s over every update seen so far.

use super::*;
use crate::encoding::DType;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

type Key = (Vec<u64>, Time);

fn time(a: u64, b: u64) -> Time {
    Time::from_coords(&[a, b])
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("c{i}")).collect()
}

fn schema() -> Option<Schema> {
    Some(Arc::new(vec![DType::Int64, DType::Int64]))
}

/// The reference: sums per (record, time) of the updates selected by `keep`, zeros dropped.
fn naive(all: &[(Vec<u64>, Time, i64)], keep: impl Fn(&Time) -> bool) -> BTreeMap<Key, i128> {
    let mut m = BTreeMap::new();
    for (r, t, d) in all {
        if keep(t) {
            *m.entry((r.clone(), *t)).or_insert(0i128) += *d as i128;
        }
    }
    m.retain(|_, v| *v != 0);
    m
}

fn accumulate(m: &BTreeMap<Key, i128>, upto: &Time) -> BTreeMap<Vec<u64>, i128> {
    let mut acc = BTreeMap::new();
    for ((r, t), d) in m {
        if t.less_equal(upto) {
            *acc.entry(r.clone()).or_insert(0i128) += d;
        }
    }
    acc.retain(|_, v| *v != 0);
    acc
}

fn as_map(u: &Updates) -> BTreeMap<Key, i128> {
    let mut m = BTreeMap::new();
    for i in 0..u.len() {
        let prev = m.insert((u.row(i).to_vec(), u.times[i]), u.diffs[i] as i128);
        assert!(
            prev.is_none(),
            "(record, time) twice in consolidated output"
        );
        assert_ne!(u.diffs[i], 0, "zero diff in consolidated output");
    }
    m
}

fn as_state(u: &Updates) -> BTreeMap<Vec<u64>, i128> {
    as_map(u).into_iter().map(|((r, _), d)| (r, d)).collect()
}

fn sorted_by_record_then_time(u: &Updates) -> bool {
    (1..u.len()).all(|i| (u.row(i - 1), u.times[i - 1]) < (u.row(i), u.times[i]))
}

/// One step: updates arriving, then the frontier the capture sees.
type Step = (Vec<(u64, u64, u64, u64, i64)>, Vec<(u64, u64)>);

fn steps() -> impl Strategy<Value = Vec<Step>> {
    let update = (0..3u64, 0..3u64, 0..4u64, 0..3u64, -2..3i64);
    prop::collection::vec(
        (
            prop::collection::vec(update, 0..12),
            prop::collection::vec((0..5u64, 0..4u64), 0..3),
        ),
        1..8,
    )
}

fn run(mode: CaptureMode, steps: Vec<Step>) {
    let mut cap = CaptureState::new("cap", mode, &names(2), 2);
    let mut all: Vec<(Vec<u64>, Time, i64)> = Vec::new();
    let mut frontier = Antichain::from_elem(Time::minimum());
    let mut delivered: BTreeMap<Key, i128> = BTreeMap::new();
    for (ups, f) in steps {
        let elems = frontier.elements().to_vec();
        if elems.is_empty() {
            break;
        }
        let above = |i: u64, a: u64, b: u64| {
            let base = elems[i as usize % elems.len()];
            time(base.coord(0) + a, base.coord(1) + b)
        };
        // Updates arrive only at times in the future of the current frontier.
        let mut upd = Updates::new(2);
        for (k, (a, b, ta, tb, d)) in ups.into_iter().enumerate() {
            let t = above(k as u64, ta, tb);
            upd.push(&[a, b], t, d);
            all.push((vec![a, b], t, d));
        }
        cap.absorb(schema(), upd.clone()).unwrap();
        // The frontier only advances: every new element is above an old one (none: closed).
        frontier = Antichain::from_iter_minimal(
            f.iter()
                .enumerate()
                .map(|(k, &(a, b))| above(k as u64, a, b)),
        );
        let fresh = cap.complete(&frontier).unwrap();
        assert!(sorted_by_record_then_time(&fresh));
        for (k, d) in as_map(&fresh) {
            assert!(!frontier.less_equal(&k.1), "incomplete time delivered");
            assert!(
                delivered.insert(k, d).is_none(),
                "(record, time) delivered twice"
            );
        }
        let expect = naive(&all, |t| !frontier.less_equal(t));
        assert_eq!(delivered, expect);
        let upper = expect.keys().map(|k| k.1).reduce(|a, b| a.join(&b));
        assert_eq!(cap.completed_upper(), upper);
        assert_eq!(as_state(&cap.state().unwrap()), {
            let top = upper.unwrap_or_else(Time::minimum);
            accumulate(&expect, &top)
        });
        match mode {
            CaptureMode::History => {
                assert_eq!(as_map(&cap.kept().to_updates()), expect);
                for a in 0..4 {
                    for b in 0..4 {
                        let t = time(a, b);
                        assert_eq!(as_state(&cap.at(&t).unwrap()), accumulate(&expect, &t));
                    }
                }
            }
            CaptureMode::State => {
                assert_eq!(
                    as_state(&cap.kept().to_updates()),
                    accumulate(&expect, &time(u64::MAX, u64::MAX))
                );
                let bigger = time(100, 100);
                assert_eq!(
                    as_state(&cap.at(&bigger).unwrap()),
                    as_state(&cap.kept().to_updates())
                );
                if let Some(u) = upper.filter(|u| *u != Time::minimum()) {
                    let below = Time::minimum();
                    assert!(!u.less_equal(&below));
                    assert!(matches!(
                        cap.at(&below).unwrap_err().cause(),
                        Error::Time(_)
                    ));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn history_matches_naive(s in steps()) {
        run(CaptureMode::History, s);
    }

    #[test]
    fn state_matches_naive(s in steps()) {
        run(CaptureMode::State, s);
    }
}

#[test]
fn overflow_names_the_capture_and_the_record() {
    let schema: Option<Schema> = Some(Arc::new(vec![DType::Str, DType::Int64]));
    let mut words = Vec::new();
    Interner::intern_all(["alice"], &mut words);
    for mode in [CaptureMode::History, CaptureMode::State] {
        let mut cap = CaptureState::new("totals", mode, &["name".into(), "n".into()], 2);
        let mut upd = Updates::new(2);
        upd.push(&[words[0], 7], time(1, 0), i64::MAX);
        upd.push(&[words[0], 7], time(1, 0), 1);
        cap.absorb(schema.clone(), upd.clone()).unwrap();
        let e = cap.complete(&Antichain::from_elem(time(2, 0))).unwrap_err();
        assert_eq!(e.operator(), Some("totals"));
        assert!(matches!(e.cause(), Error::Overflow(_)), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("{'name': 'alice', 'n': 7}") && text.contains("9223372036854775808"),
            "{text}"
        );
        // Nothing was lost: the updates are still pending.
        assert_eq!(cap.pending_len(), 2);
    }
    // Sums that overflow only across times: fine in history, an error for the state.
    let mut upd = Updates::new(2);
    upd.push(&[words[0], 7], time(1, 0), i64::MAX);
    upd.push(&[words[0], 7], time(2, 0), i64::MAX);
    let mut hist = CaptureState::new("h", CaptureMode::History, &names(2), 2);
    hist.absorb(schema.clone(), upd.clone()).unwrap();
    assert_eq!(hist.complete(&Antichain::new()).unwrap().len(), 2);
    let e = hist.at(&time(3, 0)).unwrap_err();
    assert!(matches!(e.cause(), Error::Overflow(_)));
    let mut state = CaptureState::new("s", CaptureMode::State, &names(2), 2);
    state.absorb(schema, upd.clone()).unwrap();
    assert!(matches!(
        state.complete(&Antichain::new()).unwrap_err().cause(),
        Error::Overflow(_)
    ));
}

#[test]
fn mismatched_dtypes_are_a_type_error() {
    let mut cap = CaptureState::new("c", CaptureMode::History, &names(1), 1);
    let mut upd = Updates::new(1);
    upd.push(&[1], Time::minimum(), 1);
    cap.absorb(Some(Arc::new(vec![DType::Int64])), upd.clone())
        .unwrap();
    let e = cap
        .absorb(Some(Arc::new(vec![DType::Str])), upd.clone())
        .unwrap_err();
    assert!(matches!(e.cause(), Error::Type(_)) && e.operator() == Some("c"));
}

proptest! {
    /// The ordered history holds the same updates as the history in completion order, sorted
    /// by time coordinates then record values (int64 words compared as signed), read whole
    /// or one column at a time.
    #[test]
    fn ordered_history_is_the_history_sorted(
        batches in prop::collection::vec(
            prop::collection::vec(
                (prop_oneof![-3i64..3, Just(i64::MAX), Just(1i64 << 40), Just(-(1i64 << 33))],
                 0u64..2, 0u64..4, 0u64..3, prop_oneof![Just(1i64), Just(-1), Just(1 << 35)]),
                0..12,
            ),
            1..6,
        )
    ) {
        let mut cap = CaptureState::new("c", CaptureMode::History, &names(2), 2);
        let schema: Option<Schema> = Some(Arc::new(vec![DType::Int64, DType::Bool]));
        for (round, batch) in batches.iter().enumerate() {
            let mut upd = Updates::new(2);
            for &(k, b, t0, t1, d) in batch {
                upd.push(&[k as u64, b], time(round as u64 * 4 + t0, t1), d);
            }
            cap.absorb(schema.clone(), upd).unwrap();
            cap.complete(&Antichain::from_elem(time(round as u64 * 4 + 4, 0))).unwrap();
        }
        let plain = cap.kept().to_updates();
        let mut want: Vec<(Vec<u64>, i64, u64, i64)> = (0..plain.len())
            .map(|i| {
                let t = plain.times[i].0;
                (vec![t[0], t[1]], plain.row(i)[0] as i64, plain.row(i)[1], plain.diffs[i])
            })
            .collect();
        want.sort();
        let ordered = cap.kept_ordered();
        // (Before any update the capture knows no dtypes: nothing to sort.)
        prop_assert_eq!(ordered.sorted, !plain.is_empty());
        let got_upd = ordered.to_updates();
        let got: Vec<(Vec<u64>, i64, u64, i64)> = (0..got_upd.len())
            .map(|i| {
                let t = got_upd.times[i].0;
                (vec![t[0], t[1]], got_upd.row(i)[0] as i64, got_upd.row(i)[1], got_upd.diffs[i])
            })
            .collect();
        prop_assert_eq!(&got, &want);
        let view = cap.history_ordered().unwrap();
        prop_assert_eq!(view.column(0), ordered.columns[0].to_vec());
        prop_assert_eq!(view.coords(), ordered.coords.to_vec());
        prop_assert_eq!(view.diffs(), ordered.diffs.to_vec());
        // Strings (ids) do not order as values: no sort in Rust.
        let mut strs = CaptureState::new("s", CaptureMode::History, &names(1), 2);
        let mut upd = Updates::new(1);
        upd.push(&[3], time(0, 0), 1);
        strs.absorb(Some(Arc::new(vec![DType::Str])), upd).unwrap();
        strs.complete(&Antichain::new()).unwrap();
        prop_assert!(!strs.kept_ordered().sorted);
    }
}

proptest! {
    /// The history keeps every completed update for times of one and of two coordinates,
    /// batches held at one time or at many, and words that fit 32 bits or not (each column
    /// is appended on its own: a column widens alone).
    #[test]
    fn history_keeps_every_update_by_column(
        dims in 1usize..3,
        batches in prop::collection::vec(
            (
                prop::collection::vec(
                    (prop_oneof![0u64..3, Just(u64::MAX), Just(1u64 << 40)], 0u64..3, 0u64..3,
                     prop_oneof![Just(1i64), Just(-1), Just(1 << 35)]),
                    0..10,
                ),
                any::<bool>(),
            ),
            1..5,
        )
    ) {
        let at = |outer: u64, inner: u64| match dims {
            1 => Time::from_coords(&[outer]),
            _ => time(outer, inner),
        };
        let mut cap = CaptureState::new("c", CaptureMode::History, &names(2), dims);
        let mut all: Vec<(Vec<u64>, Time, i64)> = Vec::new();
        for (round, (batch, one_time)) in batches.iter().enumerate() {
            let base = round as u64 * 4;
            let mut upd = Updates::new(2);
            for &(a, b, t, d) in batch {
                let t = if *one_time { at(base, 0) } else { at(base + t, t) };
                upd.push(&[a, b], t, d);
                all.push((vec![a, b], t, d));
            }
            if *one_time {
                upd.times = crate::updates::TimeColumn::repeat(at(base, 0), upd.len());
                prop_assert!(upd.is_empty() || upd.times.same().is_some());
            }
            cap.absorb(schema(), upd).unwrap();
            cap.complete(&Antichain::from_elem(at(base + 4, 0))).unwrap();
        }
        prop_assert_eq!(as_map(&cap.kept().to_updates()), naive(&all, |_| true));
    }
}
