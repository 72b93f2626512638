//! Merging the outputs of several hunts of one target into one: the shards of a hunt, several
//! nights, or earlier merges (`pimdiff merge`).
//!
//! Sharded hunts split the case space of one seed without talking to each other, so the same
//! bug is found by several shards, each with its own minimized copy; a night's report must name
//! it once. [`merge`] reads every input's `summary.json` and the `finding.json` of each finding
//! it lists, deduplicates findings by signature, copies one representative directory per
//! finding, adds up the counts and writes one `summary.json` and `summary.md`, exactly as a
//! hunt would have (the same [`HuntSummary`] schema, with `merged_from` and each finding's
//! `found_in` filled in).
//!
//! **Representative.** Of the copies of one finding, the one kept is the best reproduction:
//! a triaged copy before an untriaged one, then the smallest minimized size, then the lowest
//! case seed and the first input given. So the choice does not depend on which shard
//! happened to finish first, and merging A with B gives the same findings as B with A.
//!
//! **Counts.** Cases run, outcome counts, declines (by reason), timeouts, panics and
//! occurrences are sums; the decline verdict is judged again on the sums, with the allowed
//! share the inputs' case-weighted mean (their common share when they agree); times are summed
//! (machine time). Merged findings are numbered by their first occurrence (seed, then case
//! index).
//!
//! **Refused.** Inputs of different targets (their outcome counts and decline shares mean
//! different things), and two inputs that ran the same cases (the same seed with shards that
//! share case indices: every count would be added twice). A missing or malformed
//! `summary.json` or `finding.json`, or a finding directory that is not `findings/<name>`,
//! names its file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use pimdiff_input::{InputError, Limit};

use super::{
    render_summary, Declines, FindingSummary, FoundIn, HuntSummary, MergedInput, SweepEnd,
    SUMMARY_JSON, SUMMARY_MD,
};
use crate::finding::{relative_dir, slug, to_json_text, FindingMeta, FINDINGS_DIR, FINDING_JSON};
use crate::plan::Shard;

/// Largest `summary.json` a merge reads.
pub const MAX_SUMMARY_JSON_BYTES: Limit = Limit {
    name: "MAX_SUMMARY_JSON_BYTES",
    bytes: 64 << 20,
};
/// Largest `finding.json` a merge reads.
pub const MAX_FINDING_JSON_BYTES: Limit = Limit {
    name: "MAX_FINDING_JSON_BYTES",
    bytes: 16 << 20,
};

/// Why a merge was refused. Each names the file or the inputs it is about.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("no hunt output to merge")]
    NoInputs,
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: InputError },
    #[error("{}: {message}", path.display())]
    Malformed { path: PathBuf, message: String },
    #[error(
        "cannot merge hunts of different targets: {} is --target {first_target}, {} is --target {second_target}",
        first.display(),
        second.display()
    )]
    MixedTargets {
        first: PathBuf,
        first_target: String,
        second: PathBuf,
        second_target: String,
    },
    #[error(
        "{first} and {second} ran the same cases (seed {seed}, shards {first_shard} and {second_shard}): their counts would be added twice"
    )]
    Overlap {
        first: String,
        second: String,
        seed: u64,
        first_shard: Shard,
        second_shard: Shard,
    },
    #[error("{}: already holds findings; merge into a new directory", path.display())]
    OutNotEmpty { path: PathBuf },
    #[error(transparent)]
    Write(#[from] pimdiff_atomic::Error),
}

/// One hunt output as read: its summary and the `finding.json` of each finding it lists.
#[derive(Clone, Debug)]
pub struct HuntOutput {
    pub dir: PathBuf,
    pub summary: HuntSummary,
    /// Parallel to `summary.findings`.
    pub metas: Vec<FindingMeta>,
    /// Directories under `findings/` the summary does not list (left out of a merge).
    pub unlisted: Vec<String>,
}

/// What a merge wrote.
#[derive(Clone, Debug)]
pub struct Merged {
    pub summary: HuntSummary,
    /// Things worth a warning that did not stop the merge (unlisted finding directories).
    pub warnings: Vec<String>,
}

