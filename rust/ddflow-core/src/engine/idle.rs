//! What an engine gives back when a `run_until` completes: per-step buffers that outgrew a
//! small job, and the free memory the C allocator keeps.
//!
//! Two things keep memory resident after a step that needed it and no longer does:
//! * each thread's radix sorter (`sort::with_thread_sorter`) keeps its buffers for the next
//!   sort, sized by the largest batch it has sorted (up to 64 MB);
//! * glibc's `malloc` keeps freed memory inside its heap, and its dynamic mmap threshold
//!   moves large blocks into that heap after the first large free, so a step's transient
//!   buffers stay in the resident set after they are freed.
//!
//! When `run_until` reaches its time, [`Engine::release_idle`] frees the sorter buffers above
//! [`IDLE_SORTER_KEEP_BYTES`] on every thread that ran workers, and, when at least
//! [`TRIM_MIN_BYTES`] of the Rust heap were freed since the last trim, returns the free
//! pages to the system (`malloc_trim`). Both are cheap next to a step: a check of a counter,
//! and a trim only after megabytes were freed.

use super::Engine;
use crate::memory;
use crate::sort;

/// Sorter buffers a thread keeps between `run_until` calls.
pub const IDLE_SORTER_KEEP_BYTES: usize = 4 << 20;

/// Bytes freed since the peak that make an idle engine trim the allocator.
pub const TRIM_MIN_BYTES: usize = 8 << 20;

impl Engine {
    /// Frees the buffers an idle engine need not keep (see the module comment).
    pub(super) fn release_idle(&mut self) {
        sort::release_thread_sorter_above(IDLE_SORTER_KEEP_BYTES);
        if self.workers.len() > 1 {
            rayon::broadcast(|_| sort::release_thread_sorter_above(IDLE_SORTER_KEEP_BYTES));
        }
        trim_allocator(TRIM_MIN_BYTES);
    }
}

/// Returns the allocator's free pages to the system when at least `min_freed` bytes of the
/// Rust heap were freed since its peak (the peak restarts then); whether it trimmed.
pub fn trim_allocator(min_freed: usize) -> bool {
    let (peak, live) = (memory::peak_bytes(), memory::live_bytes());
    if peak.saturating_sub(live) < min_freed {
        return false;
    }
    memory::reset_peak();
    release_free_pages();
    true
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_pages() {
    extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: glibc's malloc_trim takes no pointers and may be called from any thread.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_pages() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_only_after_enough_was_freed() {
        assert!(!trim_allocator(usize::MAX));
        // Other tests run engines (which trim and restart the peak) on other threads, so
        // only what holds whatever they do is checked: a live block counts in the peak, to
        // within what other threads have counted but not yet flushed (`CHUNK` each, as in
        // `memory`'s own test of a large allocation).
        let block = vec![1u8; 32 << 20];
        std::hint::black_box(&block);
        if memory::live_bytes() > 0 {
            let peak = memory::peak_bytes();
            assert!(
                peak + 64 * memory::CHUNK as usize >= 32 << 20,
                "peak {peak}"
            );
        }
        drop(block);
        trim_allocator(16 << 20);
        assert!(!trim_allocator(usize::MAX));
    }
}
