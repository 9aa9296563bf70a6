//! History replay: the products of one key's two long update histories, without pairing
//! every update with every other.
//!
//! The pairwise products of histories of `n` and `m` updates cost `n * m` even when the two
//! collections are never large at the same time: an edge added and removed again within a
//! batch of many times still meets every distance change of its source node. Replay walks
//! both histories in time order (the lexicographic order, a linear extension of the partial
//! order) and pairs each update with the updates of the other side seen so far, kept in a
//! *buffer* whose times are advanced by the meet `m` of the times still to come on the
//! walking side and then consolidated: an update at `t >= m` has `t v (s v m) = t v s`, so
//! every product keeps its time, while buffered updates that became equal cancel (the added
//! and removed edge meet nothing after both are past). Each pair of updates is formed
//! exactly once, by whichever of the two comes later in the walk, so the output consolidates
//! to the pairwise products, without work quadratic in the keys' history lengths.
//!
//! Diffs in a buffer are summed exactly (`i128`); a product outside `i64` makes the caller
//! fall back to the pairwise products for the key, which turn such products into error
//! updates one by one.

use crate::engine::plan::JoinKind;
use crate::lattice::{Lattice, Time};
use crate::updates::Updates;

/// A key with fewer updates than this on either side is joined pairwise (a single update
/// pairs with each of the other side's once either way). Replay pays off from two: on
/// `bfs_bench 1000 2000 B 30000` a threshold of 2 beat 4, 6 and 32 at batches of 1,000 and
/// 10,000 and matched pairwise-only at batches of 1 to 100 (ENGINE.md, "Join").
pub const REPLAY_MIN_SIDE: usize = 2;

/// Updates of one side already walked past, as (row index, time, diff).
#[derive(Default)]
struct Buffer {
    items: Vec<(usize, Time, i128)>,
    /// The meet the items were last advanced by, and how many items were advanced by it.
    meet: Option<Time>,
    advanced: usize,
    /// Length after the last consolidation.
    consolidated: usize,
}

impl Buffer {
    fn clear(&mut self) {
        self.items.clear();
        self.meet = None;
        self.advanced = 0;
        self.consolidated = 0;
    }

    /// Advances the items' times by `m` (the meet of the other side's remaining times) and
    /// consolidates them when that can cancel something: when the meet moved, or when the
    /// buffer doubled since the last consolidation. Values compare on `side`'s rows past
    /// the key.
    fn advance(&mut self, m: &Time, side: &Updates, kw: usize) {
        let moved = self.meet.as_ref() != Some(m);
        let from = if moved { 0 } else { self.advanced };
        for it in &mut self.items[from..] {
            it.1 = it.1.join(m);
        }
        self.meet = Some(*m);
        self.advanced = self.items.len();
        if (moved && self.items.len() > self.consolidated)
            || self.items.len() >= 2 * self.consolidated.max(4)
        {
            self.consolidate(side, kw);
        }
    }

    fn consolidate(&mut self, side: &Updates, kw: usize) {
        let w = side.width;
        let val = |i: usize| &side.rows[i * w + kw..(i + 1) * w];
        self.items
            .sort_unstable_by(|a, b| val(a.0).cmp(val(b.0)).then(a.1.cmp(&b.1)));
        let mut out = 0;
        for k in 0..self.items.len() {
            let (i, t, d) = self.items[k];
            if out > 0 {
                let (pi, pt, _) = self.items[out - 1];
                if pt == t && val(pi) == val(i) {
                    self.items[out - 1].2 += d;
                    if self.items[out - 1].2 == 0 {
                        out -= 1;
                    }
                    continue;
                }
            }
            self.items[out] = (i, t, d);
            out += 1;
        }
        self.items.truncate(out);
        self.advanced = out;
        self.consolidated = out;
    }
}

/// Buffers reused across keys and activations.
#[derive(Default)]
pub struct ReplayScratch {
    order: [Vec<usize>; 2],
    meets: [Vec<Time>; 2],
    bufs: [Buffer; 2],
    row: Vec<u64>,
}

/// Indices `range` sorted by time, and the meets of every suffix of that order.
fn walk_order(u: &Updates, range: (usize, usize), order: &mut Vec<usize>, meets: &mut Vec<Time>) {
    order.clear();
    order.extend(range.0..range.1);
    order.sort_unstable_by_key(|&i| u.times[i]);
    meets.clear();
    meets.resize(order.len(), Time::default());
    let mut m: Option<Time> = None;
    for k in (0..order.len()).rev() {
        let t = u.times[order[k]];
        let next = m.map_or(t, |m| m.meet(&t));
        meets[k] = next;
        m = Some(next);
    }
}

