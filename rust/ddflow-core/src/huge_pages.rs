//! Transparent huge pages for large allocations.
//!
//! Every page of memory a process touches for the first time costs a page fault, in which
//! the kernel zeroes and maps it. With 4 kB pages a column of 10 MB costs 2,560 faults; on
//! the 2-core VM of the benchmarks the kernel's fault handling was two fifths of the CPU of
//! the `count` micro-case's update phase (`benches/results/speed_count_vs_dd_2026-11-27.md`),
//! whose reduce output, input and select columns are fresh megabytes of 32-byte times.
//! Where the kernel offers transparent huge pages on request (`madvise`, the default of
//! Debian and Ubuntu; `always` needs no request, `never` ignores it), a range advised with
//! `MADV_HUGEPAGE` is mapped 2 MB at a time: one fault where there were 512.
//!
//! [`advise`] is called by the counting allocator (`memory.rs`) for every allocation. One of
//! at least [`MIN_BYTES`] has its 2 MB-aligned part advised (a block glibc maps for itself
//! above its mmap threshold, or a large chunk of its heap); one of at least
//! [`HEAP_CHECK_BYTES`] also has glibc's heap grown since the last look advised, as glibc
//! does itself when started with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` (which a library
//! cannot set for the process it is loaded into). Smaller allocations only read a flag. A
//! block partly filled touches at most one huge page more than it uses. Setting
//! `DDFLOW_HUGE_PAGES=0` (read once, when the first large block is allocated) turns the
//! advice off.

#[cfg(target_os = "linux")]
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// The size of a transparent huge page on x86-64 and arm64 with 4 kB base pages.
pub const HUGE_PAGE: usize = 2 << 20;

/// The smallest allocation advised: below two huge pages an allocation may hold no aligned
/// huge page at all, and a fault saved is worth less than the call.
pub const MIN_BYTES: usize = 2 * HUGE_PAGE;

/// The part of `[start, start + len)` made of whole aligned huge pages, as `(start, len)`;
/// `None` if it holds none.
#[inline]
pub fn aligned_interior(start: usize, len: usize) -> Option<(usize, usize)> {
    let lo = start.checked_add(HUGE_PAGE - 1)? & !(HUGE_PAGE - 1);
    let hi = start.checked_add(len)? & !(HUGE_PAGE - 1);
    (hi > lo).then(|| (lo, hi - lo))
}

/// Allocations of at least this many bytes also look whether glibc's heap has grown since
/// the last look (glibc grows it by at least its `M_TOP_PAD`, 128 kB, at a time).
pub const HEAP_CHECK_BYTES: usize = 128 << 10;

/// Advises the kernel to back the aligned part of the block at `ptr` of `len` bytes with
/// huge pages, if the block is large enough and the advice is on; from blocks of
/// [`HEAP_CHECK_BYTES`], also the heap grown since the last look.
#[inline]
pub fn advise(ptr: *mut u8, len: usize) {
    if len >= HEAP_CHECK_BYTES {
        advise_large(ptr as usize, len);
    }
}

