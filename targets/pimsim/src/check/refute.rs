//! Honest `unsupported`: a decline is held against the case before it is accepted.
//!
//! A compiler that declines a case with numbers ([`Claim`]: `N needed, M available` of some
//! resource) is refuted, and the outcome becomes a `bogus-unsupported` finding, when
//!
//! 1. the claim contradicts itself: `needed ≤ available`;
//! 2. its `available` is not what the case's architecture says: the field each resource is
//!    compared with is in `compilers::decline`'s table (`cores × arrays_per_core` for arrays
//!    of the chip, `arrays_per_core` for arrays per core, `local_memory_bytes` for local
//!    memory), and the report names it (`compared with arch.cores × arch.arrays_per_core =
//!    2 × 1 = 2 (the chip's total)`); or
//! 3. its `needed` disagrees with the harness's own model of the lowering
//!    ([`super::capacity`]) — only for compilers whose lowering the model describes (the
//!    in-repo compiler, with its options); an external compiler's lowering is its own.
//!
//! A decline without numbers cannot be refuted one case at a time; the hunt still watches the
//! share of declined cases as a whole.

use pimdiff_compiler::CompileOptions;
use pimdiff_oracle::Case;

use super::capacity::demand;
use crate::compilers::{Claim, Resource};

/// Why `claim` does not hold for `case`, or `None` when nothing refutes it. `model` is the
/// options of the lowering the claim is checked against (see the module docs).
pub fn refute(case: &Case, claim: &Claim, model: Option<&CompileOptions>) -> Option<String> {
    let r = &claim.resource;
    if claim.needed <= claim.available {
        return Some(format!(
            "{r}: the claim contradicts itself: {} needed is not more than {} available",
            claim.needed, claim.available
        ));
    }
    if let Some((_, field)) = compared_with(case, r).filter(|(has, _)| *has != claim.available) {
        return Some(format!(
            "{r}: the claim says {} available; compared with {field}",
            claim.available
        ));
    }
    let options = model?;
    let arch = &case.spec.arch;
    let model_needs = match r {
        Resource::Arrays => Some(demand(case, options).arrays),
        // The model counts the chip's arrays, not one core's.
        Resource::ArraysPerCore => None,
        Resource::Instructions => Some(demand(case, options).instructions),
        Resource::LocalMemory => {
            let d = demand(case, options);
            match d.local_memory {
                Some(bytes) => Some(bytes),
                None => {
                    return Some(format!(
                        "{r}: the claim is about local memory, but the lowering needs {} crossbar arrays, more than the architecture's {}, so it never gets to lay out local memory",
                        d.arrays,
                        (arch.cores as u64).saturating_mul(arch.arrays_per_core as u64)
                    ))
                }
            }
        }
        Resource::ArchField(field) => arch_field(case, field),
        Resource::Other => None,
    };
    match model_needs {
        Some(needs) if needs != claim.needed => Some(format!(
            "{r}: the claim says {} needed, the harness's model of the lowering needs {needs}",
            claim.needed
        )),
        _ => None,
    }
}

/// What the case's architecture offers of `resource`, and the field it is read from, in words
/// (`None`: the resource is not the architecture's, as a compiler's own instruction limit).
fn compared_with(case: &Case, resource: &Resource) -> Option<(u64, String)> {
    let a = &case.spec.arch;
    let (cores, per_core) = (a.cores as u64, a.arrays_per_core as u64);
    Some(match resource {
        Resource::Arrays => {
            let total = cores.saturating_mul(per_core);
            (
                total,
                format!(
                    "`arch.cores` × `arch.arrays_per_core` = {cores} × {per_core} = {total} \
                     (the chip's total; a claim about one core says `per core`)"
                ),
            )
        }
        Resource::ArraysPerCore => (
            per_core,
            format!("`arch.arrays_per_core` = {per_core} (one core's)"),
        ),
        Resource::LocalMemory => {
            let bytes = a.local_memory_bytes as u64;
            (
                bytes,
                format!("`arch.local_memory_bytes` = {bytes} (one core's)"),
            )
        }
        Resource::ArchField(field) => {
            let max = u64::from(u32::MAX);
            (
                max,
                format!("the largest `arch.{field}` a program's configuration holds, {max}"),
            )
        }
        Resource::Instructions | Resource::Other => return None,
    })
}

/// The value of `arch.<field>`, as the case says.
fn arch_field(case: &Case, field: &str) -> Option<u64> {
    let a = &case.spec.arch;
    let v = match field {
        "cores" => a.cores,
        "arrays_per_core" => a.arrays_per_core,
        "array_rows" => a.array_rows,
        "array_cols" => a.array_cols,
        "local_memory_bytes" => a.local_memory_bytes,
        _ => return None,
    };
    Some(v as u64)
}