/// Appends to `out` the products of left rows `l[ls..le)` with right rows `r[rs..re)`, all
/// of one key, by history replay: rows `key, left vals, right vals` (`Join`) or the left
/// row (`Semijoin`), time `tl v tr`, diff `dl * dr * sign`. Returns the number of products
/// emitted, or `None` (with `out` as it was) when a product falls outside `i64`.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub fn replay_products(
    l: &Updates,
    lr: (usize, usize),
    r: &Updates,
    rr: (usize, usize),
    kw: usize,
    kind: JoinKind,
    sign: i64,
    out: &mut Updates,
    sc: &mut ReplayScratch,
) -> Option<usize> {
    replay_products_bounded(l, lr, r, rr, kw, kind, sign, out, sc, usize::MAX)
}

/// [`replay_products`] that gives up (`None`, `out` as it was) once it has made more than
/// `limit` products, so that a key too hot for the join's fuel never holds more than the
/// fuel's worth of products in memory (the caller then pairs it in fueled chunks).
#[allow(clippy::too_many_arguments)]
pub fn replay_products_bounded(
    l: &Updates,
    (ls, le): (usize, usize),
    r: &Updates,
    (rs, re): (usize, usize),
    kw: usize,
    kind: JoinKind,
    sign: i64,
    out: &mut Updates,
    sc: &mut ReplayScratch,
    limit: usize,
) -> Option<usize> {
    let mark = out.len();
    let sides = [l, r];
    walk_order(l, (ls, le), &mut sc.order[0], &mut sc.meets[0]);
    walk_order(r, (rs, re), &mut sc.order[1], &mut sc.meets[1]);
    sc.bufs[0].clear();
    sc.bufs[1].clear();
    let n = [sc.order[0].len(), sc.order[1].len()];
    let mut pos = [0, 0];
    let mut emitted = 0usize;
    while pos[0] < n[0] || pos[1] < n[1] {
        // Walk side `w` (the earlier time; the right side on ties), pairing with side `o`.
        let left_first = pos[1] == n[1]
            || (pos[0] < n[0] && l.times[sc.order[0][pos[0]]] < r.times[sc.order[1][pos[1]]]);
        let (w, o) = if left_first { (0, 1) } else { (1, 0) };
        let idx = sc.order[w][pos[w]];
        let (t, d) = (sides[w].times[idx], sides[w].diffs[idx]);
        if !sc.bufs[o].items.is_empty() {
            sc.bufs[o].advance(&sc.meets[w][pos[w]], sides[o], kw);
            let walked = (left_first, idx, t, d as i128 * sign as i128);
            let Some(k) = pair_with(
                walked,
                &sc.bufs[o].items,
                (l, r, kw, kind),
                &mut sc.row,
                out,
            ) else {
                out.truncate(mark);
                return None;
            };
            emitted += k;
            if emitted > limit {
                out.truncate(mark);
                return None;
            }
        }
        if pos[o] < n[o] {
            sc.bufs[w].items.push((idx, t, d as i128));
        }
        pos[w] += 1;
    }
    Some(emitted)
}

