//! The generator reaches every bufferization mode of both lowerings, with batches, and
//! `local_memory_thresholds` says where each mode starts.

use std::collections::BTreeMap;

use pimdiff::targets::tensor::generate::{case_and_options_from_seed, case_from_seed, GenConfig};
use pimdiff_compiler::{emit, local_memory_thresholds, CompileOptions, Lowering, Stage};
use pimdiff_oracle::Case;

fn options(lowering: Lowering) -> CompileOptions {
    CompileOptions {
        lowering,
        ..CompileOptions::default()
    }
}

/// The mode a lowering bufferizes `case` in, read from its `--emit pim` text: the chunk kind
/// (with "several" when the batch, or for rows and pixels one image, takes more than one
/// chunk) or the pixel-wise scheme.
fn mode(case: &Case, lowering: Lowering) -> Option<String> {
    mode_with(case, &options(lowering))
}

/// [`mode`] under any compile options.
fn mode_with(case: &Case, options: &CompileOptions) -> Option<String> {
    let lowering = options.lowering;
    let text = emit(case, options, Stage::Pim).ok()?;
    match lowering {
        Lowering::Channel => {
            let line = text.lines().find(|l| l.starts_with("chunks: "))?;
            let kind: String = line["chunks: ".len()..]
                .chars()
                .take_while(|c| c.is_alphabetic())
                .collect();
            let chunks: usize = line.split(", ").nth(1)?.split(' ').next()?.parse().ok()?;
            // Several chunks: of the batch for whole images, of one image otherwise.
            let per = if kind == "Images" {
                1
            } else {
                case.spec.input_shape[0]
            };
            let several = chunks > per;
            Some(format!("{kind}{}", if several { " several" } else { "" }))
        }
        Lowering::Pixel => {
            let line = text.lines().find(|l| l.starts_with("pixel-wise: "))?;
            Some(
                if line.contains("gathered") {
                    "gather"
                } else if line.contains("a scratch row per further crossbar") {
                    "staged patch"
                } else {
                    "patch"
                }
                .to_string(),
            )
        }
    }
}

#[test]
fn every_mode_of_both_lowerings_appears_with_batches() {
    let cfg = GenConfig::default();
    let mut seen: BTreeMap<(&str, String), usize> = BTreeMap::new();
    for seed in 0..3_000u64 {
        let case = case_from_seed(&cfg, seed);
        if case.spec.input_shape[0] < 2 {
            continue;
        }
        for lowering in Lowering::ALL {
            if let Some(m) = mode(&case, lowering) {
                *seen.entry((lowering.name(), m)).or_insert(0) += 1;
            }
        }
    }
    let wanted = [
        (Lowering::Channel, "Images"),
        (Lowering::Channel, "Images several"),
        (Lowering::Channel, "Rows several"),
        (Lowering::Channel, "Pixels several"),
        (Lowering::Channel, "Gather several"),
        (Lowering::Pixel, "staged patch"),
        (Lowering::Pixel, "patch"),
        (Lowering::Pixel, "gather"),
    ];
    for (lowering, m) in wanted {
        let n = seen
            .get(&(lowering.name(), m.to_string()))
            .copied()
            .unwrap_or(0);
        assert!(
            n >= 10,
            "{lowering} mode {m:?} with batch > 1 in only {n} of 3,000 cases: {seen:?}"
        );
    }
}

/// One byte below the smallest threshold the lowering declines, at every threshold it
/// compiles: the thresholds bracket the supported range, and the largest picks the coarsest
/// mode (at it and above, the mode no longer changes).
#[test]
fn thresholds_bracket_the_modes() {
    let cfg = GenConfig::default();
    let mut checked = 0;
    for seed in 0..300u64 {
        let case = case_from_seed(&cfg, seed);
        for lowering in Lowering::ALL {
            let Ok(mut edges) = local_memory_thresholds(&case, &options(lowering)) else {
                continue;
            };
            edges.sort_unstable();
            let at = |bytes: u64| {
                let mut c = case.clone();
                c.spec.arch.local_memory_bytes = bytes as usize;
                mode(&c, lowering)
            };
            let (smallest, largest) = (edges[0], edges[edges.len() - 1]);
            if at(largest).is_none() {
                // Declined for another reason (too many instructions).
                continue;
            }
            if smallest > 1 {
                assert_eq!(at(smallest - 1), None, "seed {seed} {lowering} {edges:?}");
            }
            for &t in &edges {
                assert!(
                    at(t).is_some(),
                    "seed {seed} {lowering}: none at {t} {edges:?}"
                );
            }
            assert_eq!(at(largest), at(largest + 1000), "seed {seed} {lowering}");
            checked += 1;
        }
    }
    assert!(checked >= 400, "only {checked} cases had thresholds");
}

/// Cases compiled without padding skipping (drawn per case) reach the chunked and gathering
/// modes of the channel-wise lowering with padding, where the padded window is zeroed in local
/// memory and a gathered tile that lies in the padding is zeroed: code a hunt reached only with
/// `--no-skip-padding` before options were drawn per case.
#[test]
fn cases_without_padding_skipping_reach_the_chunked_modes_with_padding() {
    let cfg = GenConfig::default();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for seed in 0..3_000u64 {
        let (case, drawn) = case_and_options_from_seed(&cfg, seed);
        let padded = match &case.spec.op {
            pimdiff_oracle::Op::Conv2d(c) => c.padding.iter().any(|&p| p > 0),
            pimdiff_oracle::Op::Mvm(_) => false,
        };
        if drawn.skip_padding || !padded {
            continue;
        }
        let options = drawn.compile_options(&options(Lowering::Channel));
        if let Some(m) = mode_with(&case, &options) {
            let kind = m.split(' ').next().unwrap_or("").to_string();
            *seen.entry(kind).or_insert(0) += 1;
        }
    }
    let counts: Vec<(&str, usize)> = ["Images", "Rows", "Pixels", "Gather"]
        .into_iter()
        .map(|k| (k, seen.get(k).copied().unwrap_or(0)))
        .collect();
    // 166, 35, 23 and 16 when written.
    for (kind, n) in &counts {
        assert!(
            *n >= 10,
            "mode {kind} with padding and without padding skipping in only {n} of 3,000 cases: {counts:?}"
        );
    }
}
