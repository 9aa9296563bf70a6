//! The process-wide string interner: every `str` (and binary, as Latin-1 text) value of a
//! record is one `u64` id (`encoding`'s str words). An id keeps its meaning as long as any
//! live data holds it; strings no live data holds are freed by the string collector
//! ([`crate::string_gc`]) and their ids reused.
//!
//! Layout, chosen so that interning a batch of new strings costs about one hash, one probe
//! and one copy per value:
//!
//! * the text lives in an arena: a few large `String` chunks that are filled and never
//!   reallocated (a string longer than a quarter chunk gets a chunk of its own), and a
//!   table of spans (chunk, start, length: 12 bytes) indexed by id, so there is no
//!   allocation per string;
//! * the hash table (`IdTable`) is one array of 8-byte slots, each the id and 32 bits of
//!   the string's hash (foldhash, randomly seeded per process), probed linearly. A lookup
//!   compares stored hashes first and the arena's bytes only on a hash match; growing the
//!   table rehashes from the stored bits without reading the arena;
//! * a batch's strings are all hashed first, without the lock, so that each lookup can ask
//!   the CPU for the table slot of a string some places ahead (a prefetch): in a table much
//!   larger than the caches, a lookup is otherwise a wait on memory;
//! * a batch is first looked up under the read lock (several threads can intern strings
//!   already present at once); only the strings not found, or the rest of a batch that turns
//!   out to be mostly new, are added under the write lock.
//!
//! Ids are small integers (at most `u32::MAX - 1`, so [`NULL_STR`](crate::encoding::NULL_STR),
//! `u64::MAX`, is never handed out): a new string takes a freed id if there is one, else
//! the next unused. A single string may be at most `u32::MAX` bytes (Arrow's own offsets
//! stop at 2 GiB). Ids group equal strings and nothing more: no code may read meaning into
//! their order (text order is always decoded, see `encoding::ordered_word`).
//!
//! ## Freeing
//!
//! [`Store::sweep`] is the interner's half of a collection (the other half, finding which
//! ids live data holds, is [`crate::string_gc`]): it frees every id that is neither marked,
//! nor permanent, nor *touched* since the previous collection, then
//!
//! * removes the freed ids from the id table in one pass (backward-shift deletion, no
//!   tombstones), or rebuilds it smaller from the stored hash bits when it is mostly empty;
//! * puts the freed ids on a free list, so ids stay small (batches store words that fit
//!   32 bits in half the space) and the span table never outgrows the peak of live strings;
//! * rewrites the arena into fresh chunks when the text written into its chunks (live and
//!   freed) exceeds twice the live text by a first chunk, dropping the old ones (the memory
//!   goes back to the allocator). Counted in written bytes, not chunk capacity: a chunk's
//!   unwritten tail is not resident, while freed text is. A rule on capacity (three times
//!   the live bytes plus the largest chunk) let a stream of new strings whose old ones are
//!   freed (`benches/soak.py --user-churn 100`: 1 MB of live text) fill 4-6 MB of dead text
//!   before a rewrite, a slow creep of the resident size and a drop at each rewrite. Each
//!   rewrite copies the live text, at most the dead text written since the last one.
//!
//! *Touched* ids are those looked up or added since the last collection, a bit per id set
//! on every hit (one relaxed atomic or, only when the bit is not yet set). They make the
//! interner safe for ids in flight: a string interned by a conversion whose ids are not yet
//! in any engine survives the next collection whatever the marks say; only a string no live
//! data held and nobody interned for a whole interval between two collections is freed.
//! *Permanent* ids (constants bound into compiled expressions, [`Interner::intern_permanent`])
//! are never freed.

use crate::error::{Error, Result};
use foldhash::fast::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock, RwLock};

/// The arena's first chunk size; each new chunk doubles it up to [`MAX_CHUNK`].
const FIRST_CHUNK: usize = 64 << 10;
/// The largest chunk size (a longer string than a quarter of the chunk gets its own).
const MAX_CHUNK: usize = 4 << 20;
/// A batch still looked up under the read lock stops once this many strings are missing
/// and they are more than half of those seen: the rest goes straight to the write lock.
const READ_MISSES: usize = 64;
/// How many strings ahead of the one being looked up a batch prefetches the table slot of.
const AHEAD: usize = 16;

/// Where one string's bytes are in the arena.
#[derive(Clone, Copy)]
struct Span {
    chunk: u32,
    start: u32,
    len: u32,
}

/// The span of a freed id (no chunk has this index).
const FREE: Span = Span {
    chunk: u32::MAX,
    start: 0,
    len: 0,
};

