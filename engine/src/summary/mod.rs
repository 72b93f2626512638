//! `summary.json` and `summary.md`: what a hunt of any target did, in one file each.
//!
//! One schema for every target, so that `pimdiff merge` can join the shards of any hunt and a
//! script can read any summary. What only one target reports goes into `details`; what only a
//! merge of several hunt outputs has (`merged_from`, a finding's `found_in`) is absent from a
//! single hunt's summary, which therefore reads the same as before merges existed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod declines;
pub mod merge;
#[cfg(feature = "schema")]
pub mod schema;

pub use self::declines::{Declines, DEFAULT_MARGIN};
use crate::finding::{is_unjudged, Kind, MinimizationStats, Verdict};
use crate::plan::Shard;

/// The summary files inside a hunt's `--out`.
pub const SUMMARY_JSON: &str = "summary.json";
pub const SUMMARY_MD: &str = "summary.md";

/// Why a sweep ended.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SweepEnd {
    /// Every case of the limit ran.
    Completed,
    /// The deadline passed.
    Deadline,
    /// A stop request (Ctrl-C, SIGTERM).
    Interrupted,
    /// More threads got stuck than the sweep abandons.
    TooManyStuck,
}

/// One finding of a hunt (one root cause, as far as triage can tell), as listed in the
/// summary.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSummary {
    /// The finding directory, relative to the hunt's `--out` (`findings/001-...`).
    pub dir: String,
    /// The final signature's display form.
    pub signature: String,
    /// The outcome kind of the finding's first case.
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::kind"))]
    pub outcome: Kind,
    /// The first (lowest) case index of the finding.
    pub case_index: u64,
    /// That case's generator seed (`plan::case_seed(seed, case_index)`).
    pub case_seed: u64,
    /// Failing cases of the hunt this finding stands for.
    pub occurrences: u64,
    /// The sweep's bucket keys (signatures before triage) merged into this finding.
    pub buckets: Vec<String>,
    /// Whether the saved case went through triage (minimization, and localization where the
    /// target has it); `false` for timeouts and for findings the hunt ran out of time for.
    pub triaged: bool,
    /// Whether the signature is a localized cause (rather than a symptom).
    pub localized: bool,
    /// Suspects named in `finding.json`.
    pub suspects: usize,
    /// How minimization went (`cut_short`: the saved case is larger than it could be).
    pub minimization: MinimizationStats,
    /// One line for people about the finding (the target's words), when it has one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// In a merged summary: every hunt output that had this finding, with its own directory
    /// and count (absent in a single hunt's summary).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub found_in: Vec<FoundIn>,
}

/// One hunt output's copy of a merged finding.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FoundIn {
    /// The hunt output directory, as given to `pimdiff merge`.
    pub input: String,
    /// The finding's directory there (relative to `input`).
    pub dir: String,
    /// That hunt's seed.
    pub seed: u64,
    /// The finding's first case index in that hunt.
    pub case_index: u64,
    /// Failing cases of that hunt the finding stood for.
    pub occurrences: u64,
}

/// One hunt a merged summary joins (`summary.json`'s `merged_from`).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MergedInput {
    /// The hunt output directory, as given to `pimdiff merge`.
    pub input: String,
    /// That hunt's `--seed`, `--shard`, `--cases`, `--duration` and cases run.
    pub seed: u64,
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::shard"))]
    pub shard: Shard,
    pub cases_requested: Option<u64>,
    pub duration_requested_s: Option<f64>,
    pub cases_run: u64,
    /// Its findings, before deduplication.
    pub findings: usize,
    pub interrupted: bool,
    /// Its compiler under test and `pimdiff` version.
    pub compiler: String,
    pub pimdiff_version: String,
}

