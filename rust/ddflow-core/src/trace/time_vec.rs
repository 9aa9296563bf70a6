//! A batch's per-update times, 8 bytes each while they fit.
//!
//! A [`Time`] is four `u64` coordinates (32 bytes). The times a trace holds are mostly an
//! outer time and at most one iteration, each below 2^32 (the BFS's `(epoch, iteration)`),
//! so [`TimeVec`] stores them as two `u32`s until a time that does not fit is pushed, and
//! from then on as full times. On the 1M/10M BFS the `min`'s input trace holds 3.5M updates
//! with distinct times: 111 MB of times at 32 bytes, written out whole by every merge of it.

use super::stored::Stored;
use crate::lattice::Time;

/// Times of a batch's updates, in update order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TimeVec {
    /// Every time has coordinates `[x, y, 0, 0]` with `x` and `y` below 2^32.
    Narrow(Stored<[u32; 2]>),
    /// Full times.
    Wide(Stored<Time>),
}

/// `t` as two `u32`s, if it fits.
#[inline]
fn narrow(t: &Time) -> Option<[u32; 2]> {
    let [x, y, z, w] = t.0;
    if z == 0 && w == 0 {
        if let (Ok(x), Ok(y)) = (u32::try_from(x), u32::try_from(y)) {
            return Some([x, y]);
        }
    }
    None
}

/// Two `u32`s as a time `[x, y, 0, 0]`.
#[inline]
pub(crate) fn wide(p: [u32; 2]) -> Time {
    Time([p[0] as u64, p[1] as u64, 0, 0])
}

impl TimeVec {
    /// An empty vector with room for `cap` narrow times.
    #[cfg(test)]
    pub(crate) fn with_capacity(cap: usize) -> Self {
        TimeVec::Narrow(Stored::with_capacity(cap))
    }

    /// Empty, with room for `cap` times, written through to a new file in `dir` if given.
    pub(crate) fn with_capacity_in(
        dir: Option<&std::sync::Arc<std::path::PathBuf>>,
        cap: usize,
    ) -> Self {
        TimeVec::Narrow(Stored::with_capacity_in(dir, cap))
    }

    /// An empty vector of `U`s with room for `cap`, stored as these times are.
    pub(crate) fn with_capacity_like<U: super::stored::Pod>(&self, cap: usize) -> Stored<U> {
        match self {
            TimeVec::Narrow(v) => v.with_capacity_like(cap),
            TimeVec::Wide(v) => v.with_capacity_like(cap),
        }
    }

