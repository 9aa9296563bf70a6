//! Trace handles: shared, thread-safe access to a spine by several readers.
//!
//! A [`TraceHandle`] is one reader of a trace shared through `Arc<Mutex<..>>` (so handles
//! are `Send + Sync`). Each handle holds a logical compaction frontier: it promises to ask
//! only about times in the future of that frontier. The spine compacts to the meet of all
//! handles' frontiers, so one slow reader holds back compaction for everyone.
//! [`Clone`] makes a new reader with the same frontier; dropping a handle releases its hold
//! (the spine keeps its last frontier when the last handle goes).
//!
//! Any handle may also insert batches and exert the spine (the writer is usually one of
//! the readers).

use super::batch::Batch;
use super::cursor::Cursor;
use super::spine::Spine;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug)]
struct Shared {
    spine: Spine,
    /// `(handle id, frontier)` of every live handle.
    holds: Vec<(u64, Antichain<Time>)>,
    next_id: u64,
}

impl Shared {
    /// Advances the spine's frontier to the meet of the holds.
    fn update_frontier(&mut self) {
        let mut iter = self.holds.iter();
        let Some((_, first)) = iter.next() else {
            return;
        };
        let mut meet = first.clone();
        for (_, f) in iter {
            meet = meet.meet(f);
        }
        // Holds only move forward and are removed, never added behind the meet, so this
        // cannot regress.
        let _ = self.spine.set_logical_compaction(&meet);
    }
}

/// One reader (and possibly the writer) of a shared spine.
#[derive(Debug)]
pub struct TraceHandle {
    shared: Arc<Mutex<Shared>>,
    id: u64,
}

impl crate::string_gc::StringRoots for Mutex<Shared> {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) -> bool {
        match self.try_lock() {
            Ok(s) => {
                s.spine.mark_strings(marks);
                true
            }
            Err(_) => false,
        }
    }
}

impl TraceHandle {
    /// Wraps `spine` in a first handle whose frontier is the spine's logical frontier.
    pub fn new(spine: Spine) -> TraceHandle {
        let frontier = spine.logical_compaction().clone();
        let shared = Arc::new(Mutex::new(Shared {
            spine,
            holds: vec![(0, frontier)],
            next_id: 1,
        }));
        // A trace's batches outlive calls: a root of the string collector.
        crate::string_gc::register(&shared);
        TraceHandle { shared, id: 0 }
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Advances this handle's compaction frontier ([`Error::Time`] if `frontier` is not in
    /// the future of the handle's current one); the spine's frontier becomes the meet of
    /// all handles' frontiers.
    pub fn set_logical_compaction(&self, frontier: &Antichain<Time>) -> Result<()> {
        let mut s = self.lock();
        let hold = s
            .holds
            .iter_mut()
            .find(|(id, _)| *id == self.id)
            .expect("handle has a hold");
        if !hold.1.dominates(frontier) {
            return Err(Error::Time(format!(
                "trace handle frontier {frontier:?} is not in the future of its current {:?}",
                hold.1
            )));
        }
        hold.1 = frontier.clone();
        s.update_frontier();
        Ok(())
    }

    /// This handle's compaction frontier.
    pub fn logical_compaction(&self) -> Antichain<Time> {
        let s = self.lock();
        s.holds
            .iter()
            .find(|(id, _)| *id == self.id)
            .map(|(_, f)| f.clone())
            .expect("handle has a hold")
    }

    /// The spine's compaction frontier (meet of all handles').
    pub fn trace_compaction(&self) -> Antichain<Time> {
        self.lock().spine.logical_compaction().clone()
    }

    /// Number of live handles.
    pub fn readers(&self) -> usize {
        self.lock().holds.len()
    }

    /// Inserts a batch into the spine (see [`Spine::insert`]).
    pub fn insert(&self, batch: Arc<Batch>) {
        self.lock().spine.insert(batch)
    }

    /// Does idle merge work (see [`Spine::exert`]).
    pub fn exert(&self, fuel: usize) -> bool {
        self.lock().spine.exert(fuel)
    }

    /// Runs `f` on the spine under the lock.
    pub fn with_spine<R>(&self, f: impl FnOnce(&Spine) -> R) -> R {
        f(&self.lock().spine)
    }

    /// Stored updates (see [`Spine::len`]).
    pub fn len(&self) -> usize {
        self.lock().spine.len()
    }

    /// Whether the spine stores no updates.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes of the spine.
    pub fn heap_bytes(&self) -> usize {
        self.lock().spine.heap_bytes()
    }

    /// The spine's upper frontier.
    pub fn upper(&self) -> Antichain<Time> {
        self.lock().spine.upper().clone()
    }

    /// The spine's readable batches, oldest first.
    pub fn batches(&self) -> Vec<Arc<Batch>> {
        self.lock().spine.batches()
    }

    /// A cursor over the spine's current batches (it does not hold the lock).
    pub fn cursor(&self) -> Cursor {
        self.lock().spine.cursor()
    }

    /// The whole trace as consolidated updates, and the key width.
    pub fn to_updates(&self) -> (Updates, usize) {
        let (kw, vw, batches) = {
            let s = self.lock();
            (s.spine.key_width(), s.spine.val_width(), s.spine.batches())
        };
        (Cursor::new(kw, vw, batches).to_updates(), kw)
    }
}

impl Clone for TraceHandle {
    /// A new reader with the same frontier as `self`.
    fn clone(&self) -> Self {
        let mut s = self.lock();
        let frontier = s
            .holds
            .iter()
            .find(|(id, _)| *id == self.id)
            .map(|(_, f)| f.clone())
            .expect("handle has a hold");
        let id = s.next_id;
        s.next_id += 1;
        s.holds.push((id, frontier));
        TraceHandle {
            shared: self.shared.clone(),
            id,
        }
    }
}

impl Drop for TraceHandle {
    fn drop(&mut self) {
        let mut s = self.lock();
        s.holds.retain(|(id, _)| *id != self.id);
        s.update_frontier();
    }
}
