//! What an engine gives back when a `run_until` completes: per-step buffers that outgrew a
//! small job, and the free memory the C allocator keeps.
//!
//! Three things keep memory resident after a step that needed it and no longer does:
//! * each thread's radix sorter (`sort::with_thread_sorter`) keeps its buffers for the next
//!   sort, sized by the largest batch it has sorted (up to 64 MB);
//! * operators keep per-activation buffers for the next activation (a `reduce`'s work list,
//!   desired groups and histories), sized by the largest chunk of keys it processed;
//! * glibc's `malloc` keeps freed memory inside its heap, and its dynamic mmap threshold
//!   moves large blocks into that heap after the first large free, so a step's transient
//!   buffers stay in the resident set after they are freed.
//!
//! When `run_until` reaches its time, [`Engine::release_idle`] frees operator buffers above
//! [`IDLE_SCRATCH_KEEP_BYTES`] and the sorter buffers above [`IDLE_SORTER_KEEP_BYTES`] on
//! every thread that ran workers, and returns the free pages
//! to the system (`malloc_trim`) when at least [`TRIM_MIN_BYTES`] of the Rust heap were
//! freed since the last trim, or when the process' resident memory beyond the Rust heap
//! grew by [`TRIM_SLACK_BYTES`] since its least after the last trim ([`Slack`]). The second
//! catches what many steps free a little at a time: a stream whose state grows and shrinks
//! with its windows (`benches/soak.py`: hourly windows closing every 36 ticks) frees a few
//! megabytes per step, never 8 at once, and glibc kept the freed pages resident between
//! windows: RSS swung by 15 MB for 7 MB of live heap swing. Both are cheap next to a step:
//! a check of a counter, a look at `/proc/self/statm` at most every [`SLACK_CHECK_EVERY`],
//! and a trim (about 0.3 ms of CPU for a 150 MB process) only after megabytes were freed,
//! once the process has spent [`TRIM_COST_SHARE`] times the previous trim's CPU time since
//! it.
//!
//! Both sides of that rule are CPU time, not wall time: on a loaded machine a trim that is
//! preempted takes 10-100 ms of wall time for the same 0.3 ms of work, and a wall-clock
//! rule then held the next trim back for up to a second (20 ticks of `benches/soak.py`,
//! 11 MB of freed pages resident meanwhile) without saving any work.

use super::Engine;
use crate::memory;
use crate::sort;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Sorter buffers a thread keeps between `run_until` calls.
pub const IDLE_SORTER_KEEP_BYTES: usize = 1 << 20;

/// Per-activation buffers an operator keeps between `run_until` calls. The 1k/2k BFS's
/// `min` grows 1-2.5 MB of them at batches of 1,000, kept (freed from 1 MB on, every
/// `run_until` regrew them: twice the system time, page faults and the trims that follow),
/// and 7-13 MB at batches of 10,000, freed.
pub const IDLE_SCRATCH_KEEP_BYTES: usize = 4 << 20;

/// Bytes freed since the peak that make an idle engine trim the allocator.
pub const TRIM_MIN_BYTES: usize = 8 << 20;

/// Growth of the resident memory beyond the Rust heap that makes an idle engine trim.
pub const TRIM_SLACK_BYTES: usize = 2 << 20;

/// How often, at most, an idle engine reads the resident memory. A read of
/// `/proc/self/statm` costs a few microseconds: every millisecond it was 2% of the CPU of
/// single updates each run to completion (the 1k/2k BFS's latency loop, a `run_until` per
/// 170 us); a trim due is then found at most 10 ms later.
pub const SLACK_CHECK_EVERY: Duration = Duration::from_millis(10);

/// A trim for slack waits until the process has spent at least this many times the
/// previous trim's CPU time since it (trims then take at most a sixth of the CPU time).
pub const TRIM_COST_SHARE: u32 = 5;