    /// Number of times.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            TimeVec::Narrow(v) => v.len(),
            TimeVec::Wide(v) => v.len(),
        }
    }

    /// The `i`-th time.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Time {
        match self {
            TimeVec::Narrow(v) => wide(v[i]),
            TimeVec::Wide(v) => v[i],
        }
    }

    /// Switches to full times (keeping the capacity asked for so far).
    #[cold]
    fn widen(&mut self) {
        if let TimeVec::Narrow(v) = self {
            let mut w: Stored<Time> = v.with_capacity_like(v.capacity().max(v.len() + 1));
            w.extend(v.iter().map(|&p| wide(p)));
            *self = TimeVec::Wide(w);
        }
    }

    /// Appends `t`.
    #[inline]
    pub(crate) fn push(&mut self, t: Time) {
        if let TimeVec::Narrow(v) = self {
            if let Some(p) = narrow(&t) {
                v.push(p);
                return;
            }
            self.widen();
        }
        if let TimeVec::Wide(v) = self {
            v.push(t);
        }
    }

    /// Appends the time `[p[0], p[1], 0, 0]`.
    #[inline]
    pub(crate) fn push_pair(&mut self, p: [u32; 2]) {
        match self {
            TimeVec::Narrow(v) => v.push(p),
            TimeVec::Wide(v) => v.push(wide(p)),
        }
    }

    /// Appends `t` `n` times.
    pub(crate) fn push_n(&mut self, t: Time, n: usize) {
        if let TimeVec::Narrow(v) = self {
            if let Some(p) = narrow(&t) {
                v.extend(std::iter::repeat_n(p, n));
                return;
            }
            self.widen();
        }
        if let TimeVec::Wide(v) = self {
            v.extend(std::iter::repeat_n(t, n));
        }
    }

    /// Appends the times `range` of `other`, each mapped by `f`.
    pub(crate) fn extend_mapped(
        &mut self,
        other: &TimeVec,
        range: std::ops::Range<usize>,
        f: impl Fn(Time) -> Time,
    ) {
        for i in range {
            self.push(f(other.get(i)));
        }
    }

    /// Appends the times `range` of `other`, each joined with `m` (advanced by a frontier
    /// whose meet is `m`): pair by pair while both store pairs and `m` fits one.
    pub(crate) fn extend_joined(
        &mut self,
        other: &TimeVec,
        range: std::ops::Range<usize>,
        m: &Time,
    ) {
        use crate::lattice::Lattice;
        match (&mut *self, other, narrow(m)) {
            (TimeVec::Narrow(v), TimeVec::Narrow(o), Some([x, y])) => {
                v.extend(o[range].iter().map(|p| [p[0].max(x), p[1].max(y)]))
            }
            _ => self.extend_mapped(other, range, |t| t.join(m)),
        }
    }

    /// Appends the times `range` of `other` as they are.
    pub(crate) fn extend_from(&mut self, other: &TimeVec, range: std::ops::Range<usize>) {
        match (&mut *self, other) {
            (TimeVec::Narrow(v), TimeVec::Narrow(o)) => v.extend_from_slice(&o[range]),
            (TimeVec::Wide(v), TimeVec::Wide(o)) => v.extend_from_slice(&o[range]),
            _ => self.extend_mapped(other, range, |t| t),
        }
    }

    /// Moves time `from` to position `to` (`to <= from`).
    #[inline]
    pub(crate) fn move_back(&mut self, from: usize, to: usize) {
        match self {
            TimeVec::Narrow(v) => {
                let s = v.as_mut_slice();
                s[to] = s[from];
            }
            TimeVec::Wide(v) => {
                let s = v.as_mut_slice();
                s[to] = s[from];
            }
        }
    }

    /// Sets time `i` to `t` (which must fit the storage: narrow storage takes only times
    /// that were read from it).
    #[inline]
    pub(crate) fn set(&mut self, i: usize, t: Time) {
        match self {
            TimeVec::Narrow(v) => {
                v.as_mut_slice()[i] = narrow(&t).expect("a narrow time vector set to a wide time")
            }
            TimeVec::Wide(v) => v.as_mut_slice()[i] = t,
        }
    }

    /// Whether times `range` increase strictly.
    pub(crate) fn increasing(&self, range: std::ops::Range<usize>) -> bool {
        match self {
            TimeVec::Narrow(v) => v[range].windows(2).all(|w| w[0] < w[1]),
            TimeVec::Wide(v) => v[range].windows(2).all(|w| w[0] < w[1]),
        }
    }

    /// Keeps the first `n` times.
    pub(crate) fn truncate(&mut self, n: usize) {
        match self {
            TimeVec::Narrow(v) => v.truncate(n),
            TimeVec::Wide(v) => v.truncate(n),
        }
    }

    /// Releases spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        match self {
            TimeVec::Narrow(v) => v.shrink_to_fit(),
            TimeVec::Wide(v) => v.shrink_to_fit(),
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            TimeVec::Narrow(v) => v.capacity() * std::mem::size_of::<[u32; 2]>(),
            TimeVec::Wide(v) => v.capacity() * std::mem::size_of::<Time>(),
        }
    }
}

#[cfg(test)]
#[path = "time_vec_tests.rs"]
mod tests;
