//! Splitting a batch of updates into parts by a bucket per update, giving the batch's
//! memory back as the parts fill.
//!
//! The exchange splits each message it routes by the owner of each update's key. Copied
//! whole into new parts, a message lives twice at once: on two workers, the 1M/10M BFS's
//! 10M-edge load (240 MB of rows and diffs) held 480 MB of Rust heap while it was split
//! (`benches/memory_stages.py ... -w 2`). [`split_by`] takes the batch by value and copies
//! it from its end, a step of [`RELEASE_STEP_BYTES`] at a time, into parts allocated at
//! their sizes (a first pass counts each bucket's updates); after each step the batch is
//! truncated and its room past the updates it still holds given back to the allocator
//! (glibc returns the tail of a block it mapped for itself, as large batches are, to the
//! kernel). So the batch and its parts together hold one copy of the updates and a step
//! more, and the parts' pages are touched only as they are written.
//!
//! The parts are filled from their ends, so each keeps the order its updates had in the
//! batch (the split is stable). A part whose updates share one time holds it once (as one
//! built push by push would), also when the batch's times were written out. A batch whose
//! updates all fall in one bucket is returned as that bucket's part, uncopied.

use crate::lattice::Time;
use crate::updates::{TimeColumn, Updates};

/// Bytes of updates copied out of the batch between two give-backs of its memory: the
/// most the batch and its parts hold beyond one copy of the updates.
pub const RELEASE_STEP_BYTES: usize = 8 << 20;

/// Splits `upd` into `parts` batches: part `b` holds, in their order in `upd`, the updates
/// whose row `bucket` maps to `b` (which must be below `parts`). `bucket` is called twice
/// per update (counting, then copying) and must give the same answer both times. Parts
/// with no updates are empty batches of `upd`'s width.
pub fn split_by(upd: Updates, parts: usize, bucket: impl FnMut(&[u64]) -> usize) -> Vec<Updates> {
    split_by_steps(upd, parts, bucket, RELEASE_STEP_BYTES)
}

/// [`split_by`], giving back the batch's memory after each `step_bytes` of updates copied.
fn split_by_steps(
    mut upd: Updates,
    parts: usize,
    mut bucket: impl FnMut(&[u64]) -> usize,
    step_bytes: usize,
) -> Vec<Updates> {
    let width = upd.width;
    let census = Census::of(&upd, parts, &mut bucket);
    let mut out: Vec<Updates> = (0..parts).map(|_| Updates::new(width)).collect();
    let mut nonempty = census.counts.iter().enumerate().filter(|(_, &c)| c > 0);
    match (nonempty.next(), nonempty.next()) {
        (None, _) => return out,
        (Some((only, &n)), None) => {
            if let PartTimes::One(t) = census.times[only] {
                if upd.times.same().is_none() {
                    upd.times = TimeColumn::repeat(t, n);
                }
            }
            out[only] = upd;
            return out;
        }
        _ => {}
    }
    let mut columns = PartColumns::for_census(&census, width);
    copy_releasing(upd, &mut columns, &mut bucket, step_bytes);
    columns.finish(census, out.as_mut_slice());
    out
}

/// The times of a part's updates, as far as they have been seen.
#[derive(Clone, Copy)]
enum PartTimes {
    /// No update yet.
    Unseen,
    /// Every update so far at this time.
    One(Time),
    /// Updates at different times.
    Many,
}

impl PartTimes {
    #[inline]
    fn see(&mut self, t: &Time) {
        match self {
            PartTimes::Unseen => *self = PartTimes::One(*t),
            PartTimes::One(one) if one != t => *self = PartTimes::Many,
            _ => {}
        }
    }
}

/// What the first pass learns of each part: its number of updates and their times (a part
/// whose updates share one time holds it once, as a batch built push by push would).
struct Census {
    counts: Vec<usize>,
    times: Vec<PartTimes>,
}

impl Census {
    fn of(upd: &Updates, parts: usize, bucket: &mut impl FnMut(&[u64]) -> usize) -> Census {
        let mut counts = vec![0usize; parts];
        let mut times = vec![PartTimes::Unseen; parts];
        match upd.times.same() {
            Some(t) => {
                for i in 0..upd.len() {
                    counts[bucket(upd.row(i))] += 1;
                }
                for (c, pt) in counts.iter().zip(&mut times) {
                    if *c > 0 {
                        *pt = PartTimes::One(*t);
                    }
                }
            }
            None => {
                for (i, t) in upd.times.iter().enumerate() {
                    let b = bucket(upd.row(i));
                    counts[b] += 1;
                    times[b].see(t);
                }
            }
        }
        Census { counts, times }
    }
}

