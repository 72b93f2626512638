//! Shared by the tests that hunt a real compiler: a hunt whose minimization ends by a step
//! cap, not the clock, so two hunts of one seed agree however loaded the machine is; and what
//! a coverage hunt's report must satisfy whichever compiler it measured.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use pimdiff::coverage::{Coverage, Totals};
use pimdiff::engine::{
    run_hunt, Edges, HuntConfig, HuntControl, HuntSummary, Limit, MinimizeConfig, Shard, Target,
};

/// `cases` cases of `seed` on 2 jobs into `out`, minimization capped at 3 steps.
pub fn step_capped(out: &Path, seed: u64, cases: u64) -> HuntConfig {
    HuntConfig {
        seed,
        limit: Limit::Cases(cases),
        jobs: 2,
        shard: Shard::ALL,
        minimize: MinimizeConfig {
            time_budget: Duration::from_secs(3600),
            max_steps: 3,
        },
        max_unsupported: None,
        out: out.to_path_buf(),
    }
}

/// The hunt of `target` under `cfg`, which must end with a summary.
pub fn run<T: Target>(cfg: &HuntConfig, target: T) -> HuntSummary {
    run_hunt(cfg, Arc::new(target), &HuntControl::default()).unwrap()
}

/// What a coverage hunt into `out` must report whichever compiler it measured: gcov's
/// totals, each within its bound and nonzero, equal to the sums over the files; files never
/// entered with no line run; at least the edges one of its cases (`case_edges`) entered; and
/// the coverage section of `summary.md`.
pub fn assert_consistent_coverage(c: &Coverage, case_edges: &Edges, out: &Path) {
    assert_eq!(c.tool, "gcov");
    let t = c.totals;
    assert!(t.lines_hit > 0 && t.lines_hit <= t.lines_total, "{t:?}");
    assert!(
        t.branches_hit > 0 && t.branches_hit <= t.branches_total,
        "{t:?}"
    );
    let sum = |f: fn(&Totals) -> u64| c.files.iter().map(|x| f(&x.totals)).sum::<u64>();
    assert_eq!(sum(|t| t.lines_total), t.lines_total);
    assert_eq!(sum(|t| t.lines_hit), t.lines_hit);
    assert_eq!(sum(|t| t.branches_total), t.branches_total);
    assert_eq!(sum(|t| t.branches_hit), t.branches_hit);
    for f in &c.never_entered {
        let file = c.files.iter().find(|x| &x.file == f).unwrap();
        assert_eq!(file.totals.lines_hit, 0, "{f}");
    }
    assert!(c.edges_hit.unwrap() >= case_edges.len() as u64);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("## Coverage of the compiler's source (gcov)"),
        "{md}"
    );
}
