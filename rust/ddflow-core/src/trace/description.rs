//! Batch descriptions: the interval of times a batch covers and its compaction frontier.
//!
//! A batch described by `lower`, `upper` and `since` holds exactly the updates of its
//! collection whose (original) times `t` satisfy `lower <= t` and not `upper <= t`; those
//! times may since have been advanced by the frontier `since`, so they are only meaningful
//! when compared with times in the future of `since`.

use crate::lattice::{Antichain, Time, MAX_DIMS};

/// The interval of times a batch covers, and the frontier its times were advanced by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Description {
    /// Lower frontier of the contained updates' original times.
    pub lower: Antichain<Time>,
    /// Upper frontier (exclusive) of the contained updates' original times.
    pub upper: Antichain<Time>,
    /// Frontier the times were advanced by (the least time if never compacted).
    pub since: Antichain<Time>,
}

impl Description {
    /// A description from its three frontiers.
    pub fn new(lower: Antichain<Time>, upper: Antichain<Time>, since: Antichain<Time>) -> Self {
        Description {
            lower,
            upper,
            since,
        }
    }

    /// The interval `[lower, upper)` of single times, never compacted (`since` = least time).
    pub fn interval(lower: Time, upper: Time) -> Self {
        Description::new(
            Antichain::from_elem(lower),
            Antichain::from_elem(upper),
            Antichain::from_elem(Time::minimum()),
        )
    }

    /// The one-dimensional interval `[lower, upper)`.
    pub fn scalar(lower: u64, upper: u64) -> Self {
        Description::interval(Time::scalar(lower), Time::scalar(upper))
    }

    /// The description of data at the least time only: `lower` = {least time}, `upper` =
    /// the unit vectors (every time except the least one is in its future).
    pub fn least_time() -> Self {
        Description::least_time_in(MAX_DIMS)
    }

    /// As [`Description::least_time`], for times of `dims` coordinates: the upper holds the
    /// unit time of each of the first `dims` coordinates.
    pub fn least_time_in(dims: usize) -> Self {
        let mut upper = Antichain::new();
        for i in 0..dims.min(MAX_DIMS) {
            upper.insert(Time::minimum().with_coord(i, 1));
        }
        Description::new(
            Antichain::from_elem(Time::minimum()),
            upper,
            Antichain::from_elem(Time::minimum()),
        )
    }

    /// The empty interval at the least time (`lower == upper == since` = {least time}).
    pub fn empty() -> Self {
        let m = Antichain::from_elem(Time::minimum());
        Description::new(m.clone(), m.clone(), m)
    }
}

impl Default for Description {
    fn default() -> Self {
        Description::empty()
    }
}