/// The parts' columns while they fill: each allocated at its part's size, filled from its
/// end (`fill[b]`: the updates part `b` still lacks, the next one's index plus one).
struct PartColumns {
    width: usize,
    rows: Vec<Vec<u64>>,
    diffs: Vec<Vec<i64>>,
    /// The times of the parts whose updates differ in time (the others hold theirs once).
    times: Vec<Option<Vec<Time>>>,
    /// Whether any part has a times column.
    any_times: bool,
    fill: Vec<usize>,
}

impl PartColumns {
    fn for_census(census: &Census, width: usize) -> PartColumns {
        let times: Vec<Option<Vec<Time>>> = census
            .counts
            .iter()
            .zip(&census.times)
            .map(|(&c, t)| matches!(t, PartTimes::Many).then(|| Vec::with_capacity(c)))
            .collect();
        PartColumns {
            width,
            rows: census
                .counts
                .iter()
                .map(|&c| Vec::with_capacity(c * width))
                .collect(),
            diffs: census
                .counts
                .iter()
                .map(|&c| Vec::with_capacity(c))
                .collect(),
            any_times: times.iter().any(Option::is_some),
            times,
            fill: census.counts.clone(),
        }
    }

    /// Writes one update into part `b`, before those written into it so far (`time` is
    /// needed only if some part has a times column).
    #[inline]
    fn put_before(&mut self, b: usize, row: &[u64], time: Option<&Time>, diff: i64) {
        // An underflow (more updates for `b` than counted) panics here or at the slot.
        self.fill[b] -= 1;
        let at = self.fill[b];
        let w = self.width;
        let slots = &mut self.rows[b].spare_capacity_mut()[at * w..(at + 1) * w];
        for (slot, &word) in slots.iter_mut().zip(row) {
            slot.write(word);
        }
        self.diffs[b].spare_capacity_mut()[at].write(diff);
        if let (Some(times), Some(&t)) = (&mut self.times[b], time) {
            times.spare_capacity_mut()[at].write(t);
        }
    }

    /// Hands the filled columns to `out`, one part each.
    fn finish(self, census: Census, out: &mut [Updates]) {
        // Each part was written at indices counted down from its count to 0, each once:
        // with every `fill` at 0 (an overrun panicked in `put_before`), every slot below
        // each count holds an update.
        assert!(
            self.fill.iter().all(|&f| f == 0),
            "a bucket changed between the count and the copy"
        );
        let columns = self.rows.into_iter().zip(self.diffs).zip(self.times);
        let census = census.counts.iter().zip(&census.times);
        for (b, (((mut rows, mut diffs), times), (&n, part_times))) in
            columns.zip(census).enumerate()
        {
            // SAFETY: every slot below `n` (and `n * width` for the rows) was written
            // (see above), inside the room of the count each was allocated with.
            unsafe {
                rows.set_len(n * self.width);
                diffs.set_len(n);
            }
            let times = match (times, part_times) {
                (Some(mut ts), _) => {
                    // SAFETY: as for the diffs.
                    unsafe { ts.set_len(n) };
                    TimeColumn::from(ts)
                }
                (None, PartTimes::One(t)) => TimeColumn::repeat(*t, n),
                (None, _) => TimeColumn::new(),
            };
            out[b] = Updates {
                width: self.width,
                rows,
                times,
                diffs,
            };
        }
    }
}

/// Copies every update of `upd` into `parts` from the last one back, giving back `upd`'s
/// memory past what is left to copy after each `step_bytes` of updates copied.
fn copy_releasing(
    mut upd: Updates,
    parts: &mut PartColumns,
    bucket: &mut impl FnMut(&[u64]) -> usize,
    step_bytes: usize,
) {
    let width = upd.width;
    let time_bytes = if parts.any_times {
        std::mem::size_of::<Time>()
    } else {
        0
    };
    let update_bytes = 8 * width + 8 + time_bytes;
    let step = (step_bytes / update_bytes).max(1);
    let mut end = upd.len();
    while end > 0 {
        let start = end.saturating_sub(step);
        for i in (start..end).rev() {
            let row = &upd.rows[i * width..(i + 1) * width];
            let time = parts.any_times.then(|| &upd.times[i]);
            parts.put_before(bucket(row), row, time, upd.diffs[i]);
        }
        release_from(&mut upd, start);
        end = start;
    }
}

/// Keeps the first `n` updates of `upd` and gives back the room past them.
fn release_from(upd: &mut Updates, n: usize) {
    upd.rows.truncate(n * upd.width);
    upd.rows.shrink_to_fit();
    upd.diffs.truncate(n);
    upd.diffs.shrink_to_fit();
    upd.times.truncate(n);
    upd.times.shrink_to_fit();
}

#[cfg(test)]
mod tests;