impl Span {
    #[inline]
    fn is_free(&self) -> bool {
        self.chunk == u32::MAX
    }
}

/// A bit per id, settable under the read lock.
#[derive(Default)]
struct AtomicBits(Vec<AtomicU64>);

impl AtomicBits {
    /// Makes room for ids below `n` (new bits clear).
    fn grow(&mut self, n: usize) {
        let words = n.div_ceil(64);
        if words > self.0.len() {
            self.0.resize_with(words, AtomicU64::default);
        }
    }

    #[inline]
    fn set(&self, id: u32) {
        let (w, b) = (&self.0[(id >> 6) as usize], 1u64 << (id & 63));
        if w.load(Relaxed) & b == 0 {
            w.fetch_or(b, Relaxed);
        }
    }

    #[inline]
    fn get(&self, id: u32) -> bool {
        self.0
            .get((id >> 6) as usize)
            .is_some_and(|w| w.load(Relaxed) & (1u64 << (id & 63)) != 0)
    }

    fn clear_all(&mut self) {
        for w in &mut self.0 {
            *w.get_mut() = 0;
        }
    }
}

/// The id table: open addressing with linear probing over one array of slots, each 0
/// (empty) or a string's 32 hash bits above `id + 1`. A hash's home slot comes from its high
/// bits (`hash * len >> 32`), so slot order follows hash order and growing the table walks
/// the old array and fills the new one almost in order. At most three quarters full.
struct IdTable {
    slots: Vec<u64>,
    len: usize,
}

impl Default for IdTable {
    fn default() -> IdTable {
        IdTable {
            slots: vec![0; 16],
            len: 0,
        }
    }
}

impl IdTable {
    /// The slot probing for hash `h` starts at.
    #[inline]
    fn home(&self, h: u32) -> usize {
        ((h as u64 * self.slots.len() as u64) >> 32) as usize
    }

    /// Asks the CPU to load the home slot of `h` into the cache (a hint; never faults).
    #[inline]
    fn prefetch(&self, h: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = self.slots.as_ptr().wrapping_add(self.home(h)) as *const i8;
            // SAFETY: a prefetch only hints the cache: it reads nothing into the program and
            // never faults, whatever the address (`p` is inside the slot array anyway).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = h;
    }

    /// The id stored for hash `h` whose string `is(id)` accepts, or the empty slot where
    /// such a string would go.
    #[inline]
    fn find(&self, h: u32, is: impl Fn(u32) -> bool) -> std::result::Result<u32, usize> {
        let n = self.slots.len();
        let mut at = self.home(h);
        loop {
            let s = self.slots[at];
            if s == 0 {
                return Err(at);
            }
            if (s >> 32) as u32 == h && is((s as u32) - 1) {
                return Ok((s as u32) - 1);
            }
            at += 1;
            if at == n {
                at = 0;
            }
        }
    }

    /// Stores `id` (hash `h`) in the empty slot `at` that [`IdTable::find`] returned.
    #[inline]
    fn put(&mut self, at: usize, h: u32, id: u32) {
        debug_assert_eq!(self.slots[at], 0);
        self.slots[at] = ((h as u64) << 32) | (id as u64 + 1);
        self.len += 1;
    }

    /// Removes every id `gone` accepts, in one pass over the slots: each removal shifts the
    /// rest of its run back over the hole (backward-shift deletion: no tombstones), and the
    /// slot is looked at again, as an entry shifted into it may be gone too. Entries that
    /// wrap around from the start to the end were looked at already.
    fn remove_where(&mut self, gone: impl Fn(u32) -> bool) {
        let n = self.slots.len();
        for i in 0..n {
            while self.slots[i] != 0 && gone(self.slots[i] as u32 - 1) {
                let mut hole = i;
                let mut j = i;
                loop {
                    j = if j + 1 == n { 0 } else { j + 1 };
                    let s = self.slots[j];
                    if s == 0 {
                        break;
                    }
                    let home = self.home((s >> 32) as u32);
                    // `s` may fill the hole if the hole lies on its probe path (home .. j).
                    if (j + n - hole) % n <= (j + n - home) % n {
                        self.slots[hole] = s;
                        hole = j;
                    }
                }
                self.slots[hole] = 0;
                self.len -= 1;
            }
        }
    }

    /// A table of `slots` (hash bits above `id + 1`, each nonzero) sized for them alone.
    fn rebuilt(slots: impl Iterator<Item = u64>, len: usize) -> IdTable {
        let mut t = IdTable::default();
        t.reserve(len);
        for s in slots {
            let mut at = t.home((s >> 32) as u32);
            while t.slots[at] != 0 {
                at += 1;
                if at == t.slots.len() {
                    at = 0;
                }
            }
            t.slots[at] = s;
            t.len += 1;
        }
        t
    }

