//! The regression corpus (`corpus/` at the workspace root) compiled with the pixel-wise
//! lowering: every entry the channel-wise lowering compiles, the pixel-wise one compiles
//! too, with and without the optimizations, and the program's output equals the oracle's;
//! every entry the channel-wise lowering declines, the pixel-wise one declines the same way.

mod common;

use std::path::{Path, PathBuf};

use pimdiff_compiler::CompileError;
use pimdiff_compiler::{compile, CompileOptions, Lowering, Unsupported};

fn entries() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut dirs = Vec::new();
    for group in ["features", "bugs", "limits"] {
        let mut here: Vec<PathBuf> = std::fs::read_dir(root.join(group))
            .unwrap_or_else(|e| panic!("corpus/{group}: {e}"))
            .map(|d| d.unwrap().path())
            .filter(|p| p.join("case.json").is_file())
            .collect();
        here.sort();
        dirs.extend(here);
    }
    dirs
}

fn options(lowering: Lowering, optimized: bool) -> CompileOptions {
    CompileOptions {
        skip_padding: optimized,
        weight_skipping: optimized,
        lowering,
        reduction: pimdiff_compiler::Reduction::Noc,
    }
}

#[test]
fn every_corpus_entry_agrees_with_the_oracle_when_lowered_pixel_wise() {
    let dirs = entries();
    assert!(dirs.len() >= 30, "only {} corpus entries", dirs.len());
    // Entries compiled with the optimizations on.
    let mut compiled = 0;
    let mut declined = Vec::new();
    for dir in &dirs {
        let name = dir.display();
        let case = pimdiff_oracle::io::read_case(dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = match &case.expected {
            Some(e) => e.clone(),
            None => pimdiff_oracle::reference(&case).unwrap(),
        };
        for optimized in [true, false] {
            let channel = compile(&case, &options(Lowering::Channel, optimized));
            let pixel = compile(&case, &options(Lowering::Pixel, optimized));
            match (&channel, pixel) {
                (Ok(_), Ok(bundle)) => {
                    let out = common::run_bundle(&case, &bundle)
                        .unwrap_or_else(|e| panic!("{name} (optimized: {optimized}): {e}"));
                    assert_eq!(out, expected, "{name} (optimized: {optimized})");
                    compiled += optimized as usize;
                }
                (Err(c), Err(p)) => {
                    assert_eq!(c, &p, "{name}");
                    let limit = dir.parent().is_some_and(|g| g.ends_with("limits"));
                    declined.push((limit, optimized, p));
                }
                (c, p) => panic!(
                    "{name}: channel-wise {:?}, pixel-wise {:?}",
                    c.as_ref().err(),
                    p.err()
                ),
            }
        }
    }
    // With the optimizations, everything but the two `limits/` entries compiles.
    assert_eq!(compiled, dirs.len() - 2);
    let limits: Vec<_> = declined.iter().filter(|d| d.0).map(|d| &d.2).collect();
    assert_eq!(limits.len(), 4, "{declined:?}");
    assert!(limits.iter().any(|e| matches!(
        e,
        CompileError::Unsupported(Unsupported::LocalMemory { .. })
    )));
    assert!(limits.iter().any(|e| matches!(
        e,
        CompileError::Unsupported(Unsupported::NotEnoughArrays { .. })
    )));
    // Minimized findings often fit the chip only with weight skipping.
    for (_, optimized, e) in declined.iter().filter(|d| !d.0) {
        assert!(!optimized);
        assert!(
            matches!(
                e,
                CompileError::Unsupported(Unsupported::NotEnoughArrays { .. })
            ),
            "{e}"
        );
    }
}
