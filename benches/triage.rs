//! Triage figures: findings per compiler before (distinct pre-signatures, what a hunt saved
//! before triage) and after (distinct final signatures), and the localization hit rate (a
//! top-3 suspect is an instruction the bug corrupted).
//!
//! ```sh
//! cargo bench --bench triage                          # every injected class, two-bug pairs,
//!                                                     # the correct compiler; 3000 cases, seeds 1 2 3
//! cargo bench --bench triage -- --cases 1000 --seeds 7 missing-bias
//! cargo bench --bench triage -- --external 400        # corrupting external compilers
//! ```
//!
//! A plain `main`: each row is one deterministic mini hunt (`tests/support/triage.rs`).

#[path = "../tests/support/triage.rs"]
mod support;

use std::collections::BTreeSet;
use std::time::Instant;

use pimdiff::check::RunConfig;
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::targets::tensor::generate::GenConfig;
use pimdiff::triage::Checker;
use support::{corrupted_sites, mini_hunt, top3_hit, TwoBugs};

/// The external corruptions of `benches/triage/corrupt.py`.
const CORRUPTIONS: [&str; 6] = [
    "st-offset",
    "vvadd-len",
    "ld-size",
    "mvmul-relu",
    "setbw-width",
    "recv-offset",
];

/// Pairs of independent bugs for the two-bug rows.
const PAIRS: [(BugClass, BugClass); 3] = [
    (BugClass::StoreOffByOne, BugClass::MissingBias),
    (BugClass::ShortInputLoad, BugClass::ReluOnPartialSum),
    (BugClass::WrongSetbwBeforeReduction, BugClass::WrongSendSize),
];

struct Totals {
    findings: usize,
    hits: usize,
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let smoke = !std::env::args().any(|a| a == "--bench");
    let cases: u64 = value("--cases")
        .and_then(|v| v.parse().ok())
        .unwrap_or(if smoke { 100 } else { 3000 });
    let seeds: Vec<u64> = value("--seeds")
        .map(|v| v.split(',').filter_map(|s| s.parse().ok()).collect())
        .unwrap_or_else(|| if smoke { vec![1] } else { vec![1, 2, 3] });
    let external: Option<u64> = value("--external").and_then(|v| v.parse().ok());
    let wanted: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(i, a)| !a.starts_with("--") && (*i == 0 || !args[i - 1].starts_with("--")))
        .map(|(_, a)| a)
        .collect();
    let want = |name: &str| wanted.is_empty() || wanted.iter().any(|w| *w == name);
    let gen = GenConfig::default();
    println!("| compiler | seed | cases | failing | before (pre-signatures) | causes | after (findings) | localized | top-3 hit | final signatures | s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
    let mut totals = Totals {
        findings: 0,
        hits: 0,
    };
    if let Some(n) = external {
        for kind in CORRUPTIONS.iter().filter(|k| want(k)) {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/triage/corrupt.py");
            let command = format!(
                "python3 {script} {kind} {} {{case}} {{out}}",
                env!("CARGO_BIN_EXE_pimdiff")
            );
            let cfg = RunConfig::with_compiler(CompilerUnderTest::External { command });
            for &seed in &seeds {
                row(
                    &format!("external {kind}"),
                    &cfg,
                    &gen,
                    seed,
                    n,
                    &mut totals,
                    true,
                );
            }
        }
    } else {
        for bug in BugClass::ALL.into_iter().filter(|b| want(b.name())) {
            let cfg = RunConfig::with_compiler(CompilerUnderTest::Mutated(
                bug,
                pimdiff_compiler::Lowering::Channel,
            ));
            for &seed in &seeds {
                row(bug.name(), &cfg, &gen, seed, cases, &mut totals, true);
            }
        }
        for (a, b) in PAIRS
            .into_iter()
            .filter(|(a, b)| want("pairs") || want(a.name()) && want(b.name()))
        {
            for &seed in &seeds {
                row(
                    &format!("{a} + {b}"),
                    &TwoBugs::new(a, b),
                    &gen,
                    seed,
                    cases,
                    &mut totals,
                    true,
                );
            }
        }
        if want("correct") {
            for &seed in &seeds {
                row(
                    "correct",
                    &RunConfig::default(),
                    &gen,
                    seed,
                    cases,
                    &mut totals,
                    false,
                );
            }
        }
    }
    if totals.findings > 0 {
        println!(
            "\nlocalization: a top-3 suspect is a corrupted instruction in {} of {} findings ({:.0} %)",
            totals.hits,
            totals.findings,
            100.0 * totals.hits as f64 / totals.findings as f64
        );
    }
}

fn row<C: Checker + Sync>(
    name: &str,
    checker: &C,
    gen: &GenConfig,
    seed: u64,
    cases: u64,
    totals: &mut Totals,
    count_hits: bool,
) {
    let start = Instant::now();
    let r = mini_hunt(checker, gen, seed, cases, pimdiff::triage::TRIAGE_RUNS);
    let mut hits = 0;
    let mut localized = 0;
    let mut sigs = BTreeSet::new();
    for f in &r.findings {
        let t = &f.triaged;
        sigs.insert(t.signature.to_string());
        localized += t.localized as usize;
        let sites = t
            .result
            .bundle
            .as_ref()
            .map(|b| corrupted_sites(&t.case, b))
            .unwrap_or_default();
        let hit = top3_hit(&t.suspects, &sites);
        hits += hit as usize;
        if std::env::var("TRIAGE_ASM").is_ok() && !hit {
            if let Some(b) = &t.result.bundle {
                eprintln!(
                    "{}\n{}",
                    pimdiff::targets::tensor::generate::describe_case(&t.case),
                    pimdiff_isa::formats::asm::print(&b.program)
                );
            }
        }
        if std::env::var("TRIAGE_VERBOSE").is_ok() {
            eprintln!(
                "{name} seed {seed}: {} ({} cases) hit={hit} sites={sites:?} suspects={}",
                t.signature,
                f.occurrences,
                serde_json::to_string(&t.suspects.iter().take(3).collect::<Vec<_>>())
                    .unwrap_or_default()
            );
        }
    }
    if count_hits {
        totals.findings += r.findings.len();
        totals.hits += hits;
    }
    println!(
        "| {name} | {seed} | {cases} | {} | {} | {} | {} | {localized} | {hits}/{} | {} | {:.1} |",
        r.failing,
        r.buckets,
        r.causes,
        r.findings.len(),
        r.findings.len(),
        sigs.into_iter()
            .collect::<Vec<_>>()
            .join("; ")
            .replace('|', "\\|"),
        start.elapsed().as_secs_f64()
    );
}