    /// Grows the table (if needed) so that `additional` more ids keep it at most three
    /// quarters full; slots found before are invalid afterwards.
    fn reserve(&mut self, additional: usize) {
        let need = self.len + additional;
        let mut size = self.slots.len();
        while need * 4 > size * 3 {
            size *= 2;
        }
        if size == self.slots.len() {
            return;
        }
        let old = std::mem::replace(&mut self.slots, vec![0; size]);
        for s in old.into_iter().filter(|&s| s != 0) {
            let mut at = self.home((s >> 32) as u32);
            while self.slots[at] != 0 {
                at += 1;
                if at == size {
                    at = 0;
                }
            }
            self.slots[at] = s;
        }
    }
}

/// The strings, their spans and the id table (behind the global lock).
#[derive(Default)]
pub(crate) struct Store {
    chunks: Vec<String>,
    /// The chunk new strings are appended to (`chunks.len()` when there is none yet).
    fill: usize,
    /// By id; [`FREE`] for a freed id.
    spans: Vec<Span>,
    /// Freed ids, taken from the end (each sweep pushes its ids highest first).
    free: Vec<u32>,
    table: IdTable,
    /// Ids looked up or added since the last sweep.
    touched: AtomicBits,
    /// Ids never freed.
    permanent: AtomicBits,
    /// Bytes of the strings in use.
    live_bytes: usize,
    /// Ids handed out (new or reused) since the last sweep.
    pub(crate) added: usize,
    /// A collection is due once `added` reaches this (set by the collector).
    pub(crate) due_at: usize,
}

/// What a sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepStats {
    /// Ids freed.
    pub freed: usize,
    /// Ids in use afterwards.
    pub live: usize,
    /// Of those, the ids marked (held by live data; the rest were touched or permanent).
    pub held: usize,
    /// Bytes of the strings in use afterwards.
    pub live_bytes: usize,
    /// Bytes of arena chunks afterwards (their capacity).
    pub arena_bytes: usize,
}

impl Store {
    /// The text of a known id.
    #[inline]
    fn text(&self, id: u32) -> &str {
        let sp = self.spans[id as usize];
        let start = sp.start as usize;
        &self.chunks[sp.chunk as usize][start..start + sp.len as usize]
    }

    /// The text of `id`, or None for an id not in use (never handed out, or freed).
    #[inline]
    fn get(&self, id: u64) -> Option<&str> {
        match self.spans.get(usize::try_from(id).ok()?) {
            Some(sp) if !sp.is_free() => Some(self.text(id as u32)),
            _ => None,
        }
    }

    /// The id of `s` (hash `h`) if it is interned (touching it).
    #[inline]
    fn find(&self, h: u32, s: &str) -> Option<u32> {
        let id = self.table.find(h, |id| self.text(id) == s).ok()?;
        self.touched.set(id);
        Some(id)
    }

    /// The id of `s` (hash `h`), interning it if new; the table must have room
    /// ([`Store::reserve`]).
    #[inline]
    fn find_or_insert(&mut self, h: u32, s: &str) -> u32 {
        match self.table.find(h, |id| self.text(id) == s) {
            Ok(id) => {
                self.touched.set(id);
                id
            }
            Err(at) => {
                let span = push_text(&mut self.chunks, &mut self.fill, s);
                let id = match self.free.pop() {
                    Some(id) => {
                        self.spans[id as usize] = span;
                        id
                    }
                    None => {
                        let id = self.spans.len();
                        assert!(
                            id < u32::MAX as usize,
                            "the string interner is full ({id} distinct strings)"
                        );
                        self.spans.push(span);
                        self.touched.grow(id + 1);
                        id as u32
                    }
                };
                self.touched.set(id);
                self.live_bytes += s.len();
                self.added += 1;
                self.table.put(at, h, id);
                id
            }
        }
    }

    /// Makes room for `additional` new strings.
    fn reserve(&mut self, additional: usize) {
        self.table.reserve(additional);
        self.spans
            .reserve(additional.saturating_sub(self.free.len()));
    }

    /// Marks `id` (in use) as never to be freed.
    fn make_permanent(&mut self, id: u32) {
        self.permanent.grow(id as usize + 1);
        self.permanent.set(id);
    }

