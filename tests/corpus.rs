//! The regression corpus (`corpus/`): every entry is replayed through the library and must
//! meet the expectation in its `expect.json` / `finding.json`.
//!
//! The corpus is built by this file's recipes (see `corpus/README.md`):
//!
//! ```text
//! PIMDIFF_REGENERATE_CORPUS=1 cargo test --test corpus -- the_corpus_matches_its_recipes
//! ```
//!
//! rewrites `corpus/features/*` and `corpus/limits/*` from the tables below (a spec plus a
//! tensor seed), and `corpus/bugs/*` by hunting each injected bug class from a fixed seed
//! and minimizing the first finding. Without the variable, the feature and limit entries
//! are checked against their recipes, so the table and the committed files cannot drift.

use std::path::{Path, PathBuf};

use pimdiff::check::{check_case, RunConfig};
use pimdiff::compilers::injected::BugClass;
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::corpus::{self, replay, ExpectFile};
use pimdiff::engine::case_seed;
use pimdiff::engine::MinimizeConfig;
use pimdiff::finding::Expectation;
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};
use pimdiff::targets::tensor::shrink::{case_size, minimize};
use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

fn arch(cores: usize, arrays_per_core: usize, rows: usize, cols: usize) -> CaseArch {
    CaseArch {
        cores,
        arrays_per_core,
        array_rows: rows,
        array_cols: cols,
        local_memory_bytes: 65536,
    }
}

#[allow(clippy::too_many_arguments)]
fn conv(
    n: usize,
    c: usize,
    k: usize,
    hw: [usize; 2],
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 4],
    dilation: [usize; 2],
    groups: usize,
    bias: bool,
    relu: bool,
    arch: CaseArch,
) -> CaseSpec {
    CaseSpec {
        op: Op::Conv2d(Conv2d {
            in_channels: c,
            out_channels: k,
            kernel,
            stride,
            padding,
            dilation,
            groups,
            bias,
            relu,
        }),
        input_shape: vec![n, c, hw[0], hw[1]],
        arch,
    }
}

fn mvm(n: usize, inf: usize, outf: usize, bias: bool, relu: bool, arch: CaseArch) -> CaseSpec {
    CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: inf,
            out_features: outf,
            bias,
            relu,
        }),
        input_shape: vec![n, inf],
        arch,
    }
}

/// One hand-picked entry: name, what it covers, the spec, the tensor seed, the expectation.
struct Recipe {
    name: &'static str,
    note: &'static str,
    spec: CaseSpec,
    seed: u64,
    expect: &'static str,
    /// Overrides `arch.local_memory_bytes` (tight local memory). Chosen as the least the
    /// compiler accepted when the entry was made; regeneration prints the current least.
    local_memory: Option<usize>,
}