impl Engine {
    /// Frees the buffers an idle engine need not keep (see the module comment).
    pub(super) fn release_idle(&mut self) {
        for op in self.workers.iter_mut().flat_map(|w| w.ops.iter_mut()) {
            op.release_scratch(IDLE_SCRATCH_KEEP_BYTES);
        }
        sort::release_thread_sorter_above(IDLE_SORTER_KEEP_BYTES);
        if self.workers.len() > 1 {
            rayon::broadcast(|_| sort::release_thread_sorter_above(IDLE_SORTER_KEEP_BYTES));
        }
        if !trim_allocator(TRIM_MIN_BYTES) {
            trim_slack();
        }
    }
}

/// When the process' resident memory beyond the live Rust heap (its *slack*: pages the
/// allocators keep after frees, and Python's own objects) has grown by [`TRIM_SLACK_BYTES`]
/// since its least value after the last trim, a trim is due.
#[derive(Debug)]
pub struct Slack {
    /// The least slack seen since the last trim (`None` before the first look).
    least: Option<usize>,
    checked: Option<Instant>,
    /// The process' CPU time when the last trim ended.
    trimmed: Option<Duration>,
    /// The CPU time the last trim took.
    cost: Duration,
}

impl Slack {
    /// Nothing seen yet.
    pub const fn new() -> Slack {
        Slack {
            least: None,
            checked: None,
            trimmed: None,
            cost: Duration::ZERO,
        }
    }

    /// Whether to read the resident memory at `now` (at most every [`SLACK_CHECK_EVERY`]).
    pub fn look(&mut self, now: Instant) -> bool {
        if self
            .checked
            .is_some_and(|c| now.duration_since(c) < SLACK_CHECK_EVERY)
        {
            return false;
        }
        self.checked = Some(now);
        true
    }

    /// Whether a trim is due with `slack` bytes resident beyond the live heap when the
    /// process has used `cpu` of CPU time: the slack grew by [`TRIM_SLACK_BYTES`] from its
    /// least since the last trim, and the process has spent at least [`TRIM_COST_SHARE`]
    /// times that trim's CPU time since it.
    pub fn due(&mut self, cpu: Duration, slack: usize) -> bool {
        let least = self.least.map_or(slack, |l| l.min(slack));
        self.least = Some(least);
        let cheap = self
            .trimmed
            .is_none_or(|t| cpu.saturating_sub(t) >= self.cost * TRIM_COST_SHARE);
        slack >= least + TRIM_SLACK_BYTES && cheap
    }

    /// A trim took `cost` of CPU time and ended when the process had used `cpu`, leaving
    /// `slack` bytes beyond the live heap.
    pub fn trimmed(&mut self, cpu: Duration, cost: Duration, slack: usize) {
        self.trimmed = Some(cpu);
        self.cost = cost;
        self.least = Some(slack);
    }
}

impl Default for Slack {
    fn default() -> Self {
        Slack::new()
    }
}

/// The process' slack, shared by its engines (the allocator is the process').
static SLACK: Mutex<Slack> = Mutex::new(Slack::new());

/// Trims the allocator when the resident slack is due (see [`Slack`]); whether it trimmed.
/// Does nothing while another thread checks, or where the resident size cannot be read.
pub fn trim_slack() -> bool {
    let Ok(mut s) = SLACK.try_lock() else {
        return false;
    };
    let now = Instant::now();
    if !s.look(now) {
        return false;
    }
    let Some(slack) = resident_slack() else {
        return false;
    };
    if !s.due(cpu_time(Clock::Process), slack) {
        return false;
    }
    memory::reset_peak();
    let start = cpu_time(Clock::Thread);
    release_free_pages();
    let cost = cpu_time(Clock::Thread).saturating_sub(start);
    s.trimmed(
        cpu_time(Clock::Process),
        cost,
        resident_slack().unwrap_or(0),
    );
    true
}

/// Which CPU clock [`cpu_time`] reads.
#[derive(Clone, Copy, Debug)]
enum Clock {
    /// Every thread of the process.
    Process,
    /// The calling thread (a trim runs on it alone).
    Thread,
}

