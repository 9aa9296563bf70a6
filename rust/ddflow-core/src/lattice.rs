//! Logical times and frontiers.
//!
//! A [`Time`] is an element of a product lattice of non-negative integers with at most
//! [`MAX_DIMS`] coordinates. A dataflow's outer time uses the first `outer_dims` coordinates
//! (1 for plain integer times, `k` for `k`-tuples); each nested `iterate` scope appends one
//! coordinate (its iteration counter). Unused trailing coordinates are always zero, which
//! lets every lattice operation work on the whole array regardless of the context's depth:
//! zeros compare equal, and `max`/`min` of zeros are zero.
//!
//! * partial order: `a <= b` iff every coordinate of `a` is `<=` the same coordinate of `b`;
//! * `join` (least upper bound) is the coordinate-wise max, `meet` the coordinate-wise min;
//! * the derived `Ord` is lexicographic, a total order that extends the partial order, used
//!   for sorting updates.
//!
//! [`Antichain`] holds the minimal elements of a set of times and represents a frontier:
//! `frontier.less_equal(t)` means "t is in the future of the frontier".
//! [`MutableAntichain`] keeps counts per time and reports how its frontier changes.

use smallvec::{smallvec, SmallVec};
use std::fmt;

/// Maximum number of coordinates of a time: outer dimensions plus iterate nesting depth.
pub const MAX_DIMS: usize = 4;

/// A partially ordered type.
pub trait PartialOrder: Eq {
    /// `self <= other` in the partial order.
    fn less_equal(&self, other: &Self) -> bool;
    /// `self < other` in the partial order.
    fn less_than(&self, other: &Self) -> bool {
        self != other && self.less_equal(other)
    }
}

/// A lattice: a partial order with least upper and greatest lower bounds.
pub trait Lattice: PartialOrder + Sized + Clone {
    /// Least upper bound.
    fn join(&self, other: &Self) -> Self;
    /// Greatest lower bound.
    fn meet(&self, other: &Self) -> Self;

    /// Advances `self` by a frontier: the meet over `f` in `frontier` of `join(self, f)`.
    ///
    /// Once no future time is below `frontier`, every time may be replaced by its advanced
    /// version without changing any accumulation at times in the future of `frontier`.
    /// An empty frontier leaves the time unchanged.
    fn advance_by(&self, frontier: &[Self]) -> Self {
        let mut iter = frontier.iter();
        match iter.next() {
            None => self.clone(),
            Some(first) => {
                let mut result = self.join(first);
                for f in iter {
                    result = result.meet(&self.join(f));
                }
                result
            }
        }
    }
}

impl PartialOrder for u64 {
    fn less_equal(&self, other: &Self) -> bool {
        self <= other
    }
}

impl Lattice for u64 {
    fn join(&self, other: &Self) -> Self {
        *self.max(other)
    }
    fn meet(&self, other: &Self) -> Self {
        *self.min(other)
    }
}

/// A product time with up to [`MAX_DIMS`] non-negative coordinates (trailing unused ones zero).
///
/// # Examples
/// ```
/// use ddflow_core::lattice::{Lattice, PartialOrder, Time};
/// let a = Time::from_coords(&[1, 0]);
/// let b = Time::from_coords(&[0, 1]);
/// assert!(!a.less_equal(&b) && !b.less_equal(&a));
/// assert_eq!(a.join(&b), Time::from_coords(&[1, 1]));
/// assert_eq!(a.meet(&b), Time::minimum());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Time(pub [u64; MAX_DIMS]);

impl Time {
    /// The least time (all coordinates zero).
    #[inline]
    pub const fn minimum() -> Self {
        Time([0; MAX_DIMS])
    }

    /// A time from its leading coordinates; panics if more than [`MAX_DIMS`] are given.
    pub fn from_coords(coords: &[u64]) -> Self {
        assert!(
            coords.len() <= MAX_DIMS,
            "at most {MAX_DIMS} time coordinates"
        );
        let mut c = [0; MAX_DIMS];
        c[..coords.len()].copy_from_slice(coords);
        Time(c)
    }