/// Reads a hunt output directory: `summary.json` and every listed finding's `finding.json`,
/// bounded and checked (the findings are identified by the summary's signatures).
pub fn read_output(dir: &Path) -> Result<HuntOutput, MergeError> {
    let summary_path = dir.join(SUMMARY_JSON);
    let summary: HuntSummary = read_json(&summary_path, MAX_SUMMARY_JSON_BYTES)?;
    let mut metas = Vec::with_capacity(summary.findings.len());
    let mut listed = BTreeSet::new();
    for f in &summary.findings {
        let name = finding_name(&f.dir).ok_or_else(|| MergeError::Malformed {
            path: summary_path.clone(),
            message: format!("finding directory {:?} is not {FINDINGS_DIR}/<name>", f.dir),
        })?;
        listed.insert(name.to_string());
        let meta_path = dir.join(&f.dir).join(FINDING_JSON);
        // The summary's signature is the finding's identity: an untriaged finding's
        // `finding.json` may still carry the symptom its cause was grouped from.
        let meta: FindingMeta = read_json(&meta_path, MAX_FINDING_JSON_BYTES)?;
        metas.push(meta);
    }
    let unlisted = unlisted_dirs(&dir.join(FINDINGS_DIR), &listed)?;
    Ok(HuntOutput {
        dir: dir.to_path_buf(),
        summary,
        metas,
        unlisted,
    })
}