fn recipes() -> Vec<Recipe> {
    let a = arch(2, 8, 4, 4);
    let r = |name, note, spec, seed, expect| Recipe {
        name,
        note,
        spec,
        seed,
        expect,
        local_memory: None,
    };
    vec![
        r(
            "features/conv-plain",
            "3x3 conv, no padding: several input and output tiles",
            conv(
                1,
                5,
                6,
                [5, 5],
                [3, 3],
                [1, 1],
                [0; 4],
                [1, 1],
                1,
                false,
                false,
                arch(3, 16, 4, 4),
            ),
            1,
            "pass",
        ),
        r(
            "features/conv-padding",
            "symmetric padding 1: corner, edge and interior pixels skip different kernel positions",
            conv(
                1,
                3,
                4,
                [4, 4],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
                false,
                false,
                a,
            ),
            2,
            "pass",
        ),
        r(
            "features/conv-padding-asymmetric",
            "asymmetric padding larger than the kernel on one side",
            conv(
                1,
                2,
                3,
                [3, 4],
                [3, 2],
                [1, 1],
                [2, 0, 1, 3],
                [1, 1],
                1,
                false,
                false,
                a,
            ),
            3,
            "pass",
        ),
        r(
            "features/conv-stride",
            "stride larger than the kernel, different along H and W",
            conv(
                1,
                3,
                2,
                [7, 6],
                [2, 2],
                [3, 2],
                [0; 4],
                [1, 1],
                1,
                false,
                false,
                a,
            ),
            4,
            "pass",
        ),
        r(
            "features/conv-dilation",
            "dilation 2 with padding",
            conv(
                1,
                2,
                3,
                [6, 6],
                [3, 3],
                [1, 1],
                [1; 4],
                [2, 2],
                1,
                false,
                false,
                a,
            ),
            5,
            "pass",
        ),
        r(
            "features/conv-groups",
            "2 groups: block-diagonal weights",
            conv(
                1,
                4,
                6,
                [4, 4],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                2,
                false,
                false,
                arch(2, 16, 4, 4),
            ),
            6,
            "pass",
        ),
        r(
            "features/conv-depthwise",
            "depthwise: groups = channels",
            conv(
                1,
                4,
                4,
                [4, 4],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                4,
                false,
                false,
                arch(2, 32, 4, 4),
            ),
            7,
            "pass",
        ),
        r(
            "features/conv-bias",
            "bias added once, on the final sum",
            conv(
                1,
                5,
                3,
                [4, 4],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
                true,
                false,
                arch(3, 8, 4, 4),
            ),
            8,
            "pass",
        ),
        r(
            "features/conv-relu",
            "ReLU on the final sum, never on partial sums",
            conv(
                1,
                6,
                3,
                [4, 4],
                [2, 2],
                [1, 1],
                [0; 4],
                [1, 1],
                1,
                true,
                true,
                a,
            ),
            9,
            "pass",
        ),
        r(
            "features/conv-batch",
            "batch of 3: per-image offsets",
            conv(
                3,
                2,
                3,
                [3, 3],
                [2, 2],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
                true,
                false,
                a,
            ),
            10,
            "pass",
        ),
        r(
            "features/conv-1x1-arrays",
            "1x1 crossbar arrays: one cell per array",
            conv(
                1,
                2,
                2,
                [3, 3],
                [2, 2],
                [1, 1],
                [0; 4],
                [1, 1],
                1,
                false,
                false,
                arch(2, 16, 1, 1),
            ),
            11,
            "pass",
        ),
        r(
            "features/conv-1-row-arrays",
            "1-row arrays: every input channel its own tile",
            conv(
                1,
                3,
                4,
                [3, 3],
                [1, 1],
                [1, 1],
                [0; 4],
                [1, 1],
                1,
                false,
                false,
                arch(1, 16, 1, 4),
            ),
            12,
            "pass",
        ),
        r(
            "features/conv-multicore-reduction",
            "partial sums of one output tile spread over cores: send/recv + vvadd",
            conv(
                1,
                9,
                3,
                [3, 3],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
                true,
                true,
                arch(4, 8, 4, 4),
            ),
            13,
            "pass",
        ),
        r(
            "features/conv-kernel-larger-than-input",
            "kernel larger than the unpadded input, one-pixel output",
            conv(
                1,
                2,
                2,
                [2, 2],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
                false,
                false,
                a,
            ),
            14,
            "pass",
        ),
        Recipe {
            local_memory: Some(92),
            ..r(
                "features/conv-tight-local-memory",
                "local memory shrunk to the least the compiler accepted when the entry was made",
                conv(
                    1,
                    3,
                    4,
                    [5, 5],
                    [3, 3],
                    [1, 1],
                    [1; 4],
                    [1, 1],
                    1,
                    true,
                    false,
                    a,
                ),
                15,
                "pass",
            )
        },
        r(
            "features/mvm-plain",
            "MVM, several input and output tiles",
            mvm(1, 10, 7, false, false, a),
            16,
            "pass",
        ),
        r(
            "features/mvm-bias-relu-batch",
            "MVM with bias, ReLU, batch 2",
            mvm(2, 6, 5, true, true, a),
            17,
            "pass",
        ),
        r(
            "features/mvm-multicore",
            "MVM reduced across cores",
            mvm(1, 16, 4, true, false, arch(4, 1, 4, 4)),
            18,
            "pass",
        ),
        r(
            "features/conv-tile-edges",
            "channel counts at tile size + 1 (C = 5) and tile size - 1 (K = 3) on 4x4 arrays",
            conv(
                1,
                5,
                3,
                [3, 3],
                [2, 2],
                [1, 1],
                [0; 4],
                [1, 1],
                1,
                false,
                false,
                a,
            ),
            20,
            "pass",
        ),
        r(
            "features/conv-stride-padding-dilation",
            "stride, asymmetric padding and dilation together",
            conv(
                1,
                2,
                3,
                [7, 6],
                [3, 3],
                [2, 2],
                [1, 2, 0, 1],
                [2, 1],
                1,
                true,
                false,
                a,
            ),
            21,
            "pass",
        ),
        r(
            "features/conv-groups-multicore",
            "3 groups on 2x2 arrays spread over 3 cores",
            conv(
                1,
                6,
                6,
                [3, 3],
                [2, 2],
                [1, 1],
                [0; 4],
                [1, 1],
                3,
                true,
                true,
                arch(3, 8, 2, 2),
            ),
            22,
            "pass",
        ),
        r(
            "features/conv-one-pixel-output",
            "a strided kernel that fits exactly once: a 1x1 output",
            conv(
                2,
                3,
                2,
                [3, 3],
                [3, 3],
                [2, 2],
                [0; 4],
                [1, 1],
                1,
                false,
                true,
                a,
            ),
            23,
            "pass",
        ),
        r(
            "features/conv-batch-multicore",
            "batch 2 with cross-core reductions, bias and ReLU",
            conv(
                2,
                8,
                4,
                [3, 3],
                [2, 2],
                [1, 1],
                [0, 0, 1, 1],
                [1, 1],
                1,
                true,
                true,
                arch(4, 4, 4, 4),
            ),
            24,
            "pass",
        ),
        r(
            "features/mvm-1x1-arrays",
            "MVM on 1x1 arrays: every weight its own crossbar",
            mvm(1, 3, 2, true, false, arch(2, 8, 1, 1)),
            25,
            "pass",
        ),
        Recipe {
            local_memory: Some(16),
            ..r(
                "limits/local-memory-too-small",
                "local memory smaller than one pixel's chunk: declined, not miscompiled",
                conv(
                    1,
                    3,
                    4,
                    [5, 5],
                    [3, 3],
                    [1, 1],
                    [1; 4],
                    [1, 1],
                    1,
                    true,
                    false,
                    a,
                ),
                26,
                "unsupported: local memory too small",
            )
        },
        r(
            "limits/not-enough-arrays",
            "more crossbars than the chip has: declined, not miscompiled",
            conv(
                1,
                8,
                8,
                [4, 4],
                [3, 3],
                [1, 1],
                [1; 4],
                [1, 1],
                1,
                false,
                false,
                arch(1, 2, 4, 4),
            ),
            19,
            "unsupported: not enough crossbar arrays",
        ),
    ]
}

