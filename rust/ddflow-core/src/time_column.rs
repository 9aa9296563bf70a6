//! The times column of [`Updates`](crate::updates::Updates): one [`Time`] per update, held as
//! one time and a count while every update has the same time.
//!
//! A load at one time, and every message the loop derives from it during that load (the
//! updates of one iteration share their time), would otherwise carry a 32-byte time per
//! update: 320 MB of the 534 MB that 10M two-column updates took. Pushing a time equal to
//! the held one only counts it; the first different time writes the column out (after that
//! it stays a vector, also when cleared, so reused scratch keeps its allocation).
//!
//! Reading by index, iterating, `first`/`last` and `len` never write the column out. A slice
//! of it (`Deref` to `[Time]`, e.g. `&times[a..b]`) does, once, into a cache kept with the
//! column and kept in step with it while it grows or shrinks at its one time (so a column
//! sliced after each push costs what a vector would, not a write-out per slice: a key's
//! histories appended one after another and sliced each time were quadratic); mutable access (`DerefMut`, [`make_mut`](TimeColumn::make_mut)) turns it into a
//! vector for good.

use crate::lattice::Time;
use std::ops::{Deref, DerefMut, Index, IndexMut};
use std::sync::OnceLock;

/// One time per update (see the module docs).
pub struct TimeColumn {
    repr: Repr,
}

enum Repr {
    /// `len` updates at `time`; `slice`: the times written out, made on first slice access;
    /// `room`: the times a write-out makes room for at least (see
    /// [`with_capacity`](TimeColumn::with_capacity)).
    Same {
        time: Time,
        len: usize,
        slice: OnceLock<Vec<Time>>,
        room: usize,
    },
    Each(Vec<Time>),
}

impl TimeColumn {
    /// An empty column.
    pub const fn new() -> Self {
        TimeColumn::with_capacity(0)
    }

    /// An empty column that, once written out, has room for `n` times. Nothing is
    /// allocated while every time is the same; the first different time writes the column
    /// out into a vector of that room at once, where it would otherwise grow by doubling
    /// (a reallocation and a copy of 32 bytes per time held, each time it fills). A caller
    /// that knows how many times it will push (a copy, a sort, an operator's output from
    /// its input) says so here.
    pub const fn with_capacity(n: usize) -> Self {
        TimeColumn {
            repr: Repr::Same {
                time: Time::minimum(),
                len: 0,
                slice: OnceLock::new(),
                room: n,
            },
        }
    }

    /// `n` updates at `time`.
    pub fn repeat(time: Time, n: usize) -> Self {
        TimeColumn {
            repr: Repr::Same {
                time,
                len: n,
                slice: OnceLock::new(),
                room: 0,
            },
        }
    }