/// Merges the hunt outputs `inputs` into `out` (see the module docs), which must not hold
/// findings yet; returns the merged summary, also written as `out/summary.json` and
/// `out/summary.md`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::NoInputs);
    }
    let outputs = inputs
        .iter()
        .map(|d| read_output(d))
        .collect::<Result<Vec<_>, _>>()?;
    check_targets(&outputs)?;
    let hunts = merged_inputs(&outputs);
    check_overlap(&hunts)?;
    let groups = group_findings(&outputs);
    let findings_dir = out.join(FINDINGS_DIR);
    prepare_out(&findings_dir)?;
    let mut findings = Vec::with_capacity(groups.len());
    for (number, group) in groups.iter().enumerate() {
        findings.push(save_group(&outputs, group, number + 1, &findings_dir)?);
    }
    let mut summary = merged_summary(&outputs, hunts, findings);
    summary.failures = summary.failure_reasons();
    pimdiff_atomic::write_file(&out.join(SUMMARY_JSON), to_json_text(&summary).as_bytes())?;
    pimdiff_atomic::write_file(&out.join(SUMMARY_MD), render_summary(&summary).as_bytes())?;
    let warnings = outputs
        .iter()
        .flat_map(|o| {
            o.unlisted.iter().map(move |name| {
                format!(
                    "{}: {FINDINGS_DIR}/{name} is not listed in {SUMMARY_JSON}; left out",
                    o.dir.display()
                )
            })
        })
        .collect();
    Ok(Merged { summary, warnings })
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, limit: Limit) -> Result<T, MergeError> {
    let bytes = pimdiff_input::read(path, limit).map_err(|source| MergeError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|e| MergeError::Malformed {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// The `<name>` of a summary's `findings/<name>`: one plain, visible path component.
fn finding_name(dir: &str) -> Option<&str> {
    let mut parts = Path::new(dir).components();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(Component::Normal(top)), Some(Component::Normal(name)), None)
            if top == FINDINGS_DIR =>
        {
            name.to_str().filter(|n| !n.starts_with('.'))
        }
        _ => None,
    }
}

/// Visible directories of `findings_dir` not in `listed`.
fn unlisted_dirs(
    findings_dir: &Path,
    listed: &BTreeSet<String>,
) -> Result<Vec<String>, MergeError> {
    let io = |source: std::io::Error| MergeError::Read {
        path: findings_dir.to_path_buf(),
        source: InputError::Io(source),
    };
    let mut out = Vec::new();
    if !findings_dir.is_dir() {
        return Ok(out);
    }
    for entry in std::fs::read_dir(findings_dir).map_err(io)? {
        let name = entry
            .map_err(io)?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if !name.starts_with('.') && !listed.contains(&name) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

fn check_targets(outputs: &[HuntOutput]) -> Result<(), MergeError> {
    let first = &outputs[0];
    match outputs
        .iter()
        .find(|o| o.summary.target != first.summary.target)
    {
        None => Ok(()),
        Some(other) => Err(MergeError::MixedTargets {
            first: first.dir.clone(),
            first_target: first.summary.target.clone(),
            second: other.dir.clone(),
            second_target: other.summary.target.clone(),
        }),
    }
}

/// Every hunt the inputs stand for: an input's own hunt, or the hunts an earlier merge lists;
/// sorted by seed, shard and name.
fn merged_inputs(outputs: &[HuntOutput]) -> Vec<MergedInput> {
    let mut hunts: Vec<MergedInput> = outputs
        .iter()
        .flat_map(|o| {
            let s = &o.summary;
            if s.merged_from.is_empty() {
                vec![MergedInput {
                    input: o.dir.display().to_string(),
                    seed: s.seed,
                    shard: s.shard,
                    cases_requested: s.cases_requested,
                    duration_requested_s: s.duration_requested_s,
                    cases_run: s.cases_run,
                    findings: s.findings.len(),
                    interrupted: s.interrupted,
                    compiler: s.compiler.clone(),
                    pimdiff_version: s.pimdiff_version.clone(),
                }]
            } else {
                s.merged_from.clone()
            }
        })
        .collect();
    hunts.sort_by(|a, b| {
        (a.seed, a.shard.count, a.shard.index, &a.input).cmp(&(
            b.seed,
            b.shard.count,
            b.shard.index,
            &b.input,
        ))
    });
    hunts
}

/// Refuses two hunts of one seed whose shards share case indices: `k ≡ i (mod n)` and
/// `k ≡ j (mod m)` have a common solution exactly when `i ≡ j (mod gcd(n, m))`.
fn check_overlap(hunts: &[MergedInput]) -> Result<(), MergeError> {
    for (a, first) in hunts.iter().enumerate() {
        for second in &hunts[a + 1..] {
            let g = gcd(first.shard.count, second.shard.count);
            if first.seed == second.seed && first.shard.index % g == second.shard.index % g {
                return Err(MergeError::Overlap {
                    first: first.input.clone(),
                    second: second.input.clone(),
                    seed: first.seed,
                    first_shard: first.shard,
                    second_shard: second.shard,
                });
            }
        }
    }
    Ok(())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a.max(1)
    } else {
        gcd(b, a % b)
    }
}

/// One finding's copy in one input: `(input, index in its summary's findings)`.
type At = (usize, usize);

/// The copies of each distinct signature, representative first, groups in order of first
/// occurrence.
fn group_findings(outputs: &[HuntOutput]) -> Vec<Vec<At>> {
    let mut by_signature: BTreeMap<&str, Vec<At>> = BTreeMap::new();
    for (i, o) in outputs.iter().enumerate() {
        for (j, f) in o.summary.findings.iter().enumerate() {
            by_signature.entry(&f.signature).or_default().push((i, j));
        }
    }
    let finding = |&(i, j): &At| &outputs[i].summary.findings[j];
    let mut groups: Vec<Vec<At>> = by_signature
        .into_values()
        .map(|mut copies| {
            copies.sort_by_key(|c| {
                let f = finding(c);
                (
                    !f.triaged,
                    f.minimization.minimized_size,
                    f.case_seed,
                    c.0,
                    c.1,
                )
            });
            copies
        })
        .collect();
    let first_seen = |copies: &Vec<At>| {
        copies
            .iter()
            .flat_map(|c| found_in(outputs, *c))
            .map(|p| (p.seed, p.case_index))
            .min()
    };
    groups.sort_by_cached_key(first_seen);
    groups
}

/// Where one copy was found: its own hunt, or the places an earlier merge recorded.
fn found_in(outputs: &[HuntOutput], (i, j): At) -> Vec<FoundIn> {
    let o = &outputs[i];
    let f = &o.summary.findings[j];
    if !f.found_in.is_empty() {
        return f.found_in.clone();
    }
    vec![FoundIn {
        input: o.dir.display().to_string(),
        dir: f.dir.clone(),
        seed: o.summary.seed,
        case_index: f.case_index,
        occurrences: f.occurrences,
    }]
}

/// Copies a group's representative to `findings_dir/<number>-<slug>` and returns its entry.
fn save_group(
    outputs: &[HuntOutput],
    group: &[At],
    number: usize,
    findings_dir: &Path,
) -> Result<FindingSummary, MergeError> {
    let (i, j) = group[0];
    let rep = &outputs[i].summary.findings[j];
    let name = format!("{number:03}-{}", slug(&rep.signature));
    let dir = pimdiff_atomic::AtomicDir::create(&findings_dir.join(&name))?;
    copy_tree(&outputs[i].dir.join(&rep.dir), dir.path())?;
    dir.commit()?;
    let copies: Vec<&FindingSummary> = group
        .iter()
        .map(|&(i, j)| &outputs[i].summary.findings[j])
        .collect();
    let buckets: BTreeSet<&String> = copies.iter().flat_map(|f| &f.buckets).collect();
    let mut places: Vec<FoundIn> = group.iter().flat_map(|&c| found_in(outputs, c)).collect();
    places.sort_by(|a, b| (a.seed, a.case_index, &a.input).cmp(&(b.seed, b.case_index, &b.input)));
    Ok(FindingSummary {
        dir: relative_dir(&name).to_string_lossy().into_owned(),
        occurrences: copies.iter().map(|f| f.occurrences).sum(),
        buckets: buckets.into_iter().cloned().collect(),
        found_in: places,
        ..rep.clone()
    })
}

/// Copies the directory `from` into the existing directory `to`: directories and regular
/// files only (a symbolic link in a finding is refused rather than followed).
fn copy_tree(from: &Path, to: &Path) -> Result<(), MergeError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| MergeError::Read {
            path,
            source: InputError::Io(source),
        }
    };
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let src = entry.path();
        let dest = to.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&src))?;
        if kind.is_dir() {
            std::fs::create_dir(&dest).map_err(io(&dest))?;
            copy_tree(&src, &dest)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dest).map_err(io(&src))?;
        } else {
            return Err(MergeError::Malformed {
                path: src,
                message: "not a regular file or directory".into(),
            });
        }
    }
    Ok(())
}