/// The seed the bug entries are hunted from.
const BUG_HUNT_SEED: u64 = 2026;

/// The case of a recipe: random tensors from its seed, the expected output from the oracle.
fn build(recipe: &Recipe) -> Case {
    let mut spec = recipe.spec.clone();
    if let Some(bytes) = recipe.local_memory {
        spec.arch.local_memory_bytes = bytes;
    }
    let mut case = pimdiff_oracle::random_tensors(&spec, recipe.seed).unwrap();
    case.expected = Some(pimdiff_oracle::reference(&case).unwrap());
    case
}

/// The least local memory with which the in-repo compiler accepts the recipe's case today.
fn least_local_memory(recipe: &Recipe) -> usize {
    let fits = |bytes: usize| {
        let mut spec = recipe.spec.clone();
        spec.arch.local_memory_bytes = bytes;
        let case = pimdiff_oracle::random_tensors(&spec, recipe.seed).unwrap();
        compile(&case, &CompileOptions::default()).is_ok()
    };
    let (mut lo, mut hi) = (1usize, recipe.spec.arch.local_memory_bytes);
    assert!(
        fits(hi),
        "{}: does not compile even with {hi} bytes",
        recipe.name
    );
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    hi
}

fn write_entry(dir: &Path, case: &Case, expect: ExpectFile) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    pimdiff_oracle::io::write_case(case, dir).unwrap();
    corpus::write_json(dir, corpus::EXPECT_JSON, &expect).unwrap();
}