    /// Number of times.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Same { len, .. } => *len,
            Repr::Each(v) => v.len(),
        }
    }

    /// Whether the column is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The one time of every update, when the column is held as one time (and not empty).
    #[inline]
    pub fn same(&self) -> Option<&Time> {
        match &self.repr {
            Repr::Same { time, len, .. } if *len > 0 => Some(time),
            _ => None,
        }
    }

    /// The time of update `i`.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&Time> {
        match &self.repr {
            Repr::Same { time, len, .. } => (i < *len).then_some(time),
            Repr::Each(v) => v.get(i),
        }
    }

    /// The first time.
    #[inline]
    pub fn first(&self) -> Option<&Time> {
        self.get(0)
    }

    /// The last time.
    #[inline]
    pub fn last(&self) -> Option<&Time> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    /// The times in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        match &self.repr {
            Repr::Same { time, len, .. } => Iter::Same(time, *len),
            Repr::Each(v) => Iter::Each(v.iter()),
        }
    }

    /// The times of updates `r` in order (a range of a column held as one time is not
    /// written out, as slicing it would be).
    #[inline]
    pub fn range_iter(&self, r: std::ops::Range<usize>) -> Iter<'_> {
        match &self.repr {
            Repr::Same { time, len, .. } => {
                assert!(r.start <= r.end && r.end <= *len, "times {r:?} of {len}");
                Iter::Same(time, r.end - r.start)
            }
            Repr::Each(v) => Iter::Each(v[r].iter()),
        }
    }

    /// Appends the times of updates `r` of `other`.
    pub fn extend_range(&mut self, other: &TimeColumn, r: std::ops::Range<usize>) {
        if let Repr::Each(v) = &mut self.repr {
            return v.extend(other.range_iter(r));
        }
        self.reserve(r.len());
        for &t in other.range_iter(r) {
            self.push(t);
        }
    }

    /// Appends one time.
    #[inline]
    pub fn push(&mut self, t: Time) {
        match &mut self.repr {
            Repr::Each(v) => return v.push(t),
            Repr::Same {
                time, len, slice, ..
            } if *len == 0 || *time == t => {
                if *len == 0 {
                    slice.take();
                }
                *time = t;
                *len += 1;
                // A written-out cache grows with the column, as a vector would: a column
                // sliced while it grows is never written out again from the start.
                if let Some(v) = slice.get_mut() {
                    v.push(t);
                }
                return;
            }
            Repr::Same { .. } => {}
        }
        let len = self.len();
        self.write_out(len.max(4)).push(t);
    }

    /// Appends the times of `other`.
    pub fn extend(&mut self, other: &TimeColumn) {
        if other.is_empty() {
            return;
        }
        if let (
            Repr::Same {
                time, len, slice, ..
            },
            Some(t),
        ) = (&mut self.repr, other.same())
        {
            if *len == 0 || time == t {
                if *len == 0 {
                    slice.take();
                }
                *time = *t;
                *len += other.len();
                if let Some(v) = slice.get_mut() {
                    v.resize(*len, *t);
                }
                return;
            }
        }
        self.write_out(other.len()).extend(other.iter());
    }

    /// Appends the times of a slice.
    pub fn extend_from_slice(&mut self, ts: &[Time]) {
        if let Repr::Each(v) = &mut self.repr {
            return v.extend_from_slice(ts);
        }
        self.reserve(ts.len());
        for &t in ts {
            self.push(t);
        }
    }

    /// Keeps the first `n` times.
    pub fn truncate(&mut self, n: usize) {
        match &mut self.repr {
            Repr::Same { len, slice, .. } => {
                if n < *len {
                    *len = n;
                    if let Some(v) = slice.get_mut() {
                        v.truncate(n);
                    }
                }
            }
            Repr::Each(v) => v.truncate(n),
        }
    }

    /// Removes every time (a vector keeps its allocation).
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Room for `n` more times: reserved in a column already written out, else made when
    /// (if ever) it is written out (see [`with_capacity`](Self::with_capacity)).
    pub fn reserve(&mut self, n: usize) {
        match &mut self.repr {
            Repr::Each(v) => v.reserve(n),
            Repr::Same { len, room, .. } => *room = (*room).max(*len + n),
        }
    }

    /// Gives back the room past the times held (of a column written out; one held as one
    /// time forgets the room it would make).
    pub fn shrink_to_fit(&mut self) {
        match &mut self.repr {
            Repr::Each(v) => v.shrink_to_fit(),
            Repr::Same { room, .. } => *room = 0,
        }
    }

    /// Times the column has room for in memory (the count for one time, without a cache).
    pub fn capacity(&self) -> usize {
        match &self.repr {
            Repr::Same { slice, .. } => slice.get().map_or(1, |v| v.capacity()),
            Repr::Each(v) => v.capacity(),
        }
    }

    /// The column as a vector, for changing it in place (written out if it was one time).
    pub fn make_mut(&mut self) -> &mut Vec<Time> {
        self.write_out(0)
    }

    /// [`make_mut`](Self::make_mut), with room for `extra` more times.
    fn write_out(&mut self, extra: usize) -> &mut Vec<Time> {
        if let Repr::Same {
            time,
            len,
            slice,
            room,
        } = &mut self.repr
        {
            let extra = extra.max(room.saturating_sub(*len));
            let mut v = slice.take().unwrap_or_default();
            if v.len() == *len {
                v.reserve(extra);
            } else {
                v = Vec::with_capacity(*len + extra);
                v.resize(*len, *time);
            }
            self.repr = Repr::Each(v);
        }
        match &mut self.repr {
            Repr::Each(v) => v,
            Repr::Same { .. } => unreachable!("written out above"),
        }
    }

    /// The times as a vector.
    pub fn into_vec(self) -> Vec<Time> {
        match self.repr {
            Repr::Same {
                time,
                len,
                mut slice,
                ..
            } => slice.take().unwrap_or_else(|| vec![time; len]),
            Repr::Each(v) => v,
        }
    }

    /// Applies `f` to every time; `f` must depend on the time alone (a column held as one
    /// time applies it once).
    pub fn map_each(&mut self, mut f: impl FnMut(&mut Time)) {
        match &mut self.repr {
            Repr::Same { time, slice, .. } => {
                f(time);
                slice.take();
            }
            Repr::Each(v) => v.iter_mut().for_each(f),
        }
    }
}

