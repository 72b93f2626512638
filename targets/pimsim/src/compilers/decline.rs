//! What a compiler claims when it declines a case: which resource is short, how much the case
//! needs and how much the architecture offers.
//!
//! The in-repo compiler's typed `Unsupported` carries the numbers; an external compiler's
//! reason text is read for the same shape ([`Claim::from_reason`]). The phrases read as claims,
//! and the architecture field each is compared with (`docs/guide/your-compiler.md` has the
//! same table):
//!
//! | the reason says (any case) | resource | compared with |
//! |---|---|---|
//! | `array` or `crossbar`, and `per core`, `per-core`, `each core` or `one core` | [`Resource::ArraysPerCore`] | `arch.arrays_per_core` |
//! | `array` or `crossbar` | [`Resource::Arrays`] | `arch.cores × arch.arrays_per_core` (the chip's total) |
//! | `memory` | [`Resource::LocalMemory`] | `arch.local_memory_bytes` (one core's) |
//! | `instruction` | [`Resource::Instructions`] | nothing: the limit is the compiler's own |
//! | anything else | [`Resource::Other`] | nothing |
//!
//! The numbers are the first `N needed, M available` of the text (decimal integers). The
//! checker
//! ([`crate::check`]) holds every claim against the case: a claim that contradicts itself, that
//! misstates the architecture, or whose need disagrees with the harness's own model of the
//! lowering is a `bogus-unsupported` finding.

use std::fmt;

use pimdiff_compiler::Unsupported;

/// The resource a decline names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    /// Crossbar arrays of the whole chip (`cores × arrays_per_core`).
    Arrays,
    /// Crossbar arrays of one core (`arrays_per_core`).
    ArraysPerCore,
    /// Local memory of one core, in bytes.
    LocalMemory,
    /// Instructions of the program (the limit is the compiler's own, not the architecture's).
    Instructions,
    /// An architecture field too large for the program's configuration (`arch.<field>`).
    ArchField(String),
    /// A resource the reason text does not name recognisably.
    Other,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Arrays => f.write_str("crossbar arrays"),
            Resource::ArraysPerCore => f.write_str("crossbar arrays per core"),
            Resource::LocalMemory => f.write_str("local memory bytes"),
            Resource::Instructions => f.write_str("instructions"),
            Resource::ArchField(field) => write!(f, "arch.{field}"),
            Resource::Other => f.write_str("(unnamed resource)"),
        }
    }
}

/// A decline's numbers: `needed` of `resource`, `available` of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Claim {
    pub resource: Resource,
    pub needed: u64,
    pub available: u64,
}

impl Claim {
    /// The claim of the in-repo compiler's typed reason.
    pub fn of_unsupported(u: &Unsupported) -> Claim {
        let n = |v: usize| v as u64;
        match u {
            Unsupported::NotEnoughArrays { needed, available } => Claim {
                resource: Resource::Arrays,
                needed: n(*needed),
                available: n(*available),
            },
            Unsupported::LocalMemory {
                needed, available, ..
            } => Claim {
                resource: Resource::LocalMemory,
                needed: *needed,
                available: *available,
            },
            Unsupported::TooManyInstructions { needed, limit } => Claim {
                resource: Resource::Instructions,
                needed: *needed,
                available: *limit,
            },
            Unsupported::ArchTooLarge { field, value } => Claim {
                resource: Resource::ArchField(field.to_string()),
                needed: n(*value),
                available: u64::from(u32::MAX),
            },
        }
    }

    /// The claim in an external compiler's reason text: the first `N needed, M available`
    /// (decimal integers, any case), with the resource taken from the words of the text (the
    /// table of the module docs). `None` when the text has no such numbers.
    pub fn from_reason(text: &str) -> Option<Claim> {
        let lower = text.to_ascii_lowercase();
        let at = lower.find(" needed, ")?;
        let needed = last_number(&lower[..at])?;
        let after = &lower[at + " needed, ".len()..];
        let digits = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        if !after[digits..].starts_with(" available") {
            return None;
        }
        let available = after[..digits].parse().ok()?;
        let per_core = ["per core", "per-core", "each core", "one core"]
            .iter()
            .any(|w| lower.contains(w));
        let resource = if lower.contains("array") || lower.contains("crossbar") {
            if per_core {
                Resource::ArraysPerCore
            } else {
                Resource::Arrays
            }
        } else if lower.contains("memory") {
            Resource::LocalMemory
        } else if lower.contains("instruction") {
            Resource::Instructions
        } else {
            Resource::Other
        };
        Some(Claim {
            resource,
            needed,
            available,
        })
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} needed, {} available",
            self.resource, self.needed, self.available
        )
    }
}

/// The decimal number that ends `text` (`"… 42"` → 42).
fn last_number(text: &str) -> Option<u64> {
    let start = text
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    text[start..].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_texts_are_read() {
        assert_eq!(
            Claim::from_reason("not enough crossbar arrays: 12 needed, 8 available"),
            Some(Claim {
                resource: Resource::Arrays,
                needed: 12,
                available: 8
            })
        );
        assert_eq!(
            Claim::from_reason("Local memory: 4096 NEEDED, 1024 available on core 2"),
            Some(Claim {
                resource: Resource::LocalMemory,
                needed: 4096,
                available: 1024
            })
        );
        assert_eq!(
            Claim::from_reason("crossbar arrays per core: 2 needed, 1 available"),
            Some(Claim {
                resource: Resource::ArraysPerCore,
                needed: 2,
                available: 1
            })
        );
        assert_eq!(
            Claim::from_reason("tiles: 3 needed, 2 available").map(|c| c.resource),
            Some(Resource::Other)
        );
        for text in [
            "grouped convolutions are not supported",
            "needed, 3 available",
            "x 5 needed, lots available",
            "5 needed, 99999999999999999999999 available",
        ] {
            assert_eq!(Claim::from_reason(text), None, "{text}");
        }
    }
}
