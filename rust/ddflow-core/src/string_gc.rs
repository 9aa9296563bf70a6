//! The string collector: frees interned strings that no live data holds (mark and sweep).
//!
//! Why mark and sweep: a string id is a plain `u64` word copied freely between batches,
//! traces, operator state and threads, so counting references would cost work on every
//! copy of every word on the hot path. Instead the few owners of data that outlive a call
//! (an engine, a capture's state, a kernel trace, a captured batch not yet read) register
//! as [`StringRoots`]; a collection asks each to mark the words it holds, and
//! [`crate::interner`] frees the rest (its *touched* bits keep whatever was interned since
//! the previous collection, so ids in flight between a conversion and the engine that
//! stores them are never freed).
//!
//! Marking is conservative: a root marks every word of its rows, whatever the column's
//! dtype, so an integer that happens to equal a string id keeps that string alive. It never
//! frees a string in use, and it needs no dtype bookkeeping in the traces; what it may keep
//! is bounded by the number of live words.
//!
//! When: a collection is *due* once the interner has handed out as many ids since the last
//! one as live data held at it (at least [`MIN_GROWTH`]), so the interner holds at most
//! about three times the strings in use (those held, those touched in the last interval,
//! those added in this one) and the marking work is paid for by the strings added.
//! It runs at a safe point ([`collect_if_due`], which the bindings call at the start of an
//! engine call), never blocking: each root is tried with `try_lock`, and if any is busy
//! (another thread is running that engine, reading that trace) the collection is given up
//! and tried again at the next safe point. While it runs it holds the interner's write lock,
//! so no string is interned or resolved meanwhile.
//!
//! A [`Pin`] covers code that moves ids out of a root and uses them after letting go of
//! the root's lock (a kernel reading a trace, then resolving the strings without the GIL):
//! a collection that overlaps any pin is given up.
//!
//! `DDFLOW_STRING_GC` (read once): `off` never collects, `always` collects at every safe
//! point (for tests: any string an owner fails to mark is then freed at once).

use crate::interner::{global, SweepStats};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// The fewest ids handed out between two collections.
pub const MIN_GROWTH: usize = 1 << 16;

/// The ids a collection has found in use: a bit per id below the interner's bound.
pub struct Marks {
    bits: Vec<u64>,
    bound: u64,
}

impl Marks {
    /// No id marked, for ids below `bound`.
    pub fn new(bound: usize) -> Marks {
        Marks {
            bits: vec![0; bound.div_ceil(64)],
            bound: bound as u64,
        }
    }

    /// Marks `w` if it may be a string id (words of other dtypes are marked harmlessly).
    #[inline]
    pub fn word(&mut self, w: u64) {
        if w < self.bound {
            self.bits[(w >> 6) as usize] |= 1 << (w & 63);
        }
    }

    /// Marks every word of `ws`.
    pub fn words(&mut self, ws: &[u64]) {
        for &w in ws {
            self.word(w);
        }
    }

    /// Whether `id` is marked.
    #[inline]
    pub fn get(&self, id: u32) -> bool {
        (id as u64) < self.bound && self.bits[(id >> 6) as usize] & (1 << (id & 63)) != 0
    }
}

/// An owner of string ids that outlive a call: it marks every word it holds.
pub trait StringRoots: Send + Sync {
    /// Marks the words held; `false` if the state is busy (locked elsewhere) and cannot be
    /// read now, which gives the collection up.
    fn mark_strings(&self, marks: &mut Marks) -> bool;
}

/// Data that can list its words (the state inside a root).
pub trait MarkStrings {
    /// Marks every word that may be a string id.
    fn mark_strings(&self, marks: &mut Marks);
}

impl<T: MarkStrings + Send> StringRoots for Mutex<T> {
    fn mark_strings(&self, marks: &mut Marks) -> bool {
        match self.try_lock() {
            Ok(g) => {
                g.mark_strings(marks);
                true
            }
            Err(std::sync::TryLockError::Poisoned(g)) => {
                g.into_inner().mark_strings(marks);
                true
            }
            Err(std::sync::TryLockError::WouldBlock) => false,
        }
    }
}

impl MarkStrings for crate::updates::Updates {
    fn mark_strings(&self, marks: &mut Marks) {
        marks.words(&self.rows);
    }
}

/// An immutable value shared as an `Arc` is read without a lock.
pub struct Frozen<T>(pub T);

impl<T: MarkStrings + Send + Sync> StringRoots for Frozen<T> {
    fn mark_strings(&self, marks: &mut Marks) -> bool {
        self.0.mark_strings(marks);
        true
    }
}

/// The registered roots, and the length at which [`register`] next drops the dead ones.
struct Registry {
    roots: Vec<Weak<dyn StringRoots>>,
    prune_at: usize,
}

impl Registry {
    /// Drops the roots gone (a dead `Weak` still holds its allocation).
    fn prune(&mut self) {
        self.roots.retain(|w| w.strong_count() > 0);
        self.prune_at = (2 * self.roots.len()).max(64);
    }
}

fn registry() -> &'static Mutex<Registry> {
    static ROOTS: OnceLock<Mutex<Registry>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        Mutex::new(Registry {
            roots: Vec::new(),
            prune_at: 64,
        })
    })
}

