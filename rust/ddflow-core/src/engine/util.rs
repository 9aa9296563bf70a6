//! Small helpers shared by the engine's operators: sorting and consolidating updates,
//! hashing keys to workers.

use crate::error::{Error, Result};
use crate::updates::Updates;

/// Sorts updates by (row, time), sums diffs of equal (row, time) and drops zeros.
pub fn consolidate(upd: &mut Updates) -> Result<()> {
    let n = upd.len();
    if n == 0 {
        return Ok(());
    }
    let w = upd.width;
    let sorted = (1..n).all(|i| {
        let a = &upd.rows[(i - 1) * w..i * w];
        let b = &upd.rows[i * w..(i + 1) * w];
        (a, upd.times[i - 1]) < (b, upd.times[i])
    });
    if !sorted {
        let mut perm: Vec<u32> = (0..n as u32).collect();
        {
            let rows = &upd.rows;
            let times = &upd.times;
            perm.sort_unstable_by(|&x, &y| {
                let (x, y) = (x as usize, y as usize);
                rows[x * w..(x + 1) * w]
                    .cmp(&rows[y * w..(y + 1) * w])
                    .then(times[x].cmp(&times[y]))
            });
        }
        let mut out = Updates::with_capacity(w, n);
        for &p in &perm {
            let p = p as usize;
            out.push(&upd.rows[p * w..(p + 1) * w], upd.times[p], upd.diffs[p]);
        }
        *upd = out;
    }
    // Sum runs of equal (row, time), in place.
    let mut write = 0usize;
    let mut i = 0usize;
    while i < n {
        let mut sum: i64 = upd.diffs[i];
        let mut j = i + 1;
        while j < n
            && upd.times[j] == upd.times[i]
            && upd.rows[j * w..(j + 1) * w] == upd.rows[i * w..(i + 1) * w]
        {
            sum = sum.checked_add(upd.diffs[j]).ok_or_else(|| {
                Error::Overflow(format!(
                    "diff overflow summing updates of row {:?} at time {:?}",
                    &upd.rows[i * w..(i + 1) * w],
                    upd.times[i]
                ))
            })?;
            j += 1;
        }
        if sum != 0 {
            if write != i {
                upd.rows.copy_within(i * w..(i + 1) * w, write * w);
                upd.times[write] = upd.times[i];
            }
            upd.diffs[write] = sum;
            write += 1;
        }
        i = j;
    }
    upd.rows.truncate(write * w);
    upd.times.truncate(write);
    upd.diffs.truncate(write);
    Ok(())
}

/// The worker that owns a key.
#[inline]
pub fn worker_of(key: &[u64], workers: usize) -> usize {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for &k in key {
        h = (h ^ k).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 31;
    }
    (h % workers as u64) as usize
}