/// `summary.json`: the whole hunt in one file.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HuntSummary {
    /// The `pimdiff` version that ran the hunt.
    pub pimdiff_version: String,
    /// The target hunted (`cases`, `pimcomp-nn`, `puma`).
    #[serde(default = "default_target")]
    pub target: String,
    /// The hunt's `--seed`.
    pub seed: u64,
    /// The hunt's `--shard i/n` (`"0/1"`: the whole index space).
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::shard"))]
    pub shard: Shard,
    /// `--cases N` when the hunt was limited by a case count.
    pub cases_requested: Option<u64>,
    /// `--duration` in seconds when the hunt was limited by time.
    pub duration_requested_s: Option<f64>,
    /// Why the sweep ended.
    pub end: SweepEnd,
    /// Whether Ctrl-C / SIGTERM ended the hunt early.
    pub interrupted: bool,
    /// Cases that ran to an outcome.
    pub cases_run: u64,
    /// Cases per outcome kind (kinds no case had are absent).
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::outcomes"))]
    pub outcomes: BTreeMap<Kind, u64>,
    /// The findings, one per root cause, in the order of their first case.
    pub findings: Vec<FindingSummary>,
    /// Cases whose run overran its stage limit (a `timeout` finding each).
    pub timeouts: u64,
    /// Cases on which pimdiff's own interpreter panicked (a bug of pimdiff itself).
    pub interpreter_panics: u64,
    /// Threads abandoned in a hung case (they end with the process).
    pub abandoned_threads: usize,
    /// Cases still running when the hunt was stopped (neither counted nor saved).
    pub unfinished_cases: Vec<u64>,
    /// The declined cases and the verdict on them.
    pub declines: Declines,
    /// Why the hunt is not clean, one sentence each: findings (exit 1), or what kept it from
    /// a verdict (exit 4); empty: exit 0 ([`HuntSummary::failure_reasons`]).
    pub failures: Vec<String>,
    /// Worker threads (`--jobs`).
    pub jobs: usize,
    /// The longest a case's stage may run before the watchdog abandons it, in seconds (0:
    /// the target has no watchdog).
    pub case_timeout_s: f64,
    /// Cases per second of the sweep (generation, compilation, run, check).
    pub cases_per_second: f64,
    /// Seconds spent running cases (the sweep).
    pub sweep_time_s: f64,
    /// Seconds from start to the summary, triage and saving included.
    pub wall_time_s: f64,
    /// The compiler under test, in words.
    pub compiler: String,
    /// The generator's configuration.
    pub generator: serde_json::Value,
    /// What only this hunt's target reports (a pipeline mode, say).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
    /// A merged summary's hunts (`pimdiff merge`), sorted by seed and shard; absent in a
    /// single hunt's summary. A merge's `seed` and `shard` are its first hunt's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<MergedInput>,
    /// Line and branch coverage of the compiler's own source (`hunt --coverage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::coverage"))]
    pub coverage: Option<crate::coverage::Coverage>,
}

impl HuntSummary {
    /// Cases the check could judge: those run, less the declined, unchecked and unfinished
    /// ones (`Kind`s of [`crate::finding::UNJUDGED_KINDS`]).
    pub fn judged_cases(&self) -> u64 {
        let unjudged: u64 = self
            .outcomes
            .iter()
            .filter(|(k, _)| is_unjudged(**k))
            .map(|(_, n)| n)
            .sum();
        self.cases_run.saturating_sub(unjudged)
    }

    /// What the hunt came to: findings; no verdict when the compiler declined more cases
    /// than the generator explains or no case could be judged at all; clean otherwise.
    pub fn verdict(&self) -> Verdict {
        if !self.findings.is_empty() {
            Verdict::Findings
        } else if self.declines.exceeded || self.judged_cases() == 0 {
            Verdict::NoVerdict
        } else {
            Verdict::Clean
        }
    }

    /// One sentence on why no case was judged, when none was (and the declines do not
    /// already say it).
    pub fn unjudged_explanation(&self) -> Option<String> {
        if self.judged_cases() > 0 || self.declines.exceeded {
            return None;
        }
        Some(if self.cases_run == 0 {
            "no case ran, so there is no verdict".to_string()
        } else {
            format!(
                "no case could be judged: all {} cases run were declined or could not be checked",
                self.cases_run
            )
        })
    }

    /// Why the hunt is not clean, one sentence each (what `failures` holds): findings first,
    /// then what kept it from a verdict.
    pub fn failure_reasons(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        if !self.findings.is_empty() {
            reasons.push(format!(
                "{} finding(s), saved under {}/",
                self.findings.len(),
                crate::finding::FINDINGS_DIR
            ));
        }
        reasons.extend(self.declines.explanation(self.cases_run));
        reasons.extend(self.unjudged_explanation());
        reasons
    }
}