#[cfg(target_os = "linux")]
#[cold]
fn advise_large(start: usize, len: usize) {
    if !enabled() {
        return;
    }
    advise_heap_growth();
    if len >= MIN_BYTES {
        if let Some((lo, n)) = aligned_interior(start, len) {
            // SAFETY: the range lies inside a block the allocator just handed out, so it is
            // mapped and ours; `MADV_HUGEPAGE` changes how its pages are backed, never
            // their contents. A kernel without transparent huge pages returns an error,
            // ignored.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, n, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// The end of the part of glibc's main heap advised so far (a huge-page boundary), or 0
/// before the first look.
#[cfg(target_os = "linux")]
static HEAP_ADVISED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Advises the whole huge pages of glibc's main heap (below the program break) grown since
/// the last look, as glibc itself does with `glibc.malloc.hugetlb=1`: blocks below the mmap
/// threshold come from there, and a heap that grows a page at a time faults a page at a
/// time. The first look only records where the heap ends; a heap that shrank is followed
/// down, so that its regrowth (a new mapping, without the advice) is advised again.
#[cfg(target_os = "linux")]
fn advise_heap_growth() {
    // SAFETY: `sbrk(0)` reads the current program break and changes nothing.
    let brk = unsafe { libc::sbrk(0) } as usize;
    let advised = HEAP_ADVISED.load(Relaxed);
    let (next, range) = heap_step(advised, brk);
    if next == advised
        || HEAP_ADVISED
            .compare_exchange(advised, next, Relaxed, Relaxed)
            .is_err()
    {
        return;
    }
    if let Some((lo, n)) = range {
        // SAFETY: `[lo, lo + n)` lies between the program break of an earlier look and the
        // current one, so inside the heap, which glibc owns and keeps mapped; the advice
        // changes how its pages are backed, never their contents.
        unsafe {
            libc::madvise(lo as *mut libc::c_void, n, libc::MADV_HUGEPAGE);
        }
    }
}

/// One look at the heap: given the end of the part advised so far (0 before the first
/// look) and the program break, the new end and the range to advise, if any. The first
/// look, and a look at a heap that shrank below the advised end, only move the end to the
/// break rounded up to a huge page.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(crate) fn heap_step(advised: usize, brk: usize) -> (usize, Option<(usize, usize)>) {
    if advised == 0 || brk < advised {
        return (brk.saturating_add(HUGE_PAGE - 1) & !(HUGE_PAGE - 1), None);
    }
    match aligned_interior(advised, brk - advised) {
        Some((lo, n)) => (lo + n, Some((lo, n))),
        None => (advised, None),
    }
}

/// Whether the advice is on: `DDFLOW_HUGE_PAGES` unset or anything but `0`, `off`, `false`.
/// Read with `getenv`, which does not allocate (this runs inside the allocator).
#[cfg(target_os = "linux")]
fn enabled() -> bool {
    const UNKNOWN: u8 = 0;
    const ON: u8 = 1;
    const OFF: u8 = 2;
    static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
    match STATE.load(Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            // SAFETY: the name is a NUL-terminated literal; the value, if any, is read
            // before anything else can change the environment from this thread.
            let value = unsafe { libc::getenv(c"DDFLOW_HUGE_PAGES".as_ptr()) };
            let on = value.is_null() || {
                // SAFETY: `getenv` returned a NUL-terminated string.
                let v = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
                !matches!(v, b"0" | b"off" | b"false")
            };
            STATE.store(if on { ON } else { OFF }, Relaxed);
            on
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive reference: every huge-page boundary in the block, first and last.
    fn naive_interior(start: usize, len: usize) -> Option<(usize, usize)> {
        let first = start.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        let mut last = first;
        while last + HUGE_PAGE <= start + len {
            last += HUGE_PAGE;
        }
        (last > first).then(|| (first, last - first))
    }

    proptest! {
        #[test]
        fn interior_matches_naive(start in 0usize..(1 << 40), len in 0usize..(64 << 20)) {
            prop_assert_eq!(aligned_interior(start, len), naive_interior(start, len));
        }
    }

    #[test]
    fn heap_steps() {
        const H: usize = HUGE_PAGE;
        // The first look only records the break, rounded up.
        assert_eq!(heap_step(0, 3 * H + 5), (4 * H, None));
        // Growth within a huge page: nothing yet.
        assert_eq!(heap_step(4 * H, 4 * H + H / 2), (4 * H, None));
        // Growth past whole huge pages: those are advised, the partial one waits.
        assert_eq!(heap_step(4 * H, 7 * H + 9), (7 * H, Some((4 * H, 3 * H))));
        // A heap that shrank is followed down (its regrowth is a new, unadvised mapping).
        assert_eq!(heap_step(7 * H, 5 * H + 1), (6 * H, None));
        assert_eq!(heap_step(6 * H, 8 * H), (8 * H, Some((6 * H, 2 * H))));
    }

    #[test]
    fn interior_edges() {
        assert_eq!(aligned_interior(0, HUGE_PAGE), Some((0, HUGE_PAGE)));
        assert_eq!(aligned_interior(1, HUGE_PAGE), None);
        assert_eq!(
            aligned_interior(HUGE_PAGE - 16, 3 * HUGE_PAGE),
            Some((HUGE_PAGE, 2 * HUGE_PAGE))
        );
        assert_eq!(aligned_interior(usize::MAX - 10, 100), None);
    }

    /// On a kernel that offers huge pages on request, a large vector's mapping carries the
    /// advice (`hg` in its `VmFlags`); the engine's allocator is this crate's test allocator.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_large_allocation_is_advised() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        if !mode.is_ok_and(|m| m.contains("[madvise]") || m.contains("[always]")) {
            return; // nothing to observe: the kernel has no huge pages to give
        }
        if !enabled() {
            return; // turned off in this environment
        }
        let v = vec![0u8; 16 << 20];
        let (lo, _) = aligned_interior(v.as_ptr() as usize, v.len()).unwrap();
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut flags_of_block = None;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a <= lo && lo < b;
                        continue;
                    }
                }
            }
            if inside && line.starts_with("VmFlags:") {
                flags_of_block = Some(line.to_string());
            }
        }
        let flags = flags_of_block.expect("the vector's mapping is in smaps");
        assert!(flags.split_whitespace().any(|f| f == "hg"), "{flags}");
        drop(v);
    }
}
