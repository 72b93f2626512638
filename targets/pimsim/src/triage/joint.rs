//! A systematic bug is one cause: real code generators are wrong the same way at every site
//! (every core's last `mvmul` in the wrong group, every store of a layer one element off).
//!
//! Each single-site repair of such a bug fixes only part of the output — or, where the sites'
//! errors add up in the same output elements (partial sums of several cores), only brings the
//! wrong elements closer to the oracle's — so no single edit repairs it, and the finding
//! would be signed by its symptom. Here, when single-site edits of one kind (one opcode, one
//! field: `mvmul group`) help at some sites, the same kind of edit is also tried at the
//! analogous sites of the other cores (the same occurrence of the opcode, counted from the
//! start and from the end of each core's program: "the last `mvmul` of every core"), and
//! then every helping site's best edit is applied together. When together they repair the
//! failure — exactly, on the case and on every probe input — that joint edit is the repair
//! and its kind is the cause, with every site a suspect. In-place edits only (an inserted
//! instruction shifts every later one). The search has its own small run allowance
//! ([`JOINT_RUNS`]), deterministic like the rest.

use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::{Inst, Opcode};

use super::attempt::{address_consumer, fix_texts, group_numbers, try_edit, Found, Localization};
use super::judge::{Effect, Failure};
use super::repairs::{single_edits, sites_of, Edit, Tweak};
use crate::check::RunConfig;

/// The most runs one joint search spends beyond the catalog's own (the analogous sites' edits
/// and the joint edits themselves).
pub(crate) const JOINT_RUNS: u64 = 256;

/// The kind of an edit: its opcode and the field it changes.
type Kind = (Opcode, &'static str);

fn kind(f: &Found) -> Kind {
    (f.edit.opcode, f.edit.tweak.field())
}

/// Whether an edit can join others: one site, in place.
fn joinable(e: &Edit) -> bool {
    !e.every
        && e.sites.len() == 1
        && !matches!(e.tweak, Tweak::Activation { .. } | Tweak::Duplicate)
}

/// How many of the strongest helping edits seed a joint search.
const SEEDS: usize = 4;

/// Searches a joint repair of `loc`'s helping edits (see the module docs); returns it and the
/// runs spent. `stopped` says when the deadline or a cancel ends the search.
pub(crate) fn joint_repair(
    failure: &Failure,
    work: &mut Bundle,
    loc: &Localization,
    cfg: &RunConfig,
    stopped: &dyn Fn() -> bool,
) -> (Option<Found>, u64) {
    // Improvements first (most elements fixed), then edits that bring it closer (most gain).
    let mut closer: Vec<&Found> = loc.closer.iter().collect();
    closer.sort_by_key(|f| (std::cmp::Reverse(gain(f)), f.order));
    let seeds: Vec<&Found> = loc
        .improvements()
        .into_iter()
        .chain(closer)
        .filter(|f| joinable(&f.edit))
        .take(SEEDS)
        .collect();
    let cores = &failure.bundle.program.cores;
    let catalog: Vec<Edit> = if seeds.is_empty() {
        Vec::new()
    } else {
        single_edits(cores, &group_numbers(failure.bundle))
            .into_iter()
            .filter(joinable)
            .collect()
    };
    let order = loc
        .found
        .iter()
        .chain(&loc.closer)
        .map(|f| f.order + 1)
        .max()
        .unwrap_or(0);
    let mut runs = 0;
    for seed in seeds {
        let k = kind(seed);
        let mut members = vec![seed.clone()];
        for site in analogous_sites(cores, k.0, seed.edit.sites[0]) {
            let mut best: Option<Found> = None;
            for edit in catalog
                .iter()
                .filter(|e| e.sites == [site] && kind_of(e) == k)
            {
                if runs >= JOINT_RUNS || stopped() {
                    return (None, runs);
                }
                runs += 1;
                let effect = try_edit(failure, work, edit, cfg);
                let found = Found {
                    edit: edit.clone(),
                    effect,
                    fixes: fix_texts(cores, edit),
                    order,
                    consumer: address_consumer(cores, edit),
                };
                if effect != Effect::Nothing && best.as_ref().is_none_or(|b| stronger(&found, b)) {
                    best = Some(found);
                }
            }
            members.extend(best);
        }
        if members.len() < 2 || runs >= JOINT_RUNS || stopped() {
            continue;
        }
        members.sort_by_key(|m| m.edit.sites[0]);
        let edit = Edit {
            opcode: k.0,
            tweak: members[0].edit.tweak,
            every: false,
            sites: members.iter().map(|m| m.edit.sites[0]).collect(),
            per_site: members.iter().map(|m| m.edit.tweak).collect(),
        };
        runs += 1;
        if try_edit(failure, work, &edit, cfg) == Effect::Repaired {
            let fixes = fix_texts(cores, &edit);
            let found = Found {
                consumer: address_consumer(cores, &edit),
                edit,
                effect: Effect::Repaired,
                fixes,
                order,
            };
            return (Some(found), runs);
        }
    }
    (None, runs)
}

fn kind_of(e: &Edit) -> Kind {
    (e.opcode, e.tweak.field())
}

/// What an edit that brings the output closer gained (0 for any other effect).
fn gain(f: &Found) -> u64 {
    match f.effect {
        Effect::Closer { gain } => gain,
        _ => 0,
    }
}

/// Whether `a` helps more than `b`: more elements fixed, then more gained.
fn stronger(a: &Found, b: &Found) -> bool {
    let fixed = |f: &Found| match f.effect {
        Effect::Improved { fixed, .. } => fixed,
        Effect::Repaired => usize::MAX,
        _ => 0,
    };
    (fixed(a), gain(a)) > (fixed(b), gain(b))
}

/// The sites of `op` in the other cores that sit where `site` sits in its own: the same
/// occurrence of the opcode counted from the start, and from the end, of each core's program.
/// In a fixed order (core, then pc).
fn analogous_sites(cores: &[Vec<Inst>], op: Opcode, site: (u32, u32)) -> Vec<(u32, u32)> {
    let per_core: Vec<Vec<u32>> = (0..cores.len())
        .map(|c| {
            sites_of(cores, op)
                .filter(|&(core, _)| core as usize == c)
                .map(|(_, pc)| pc)
                .collect()
        })
        .collect();
    let (c, pc) = site;
    let own = &per_core[c as usize];
    let Some(from_start) = own.iter().position(|&p| p == pc) else {
        return Vec::new();
    };
    let from_end = own.len() - 1 - from_start;
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (other, pcs) in per_core.iter().enumerate() {
        if other as u32 == c {
            continue;
        }
        let by_start = pcs.get(from_start).copied();
        let by_end = pcs.len().checked_sub(1 + from_end).map(|i| pcs[i]);
        for pc in [by_end, by_start].into_iter().flatten() {
            if !out.contains(&(other as u32, pc)) {
                out.push((other as u32, pc));
            }
        }
    }
    out
}