/// CPU time used so far by the process or the calling thread (`clock_gettime`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn cpu_time(clock: Clock) -> Duration {
    #[repr(C)]
    struct Timespec {
        tv_sec: std::ffi::c_long,
        tv_nsec: std::ffi::c_long,
    }
    extern "C" {
        fn clock_gettime(clock: std::ffi::c_int, ts: *mut Timespec) -> std::ffi::c_int;
    }
    const CLOCK_PROCESS_CPUTIME_ID: std::ffi::c_int = 2;
    const CLOCK_THREAD_CPUTIME_ID: std::ffi::c_int = 3;
    let id = match clock {
        Clock::Process => CLOCK_PROCESS_CPUTIME_ID,
        Clock::Thread => CLOCK_THREAD_CPUTIME_ID,
    };
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    if unsafe { clock_gettime(id, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time: unknown off Linux with glibc, where the resident size is unknown too (so
/// [`trim_slack`] never gets as far as asking).
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn cpu_time(_: Clock) -> Duration {
    Duration::ZERO
}

/// The process' resident bytes beyond the live Rust heap (`None` where unknown).
fn resident_slack() -> Option<usize> {
    Some(resident_bytes()?.saturating_sub(memory::live_bytes()))
}

/// The process' resident set size (`/proc/self/statm`), `None` where it cannot be read.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn resident_bytes() -> Option<usize> {
    extern "C" {
        fn sysconf(name: std::ffi::c_int) -> std::ffi::c_long;
    }
    const SC_PAGESIZE: std::ffi::c_int = 30;
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = text.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: glibc's sysconf takes no pointers.
    let page = usize::try_from(unsafe { sysconf(SC_PAGESIZE) }).ok()?;
    Some(pages * page)
}

/// The process' resident set size: unknown off Linux with glibc.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn resident_bytes() -> Option<usize> {
    None
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

    #[test]
    fn slack_is_due_after_it_grew_and_the_process_spent_enough_cpu_since_the_last_trim() {
        let t0 = Instant::now();
        let cpu = Duration::from_millis;
        let mut s = Slack::new();
        assert!(s.look(t0));
        let soon = t0 + SLACK_CHECK_EVERY / 2;
        assert!(!s.look(soon), "looked again within SLACK_CHECK_EVERY");
        assert!(s.look(t0 + SLACK_CHECK_EVERY));
        let (base, step) = (100 << 20, TRIM_SLACK_BYTES);
        assert!(!s.due(cpu(10), base), "the first look only sets the least");
        assert!(!s.due(cpu(20), base + step - 1));
        assert!(
            !s.due(cpu(30), base - step),
            "a smaller slack lowers the least"
        );
        assert!(s.due(cpu(40), base), "a step above the least");
        // A trim of 5 ms of CPU ending at 45 ms leaves `base`: the next one is due a step
        // above that, once the process has spent 25 ms more, however long the wall clock.
        s.trimmed(cpu(45), cpu(5), base);
        assert!(!s.due(cpu(60), base + step - 1));
        assert!(
            !s.due(cpu(65), base + 4 * step),
            "within 5 times the last trim's 5 ms of CPU"
        );
        assert!(s.due(cpu(70), base + 4 * step));
    }

    #[test]
    fn cpu_clocks_move_forward_with_work() {
        let (p0, t0) = (cpu_time(Clock::Process), cpu_time(Clock::Thread));
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let (p1, t1) = (cpu_time(Clock::Process), cpu_time(Clock::Thread));
        assert!(p1 >= p0 && t1 >= t0, "{p0:?} -> {p1:?}, {t0:?} -> {t1:?}");
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(t1 > t0, "the thread's CPU clock did not move: {t0:?}");
            assert!(
                p1 >= t1,
                "the process used less CPU ({p1:?}) than one thread ({t1:?})"
            );
        }
    }

    #[test]
    fn resident_bytes_cover_the_live_heap() {
        if let Some(rss) = resident_bytes() {
            let block = vec![1u8; 16 << 20];
            std::hint::black_box(&block);
            let with = resident_bytes().expect("read once");
            assert!(with >= 16 << 20, "{rss} before, {with} with a 16 MB block");
        }
    }
}
