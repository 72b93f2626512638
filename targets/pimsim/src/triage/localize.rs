//! Localization by repair: edit the failing bundle one catalog edit at a time, rerun it
//! against the oracle, and keep the edits that help.
//!
//! An edit *repairs* the program when the edited bundle's output equals the oracle's; it
//! *improves* a wrong output when some differing elements become right and no right element
//! goes wrong (a program with two bugs is improved, not repaired, by fixing one). No
//! recompilation is involved: only the bundle changes, so this works for any compiler.
//!
//! The search is deterministic: opcode-wide edits first (bugs that corrupt every instruction
//! of one kind), then every single-site edit in program order, until the run budget is spent;
//! then, when no edit repairs but some help, the same kind of edit at several sites together
//! (a systematic bug, `joint`).
//! The *best repair* is the most direct one (see `Tweak::rank`), single sites before
//! opcode-wide edits, earliest first.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pimdiff_isa::Inst;

use super::attempt::{
    address_consumer, fix_texts, group_numbers, try_edit, Found, Localization, Rule,
};
use super::judge::{judging_config, Effect, Failure, Limits};
use super::repairs::{self, class_edits, single_edits, Edit, Tweak};
use crate::check::outcome::Outcome;
use crate::check::RunConfig;

/// Searches the repair catalog on `failure` (see the module docs).
pub(crate) fn localize(
    failure: &Failure,
    cfg: &RunConfig,
    limits: &Limits,
    cancel: &AtomicBool,
) -> Localization {
    let cfg = &judging_config(failure, cfg);
    let mut loc = Localization {
        input_matters: super::values::input_matters(failure.oracle, &failure.probes),
        uninitialised: super::uninit::uninitialised_loads(failure.bundle),
        variant: match (failure.outcome, failure.output) {
            (Outcome::Mismatch(_), Some(out)) => {
                super::variants::explain(failure.case, out, &failure.probes)
            }
            _ => None,
        },
        ..Localization::default()
    };
    if !failure.outcome.is_finding() || matches!(failure.outcome, Outcome::CompileError { .. }) {
        return loc;
    }
    let program = &failure.bundle.program;
    let groups = group_numbers(failure.bundle);
    let edits = class_edits(&program.cores)
        .into_iter()
        .chain(single_edits(&program.cores, &groups));
    let mut work = failure.bundle.clone();
    for (order, edit) in edits.enumerate() {
        if loc.runs >= limits.max_runs
            || limits.deadline.is_some_and(|d| Instant::now() >= d)
            || cancel.load(Ordering::Relaxed)
        {
            loc.cut_short = true;
            break;
        }
        loc.runs += 1;
        let effect = try_edit(failure, &mut work, &edit, cfg);
        if effect != Effect::Nothing {
            let fixes = fix_texts(&program.cores, &edit);
            let found = Found {
                consumer: address_consumer(&program.cores, &edit),
                edit,
                effect,
                fixes,
                order,
            };
            match effect {
                Effect::Closer { .. } => loc.closer.push(found),
                _ => loc.found.push(found),
            }
        }
    }
    let stopped =
        || limits.deadline.is_some_and(|d| Instant::now() >= d) || cancel.load(Ordering::Relaxed);
    if loc.repairs().next().is_none() && !stopped() {
        let (found, runs) = super::joint::joint_repair(failure, &mut work, &loc, cfg, &stopped);
        loc.runs += runs;
        loc.found.extend(found);
    }
    if loc.repairs().next().is_none() && !loc.cut_short {
        let left = Limits {
            max_runs: limits.max_runs.saturating_sub(loc.runs),
            ..*limits
        };
        let (repair, runs, cut) = super::crossbar_repairs::search(failure, cfg, &left, cancel);
        loc.crossbar = repair;
        loc.runs += runs;
        loc.cut_short |= cut;
    }
    loc
}

/// Whether some edit of `rule` gives `failure` at least `want` (a repair, or any
/// improvement), within `max_runs` runs.
pub(crate) fn rule_helps(
    failure: &Failure,
    rule: Rule,
    want: Effect,
    cfg: &RunConfig,
    max_runs: usize,
) -> bool {
    let cfg = &judging_config(failure, cfg);
    let cores = &failure.bundle.program.cores;
    let groups = group_numbers(failure.bundle);
    let edits = rule_edits(rule, cores, &groups);
    let mut work = failure.bundle.clone();
    edits
        .iter()
        .take(max_runs)
        .any(|edit| match try_edit(failure, &mut work, edit, cfg) {
            Effect::Repaired => true,
            Effect::Improved { .. } => want != Effect::Repaired,
            Effect::Closer { .. } | Effect::Nothing => false,
        })
}

/// The edits of `rule` on a program: its tweak at every site of the opcode at once, or at
/// each site in turn (for a tweak naming a group or core, every other group or core).
fn rule_edits(rule: Rule, cores: &[Vec<Inst>], groups: &[Vec<u32>]) -> Vec<Edit> {
    if rule.every && matches!(rule.tweak, Tweak::Activation { .. }) {
        return repairs::activation_edits(cores)
            .into_iter()
            .filter(|e| e.opcode == rule.opcode)
            .collect();
    }
    if rule.every {
        let sites: Vec<(u32, u32)> = repairs::sites_of(cores, rule.opcode)
            .filter(|&(c, pc)| {
                repairs::apply(&cores[c as usize][pc as usize], rule.tweak).is_some()
            })
            .collect();
        if sites.is_empty() {
            return Vec::new();
        }
        return vec![Edit {
            opcode: rule.opcode,
            tweak: rule.tweak,
            every: true,
            sites,
            per_site: Vec::new(),
        }];
    }
    let same_field = |t: Tweak| match (t, rule.tweak) {
        (Tweak::Group(_), Tweak::Group(_))
        | (Tweak::Core(_), Tweak::Core(_))
        | (Tweak::Activation { .. }, Tweak::Activation { .. })
        | (Tweak::Restore(_), Tweak::Restore(_)) => true,
        (a, b) => a == b,
    };
    single_edits(cores, groups)
        .into_iter()
        .filter(|e| e.opcode == rule.opcode && same_field(e.tweak))
        .collect()
}