/// Appends the products of one walked update `(on the left?, row, time, signed diff)` with
/// the other side's buffered updates; `None` when a product falls outside `i64`.
fn pair_with(
    (walked_left, idx, t, d): (bool, usize, Time, i128),
    buffer: &[(usize, Time, i128)],
    (l, r, kw, kind): (&Updates, &Updates, usize, JoinKind),
    row: &mut Vec<u64>,
    out: &mut Updates,
) -> Option<usize> {
    let (lw, rw) = (l.width, r.width);
    for &(other, tb, db) in buffer {
        let d = i64::try_from(d.checked_mul(db)?).ok()?;
        let (li, rj) = if walked_left {
            (idx, other)
        } else {
            (other, idx)
        };
        row.clear();
        row.extend_from_slice(&l.rows[li * lw..(li + 1) * lw]);
        if kind == JoinKind::Join {
            row.extend_from_slice(&r.rows[rj * rw + kw..(rj + 1) * rw]);
        }
        out.push(row, t.join(&tb), d);
    }
    Some(buffer.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Pairwise products, consolidated: the reference.
    fn naive(
        l: &Updates,
        r: &Updates,
        kw: usize,
        kind: JoinKind,
    ) -> BTreeMap<(Vec<u64>, Time), i128> {
        let mut acc = BTreeMap::new();
        for i in 0..l.len() {
            for j in 0..r.len() {
                let mut row = l.row(i).to_vec();
                if kind == JoinKind::Join {
                    row.extend_from_slice(&r.row(j)[kw..]);
                }
                *acc.entry((row, l.times[i].join(&r.times[j]))).or_insert(0) +=
                    l.diffs[i] as i128 * r.diffs[j] as i128;
            }
        }
        acc.retain(|_, d| *d != 0);
        acc
    }

    fn consolidated(u: &Updates) -> BTreeMap<(Vec<u64>, Time), i128> {
        let mut acc = BTreeMap::new();
        for i in 0..u.len() {
            *acc.entry((u.row(i).to_vec(), u.times[i])).or_insert(0) += u.diffs[i] as i128;
        }
        acc.retain(|_, d| *d != 0);
        acc
    }

    /// A one-key history of `width` words (key 7, then values) from (value, t0, t1, diff).
    fn history(width: usize, ups: &[(u64, u64, u64, i64)]) -> Updates {
        let mut u = Updates::new(width);
        for &(v, t0, t1, d) in ups {
            let mut row = vec![7u64];
            row.extend(std::iter::repeat_n(v, width - 1));
            u.push(&row, Time::from_coords(&[t0, t1]), d);
        }
        u
    }

    fn updates() -> impl Strategy<Value = Vec<(u64, u64, u64, i64)>> {
        prop::collection::vec((0u64..4, 0u64..6, 0u64..4, -2i64..=2), 0..40)
    }

    proptest! {
        /// Replay equals the pairwise products on random histories with partially ordered
        /// (2-D) times, for join and semijoin, either sign.
        #[test]
        fn replay_matches_pairwise(a in updates(), b in updates(), semi in any::<bool>(), neg in any::<bool>()) {
            let kind = if semi { JoinKind::Semijoin } else { JoinKind::Join };
            let sign = if neg { -1 } else { 1 };
            let l = history(2, &a);
            let r = history(if semi { 1 } else { 2 }, &b);
            let mut out = Updates::new(if semi { 2 } else { 3 });
            let mut sc = ReplayScratch::default();
            let n = replay_products(&l, (0, l.len()), &r, (0, r.len()), 1, kind, sign, &mut out, &mut sc);
            prop_assert_eq!(n, Some(out.len()));
            let mut want = naive(&l, &r, 1, kind);
            for d in want.values_mut() {
                *d *= sign as i128;
            }
            prop_assert_eq!(consolidated(&out), want);
        }
    }

    /// An edge added and removed at every time meets few of the other side's updates.
    #[test]
    fn cancelling_history_emits_few_products() {
        let adds: Vec<_> = (0..100).map(|t| (t % 3, t, 0, 1)).collect();
        let churn: Vec<_> = (0..100)
            .flat_map(|t| [(5, 2 * t, 0, 1), (5, 2 * t + 1, 0, -1)])
            .collect();
        let (l, r) = (history(2, &adds), history(2, &churn));
        let mut out = Updates::new(3);
        let mut sc = ReplayScratch::default();
        let n = replay_products(
            &l,
            (0, l.len()),
            &r,
            (0, r.len()),
            1,
            JoinKind::Join,
            1,
            &mut out,
            &mut sc,
        )
        .expect("no overflow");
        assert!(n < l.len() * r.len() / 10, "{n} products");
        assert_eq!(consolidated(&out), naive(&l, &r, 1, JoinKind::Join));
    }

    /// A product outside int64 leaves the output as it was and asks for the pairwise path.
    #[test]
    fn overflow_falls_back() {
        let l = history(2, &[(1, 0, 0, i64::MAX), (2, 1, 0, 1)]);
        let r = history(2, &[(3, 0, 0, 2), (4, 2, 0, 1)]);
        let mut out = Updates::new(3);
        out.push(&[1, 2, 3], Time::default(), 1);
        let mut sc = ReplayScratch::default();
        let n = replay_products(
            &l,
            (0, 2),
            &r,
            (0, 2),
            1,
            JoinKind::Join,
            1,
            &mut out,
            &mut sc,
        );
        assert_eq!(n, None);
        assert_eq!(out.len(), 1);
    }
}