impl Default for TimeColumn {
    fn default() -> Self {
        TimeColumn::new()
    }
}

impl Clone for TimeColumn {
    fn clone(&self) -> Self {
        match &self.repr {
            Repr::Same { time, len, .. } => TimeColumn::repeat(*time, *len),
            Repr::Each(v) => TimeColumn {
                repr: Repr::Each(v.clone()),
            },
        }
    }
}

impl From<Vec<Time>> for TimeColumn {
    fn from(v: Vec<Time>) -> Self {
        TimeColumn {
            repr: Repr::Each(v),
        }
    }
}

impl FromIterator<Time> for TimeColumn {
    fn from_iter<I: IntoIterator<Item = Time>>(iter: I) -> Self {
        let mut c = TimeColumn::new();
        iter.into_iter().for_each(|t| c.push(t));
        c
    }
}

impl PartialEq for TimeColumn {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for TimeColumn {}

impl PartialEq<Vec<Time>> for TimeColumn {
    fn eq(&self, other: &Vec<Time>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for TimeColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Index<usize> for TimeColumn {
    type Output = Time;

    #[inline]
    fn index(&self, i: usize) -> &Time {
        match &self.repr {
            Repr::Same { time, len, .. } => {
                assert!(i < *len, "time {i} of a column of {len}");
                time
            }
            Repr::Each(v) => &v[i],
        }
    }
}

impl IndexMut<usize> for TimeColumn {
    /// Writes the column out (see [`make_mut`](TimeColumn::make_mut)).
    fn index_mut(&mut self, i: usize) -> &mut Time {
        &mut self.make_mut()[i]
    }
}

/// Ranges of the column: a slice (written out once into the cache, see the module docs).
macro_rules! range_index {
    ($($r:ty),*) => {$(
        impl Index<$r> for TimeColumn {
            type Output = [Time];

            fn index(&self, r: $r) -> &[Time] {
                &self.deref()[r]
            }
        }

        impl IndexMut<$r> for TimeColumn {
            fn index_mut(&mut self, r: $r) -> &mut [Time] {
                &mut self.make_mut()[r]
            }
        }
    )*};
}

range_index!(
    std::ops::Range<usize>,
    std::ops::RangeFrom<usize>,
    std::ops::RangeTo<usize>,
    std::ops::RangeFull,
    std::ops::RangeInclusive<usize>
);

impl Deref for TimeColumn {
    type Target = [Time];

    fn deref(&self) -> &[Time] {
        match &self.repr {
            Repr::Same {
                time, len, slice, ..
            } => slice.get_or_init(|| vec![*time; *len]),
            Repr::Each(v) => v,
        }
    }
}

impl DerefMut for TimeColumn {
    fn deref_mut(&mut self) -> &mut [Time] {
        self.make_mut()
    }
}

impl<'a> IntoIterator for &'a TimeColumn {
    type Item = &'a Time;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The times of a [`TimeColumn`] in order.
#[derive(Clone)]
pub enum Iter<'a> {
    /// One time, this many more times.
    Same(&'a Time, usize),
    /// The written-out times.
    Each(std::slice::Iter<'a, Time>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Time;

    #[inline]
    fn next(&mut self) -> Option<&'a Time> {
        match self {
            Iter::Same(t, n) => {
                if *n == 0 {
                    return None;
                }
                *n -= 1;
                Some(*t)
            }
            Iter::Each(it) => it.next(),
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match self {
            Iter::Same(_, n) => *n,
            Iter::Each(it) => it.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Same(..) => self.next(),
            Iter::Each(it) => it.next_back(),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The column against a plain vector of the same times, through random operations.

    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Push(u64),
        Extend(Vec<u64>, bool),
        Truncate(usize),
        Clear,
        Slice,
        MapEach,
        MakeMut,
        Reserve(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u64..3).prop_map(Op::Push),
            2 => (prop::collection::vec(0u64..3, 0..6), any::<bool>())
                .prop_map(|(v, c)| Op::Extend(v, c)),
            1 => (0usize..8).prop_map(Op::Truncate),
            1 => Just(Op::Clear),
            1 => Just(Op::Slice),
            1 => Just(Op::MapEach),
            1 => Just(Op::MakeMut),
            1 => (0usize..20).prop_map(Op::Reserve),
        ]
    }

    proptest! {
        #[test]
        fn column_equals_a_vector(room in 0usize..20, ops in prop::collection::vec(op(), 0..60)) {
            let mut c = TimeColumn::with_capacity(room);
            let mut v: Vec<Time> = Vec::new();
            for op in ops {
                match op {
                    Op::Push(t) => {
                        c.push(Time::scalar(t));
                        v.push(Time::scalar(t));
                    }
                    Op::Extend(ts, as_column) => {
                        let ts: Vec<Time> = ts.into_iter().map(Time::scalar).collect();
                        if as_column {
                            let other: TimeColumn = ts.iter().copied().collect();
                            c.extend(&other);
                        } else {
                            c.extend_from_slice(&ts);
                        }
                        v.extend_from_slice(&ts);
                    }
                    Op::Truncate(n) => {
                        c.truncate(n);
                        v.truncate(n);
                    }
                    Op::Clear => {
                        c.clear();
                        v.clear();
                    }
                    Op::Slice => prop_assert_eq!(&c[..], &v[..]),
                    Op::MapEach => {
                        c.map_each(|t| t.0[0] += 1);
                        v.iter_mut().for_each(|t| t.0[0] += 1);
                    }
                    Op::MakeMut => prop_assert_eq!(c.make_mut(), &v),
                    Op::Reserve(n) => c.reserve(n),
                }
                prop_assert_eq!(c.len(), v.len());
                prop_assert_eq!(&c, &v);
                for (i, t) in v.iter().enumerate() {
                    prop_assert_eq!(&c[i], t);
                    prop_assert_eq!(c.get(i), Some(t));
                }
                prop_assert_eq!(c.first(), v.first());
                prop_assert_eq!(c.last(), v.last());
                prop_assert_eq!(c.iter().rev().collect::<Vec<_>>(), v.iter().rev().collect::<Vec<_>>());
                prop_assert_eq!(c.clone().into_vec(), v.clone());
                let (a, b) = (v.len() / 3, v.len() - v.len() / 4);
                prop_assert_eq!(c.range_iter(a..b).collect::<Vec<_>>(), v[a..b].iter().collect::<Vec<_>>());
                let mut d = TimeColumn::new();
                d.extend_range(&c, a..b);
                prop_assert_eq!(&d, &v[a..b].to_vec());
                if let Some(t) = c.same() {
                    prop_assert!(v.iter().all(|x| x == t));
                }
            }
        }
    }

    #[test]
    fn a_sliced_column_keeps_its_written_out_times_in_step() {
        let mut c = TimeColumn::new();
        c.push(Time::scalar(7));
        assert_eq!(c[..].len(), 1);
        for n in 2..=1000 {
            c.push(Time::scalar(7));
            assert_eq!(c[..].len(), n);
        }
        // Grown by pushes, not written out again (a write-out has exactly the length).
        assert!(c.capacity() > c.len());
        c.truncate(10);
        assert_eq!(&c[..], &vec![Time::scalar(7); 10][..]);
        c.extend(&TimeColumn::repeat(Time::scalar(7), 5));
        assert_eq!(&c[..], &vec![Time::scalar(7); 15][..]);
        assert_eq!(c.same(), Some(&Time::scalar(7)));
        c.clear();
        c.push(Time::scalar(3));
        assert_eq!(&c[..], &[Time::scalar(3)][..]);
    }

    #[test]
    fn a_write_out_makes_the_announced_room() {
        let mut c = TimeColumn::with_capacity(1000);
        c.push(Time::scalar(7));
        c.push(Time::scalar(7));
        assert_eq!(
            c.capacity(),
            1,
            "nothing allocated while the times are equal"
        );
        c.push(Time::scalar(8));
        assert!(c.capacity() >= 1000);
        let before = c.capacity();
        for t in 0..997 {
            c.push(Time::scalar(t));
        }
        assert_eq!(c.capacity(), before, "no regrowth up to the announced room");
        // Room asked for later by `reserve`, `extend_range` and `extend_from_slice` too.
        let mut d = TimeColumn::new();
        d.reserve(500);
        d.extend_from_slice(&[Time::scalar(1), Time::scalar(2)]);
        assert!(d.capacity() >= 500);
        let mut e = TimeColumn::new();
        e.extend_range(&c, 0..600);
        assert!(e.capacity() >= 600);
        assert_eq!(
            e.iter().collect::<Vec<_>>(),
            c.range_iter(0..600).collect::<Vec<_>>()
        );
    }

    #[test]
    fn one_time_is_not_written_out() {
        let mut c = TimeColumn::new();
        for _ in 0..1000 {
            c.push(Time::scalar(7));
        }
        assert_eq!(c.same(), Some(&Time::scalar(7)));
        assert_eq!(c.capacity(), 1);
        c.push(Time::scalar(8));
        assert_eq!(c.same(), None);
        assert_eq!(c.len(), 1001);
    }
}