/// Creates `out/findings` (removing leftovers of an interrupted merge) and refuses one that
/// already holds findings.
fn prepare_out(findings_dir: &Path) -> Result<(), MergeError> {
    let io = |source| pimdiff_atomic::Error::Io {
        path: findings_dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(findings_dir).map_err(io)?;
    pimdiff_atomic::clean_temp(findings_dir)?;
    if let Some(parent) = findings_dir.parent() {
        pimdiff_atomic::clean_temp(parent)?;
    }
    let mut entries = std::fs::read_dir(findings_dir).map_err(io)?;
    if entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().starts_with('.'))) {
        return Err(MergeError::OutNotEmpty {
            path: findings_dir.to_path_buf(),
        });
    }
    Ok(())
}

/// The merged summary (its `failures` still to be filled in).
fn merged_summary(
    outputs: &[HuntOutput],
    hunts: Vec<MergedInput>,
    findings: Vec<FindingSummary>,
) -> HuntSummary {
    let all: Vec<&HuntSummary> = outputs.iter().map(|o| &o.summary).collect();
    let sum = |f: &dyn Fn(&HuntSummary) -> u64| all.iter().map(|s| f(s)).sum::<u64>();
    let sum_f = |f: &dyn Fn(&HuntSummary) -> f64| all.iter().map(|s| f(s)).sum::<f64>();
    let cases_run = sum(&|s| s.cases_run);
    let mut outcomes = BTreeMap::new();
    for s in &all {
        for (k, n) in &s.outcomes {
            *outcomes.entry(*k).or_insert(0) += n;
        }
    }
    let mut unfinished: Vec<u64> = all
        .iter()
        .flat_map(|s| s.unfinished_cases.clone())
        .collect();
    unfinished.sort_unstable();
    unfinished.dedup();
    let sweep_time_s = sum_f(&|s| s.sweep_time_s);
    let (seed, shard) = seed_and_shard(&hunts);
    HuntSummary {
        pimdiff_version: env!("CARGO_PKG_VERSION").to_string(),
        target: all[0].target.clone(),
        seed,
        shard,
        cases_requested: per_seed_total(&hunts, |h| h.cases_requested.map(|n| n as f64))
            .map(|n| n as u64),
        duration_requested_s: per_seed_total(&hunts, |h| h.duration_requested_s),
        end: merged_end(&all),
        interrupted: all.iter().any(|s| s.interrupted),
        cases_run,
        outcomes,
        findings,
        timeouts: sum(&|s| s.timeouts),
        interpreter_panics: sum(&|s| s.interpreter_panics),
        abandoned_threads: all.iter().map(|s| s.abandoned_threads).sum(),
        unfinished_cases: unfinished,
        declines: merged_declines(&all, cases_run),
        failures: Vec::new(),
        jobs: all.iter().map(|s| s.jobs).max().unwrap_or(0),
        case_timeout_s: all.iter().map(|s| s.case_timeout_s).fold(0.0, f64::max),
        cases_per_second: if sweep_time_s > 0.0 {
            cases_run as f64 / sweep_time_s
        } else {
            0.0
        },
        sweep_time_s,
        wall_time_s: sum_f(&|s| s.wall_time_s),
        compiler: distinct(all.iter().map(|s| s.compiler.clone())).join("; "),
        generator: one_or_all(all.iter().map(|s| s.generator.clone())),
        details: one_or_all(all.iter().map(|s| s.details.clone())),
        merged_from: hunts,
        // Coverage of several hunts is not the sum of theirs (gcov counts merge by line).
        coverage: None,
    }
}