    /// A one-dimensional time.
    #[inline]
    pub const fn scalar(t: u64) -> Self {
        Time([t, 0, 0, 0])
    }

    /// Coordinate `i`.
    #[inline]
    pub fn coord(&self, i: usize) -> u64 {
        self.0[i]
    }

    /// The leading `dims` coordinates.
    pub fn coords(&self, dims: usize) -> &[u64] {
        &self.0[..dims]
    }

    /// This time with coordinate `i` replaced.
    #[inline]
    pub fn with_coord(mut self, i: usize, v: u64) -> Self {
        self.0[i] = v;
        self
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut n = MAX_DIMS;
        while n > 1 && self.0[n - 1] == 0 {
            n -= 1;
        }
        write!(f, "(")?;
        for (i, c) in self.0[..n].iter().enumerate() {
            if i > 0 {
                write!(f, ",")?;
            }
            write!(f, "{c}")?;
        }
        write!(f, ")")
    }
}

impl PartialOrder for Time {
    #[inline]
    fn less_equal(&self, other: &Self) -> bool {
        self.0[0] <= other.0[0]
            && self.0[1] <= other.0[1]
            && self.0[2] <= other.0[2]
            && self.0[3] <= other.0[3]
    }
}

impl Lattice for Time {
    #[inline]
    fn join(&self, other: &Self) -> Self {
        Time([
            self.0[0].max(other.0[0]),
            self.0[1].max(other.0[1]),
            self.0[2].max(other.0[2]),
            self.0[3].max(other.0[3]),
        ])
    }
    #[inline]
    fn meet(&self, other: &Self) -> Self {
        Time([
            self.0[0].min(other.0[0]),
            self.0[1].min(other.0[1]),
            self.0[2].min(other.0[2]),
            self.0[3].min(other.0[3]),
        ])
    }
}

/// The minimal elements of a set of times: a frontier.
///
/// Most frontiers hold one time (every frontier of a dataflow with totally ordered times),
/// so one element is stored inline: a scheduling pass builds and drops several antichains
/// per node, which then never touch the allocator.
///
/// Two antichains are equal when they hold the same elements, in any order (an antichain
/// has no duplicates): frontiers built from the same pointstamps in a different order
/// compare equal, so a scheduler never mistakes them for a move.
#[derive(Clone, Default)]
pub struct Antichain<T> {
    elements: SmallVec<[T; 1]>,
}

impl<T: PartialEq> PartialEq for Antichain<T> {
    fn eq(&self, other: &Self) -> bool {
        self.elements.len() == other.elements.len()
            && self.elements.iter().all(|e| other.elements.contains(e))
    }
}

impl<T: Eq> Eq for Antichain<T> {}

impl<T: std::hash::Hash> std::hash::Hash for Antichain<T> {
    /// Independent of the elements' order, as equality is.
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut sum = 0u64;
        for e in &self.elements {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            e.hash(&mut h);
            sum = sum.wrapping_add(std::hash::Hasher::finish(&h));
        }
        state.write_usize(self.elements.len());
        state.write_u64(sum);
    }
}

impl<T: fmt::Debug> fmt::Debug for Antichain<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.elements.iter()).finish()
    }
}

impl<T: PartialOrder + Clone> Antichain<T> {
    /// The empty antichain (the frontier after which nothing can happen).
    pub fn new() -> Self {
        Antichain {
            elements: SmallVec::new(),
        }
    }

    /// An antichain with one element.
    pub fn from_elem(t: T) -> Self {
        Antichain {
            elements: smallvec![t],
        }
    }

