//! Memory accounting: a counting global allocator, the memory limit and its checks.
//!
//! Rust aborts the process when an allocation fails, so running out of memory can only
//! become an error if it is noticed before the allocator fails. [`CountingAlloc`] wraps the
//! system allocator and counts the bytes live across the process; the bindings register it
//! as the `#[global_allocator]` of the native module (the core's own tests register it too).
//! Each thread counts in a thread-local cell and adds to the shared counter once its count
//! has moved by [`CHUNK`] bytes, so an allocation costs a thread-local add, not an atomic
//! read-modify-write; [`live_bytes`] is therefore exact to within `CHUNK` bytes per thread.
//!
//! [`check`] compares the live bytes with the limit of the calling thread: the engine sets
//! it around each operator activation ([`LimitScope`]); elsewhere (kernels) it is the process
//! default, [`default_limit`]: `DDFLOW_MEMORY_LIMIT` if set, else 80% of the smaller of the
//! physical memory and the cgroup limit. Over the limit, `check` returns
//! [`Error::MemoryLimit`]; loops that can allocate without bound call it as they go.

use crate::error::{Error, Result};
use crate::huge_pages;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// A thread adds its count to the shared counter once it has moved this far.
pub const CHUNK: isize = 256 << 10;

/// Bytes flushed to the shared counter by all threads.
static SHARED: AtomicIsize = AtomicIsize::new(0);

/// The most [`SHARED`] has reached since [`reset_peak`].
static PEAK: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Bytes allocated minus freed by this thread and not yet added to `SHARED`.
    static LOCAL: Cell<isize> = const { Cell::new(0) };
    /// The limit [`check`] applies on this thread: `0` is the process default,
    /// `usize::MAX` none.
    static LIMIT: Cell<usize> = const { Cell::new(0) };
}

#[cfg(test)]
thread_local! {
    /// Bytes this thread has flushed to `SHARED` (tests only): with `LOCAL`, the thread's
    /// own count, which other threads' concurrent flushes cannot disturb.
    static FLUSHED: Cell<isize> = const { Cell::new(0) };
}

/// Counts `delta` bytes on the calling thread, flushing to [`SHARED`] by [`CHUNK`]s.
#[inline(always)]
fn count(delta: isize) {
    let flushed = LOCAL.try_with(|c| {
        let v = c.get() + delta;
        if v.unsigned_abs() > CHUNK as usize {
            let now = SHARED.fetch_add(v, Relaxed) + v;
            #[cfg(test)]
            let _ = FLUSHED.try_with(|f| f.set(f.get() + v));
            if v > 0 {
                PEAK.fetch_max(now, Relaxed);
            }
            c.set(0);
        } else {
            c.set(v);
        }
    });
    if flushed.is_err() {
        // The thread is being torn down: count directly.
        SHARED.fetch_add(delta, Relaxed);
    }
}

/// The system allocator, counting the bytes it hands out and advising huge pages for large
/// blocks ([`huge_pages`]).
pub struct CountingAlloc;

// SAFETY: every call is forwarded unchanged to `System`; counting touches no allocation, and
// the huge-page advice changes how a block's pages are backed, never its contents.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            count(layout.size() as isize);
            huge_pages::advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            count(layout.size() as isize);
            huge_pages::advise(p, layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        count(-(layout.size() as isize));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            count(new_size as isize - layout.size() as isize);
            huge_pages::advise(p, new_size);
        }
        p
    }
}

/// Bytes live in the process's Rust heap (all engines and kernels), to within [`CHUNK`] per
/// thread; `0` if [`CountingAlloc`] is not the global allocator.
pub fn live_bytes() -> usize {
    SHARED.load(Relaxed).max(0) as usize
}

/// The most bytes live (as [`live_bytes`] counts them, to within [`CHUNK`] per thread)
/// since [`reset_peak`] last ran.
pub fn peak_bytes() -> usize {
    PEAK.load(Relaxed).max(SHARED.load(Relaxed)).max(0) as usize
}

/// Restarts [`peak_bytes`] from the bytes live now.
pub fn reset_peak() {
    PEAK.store(SHARED.load(Relaxed), Relaxed);
}

