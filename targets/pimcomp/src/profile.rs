//! Where a PIMCOMP-NN hunt's time goes, per phase, when `PIMDIFF_PROFILE=1` is set: the
//! compiler's layout, run and output reading, the check, the cross-pipeline comparison,
//! minimization and writing, summed over every worker and printed to stderr at the end of the
//! hunt. Why an environment variable and not a flag: it is a measuring instrument for people
//! changing the hunt (it is how the fork server was chosen), not part of what a hunt reports,
//! and off it costs one relaxed load per phase.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// A phase of one PIMCOMP-NN case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The per-case tree: `config.json`, the model, the output directories.
    Layout,
    /// From asking for the compile until it ended (process start or fork included).
    Compile,
    /// Reading the compile's outcome and the check of its program (simulation, reference).
    Check,
    /// The comparison of the two pipelines' observations.
    Cross,
    /// One finding's minimization (its compiles and checks are also counted above).
    Minimize,
    /// Writing one finding directory.
    Write,
}

const PHASES: [Phase; 6] = [
    Phase::Layout,
    Phase::Compile,
    Phase::Check,
    Phase::Cross,
    Phase::Minimize,
    Phase::Write,
];

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Layout => "layout",
            Phase::Compile => "compile",
            Phase::Check => "check",
            Phase::Cross => "cross",
            Phase::Minimize => "minimize",
            Phase::Write => "write",
        }
    }
}

struct Totals {
    nanos: [AtomicU64; 6],
    count: [AtomicU64; 6],
}

static TOTALS: Totals = Totals {
    nanos: [const { AtomicU64::new(0) }; 6],
    count: [const { AtomicU64::new(0) }; 6],
};

fn enabled() -> bool {
    static ON: OnceLock<AtomicBool> = OnceLock::new();
    ON.get_or_init(|| {
        AtomicBool::new(std::env::var_os("PIMDIFF_PROFILE").is_some_and(|v| v == "1"))
    })
    .load(Ordering::Relaxed)
}

/// Runs `f`, adding its wall time to `phase` when profiling is on.
pub fn timed<R>(phase: Phase, f: impl FnOnce() -> R) -> R {
    if !enabled() {
        return f();
    }
    let start = Instant::now();
    let r = f();
    let i = phase as usize;
    TOTALS.nanos[i].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    TOTALS.count[i].fetch_add(1, Ordering::Relaxed);
    r
}

/// The table of totals so far (phase, calls, seconds summed over workers, mean ms).
pub fn table() -> String {
    let mut out = String::from("phase      calls  seconds  mean-ms\n");
    for p in PHASES {
        let i = p as usize;
        let n = TOTALS.count[i].load(Ordering::Relaxed);
        let s = TOTALS.nanos[i].load(Ordering::Relaxed) as f64 / 1e9;
        let mean = if n > 0 { s * 1e3 / n as f64 } else { 0.0 };
        out.push_str(&format!("{:<10} {n:>5} {s:>8.2} {mean:>8.1}\n", p.name()));
    }
    out
}

/// Prints [`table`] to stderr when profiling is on.
pub fn report() {
    if enabled() {
        eprint!("PIMCOMP-NN hunt profile (PIMDIFF_PROFILE=1):\n{}", table());
    }
}