    /// `(ids in use, their bytes, the arena's bytes)`.
    pub(crate) fn size(&self) -> (usize, usize, usize) {
        let arena = self.chunks.iter().map(String::capacity).sum();
        (self.spans.len() - self.free.len(), self.live_bytes, arena)
    }

    /// Ids the sweep must size its marks for (every id below is or was handed out).
    pub(crate) fn id_bound(&self) -> usize {
        self.spans.len()
    }

    /// Frees every id in use that `marked` does not hold and that is neither permanent nor
    /// touched since the last sweep, then rebuilds the table and, when the text written in
    /// the arena exceeds twice the live text by a first chunk, the arena (see the module
    /// doc). Clears the touched bits.
    pub(crate) fn sweep(&mut self, marked: impl Fn(u32) -> bool) -> SweepStats {
        let (mut freed, mut held) = (0, 0);
        // The ids freed now, a bit each: the table rebuild tests these instead of reading
        // the spans (a random read per slot in a table much larger than the caches).
        let mut gone = vec![0u64; self.spans.len().div_ceil(64)];
        // Highest first, so that the free list (taken from its end) hands out the lowest
        // freed ids first and ids stay small, without sorting it.
        for id in (0..self.spans.len() as u32).rev() {
            let sp = self.spans[id as usize];
            if sp.is_free() {
                continue;
            }
            if marked(id) {
                held += 1;
                continue;
            }
            if self.touched.get(id) || self.permanent.get(id) {
                continue;
            }
            self.live_bytes -= sp.len as usize;
            self.spans[id as usize] = FREE;
            gone[(id >> 6) as usize] |= 1 << (id & 63);
            self.free.push(id);
            freed += 1;
        }
        let live = self.spans.len() - self.free.len();
        if freed > 0 {
            let is_gone = |id: u32| gone[(id >> 6) as usize] & (1 << (id & 63)) != 0;
            if live * 8 < self.table.slots.len() {
                // Mostly empty: a smaller table (rebuilt from the stored hash bits).
                let kept = self
                    .table
                    .slots
                    .iter()
                    .copied()
                    .filter(|&s| s != 0 && !is_gone(s as u32 - 1));
                self.table = IdTable::rebuilt(kept, live);
            } else {
                self.table.remove_where(is_gone);
            }
        }
        let written: usize = self.chunks.iter().map(String::len).sum();
        if written > 2 * self.live_bytes + FIRST_CHUNK {
            self.rewrite_arena();
        }
        self.touched.clear_all();
        self.added = 0;
        SweepStats {
            freed,
            live,
            held,
            live_bytes: self.live_bytes,
            arena_bytes: self.chunks.iter().map(String::capacity).sum(),
        }
    }

    /// Copies the strings in use into fresh chunks (in id order) and drops the old ones.
    fn rewrite_arena(&mut self) {
        let old = std::mem::take(&mut self.chunks);
        self.fill = 0;
        for sp in self.spans.iter_mut().filter(|sp| !sp.is_free()) {
            let start = sp.start as usize;
            let text = &old[sp.chunk as usize][start..start + sp.len as usize];
            *sp = push_text(&mut self.chunks, &mut self.fill, text);
        }
    }
}

/// Appends `s` to the arena (`fill`: the chunk being filled) and returns its span.
fn push_text(chunks: &mut Vec<String>, fill: &mut usize, s: &str) -> Span {
    let len = u32::try_from(s.len()).unwrap_or_else(|_| {
        panic!(
            "a string of {} bytes is longer than the interner's limit of {} bytes",
            s.len(),
            u32::MAX
        )
    });
    let fits = |c: &String| c.capacity() - c.len() >= s.len();
    if *fill >= chunks.len() || !fits(&chunks[*fill]) {
        let next = chunks
            .get(*fill)
            .map_or(FIRST_CHUNK, |c| (c.capacity() * 2).min(MAX_CHUNK));
        if s.len() > next / 4 {
            // A long string: a chunk of exactly its size, the fill chunk unchanged.
            chunks.push(String::from(s));
            return Span {
                chunk: (chunks.len() - 1) as u32,
                start: 0,
                len,
            };
        }
        chunks.push(String::with_capacity(next));
        *fill = chunks.len() - 1;
    }
    let c = &mut chunks[*fill];
    let start = c.len() as u32;
    c.push_str(s); // within capacity: never moves the chunk's bytes
    Span {
        chunk: *fill as u32,
        start,
        len,
    }
}

pub(crate) fn global() -> &'static RwLock<Store> {
    static GLOBAL: OnceLock<RwLock<Store>> = OnceLock::new();
    GLOBAL.get_or_init(|| RwLock::new(Store::default()))
}

