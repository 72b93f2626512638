//! Shared by the tests that compare hunts of a real compiler: a hunt whose minimization ends
//! by a step cap, not the clock, so two hunts of one seed agree however loaded the machine is.

use std::path::Path;
use std::time::Duration;

use pimdiff::engine::{HuntConfig, Limit, MinimizeConfig, Shard};

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