/// Registers a root for as long as it lives (dropping the last `Arc` unregisters it).
pub fn register<T: StringRoots + 'static>(root: &Arc<T>) {
    let weak: Weak<dyn StringRoots> = Arc::downgrade(root) as Weak<dyn StringRoots>;
    let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
    // Pruned as it doubles: a process that makes many short-lived roots (kernel traces)
    // while no collection falls due keeps only the live ones (amortized O(1) a root).
    if reg.roots.len() >= reg.prune_at {
        reg.prune();
    }
    reg.roots.push(weak);
}

/// Pins held now, and pins ever taken.
static PINS_HELD: AtomicUsize = AtomicUsize::new(0);
static PINS_TAKEN: AtomicU64 = AtomicU64::new(0);

/// While a pin lives, no collection completes (one overlapping it is given up).
pub struct Pin(());

impl Pin {
    /// Takes a pin.
    pub fn new() -> Pin {
        PINS_HELD.fetch_add(1, SeqCst);
        PINS_TAKEN.fetch_add(1, SeqCst);
        Pin(())
    }
}

impl Default for Pin {
    fn default() -> Pin {
        Pin::new()
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        PINS_HELD.fetch_sub(1, SeqCst);
    }
}

/// Whether the interner has grown enough since the last collection.
static DUE: AtomicBool = AtomicBool::new(false);
/// Collections run, and ids freed by them (for tests and diagnostics).
static RUNS: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

/// Called by the interner when it has handed out enough ids since the last collection.
pub(crate) fn set_due() {
    DUE.store(true, Relaxed);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Grow,
    Always,
}

fn mode() -> Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(|| match std::env::var("DDFLOW_STRING_GC").as_deref() {
        Ok("off") | Ok("0") => Mode::Off,
        Ok("always") => Mode::Always,
        _ => Mode::Grow,
    })
}

/// Runs a collection if one is due (see the module doc); returns what it did, `None` if
/// none ran (not due, disabled, or a root was busy). Call only where the calling thread
/// holds no ids outside registered roots and the touched set (a safe point).
pub fn collect_if_due() -> Option<SweepStats> {
    match mode() {
        Mode::Off => None,
        Mode::Grow if !DUE.load(Relaxed) => None,
        _ => collect_now(),
    }
}

/// Runs a collection now (whatever the policy); `None` if a root was busy.
pub fn collect_now() -> Option<SweepStats> {
    if PINS_HELD.load(SeqCst) > 0 {
        return None; // an engine is running: do not even wait for the interner's lock
    }
    let mut store = global().write().unwrap_or_else(|e| e.into_inner());
    let taken = PINS_TAKEN.load(SeqCst);
    if PINS_HELD.load(SeqCst) > 0 {
        return None;
    }
    let roots: Vec<Arc<dyn StringRoots>> = {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        reg.prune();
        reg.roots.iter().filter_map(Weak::upgrade).collect()
    };
    let mut marks = Marks::new(store.id_bound());
    for r in &roots {
        if !r.mark_strings(&mut marks) {
            return None;
        }
    }
    // The roots are let go after the lock: the last owner of a root may be this thread.
    if PINS_HELD.load(SeqCst) > 0 || PINS_TAKEN.load(SeqCst) != taken {
        return None;
    }
    let stats = store.sweep(|id| marks.get(id));
    // The next interval is as long as the strings held, not those kept as touched: else
    // each interval would keep the whole previous one and never shrink.
    store.due_at = stats.held.max(MIN_GROWTH);
    DUE.store(false, Relaxed);
    RUNS.fetch_add(1, Relaxed);
    FREED.fetch_add(stats.freed as u64, Relaxed);
    drop(store);
    drop(roots);
    Some(stats)
}

/// `(collections run, ids freed)` since the process started.
pub fn counters() -> (u64, u64) {
    (RUNS.load(Relaxed), FREED.load(Relaxed))
}

/// Strings in use and the arena's bytes now: `(ids, string bytes, arena bytes)`.
pub fn interner_size() -> (usize, usize, usize) {
    let g = global().read().unwrap_or_else(|e| e.into_inner());
    g.size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_set_only_words_below_the_bound() {
        let mut m = Marks::new(100);
        m.words(&[0, 63, 64, 99, 100, u64::MAX, 1 << 40]);
        for id in 0..100u32 {
            assert_eq!(m.get(id), [0, 63, 64, 99].contains(&id), "{id}");
        }
        assert!(!m.get(100));
    }

    struct Count;

    impl StringRoots for Count {
        fn mark_strings(&self, _marks: &mut Marks) -> bool {
            true
        }
    }

    #[test]
    fn the_registry_drops_dead_roots_as_it_grows() {
        let keep: Vec<Arc<Count>> = (0..10).map(|_| Arc::new(Count)).collect();
        keep.iter().for_each(register);
        for _ in 0..10_000 {
            register(&Arc::new(Count));
        }
        let reg = registry().lock().unwrap();
        // Other tests register roots too: the bound is loose, far below 10,000.
        assert!(reg.roots.len() < 2_000, "{}", reg.roots.len());
    }
}