/// The first case of the bug hunt that the bug turns into a finding, minimized.
fn hunt_bug(bug: BugClass) -> (Case, String) {
    let run = RunConfig::with_compiler(CompilerUnderTest::Mutated(
        bug,
        pimdiff_compiler::Lowering::Channel,
    ));
    let cfg = GenConfig::default();
    for k in 0..20_000 {
        let case = case_from_seed(&cfg, case_seed(BUG_HUNT_SEED, k));
        let outcome = check_case(&case, &run).outcome;
        if let Some(sig) = outcome.signature() {
            let m = minimize(&case, &run, &sig, &MinimizeConfig::default());
            let mut small = m.case;
            small.expected = Some(pimdiff_oracle::reference(&small).unwrap());
            println!(
                "{}: k={k}, size {} -> {}, {sig}",
                bug.name(),
                case_size(&case),
                case_size(&small)
            );
            return (small, m.signature.kind.to_string());
        }
    }
    panic!("{}: no finding in 20000 cases", bug.name());
}

fn regenerate() {
    for recipe in recipes() {
        if let Some(bytes) = recipe.local_memory {
            println!(
                "{}: local memory {bytes} bytes; the compiler accepts {} today",
                recipe.name,
                least_local_memory(&recipe)
            );
        }
        let case = build(&recipe);
        let expect = ExpectFile {
            format: pimdiff::finding::META_FORMAT,
            expect: Expectation::parse(recipe.expect).unwrap(),
            note: recipe.note.to_string(),
            mutation: None,
            lowering: None,
            compile_options: None,
        };
        write_entry(&corpus_dir().join(recipe.name), &case, expect);
    }
    for bug in BugClass::ALL {
        let (case, kind) = hunt_bug(bug);
        let expect = ExpectFile {
            format: pimdiff::finding::META_FORMAT,
            expect: Expectation::parse(&kind).unwrap(),
            note: format!(
                "the injected bug {} must still be detected: first finding of a hunt from seed {BUG_HUNT_SEED}, minimized",
                bug.name()
            ),
            mutation: Some(bug.name().to_string()),
            lowering: None,
            compile_options: None,
        };
        write_entry(&corpus_dir().join("bugs").join(bug.name()), &case, expect);
    }
}

#[test]
fn the_corpus_matches_its_recipes() {
    if std::env::var_os("PIMDIFF_REGENERATE_CORPUS").is_some() {
        regenerate();
    }
    for recipe in recipes() {
        let dir = corpus_dir().join(recipe.name);
        let entry = corpus::load_entry(&dir).unwrap_or_else(|e| panic!("{e}"));
        let built = build(&recipe);
        assert_eq!(
            entry.case, built,
            "{}: differs from its recipe (regenerate the corpus)",
            recipe.name
        );
        let expect = entry.meta.expect_file.unwrap();
        assert_eq!(expect.expect.to_string(), recipe.expect, "{}", recipe.name);
    }
    for bug in BugClass::ALL {
        let dir = corpus_dir().join("bugs").join(bug.name());
        let entry = corpus::load_entry(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(entry.mutation, Some(bug), "{}", dir.display());
    }
}

#[test]
fn every_corpus_entry_meets_its_expectation() {
    let rows = replay(&[corpus_dir()], &RunConfig::default()).unwrap();
    assert_eq!(rows.len(), recipes().len() + BugClass::ALL.len());
    let failures: Vec<String> = rows
        .iter()
        .filter(|r| !r.ok())
        .map(|r| match &r.result {
            Err(e) => format!("{}: unreadable: {e}", r.dir.display()),
            Ok(res) => format!(
                "{}: expected {:?}, observed {} {:?}",
                r.dir.display(),
                r.expectation.as_ref().map(|e| e.to_string()),
                res.observed.kind,
                res.observed.signature
            ),
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every bug entry is a finding (the injected bug is detected), every feature entry passes.
    for r in &rows {
        let res = r.result.as_ref().unwrap();
        let is_bug = r.dir.components().any(|c| c.as_os_str() == "bugs");
        assert_eq!(res.is_finding(), is_bug, "{}", r.dir.display());
    }
}