fn default_target() -> String {
    "cases".to_string()
}

/// `summary.md`: the summary as a short Markdown document (also printed on stdout).
pub fn render_summary(s: &HuntSummary) -> String {
    use std::fmt::Write;
    let mut md = String::new();
    if s.merged_from.is_empty() {
        let _ = writeln!(
            md,
            "# pimdiff hunt --target {}: seed {}, shard {}",
            s.target, s.seed, s.shard
        );
    } else {
        let _ = writeln!(
            md,
            "# pimdiff merge --target {}: {} hunt output(s)",
            s.target,
            s.merged_from.len()
        );
    }
    let _ = writeln!(md);
    if !s.failures.is_empty() {
        let title = match s.verdict() {
            Verdict::NoVerdict => "NO VERDICT",
            _ => "FAILED",
        };
        let _ = writeln!(md, "**{title}**:");
        for f in &s.failures {
            let _ = writeln!(md, "- {f}");
        }
        let _ = writeln!(md);
    }
    let limit = match (s.cases_requested, s.duration_requested_s) {
        (Some(n), _) => format!("{n} cases"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => "-".into(),
    };
    let end = match s.end {
        SweepEnd::Completed => "",
        SweepEnd::Deadline => " (deadline)",
        SweepEnd::Interrupted => " (interrupted)",
        SweepEnd::TooManyStuck => " (ended early: too many hung cases)",
    };
    let _ = writeln!(md, "- limit: {limit}{end}");
    let _ = writeln!(md, "- cases run: {}", s.cases_run);
    let _ = writeln!(
        md,
        "- throughput: {:.0} cases/s on {} thread(s); sweep {:.2} s, wall time {:.2} s",
        s.cases_per_second, s.jobs, s.sweep_time_s, s.wall_time_s
    );
    let _ = writeln!(md, "- compiler: {}", s.compiler);
    let _ = writeln!(md, "- pimdiff {}", s.pimdiff_version);
    if s.timeouts > 0 || s.abandoned_threads > 0 {
        let _ = writeln!(
            md,
            "- **timeouts: {}** (limit {:.1} s per stage); {} hung thread(s) abandoned",
            s.timeouts, s.case_timeout_s, s.abandoned_threads
        );
    }
    if s.interpreter_panics > 0 {
        let _ = writeln!(
            md,
            "- **interpreter panics: {}** — a bug in pimdiff itself; please report it with the finding",
            s.interpreter_panics
        );
    }
    if !s.unfinished_cases.is_empty() {
        let _ = writeln!(
            md,
            "- still running when stopped (not counted): cases {:?}",
            s.unfinished_cases
        );
    }
    let _ = writeln!(md);
    merged_section(&mut md, s);
    outcomes_section(&mut md, s);
    declines_section(&mut md, s);
    findings_section(&mut md, s);
    coverage_section(&mut md, s);
    md
}

/// The compiler's coverage, when measured: the totals and the files no case entered.
fn coverage_section(md: &mut String, s: &HuntSummary) {
    use std::fmt::Write;
    let Some(c) = &s.coverage else {
        return;
    };
    let pct = |hit: u64, total: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * hit as f64 / total as f64
        }
    };
    let t = &c.totals;
    let _ = writeln!(md, "\n## Coverage of the compiler's source ({})\n", c.tool);
    let _ = writeln!(
        md,
        "- lines: {} of {} ({:.1}%)",
        t.lines_hit,
        t.lines_total,
        pct(t.lines_hit, t.lines_total)
    );
    let _ = writeln!(
        md,
        "- branches: {} of {} ({:.1}%)",
        t.branches_hit,
        t.branches_total,
        pct(t.branches_hit, t.branches_total)
    );
    if let Some(e) = c.edges_hit {
        let _ = writeln!(md, "- distinct edges entered: {e}");
    }
    if c.never_entered.is_empty() {
        let _ = writeln!(md, "- every source file was entered");
    } else {
        let _ = writeln!(md, "- never entered ({}):", c.never_entered.len());
        for f in &c.never_entered {
            let _ = writeln!(md, "  - `{f}`");
        }
    }
}