/// The process default limit: `DDFLOW_MEMORY_LIMIT` (bytes, or a size such as `"4GB"`;
/// `"none"` for no limit) if it is set and valid, else [`machine_default`]. Read once.
pub fn default_limit() -> Option<usize> {
    static DEFAULT: OnceLock<Option<usize>> = OnceLock::new();
    *DEFAULT.get_or_init(|| match std::env::var("DDFLOW_MEMORY_LIMIT") {
        Ok(s) => parse_limit(&s).unwrap_or_else(|_| machine_default()),
        Err(_) => machine_default(),
    })
}

/// 80% of the smaller of the physical memory (`/proc/meminfo`) and the cgroup limit
/// (`/sys/fs/cgroup/memory.max`, v2; `memory.limit_in_bytes`, v1); `None` (no limit) where
/// neither can be read.
pub fn machine_default() -> Option<usize> {
    let physical = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb.saturating_mul(1024))
    });
    let cgroup = [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|p| {
        std::fs::read_to_string(p)
            .ok()?
            .trim()
            .parse::<usize>()
            .ok()
    });
    let least = match (physical, cgroup) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    Some(least / 5 * 4)
}

/// Parses a memory size: a number of bytes (`"1000000"`), or a number with a unit `kB`,
/// `MB`, `GB`, `TB` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024), case
/// and spaces aside (`"4GB"`, `"1.5 GiB"`); `"none"` is no limit (`Ok(None)`).
pub fn parse_limit(s: &str) -> Result<Option<usize>> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let bad = || {
        Error::Value(format!(
            "memory_limit: expected bytes or a size such as \"4GB\" or \"512MiB\" \
             (units kB, MB, GB, TB, KiB, MiB, GiB, TiB), got {s:?}"
        ))
    };
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let value: f64 = num.parse().map_err(|_| bad())?;
    let bytes = (value * scale).round();
    if !(bytes >= 1.0 && bytes < usize::MAX as f64) {
        return Err(Error::Value(format!(
            "memory_limit: must be at least one byte and fit in 64 bits, got {s:?}"
        )));
    }
    Ok(Some(bytes as usize))
}

/// Sets the calling thread's limit for [`check`] while it lives; the previous one after.
pub struct LimitScope {
    prev: usize,
}

impl LimitScope {
    /// `limit`: `None` for no limit.
    pub fn new(limit: Option<usize>) -> LimitScope {
        let prev = LIMIT.with(|l| l.replace(limit.unwrap_or(usize::MAX)));
        LimitScope { prev }
    }
}

impl Drop for LimitScope {
    fn drop(&mut self) {
        LIMIT.with(|l| l.set(self.prev));
    }
}

/// The limit [`check`] applies on the calling thread (`None`: no limit).
pub fn current_limit() -> Option<usize> {
    match LIMIT.with(Cell::get) {
        0 => default_limit(),
        usize::MAX => None,
        l => Some(l),
    }
}

/// Fails with [`Error::MemoryLimit`] when the live bytes exceed the calling thread's limit.
#[inline]
pub fn check() -> Result<()> {
    check_against(current_limit())
}

/// Fails with [`Error::MemoryLimit`] when allocating `bytes` more would take the live bytes
/// past the calling thread's limit (call before growing a large buffer).
#[inline]
pub fn check_grow(bytes: usize) -> Result<()> {
    match current_limit() {
        Some(limit) if live_bytes().saturating_add(bytes) > limit => {
            Err(Error::MemoryLimit(format!(
                "{} live in ddflow's heap and {} more needed, over the memory_limit of {}",
                human(live_bytes()),
                human(bytes),
                human(limit)
            )))
        }
        _ => Ok(()),
    }
}

/// Fails with [`Error::MemoryLimit`] when the live bytes exceed `limit`.
#[inline]
pub fn check_against(limit: Option<usize>) -> Result<()> {
    match limit {
        Some(limit) if live_bytes() > limit => Err(over(live_bytes(), limit)),
        _ => Ok(()),
    }
}

