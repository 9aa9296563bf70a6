//! `join`'s products of a batch with the other side's trace (`dA x (B - dB)`, `A x dB`),
//! key by key and resumable.
//!
//! Each key run of the batch is paired with the key's history in the trace (with the other
//! side's new batch taken out in `dA x (B - dB)`), by history replay when both sides are
//! long (`join_replay.rs`), else pairwise. When the fuel runs out partway, what is left is
//! the position (the batch's next key run, the cut key's history and where its products
//! stopped) and the [`Reader`]: a snapshot of the trace's batches as they were in that
//! activation (shared, immutable), so a later activation reads each remaining key's history
//! exactly as this one would have, whatever was inserted, merged or compacted since.
//! Before, every remaining key's history was copied out of the trace at once: on the
//! 1M/10M BFS, the iterations whose products take several activations held 280 MB of
//! copied `(key, val, time, diff)` rows, the largest item at the peak.

use super::join::{products, read_key, JoinScratch, Pair, Pos};
use super::join_replay::{replay_products_bounded, REPLAY_MIN_SIDE};
use crate::engine::arrangement::Reader;
use crate::engine::plan::JoinKind;
use crate::error::Result;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// Where a batch x trace product stands (the batch's rows and key runs are the caller's).
pub struct TraceProducts {
    /// The next key run of the batch to start.
    next: usize,
    /// The other side's trace, as of the activation that started the product.
    reader: Reader,
    /// `Some(row)`: the other side's new batch is taken out of each key history; `row` is
    /// where its rows of the next key are looked for (keys come in ascending order).
    minus_from: Option<usize>,
    /// The history of the key being joined.
    hist: Updates,
    tmp: Updates,
    /// The key being joined when the fuel ran out, and where its products stopped.
    current: Option<(Pair, Pos)>,
    /// Whether the batch is the left side (`dA x B`) or the right (`A x dB`).
    pub batch_left: bool,
    kind: JoinKind,
    sign: i64,
    kw: usize,
}

/// The rows `[s, e)` of `rows` (sorted by key) with key `key`, looked for from `*from` on;
/// `*from` moves past the smaller keys.
fn rows_of(rows: &Updates, kw: usize, from: &mut usize, key: &[u64]) -> Option<(usize, usize)> {
    let (w, n) = (rows.width, rows.len());
    let key_at = |i: usize| &rows.rows[i * w..i * w + kw];
    while *from < n && key_at(*from) < key {
        *from += 1;
    }
    let s = *from;
    let mut e = s;
    while e < n && key_at(e) == key {
        e += 1;
    }
    (e > s).then_some((s, e))
}

impl TraceProducts {
    /// Reads on from the spilled copies of the batches in `swaps` (see
    /// [`crate::trace::Cursor::swap_batches`]).
    pub fn swap_batches(&mut self, swaps: &crate::trace::spine::Swaps) {
        self.reader.swap_batches(swaps)
    }

    /// A product of a batch's key runs with the trace `reader` reads (rows of
    /// `trace_width` words); `subtract`: take the other side's new batch out of each history.
    pub(super) fn new(
        reader: Reader,
        trace_width: usize,
        subtract: bool,
        batch_left: bool,
        kind: JoinKind,
        sign: i64,
        kw: usize,
    ) -> TraceProducts {
        TraceProducts {
            next: 0,
            reader,
            minus_from: subtract.then_some(0),
            hist: Updates::new(trace_width),
            tmp: Updates::new(trace_width),
            current: None,
            batch_left,
            kind,
            sign,
            kw,
        }
    }

    /// The product of the batch rows `batch` (its key `runs`) with the trace, from where it
    /// stopped, until it is done (`true`) or `budget` runs out (`false`). `other`: the other
    /// side's new batch, when it is taken out of the histories.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &mut self,
        batch: &Updates,
        runs: &[(usize, usize)],
        other: Option<&Updates>,
        out: &mut Updates,
        scratch: &mut JoinScratch,
        overflow: &mut Vec<(Vec<u64>, Time, i128)>,
        budget: &mut usize,
    ) -> Result<bool> {
        let (kw, kind, sign) = (self.kw, self.kind, self.sign);
        if let Some((pair, pos)) = self.current.take() {
            let (l, r) = self.sides(batch);
            let row = &mut scratch.row;
            if let Some(p) = products(
                l,
                r,
                &[pair],
                pos,
                kw,
                kind,
                sign,
                out,
                row,
                overflow,
                budget,
            ) {
                self.current = Some((pair, p));
                return Ok(false);
            }
        }
        let w = batch.width;
        while let Some(&(s, e)) = runs.get(self.next) {
            self.next += 1;
            let key = &batch.rows[s * w..s * w + kw];
            let minus = match (other, self.minus_from.as_mut()) {
                (Some(rows), Some(from)) => rows_of(rows, kw, from, key).map(|(a, b)| (rows, a, b)),
                _ => None,
            };
            self.hist.clear();
            read_key(&mut self.reader, key, minus, &mut self.hist, &mut self.tmp)?;
            let n = self.hist.len();
            if n == 0 {
                continue;
            }
            let pair = if self.batch_left {
                [s, e, 0, n]
            } else {
                [0, n, s, e]
            };
            let (l, r) = self.sides(batch);
            // Long histories on both sides: walk them in time order (`join_replay.rs`). A
            // product outside i64, or more products than the fuel left (replay gives up as
            // soon as it has made that many, so a hot key never holds more in memory),
            // leaves the key to the pairwise products below, which stop when the fuel runs
            // out.
            if *budget > 0 && e - s >= REPLAY_MIN_SIDE && n >= REPLAY_MIN_SIDE {
                let (lr, rr) = ((pair[0], pair[1]), (pair[2], pair[3]));
                let mark = out.len();
                let sc = &mut scratch.replay;
                match replay_products_bounded(l, lr, r, rr, kw, kind, sign, out, sc, *budget) {
                    Some(k) => {
                        *budget -= k;
                        continue;
                    }
                    None => out.truncate(mark),
                }
            }
            let row = &mut scratch.row;
            let start = (0, 0, 0);
            if let Some(p) = products(
                l,
                r,
                &[pair],
                start,
                kw,
                kind,
                sign,
                out,
                row,
                overflow,
                budget,
            ) {
                self.current = Some((pair, p));
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// (left rows, right rows): the batch and the current key's history.
    fn sides<'a>(&'a self, batch: &'a Updates) -> (&'a Updates, &'a Updates) {
        if self.batch_left {
            (batch, &self.hist)
        } else {
            (&self.hist, batch)
        }
    }

    /// Adds to `lower` the times of the batch rows still to be joined (every product's time
    /// is at or after its batch row's).
    pub fn lower(&self, batch: &Updates, runs: &[(usize, usize)], lower: &mut Antichain<Time>) {
        let off = if self.batch_left { 0 } else { 2 };
        let cut = self.current.map(|(p, _)| (p[off], p[off + 1]));
        for (s, e) in cut
            .into_iter()
            .chain(runs[self.next.min(runs.len())..].iter().copied())
        {
            for t in batch.times.range_iter(s..e) {
                lower.insert_ref(t);
            }
        }
    }

    /// Marks the words of the current key's history and of the trace snapshot.
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        marks.words(&self.hist.rows);
        self.reader.mark_strings(marks);
    }

    /// Updates held for the rest of the product: the current key's history.
    pub fn held_len(&self) -> usize {
        self.hist.len()
    }
}