/// A merge's seed and shard: its first hunt's seed, and `0/1` when its hunts are exactly the
/// `n` shards of that one seed (the whole hunt), else the first hunt's shard.
fn seed_and_shard(hunts: &[MergedInput]) -> (u64, Shard) {
    let first = &hunts[0];
    let n = first.shard.count;
    let whole = hunts.len() as u64 == n
        && hunts
            .iter()
            .all(|h| h.seed == first.seed && h.shard.count == n);
    (first.seed, if whole { Shard::ALL } else { first.shard })
}

/// A limit of the merged hunts: the shards of one seed share their index space (`--cases N`
/// means cases `0..N` of that seed), so the largest per seed, summed over the seeds; `None`
/// when a hunt has no such limit.
fn per_seed_total(
    hunts: &[MergedInput],
    limit: impl Fn(&MergedInput) -> Option<f64>,
) -> Option<f64> {
    let mut per_seed: BTreeMap<u64, f64> = BTreeMap::new();
    for h in hunts {
        let v = limit(h)?;
        let e = per_seed.entry(h.seed).or_insert(0.0);
        *e = e.max(v);
    }
    Some(per_seed.values().sum())
}

/// The most serious way an input's sweep ended.
fn merged_end(all: &[&HuntSummary]) -> SweepEnd {
    let rank = |e: &SweepEnd| match e {
        SweepEnd::Completed => 0,
        SweepEnd::Deadline => 1,
        SweepEnd::Interrupted => 2,
        SweepEnd::TooManyStuck => 3,
    };
    all.iter()
        .map(|s| s.end)
        .max_by_key(rank)
        .unwrap_or(SweepEnd::Completed)
}

/// The declines of all inputs, judged again on the sums.
fn merged_declines(all: &[&HuntSummary], cases_run: u64) -> Declines {
    let mut by_reason = BTreeMap::new();
    for s in all {
        for (reason, n) in &s.declines.by_reason {
            *by_reason.entry(reason.clone()).or_insert(0) += n;
        }
    }
    let weighted: f64 = all
        .iter()
        .map(|s| s.declines.max_share * s.cases_run as f64)
        .sum();
    let max_share = if cases_run > 0 {
        weighted / cases_run as f64
    } else {
        all[0].declines.max_share
    };
    Declines::judge(
        all.iter().map(|s| s.declines.declined).sum(),
        cases_run,
        max_share,
        by_reason,
    )
}

/// The distinct values, in first-seen order.
fn distinct<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// The one value all inputs share, or the array of their distinct values.
fn one_or_all(values: impl Iterator<Item = serde_json::Value>) -> serde_json::Value {
    let mut d = distinct(values);
    if d.len() == 1 {
        d.pop().unwrap_or_default()
    } else {
        serde_json::Value::Array(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_directories_are_one_visible_name_under_findings() {
        assert_eq!(finding_name("findings/001-mismatch"), Some("001-mismatch"));
        for bad in [
            "findings/../x",
            "/findings/x",
            "findings/.hidden",
            "other/x",
            "findings/a/b",
            "findings",
        ] {
            assert_eq!(finding_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn shards_of_one_seed_overlap_exactly_when_their_indices_agree_modulo_the_gcd() {
        let hunt = |seed, index, count| MergedInput {
            input: format!("{seed}-{index}/{count}"),
            seed,
            shard: Shard::new(index, count).unwrap(),
            cases_requested: Some(10),
            duration_requested_s: None,
            cases_run: 10,
            findings: 0,
            interrupted: false,
            compiler: String::new(),
            pimdiff_version: String::new(),
        };
        let ok = |h: &[MergedInput]| check_overlap(h).is_ok();
        assert!(ok(&[hunt(1, 0, 2), hunt(1, 1, 2)]));
        assert!(ok(&[hunt(1, 0, 1), hunt(2, 0, 1)]));
        assert!(ok(&[hunt(1, 0, 2), hunt(1, 1, 4)]));
        assert!(!ok(&[hunt(1, 0, 2), hunt(1, 2, 4)]));
        assert!(!ok(&[hunt(1, 0, 2), hunt(1, 1, 3)]));
        assert!(!ok(&[hunt(1, 0, 1), hunt(1, 0, 1)]));
        let whole = seed_and_shard(&[hunt(7, 0, 2), hunt(7, 1, 2)]);
        assert_eq!(whole, (7, Shard::ALL));
        let part = seed_and_shard(&[hunt(7, 1, 3), hunt(8, 0, 3)]);
        assert_eq!(part, (7, Shard::new(1, 3).unwrap()));
    }
}