    /// The minimal elements of `iter`.
    pub fn from_iter_minimal<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut a = Antichain::new();
        for t in iter {
            a.insert(t);
        }
        a
    }

    /// Inserts `t` unless some element is `<= t`; removes elements `t` is `<=`.
    /// Returns whether `t` was added.
    pub fn insert(&mut self, t: T) -> bool {
        if self.elements.iter().any(|e| e.less_equal(&t)) {
            return false;
        }
        self.elements.retain(|e| !t.less_equal(e));
        self.elements.push(t);
        true
    }

    /// Like [`Antichain::insert`], cloning `t` only when it is added (cheap rejection of
    /// times already in the future of the antichain).
    pub fn insert_ref(&mut self, t: &T) -> bool {
        if self.elements.iter().any(|e| e.less_equal(t)) {
            return false;
        }
        self.elements.retain(|e| !t.less_equal(e));
        self.elements.push(t.clone());
        true
    }

    /// Whether `t` is in the future of this frontier (some element is `<= t`).
    pub fn less_equal(&self, t: &T) -> bool {
        self.elements.iter().any(|e| e.less_equal(t))
    }

    /// Whether `t` is strictly in the future of this frontier.
    pub fn less_than(&self, t: &T) -> bool {
        self.elements.iter().any(|e| e.less_than(t))
    }

    /// Whether every element of `other` is in the future of `self`.
    pub fn dominates(&self, other: &Antichain<T>) -> bool {
        other.elements.iter().all(|t| self.less_equal(t))
    }

    /// The elements.
    pub fn elements(&self) -> &[T] {
        &self.elements
    }

    /// Whether the antichain is empty.
    pub fn is_empty(&self) -> bool {
        self.elements.is_empty()
    }

    /// Removes all elements.
    pub fn clear(&mut self) {
        self.elements.clear();
    }
}

impl<T: Lattice> Antichain<T> {
    /// The meet of two frontiers: the minimal elements of their union.
    pub fn meet(&self, other: &Antichain<T>) -> Antichain<T> {
        let mut result = self.clone();
        for t in other.elements.iter() {
            result.insert(t.clone());
        }
        result
    }
}

impl<T: Ord> Antichain<T> {
    /// Sorts elements (canonical form for comparisons and printing).
    pub fn sort(&mut self) {
        self.elements.sort();
    }
}

/// A multiset of times with counts, whose frontier is the antichain of minimal times with
/// positive count. Used to track capabilities and in-flight updates.
#[derive(Clone, Debug, Default)]
pub struct MutableAntichain<T> {
    counts: Vec<(T, i64)>,
    frontier: Antichain<T>,
}

impl<T: PartialOrder + Ord + Clone> MutableAntichain<T> {
    /// An empty multiset.
    pub fn new() -> Self {
        MutableAntichain {
            counts: Vec::new(),
            frontier: Antichain::new(),
        }
    }

    /// The current frontier.
    pub fn frontier(&self) -> &Antichain<T> {
        &self.frontier
    }

    /// Applies count changes; returns the frontier changes as `(time, +1)` for times that
    /// entered and `(time, -1)` for times that left the frontier.
    pub fn update_iter<I: IntoIterator<Item = (T, i64)>>(&mut self, updates: I) -> Vec<(T, i64)> {
        for (t, d) in updates {
            match self.counts.iter_mut().find(|(x, _)| *x == t) {
                Some(entry) => entry.1 += d,
                None => self.counts.push((t, d)),
            }
        }
        self.counts.retain(|(_, c)| *c != 0);
        debug_assert!(
            self.counts.iter().all(|(_, c)| *c > 0),
            "negative capability count"
        );
        let mut next = Antichain::new();
        for (t, _) in self.counts.iter() {
            next.insert(t.clone());
        }
        let mut changes = Vec::new();
        for t in self.frontier.elements.iter() {
            if !next.elements.contains(t) {
                changes.push((t.clone(), -1));
            }
        }
        for t in next.elements.iter() {
            if !self.frontier.elements.contains(t) {
                changes.push((t.clone(), 1));
            }
        }
        self.frontier = next;
        changes
    }

