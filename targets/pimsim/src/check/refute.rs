//! Honest `unsupported`: a decline is held against the case before it is accepted.
//!
//! A compiler that declines a case with numbers ([`Claim`]: `N needed, M available` of some
//! resource) is refuted, and the outcome becomes a `bogus-unsupported` finding, when
//!
//! 1. the claim contradicts itself: `needed ≤ available`;
//! 2. its `available` is not what the case's architecture says (`cores × arrays_per_core`
//!    arrays, `local_memory_bytes` of local memory); or
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
    let arch = &case.spec.arch;
    let arch_has = match r {
        Resource::Arrays => Some((arch.cores as u64).saturating_mul(arch.arrays_per_core as u64)),
        Resource::LocalMemory => Some(arch.local_memory_bytes as u64),
        Resource::ArchField(_) => Some(u64::from(u32::MAX)),
        Resource::Instructions | Resource::Other => None,
    };
    if let Some(has) = arch_has.filter(|&has| has != claim.available) {
        return Some(format!(
            "{r}: the claim says {} available, the case's architecture has {has}",
            claim.available
        ));
    }
    let options = model?;
    let model_needs = match r {
        Resource::Arrays => Some(demand(case, options).arrays),
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