/// The 32 hash bits a string is stored under.
#[inline]
fn hash(s: &str) -> u32 {
    static STATE: OnceLock<RandomState> = OnceLock::new();
    let mut h = STATE.get_or_init(RandomState::default).build_hasher();
    h.write(s.as_bytes());
    (h.finish() >> 32) as u32
}

/// A process-wide string dictionary: string <-> id (see the module doc).
pub struct Interner;

impl Interner {
    /// Interns many strings at once, appending their ids to `out`.
    pub fn intern_all<'a, I: IntoIterator<Item = &'a str>>(strings: I, out: &mut Vec<u64>) {
        let strings: Vec<&str> = strings.into_iter().collect();
        Interner::intern_with(strings.len(), |i| strings[i], out);
    }

    /// Interns the strings `get(0) .. get(n - 1)`, appending their ids to `out`: the path for
    /// columns already in memory (an Arrow layout's offsets and bytes), with no intermediate
    /// list. `get` may be called twice for an index; it must not intern (the lock is held).
    pub fn intern_with<'a>(n: usize, get: impl Fn(usize) -> &'a str, out: &mut Vec<u64>) {
        let base = out.len();
        out.resize(base + n, crate::encoding::NULL_STR);
        let ids = &mut out[base..];
        let hashes: Vec<u32> = (0..n).map(|i| hash(get(i))).collect();
        let mut missing: Vec<usize> = Vec::new();
        let mut looked = 0;
        {
            let g = global().read().expect("interner poisoned");
            for i in 0..n {
                if let Some(&ahead) = hashes.get(i + AHEAD) {
                    g.table.prefetch(ahead);
                }
                looked = i + 1;
                match g.find(hashes[i], get(i)) {
                    Some(found) => ids[i] = found as u64,
                    None => {
                        missing.push(i);
                        if missing.len() >= READ_MISSES && missing.len() * 2 > looked {
                            break;
                        }
                    }
                }
            }
        }
        if missing.is_empty() && looked == n {
            return;
        }
        missing.extend(looked..n);
        let mut g = global().write().expect("interner poisoned");
        g.reserve(missing.len());
        for (k, &i) in missing.iter().enumerate() {
            if let Some(&ahead) = missing.get(k + AHEAD) {
                g.table.prefetch(hashes[ahead]);
            }
            ids[i] = g.find_or_insert(hashes[i], get(i)) as u64;
        }
        if g.added >= g.due_at.max(crate::string_gc::MIN_GROWTH) {
            crate::string_gc::set_due();
        }
    }

    /// Interns `s` and keeps it for the life of the process (never freed): for constants
    /// bound into compiled expressions, which no collection marks.
    pub fn intern_permanent(s: &str) -> u64 {
        let id = Interner::intern(s);
        let mut g = global().write().expect("interner poisoned");
        g.make_permanent(id as u32);
        id
    }

    /// Interns one string.
    pub fn intern(s: &str) -> u64 {
        let mut out = Vec::with_capacity(1);
        Interner::intern_with(1, |_| s, &mut out);
        out[0]
    }

    /// Looks up the strings of many ids (each copied into its own `Arc<str>`; bulk readers
    /// use [`Interner::resolve_each`], which copies nothing).
    pub fn resolve_all(ids: &[u64]) -> Result<Vec<Arc<str>>> {
        let mut out = Vec::with_capacity(ids.len());
        Interner::resolve_each(ids.iter().copied(), |s| match s {
            Some(s) => {
                out.push(Arc::from(s));
                Ok(())
            }
            None => Err(unknown(crate::encoding::NULL_STR)),
        })?;
        Ok(out)
    }

    /// Calls `f` with the text of each id in turn (None for the null id,
    /// [`NULL_STR`](crate::encoding::NULL_STR)), all under one read lock; an unknown id is
    /// an error, and so is the first error `f` returns. `f` must not intern (the lock is
    /// held).
    pub fn resolve_each(
        ids: impl IntoIterator<Item = u64>,
        mut f: impl FnMut(Option<&str>) -> Result<()>,
    ) -> Result<()> {
        let g = global().read().expect("interner poisoned");
        for id in ids {
            if id == crate::encoding::NULL_STR {
                f(None)?;
            } else {
                f(Some(g.get(id).ok_or_else(|| unknown(id))?))?;
            }
        }
        Ok(())
    }
}

fn unknown(id: u64) -> Error {
    Error::Value(format!("unknown string id {id}"))
}

#[cfg(test)]
#[path = "interner_tests.rs"]
mod tests;
