//! The in-repo channel-wise compiler (`pimdiff-compiler`) as a compiler under test: entirely in
//! memory, so a hunt checks thousands of cases per second.

use pimdiff_compiler::{CompileError, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

use super::{Claim, CompileFailure};

/// Compiles with the in-repo compiler; its errors become failures and a panic a crash with
/// its message and location (the harness never unwinds because of the compiler under test).
pub fn compile(case: &Case, options: &CompileOptions) -> Result<Bundle, CompileFailure> {
    match pimdiff_engine::hunt::panic::catch(|| pimdiff_compiler::compile(case, options)) {
        Ok(Ok(bundle)) => Ok(bundle),
        Ok(Err(e)) => Err(failure(e)),
        Err(p) => Err(CompileFailure::Panicked {
            message: p.message,
            location: p.location,
        }),
    }
}

/// `Unsupported` → unsupported (with its numbers), anything else → a failed compilation.
pub fn failure(e: CompileError) -> CompileFailure {
    match e {
        CompileError::Unsupported(u) => CompileFailure::Unsupported {
            reason: u.to_string(),
            claim: Some(Claim::of_unsupported(&u)),
        },
        other => CompileFailure::Failed {
            message: other.to_string(),
        },
    }
}

/// `in-repo pimdiff-compiler 0.1.0 (skip_padding, weight_skipping)`; the pixel-wise lowering
/// adds `, pixel-wise` (the channel-wise default keeps the description it always had).
pub fn describe(o: &CompileOptions) -> String {
    let mut opts = Vec::new();
    if o.skip_padding {
        opts.push("skip_padding");
    }
    if o.weight_skipping {
        opts.push("weight_skipping");
    }
    if o.lowering == pimdiff_compiler::Lowering::Pixel {
        opts.push("pixel-wise");
    }
    match o.reduction {
        pimdiff_compiler::Reduction::Noc => {}
        pimdiff_compiler::Reduction::Gmem => opts.push("gmem reduction"),
        pimdiff_compiler::Reduction::PerCase => opts.push("per-case reduction"),
    }
    let opts = if opts.is_empty() {
        "no optimizations".to_string()
    } else {
        opts.join(", ")
    };
    format!(
        "in-repo pimdiff-compiler {} ({opts})",
        env!("CARGO_PKG_VERSION")
    )
}