/// The error for `live` bytes over `limit`.
pub fn over(live: usize, limit: usize) -> Error {
    Error::MemoryLimit(format!(
        "{} live in ddflow's heap, over the memory_limit of {}",
        human(live),
        human(limit)
    ))
}

/// Bytes for a message: `"1.23 GB (1234567890 bytes)"`.
pub fn human(bytes: usize) -> String {
    let b = bytes as f64;
    let short = if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        return format!("{bytes} bytes");
    };
    format!("{short} ({bytes} bytes)")
}

#[cfg(test)]
#[global_allocator]
static TEST_ALLOC: CountingAlloc = CountingAlloc;

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's own count: what it flushed to `SHARED` plus what it holds locally.
    fn counted_here() -> isize {
        FLUSHED.with(Cell::get) + LOCAL.with(Cell::get)
    }

    /// Allocates `n` bytes on a fresh thread (whose local count starts at zero and is flushed
    /// past `CHUNK`), returning the change of that thread's own count.
    fn delta_of(n: usize) -> isize {
        std::thread::spawn(move || {
            let before = counted_here();
            let v: Vec<u8> = Vec::with_capacity(n);
            let after = counted_here();
            drop(v);
            let freed = counted_here();
            assert_eq!(after - freed, n as isize);
            after - before
        })
        .join()
        .unwrap()
    }

    #[test]
    fn counts_allocations_and_frees_on_a_thread() {
        // The count moves by exactly the vector's bytes, whether or not it flushed; other
        // tests flush concurrently, so read this thread's own count, not the shared one.
        for n in [10usize, 1000, (CHUNK as usize) * 3] {
            let d = delta_of(n);
            assert_eq!(d, n as isize, "{n}");
        }
    }

    #[test]
    fn live_bytes_sees_a_large_allocation() {
        // Other tests allocate and free concurrently, so compare with the vector alone: the
        // count holds all live bytes but at most `CHUNK` per thread not yet flushed.
        let n = 64 << 20;
        let v = vec![1u8; n];
        let during = live_bytes();
        assert!(during + 64 * CHUNK as usize >= n, "{during} < {n}");
        drop(v);
    }

    #[test]
    fn check_fails_over_the_limit_and_scopes_nest() {
        let _outer = LimitScope::new(Some(1));
        let _v = vec![1u8; 2 * CHUNK as usize];
        let e = check().unwrap_err();
        assert!(matches!(e, Error::MemoryLimit(_)), "{e}");
        assert!(
            e.to_string().contains("over the memory_limit of 1 bytes"),
            "{e}"
        );
        {
            let _inner = LimitScope::new(None);
            assert_eq!(current_limit(), None);
            check().unwrap();
        }
        assert_eq!(current_limit(), Some(1));
        check_against(Some(usize::MAX - 1)).unwrap();
        let _high = LimitScope::new(Some(usize::MAX - 1));
        check_grow(1 << 20).unwrap();
        let e = check_grow(usize::MAX).unwrap_err();
        assert!(e.to_string().contains("more needed"), "{e}");
    }

    #[test]
    fn parses_sizes() {
        let p = |s: &str| parse_limit(s).unwrap();
        assert_eq!(p("1000"), Some(1000));
        assert_eq!(p("4GB"), Some(4_000_000_000));
        assert_eq!(p("4 gb"), Some(4_000_000_000));
        assert_eq!(p("64MB"), Some(64_000_000));
        assert_eq!(p("512MiB"), Some(512 << 20));
        assert_eq!(p("1.5GiB"), Some(3 << 29));
        assert_eq!(p("2kB"), Some(2000));
        assert_eq!(p("2KiB"), Some(2048));
        assert_eq!(p("none"), None);
        for bad in ["", "GB", "4 GBs", "-1", "0", "1e3", "1..2MB", "4 parsecs"] {
            let e = parse_limit(bad).unwrap_err();
            assert!(e.to_string().contains("memory_limit"), "{bad}: {e}");
        }
    }

    #[test]
    fn machine_default_is_a_share_of_memory() {
        let d = machine_default().expect("linux has /proc/meminfo");
        assert!(d > 0);
    }
}
