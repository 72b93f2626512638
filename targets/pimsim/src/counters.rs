//! The in-repo compiler's own coverage as a guided hunt's feedback (feature
//! `coverage-counters`): the LLVM profile runtime's counters, read in-process.
//!
//! A crate compiled with `-C instrument-coverage` counts into a section of counters that
//! compiler-rt's profile runtime (linked by rustc into such a binary) exposes as
//! `__llvm_profile_begin_counters` / `__llvm_profile_end_counters`, and zeroes with
//! `__llvm_profile_reset_counters`. Per case: reset, run, collect every counter that moved,
//! as id `counter × 16 + hit-count bucket` (so a loop that runs more often is new feedback, as
//! libFuzzer's hit-count buckets make it). Rust's coverage instrumentation counts some
//! branches by expressions over other counters rather than by a counter of their own; the
//! buckets of the counters they are computed from move with them, most of the time.
//!
//! The counters are process-wide: only code that runs during the case should be instrumented.
//! `scripts/build-coverage-counters.sh` instruments the compiler crate (and the binary that
//! links the runtime) alone, through a `RUSTC_WRAPPER`. A run serializes on one lock, so with
//! `--jobs 1` a case's counters are its own, except when the early saver compiles a finding
//! on its own thread meanwhile (its counts then leak into the case that runs beside it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use pimdiff_engine::coverage::edges::{hit_bucket, Edges};

extern "C" {
    fn __llvm_profile_begin_counters() -> *mut u8;
    fn __llvm_profile_end_counters() -> *mut u8;
    fn __llvm_profile_reset_counters();
}

/// One case at a time resets, runs and collects.
static RUN: Mutex<()> = Mutex::new(());

/// Runs `f` between a reset of the counters and their collection.
pub fn around<R>(f: impl FnOnce() -> R) -> (R, Option<Edges>) {
    let _one = RUN.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: the runtime's functions take no arguments and touch only its own section.
    unsafe { __llvm_profile_reset_counters() };
    let result = f();
    (result, Some(collect()))
}

/// The counters that moved since the last reset, with their buckets.
fn collect() -> Edges {
    // SAFETY: begin..end is the runtime's counter section, 8-byte counters, alive for the
    // whole process; other threads may increment them meanwhile, so they are read atomically.
    let (begin, end) = unsafe {
        (
            __llvm_profile_begin_counters() as *const AtomicU64,
            __llvm_profile_end_counters() as *const AtomicU64,
        )
    };
    let n = (end as usize).saturating_sub(begin as usize) / std::mem::size_of::<u64>();
    let mut ids = Vec::new();
    for i in 0..n {
        // SAFETY: `i` is inside the section (see above).
        let count = unsafe { &*begin.add(i) }.load(Ordering::Relaxed);
        if count > 0 {
            let id = u32::try_from(i).unwrap_or(u32::MAX >> 4);
            ids.push(id.saturating_mul(16) | hit_bucket(count));
        }
    }
    Edges::new(ids)
}