    /// Whether no time has a positive count.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn time2() -> impl Strategy<Value = Time> {
        (0u64..6, 0u64..6).prop_map(|(a, b)| Time::from_coords(&[a, b]))
    }

    proptest! {
        #[test]
        fn antichain_equality_ignores_insertion_order(ts in proptest::collection::vec(time2(), 0..8)) {
            let a = Antichain::from_iter_minimal(ts.iter().copied());
            let b = Antichain::from_iter_minimal(ts.iter().rev().copied());
            // The same minimal elements, as a reference computes them.
            let minimal: std::collections::BTreeSet<Time> = ts
                .iter()
                .filter(|t| !ts.iter().any(|u| u.less_than(t)))
                .copied()
                .collect();
            let elems: std::collections::BTreeSet<Time> = a.elements().iter().copied().collect();
            prop_assert_eq!(&elems, &minimal);
            prop_assert_eq!(&a, &b);
            let hash = |x: &Antichain<Time>| {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                x.hash(&mut h);
                h.finish()
            };
            prop_assert_eq!(hash(&a), hash(&b));
            if let Some(extra) = ts.first().map(|t| Time::from_coords(&[t.0[0] + 10, 0])) {
                let mut c = a.clone();
                if c.insert(extra) {
                    prop_assert_ne!(&a, &c);
                }
            }
        }

        #[test]
        fn join_meet_are_bounds(a in time2(), b in time2(), c in time2()) {
            let j = a.join(&b);
            let m = a.meet(&b);
            prop_assert!(a.less_equal(&j) && b.less_equal(&j));
            prop_assert!(m.less_equal(&a) && m.less_equal(&b));
            if a.less_equal(&c) && b.less_equal(&c) { prop_assert!(j.less_equal(&c)); }
            if c.less_equal(&a) && c.less_equal(&b) { prop_assert!(c.less_equal(&m)); }
            // Lexicographic order extends the partial order.
            if a.less_equal(&b) { prop_assert!(a <= b); }
        }

        #[test]
        fn advance_by_preserves_comparisons_with_future(t in time2(), f in proptest::collection::vec(time2(), 1..3), s in time2()) {
            let frontier = Antichain::from_iter_minimal(f);
            let adv = t.advance_by(frontier.elements());
            prop_assert!(t.less_equal(&adv));
            if frontier.less_equal(&s) {
                prop_assert_eq!(t.less_equal(&s), adv.less_equal(&s));
            }
        }

        #[test]
        fn antichain_keeps_minimal_elements(ts in proptest::collection::vec(time2(), 0..10), probe in time2()) {
            let a = Antichain::from_iter_minimal(ts.clone());
            let naive = ts.iter().any(|t| t.less_equal(&probe));
            prop_assert_eq!(a.less_equal(&probe), naive);
            for x in a.elements() { for y in a.elements() { if x != y { prop_assert!(!x.less_equal(y)); } } }
        }
    }

    #[test]
    fn mutable_antichain_reports_changes() {
        let mut m = MutableAntichain::new();
        let c = m.update_iter([(Time::scalar(3), 1), (Time::scalar(5), 1)]);
        assert_eq!(c, vec![(Time::scalar(3), 1)]);
        let c = m.update_iter([(Time::scalar(3), -1)]);
        assert_eq!(c, vec![(Time::scalar(3), -1), (Time::scalar(5), 1)]);
        let c = m.update_iter([(Time::scalar(5), -1)]);
        assert_eq!(c, vec![(Time::scalar(5), -1)]);
        assert!(m.frontier().is_empty());
    }

    #[test]
    fn advance_by_example() {
        // Times (1,0) and (0,1) advanced to frontier {(2,0)} both become (2,*).
        let f = [Time::from_coords(&[2, 0])];
        assert_eq!(
            Time::from_coords(&[1, 3]).advance_by(&f),
            Time::from_coords(&[2, 3])
        );
        assert_eq!(
            Time::from_coords(&[1, 0]).advance_by(&f),
            Time::from_coords(&[2, 0])
        );
    }
}