/// A merged summary's hunts, one row each.
fn merged_section(md: &mut String, s: &HuntSummary) {
    use std::fmt::Write;
    if s.merged_from.is_empty() {
        return;
    }
    let _ = writeln!(md, "## Merged from\n");
    let _ = writeln!(md, "| hunt output | seed | shard | cases run | findings |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for m in &s.merged_from {
        let _ = writeln!(
            md,
            "| `{}` | {} | {} | {}{} | {} |",
            m.input.replace('|', "\\|"),
            m.seed,
            m.shard,
            m.cases_run,
            if m.interrupted { " (interrupted)" } else { "" },
            m.findings
        );
    }
    let _ = writeln!(md);
}

fn outcomes_section(md: &mut String, s: &HuntSummary) {
    use std::fmt::Write;
    let _ = writeln!(md, "## Outcomes\n");
    let _ = writeln!(md, "| outcome | cases |");
    let _ = writeln!(md, "|---|---|");
    for (kind, n) in &s.outcomes {
        let _ = writeln!(md, "| {kind} | {n} |");
    }
    let _ = writeln!(md);
}

fn declines_section(md: &mut String, s: &HuntSummary) {
    use std::fmt::Write;
    let d = &s.declines;
    if d.max_share >= 1.0 {
        // A target whose declines never fail the hunt: the check could not judge them.
        let _ = writeln!(
            md,
            "## Unsupported (not checked): {} of {} ({:.1} %)\n",
            d.declined,
            s.cases_run,
            100.0 * d.share
        );
    } else {
        let _ = writeln!(
            md,
            "## Declined: {} of {} ({:.1} %, allowed {:.1} %: at most {}){}\n",
            d.declined,
            s.cases_run,
            100.0 * d.share,
            100.0 * d.max_share,
            d.allowed,
            if d.exceeded { " — TOO MANY" } else { "" }
        );
    }
    if !d.by_reason.is_empty() {
        let _ = writeln!(md, "| reason | cases |");
        let _ = writeln!(md, "|---|---|");
        for (reason, n) in &d.by_reason {
            let _ = writeln!(md, "| {} | {n} |", reason.replace('|', "\\|"));
        }
        let _ = writeln!(md);
    }
}

fn findings_section(md: &mut String, s: &HuntSummary) {
    use std::fmt::Write;
    let _ = writeln!(md, "## Findings: {}\n", s.findings.len());
    if s.findings.is_empty() {
        let _ = writeln!(md, "None.");
        return;
    }
    let _ = writeln!(
        md,
        "| directory | signature | first case | failing cases | size (original → saved) |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for f in &s.findings {
        let m = &f.minimization;
        let state = if !f.triaged {
            " (not minimized)"
        } else if m.cut_short {
            " (cut short)"
        } else {
            ""
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | k={} (seed {}) | {} | {} → {}{} |",
            f.dir,
            f.signature.replace('|', "\\|"),
            f.case_index,
            f.case_seed,
            f.occurrences,
            m.original_size,
            m.minimized_size,
            state
        );
    }
    let _ = writeln!(md);
    for f in s.findings.iter().filter(|f| !f.detail.is_empty()) {
        let _ = writeln!(md, "- `{}`: {}", f.dir, f.detail);
    }
    for f in s.findings.iter().filter(|f| !f.found_in.is_empty()) {
        let places: Vec<String> = f
            .found_in
            .iter()
            .map(|p| format!("`{}/{}` ({})", p.input, p.dir, p.occurrences))
            .collect();
        let _ = writeln!(md, "- `{}` found in {}", f.dir, places.join(", "));
    }
    if s.findings
        .iter()
        .any(|f| !f.detail.is_empty() || !f.found_in.is_empty())
    {
        let _ = writeln!(md);
    }
    let cut = s
        .findings
        .iter()
        .filter(|f| f.triaged && f.minimization.cut_short)
        .count();
    if cut > 0 && s.cases_per_second > 0.0 {
        let _ = writeln!(
            md,
            "Triage of {cut} finding(s) was cut short (a case took about {:.2} s to check per \
             thread): give it more time with `--minimize-time`, e.g. `--minimize-time 5m`.\n",
            s.jobs as f64 / s.cases_per_second
        );
    }
    let _ = writeln!(md, "Reproduce one with `pimdiff repro OUT/findings/<dir>`.");
}
