//! A fork-join over a few items (the workers of a parallel activation) where the calling
//! thread takes over every item no other thread has started yet.
//!
//! Rayon's `join` and `par_iter` wait for a job another thread has stolen even when that
//! thread was descheduled before it began: on a machine with more runnable threads than
//! cores, the caller then sleeps through the whole of the other half. Here the items are
//! claimed one at a time from a shared counter, by the caller and by one helper job per
//! extra item spawned into the pool; the caller waits only for items a helper has claimed,
//! and a helper that runs after the caller took everything finds nothing left and returns.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The counters the caller and the helpers share; the helpers hold them past the call.
struct Claims {
    /// The next item to claim (items at or past the count are none).
    next: AtomicUsize,
    /// Items finished, by whichever thread claimed them.
    finished: AtomicUsize,
    /// An item's closure panicked in a helper.
    panicked: AtomicBool,
}

/// The item closure, its lifetime erased so that a `'static` helper job can hold it. A
/// helper dereferences it only after claiming an item below the count, and [`map`] does not
/// return before every claimed item has finished, so the closure outlives every use.
#[derive(Clone, Copy)]
struct Task(*const (dyn Fn(usize) + Sync));

// SAFETY: the pointee is `Sync` and is only called while `map` keeps it alive (see `Task`).
unsafe impl Send for Task {}

/// Claims and runs items until none is left; returns whether any panicked here.
fn drain(claims: &Claims, count: usize, task: Task) -> bool {
    let mut panicked = false;
    loop {
        let i = claims.next.fetch_add(1, Ordering::AcqRel);
        if i >= count {
            return panicked;
        }
        // SAFETY: item `i` is claimed and not finished, so `map` is still waiting and the
        // closure alive.
        let f = unsafe { &*task.0 };
        panicked |= catch_unwind(AssertUnwindSafe(|| f(i))).is_err();
        claims.finished.fetch_add(1, Ordering::AcqRel);
    }
}

/// Applies `f` to every item, in the calling thread and in the pool's other threads, and
/// returns the results in item order. A panic in `f` is raised again in the caller.
pub(super) fn map<T: Send, R: Send>(items: &mut [T], f: impl Fn(&mut T) -> R + Sync) -> Vec<R> {
    let count = items.len();
    let slots: Vec<Mutex<(&mut T, Option<R>)>> =
        items.iter_mut().map(|t| Mutex::new((t, None))).collect();
    let run = |i: usize| {
        let mut slot = slots[i].lock().unwrap_or_else(|e| e.into_inner());
        let r = f(slot.0);
        slot.1 = Some(r);
    };
    let run: &(dyn Fn(usize) + Sync) = &run;
    // SAFETY: only the lifetime is erased; see `Task`.
    let task = Task(unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(
            run,
        )
    });
    let claims = Arc::new(Claims {
        next: AtomicUsize::new(0),
        finished: AtomicUsize::new(0),
        panicked: AtomicBool::new(false),
    });
    for _ in 1..count {
        let claims = Arc::clone(&claims);
        rayon::spawn(move || {
            let task = task;
            if drain(&claims, count, task) {
                claims.panicked.store(true, Ordering::Release);
            }
        });
    }
    let mut panicked = drain(&claims, count, task);
    let mut spins = 0u32;
    while claims.finished.load(Ordering::Acquire) < count {
        // A helper is inside an item: its activation takes tens of microseconds or more.
        if spins < 64 {
            std::hint::spin_loop();
            spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
    panicked |= claims.panicked.load(Ordering::Acquire);
    if panicked {
        resume_unwind(Box::new("a worker's activation panicked"));
    }
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .1
                .expect("every item ran")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Whatever thread runs each item, the results are the sequential map's, in order,
        /// and every item is changed exactly once.
        #[test]
        fn map_matches_sequential(mut items in proptest::collection::vec(any::<u32>(), 0..6)) {
            let want: Vec<u64> = items.iter().map(|&x| u64::from(x) * 3 + 1).collect();
            let expected_items: Vec<u32> = items.iter().map(|x| x.wrapping_add(1)).collect();
            let got = rayon::scope(|_| map(&mut items, |x| {
                let r = u64::from(*x) * 3 + 1;
                *x = x.wrapping_add(1);
                r
            }));
            prop_assert_eq!(got, want);
            prop_assert_eq!(items, expected_items);
        }
    }

    #[test]
    fn a_panic_reaches_the_caller() {
        let mut items = vec![0u32, 1, 2];
        let r = catch_unwind(AssertUnwindSafe(|| {
            map(&mut items, |x| {
                assert!(*x != 1, "item one");
                *x
            })
        }));
        assert!(r.is_err());
    }
}
