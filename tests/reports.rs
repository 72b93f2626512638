//! Reports and pictures of findings: tables of small tensors, bounded diffs, `diff.svg` and
//! `mapping.svg` (parsed as XML and counted), determinism across runs and compilers.

use std::path::Path;

use ndarray::{ArrayD, IxDyn};
use pimdiff::check::compare::compare;
use pimdiff::check::outcome::Outcome;
use pimdiff::check::{check_case, CaseResult, RunConfig};
use pimdiff::compilers::injected::{compile_mutated, BugClass};
use pimdiff::compilers::CompilerUnderTest;
use pimdiff::finding::Kind;
use pimdiff::report::chipmap::{chip_map, transfers};
use pimdiff::report::pictures::{
    self, heatmap, render_pictures, write_pictures, PictureError, DIFF_SVG, MAPPING_SVG,
};
use pimdiff::report::render_report;
use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::{Inst, Reg};
use pimdiff_oracle::{random_tensors, Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

/// conv2d 2→3 channels, 3×3 input, 2×2 kernel, 2 images, on 3 cores of 6 one-row arrays: 16
/// crossbars, so output tile 0 spills from core 0 to core 1 and tile 1 from core 1 to core 2.
fn conv_case() -> Case {
    let spec = CaseSpec {
        op: Op::Conv2d(Conv2d {
            in_channels: 2,
            out_channels: 3,
            kernel: [2, 2],
            stride: [1, 1],
            padding: [0, 0, 0, 0],
            dilation: [1, 1],
            groups: 1,
            bias: true,
            relu: false,
        }),
        input_shape: vec![2, 2, 3, 3],
        arch: CaseArch {
            cores: 3,
            arrays_per_core: 6,
            array_rows: 1,
            array_cols: 2,
            local_memory_bytes: 65536,
        },
    };
    random_tensors(&spec, 1).unwrap()
}

/// MVM 6→5 features over 3 rows on 3 cores of 2 arrays of 2×4.
fn mvm_case() -> Case {
    let spec = CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: 6,
            out_features: 5,
            bias: false,
            relu: true,
        }),
        input_shape: vec![3, 6],
        arch: CaseArch {
            cores: 3,
            arrays_per_core: 2,
            array_rows: 2,
            array_cols: 4,
            local_memory_bytes: 65536,
        },
    };
    random_tensors(&spec, 1).unwrap()
}

fn injected(bug: BugClass) -> RunConfig {
    RunConfig::with_compiler(CompilerUnderTest::Mutated(
        bug,
        pimdiff_compiler::Lowering::Channel,
    ))
}

/// A result whose machine output is `machine` (no bundle), compared with the case's oracle.
fn result_with_output(case: &Case, machine: ArrayD<i32>) -> CaseResult {
    let oracle = pimdiff_oracle::reference(case).unwrap();
    let outcome = match compare(&oracle, &machine) {
        Some(m) => Outcome::Mismatch(m),
        None => Outcome::Pass,
    };
    CaseResult {
        outcome,
        bundle: None,
        oracle: Some(oracle),
        machine_output: Some(machine),
        attribution: None,
    }
}

fn svg_of(case: &Case, result: &CaseResult, file: &str) -> String {
    render_pictures(case, result)
        .unwrap()
        .into_iter()
        .find(|p| p.name.file == file)
        .unwrap_or_else(|| panic!("no {file}"))
        .svg
}

/// Every `<text>` of an SVG (which must parse as XML), trimmed.
fn texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

/// The `fill` of every `<rect>`, in document order.
fn rect_fills(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("rect"))
        .map(|n| n.attribute("fill").unwrap_or("").to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// diff.svg

#[test]
fn diff_svg_has_one_cell_per_output_element_of_each_differing_batch_entry() {
    let case = conv_case();
    let oracle = pimdiff_oracle::reference(&case).unwrap();
    // Output [2, 3, 2, 2]: batch entry 1 differs at two elements, one up, one down.
    let mut machine = oracle.clone();
    machine[[1, 0, 0, 1]] += 10;
    machine[[1, 2, 1, 0]] -= 10;
    let result = result_with_output(&case, machine);
    assert_eq!(
        pictures::planned(&case, &result)
            .iter()
            .map(|p| p.file)
            .collect::<Vec<_>>(),
        [DIFF_SVG]
    );
    let svg = svg_of(&case, &result, DIFF_SVG);
    let texts = texts(&svg);
    // One panel (batch entry 0 has no difference), its axis labels, the colour bar's labels.
    for expected in [
        "batch entry 1 of 2: 2 of 12 elements differ",
        "output channel",
        "output pixel (oh·2 + ow, 2×2 pixels)",
        "machine − oracle",
        "+10",
        "0",
        "−10",
    ] {
        assert!(
            texts.iter().any(|t| t == expected),
            "{expected:?} in {texts:?}"
        );
    }
    assert!(!texts.iter().any(|t| t.starts_with("batch entry 0")));
    // Background, 12 cells, the panel's frame, the colour bar's steps.
    let fills = rect_fills(&svg);
    assert_eq!(fills.len(), 1 + 12 + 1 + heatmap::COLORBAR_STEPS);
    let cells = &fills[1..13];
    // Full-scale differences get the ends of the palette; equal cells are white.
    assert_eq!(cells.iter().filter(|f| *f == "#B2182B").count(), 1);
    assert_eq!(cells.iter().filter(|f| *f == "#2166AC").count(), 1);
    assert_eq!(cells.iter().filter(|f| *f == "#FFFFFF").count(), 10);
}

#[test]
fn heatmap_panels_bin_large_outputs_keeping_the_largest_difference() {
    let oracle = ArrayD::<i32>::zeros(IxDyn(&[1, 300, 40, 40]));
    let mut machine = oracle.clone();
    machine[[0, 299, 39, 39]] = -7;
    machine[[0, 298, 39, 38]] = 3;
    let panels = heatmap::panels(&oracle, &machine);
    assert_eq!(panels.len(), 1);
    let p = &panels[0];
    // 300 channels in bins of 5, 1600 pixels in bins of 7.
    assert_eq!((p.y_bin, p.rows, p.x_bin, p.cols), (5, 60, 7, 229));
    assert!(p.rows <= heatmap::MAX_BINS_Y && p.cols <= heatmap::MAX_BINS_X);
    assert_eq!(p.y_desc, "output channel, bins of 5");
    // Pixel 1599 and 1598 fall in bin 228; both channels in bin 59: the larger magnitude wins.
    assert_eq!(p.values[59 * 229 + 228], -7);
    assert_eq!(p.values.iter().filter(|&&v| v != 0).count(), 1);
    let svg = heatmap::draw(&panels).unwrap();
    assert_eq!(
        rect_fills(&svg).len(),
        1 + 60 * 229 + 1 + heatmap::COLORBAR_STEPS
    );
}

#[test]
fn heatmap_draws_at_most_four_batch_entries() {
    let oracle = ArrayD::<i32>::zeros(IxDyn(&[6, 1, 1, 2]));
    let machine = ArrayD::<i32>::ones(IxDyn(&[6, 1, 1, 2]));
    let panels = heatmap::panels(&oracle, &machine);
    let titles: Vec<&str> = panels.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "batch entry 0 of 6: 2 of 2 elements differ",
            "batch entry 1 of 6: 2 of 2 elements differ",
            "batch entry 2 of 6: 2 of 2 elements differ",
            "batch entry 3 of 6: 2 of 2 elements differ",
        ]
    );
    // Another shape than the oracle's cannot be drawn.
    let other = ArrayD::<i32>::zeros(IxDyn(&[6, 1, 2, 1]));
    assert!(heatmap::panels(&oracle, &other).is_empty());
}

#[test]
fn mvm_heatmap_has_features_up_and_batch_entries_across() {
    let case = mvm_case();
    let cfg = injected(BugClass::TransposedCells);
    let result = check_case(&case, &cfg);
    let Outcome::Mismatch(m) = &result.outcome else {
        panic!("{:?}", result.outcome)
    };
    let svg = svg_of(&case, &result, DIFF_SVG);
    let texts = texts(&svg);
    let title = format!("{} of 15 elements differ", m.differing);
    for expected in [title.as_str(), "batch entry", "output feature"] {
        assert!(
            texts.iter().any(|t| t == expected),
            "{expected:?} in {texts:?}"
        );
    }
    // 3 batch entries × 5 features.
    assert_eq!(rect_fills(&svg).len(), 1 + 15 + 1 + heatmap::COLORBAR_STEPS);
}

// ---------------------------------------------------------------------------------------------
// mapping.svg

#[test]
fn mapping_svg_labels_every_tile_and_transfer() {
    let case = conv_case();
    let result = check_case(&case, &RunConfig::default());
    assert_eq!(result.outcome, Outcome::Pass);
    let bundle = result.bundle.as_ref().unwrap();
    let map = chip_map(&case, bundle);
    assert!(map.tiles_inferred);
    let groups: usize = map.cores.iter().map(|c| c.groups.len()).sum();
    assert_eq!(groups, 16);
    let svg = svg_of(&case, &result, MAPPING_SVG);
    let texts = texts(&svg);
    assert_eq!(
        texts[0],
        "3 cores · tiles from the in-repo compiler's layout"
    );
    let count = |prefix: &str| texts.iter().filter(|t| t.starts_with(prefix)).count();
    assert_eq!(count("group "), 16);
    assert_eq!(count("core "), 3);
    assert_eq!(count("kernel ("), 16);
    // Output tile 0 (channels 0–1) on core 0 and core 1, tile 1 (channel 2) on cores 1 and 2.
    assert_eq!(count("ci 0 → co 0–1") + count("ci 1 → co 0–1"), 8);
    assert_eq!(count("ci 0 → co 2") + count("ci 1 → co 2"), 8);
    assert!(texts.contains(&"core 1 · 6 of 6 arrays in groups".to_string()));
    assert!(texts.contains(&"kernel (0, 0) · 1×2 · 8 mvmul".to_string()));
    // Contributors send their partial sums to the owner of each tile.
    let arrows: Vec<&String> = texts
        .iter()
        .filter(|t| t.contains(" → ") && t.contains(':'))
        .collect();
    assert_eq!(arrows, ["1 → 0: 1 msg, 64 B", "2 → 1: 1 msg, 32 B"]);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let heads = doc
        .descendants()
        .filter(|n| n.has_tag_name("polygon"))
        .count();
    assert_eq!(heads, 2);
    // Nothing is flagged in a correct bundle.
    assert!(!svg.contains("#C80000"));
}

#[test]
fn mapping_svg_flags_crossbars_that_do_not_hold_their_tile() {
    let case = mvm_case();
    let result = check_case(&case, &injected(BugClass::TransposedCells));
    let correct = compile(&case, &CompileOptions::default()).unwrap();
    let mutated = result.bundle.as_ref().unwrap();
    let corrupted: usize = correct
        .xbars
        .cores
        .iter()
        .map(|(core, x)| {
            let m = &mutated.xbars.cores[core];
            x.cells
                .outer_iter()
                .zip(m.cells.outer_iter())
                .filter(|(a, b)| a != b)
                .count()
        })
        .sum();
    assert!(corrupted >= 1);
    let texts = texts(&svg_of(&case, &result, MAPPING_SVG));
    let flagged = texts
        .iter()
        .filter(|t| *t == "cells ≠ the tile's weights")
        .count();
    assert_eq!(flagged, corrupted);
}

#[test]
fn mapping_svg_shows_send_and_recv_sides_that_disagree() {
    let case = conv_case();
    let result = check_case(&case, &injected(BugClass::RecvWrongCore));
    assert_eq!(result.outcome.kind(), Kind::Deadlock);
    let svg = svg_of(&case, &result, MAPPING_SVG);
    let texts = texts(&svg);
    let arrows: Vec<&String> = texts
        .iter()
        .filter(|t| t.contains(" → ") && t.contains(':'))
        .collect();
    assert_eq!(
        arrows,
        [
            "1 → 0: 1× send, 64 B ≠ 0× recv, 0 B",
            "2 → 0: 0× send, 0 B ≠ 1× recv, 64 B",
            "2 → 1: 1 msg, 32 B"
        ]
    );
}

#[test]
fn mapping_of_another_layout_is_labelled_by_group() {
    let case = conv_case();
    let mut bundle = compile(&case, &CompileOptions::default()).unwrap();
    // Another compiler's layout: core 2's groups renumbered.
    for g in &mut bundle.xbars.cores.get_mut(&2).unwrap().groups {
        g.group += 10;
    }
    let map = chip_map(&case, &bundle);
    assert!(!map.tiles_inferred);
    let core2 = &map.cores[2];
    assert_eq!(core2.groups[0].group, 10);
    assert_eq!(core2.groups[0].tile, None);
    // The program's mvmuls still name groups 0..4 and its map has 4 one-array groups.
    assert_eq!(core2.groups[0].mvmuls, 0);
    let result = CaseResult {
        outcome: Outcome::Pass,
        bundle: Some(bundle),
        oracle: None,
        machine_output: None,
        attribution: None,
    };
    let texts = texts(&svg_of(&case, &result, MAPPING_SVG));
    assert_eq!(
        texts[0],
        "3 cores · groups as exported (tiles not inferred)"
    );
    for expected in [
        "group 10 · array 0",
        "1×1 · 0 mvmul",
        "no mvmul uses it",
        "group 0 · array 0",
        "1×2 · 8 mvmul",
    ] {
        assert!(
            texts.iter().any(|t| t == expected),
            "{expected:?} in {texts:?}"
        );
    }
}

#[test]
fn transfers_pair_sends_with_recvs_per_ordered_pair() {
    let r = |i: u32| Reg::new(i).unwrap();
    let send = |core, size| Inst::Send {
        rs1: r(1),
        core,
        size,
        offset: 0,
    };
    let recv = |core, size| Inst::Recv {
        rd: r(2),
        core,
        size,
        offset: 0,
    };
    let cores = vec![
        vec![send(1, 8), send(1, 8), send(9, 4)],
        vec![recv(0, 8), recv(0, 16)],
    ];
    let t = transfers(&cores);
    assert_eq!(t.len(), 2);
    assert_eq!((t[0].from, t[0].to, t[0].sends, t[0].recvs), (0, 1, 2, 2));
    assert_eq!((t[0].send_bytes, t[0].recv_bytes), (16, 24));
    assert!(!t[0].balanced());
    assert_eq!(t[0].label(), "2× send, 16 B ≠ 2× recv, 24 B");
    assert_eq!(
        (t[1].from, t[1].to, t[1].label().as_str()),
        (0, 9, "1× send, 4 B ≠ 0× recv, 0 B")
    );
}

// ---------------------------------------------------------------------------------------------
// Writing pictures

#[test]
fn write_pictures_writes_each_planned_file_and_nothing_else() {
    let case = conv_case();
    let result = check_case(&case, &injected(BugClass::StoreOffByOne));
    assert_eq!(result.outcome.kind(), Kind::Mismatch);
    let dir = tempfile::tempdir().unwrap();
    let paths = write_pictures(dir.path(), &case, &result).unwrap();
    assert_eq!(
        paths,
        [dir.path().join(DIFF_SVG), dir.path().join(MAPPING_SVG)]
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [DIFF_SVG, MAPPING_SVG]);
    for p in &paths {
        texts(&std::fs::read_to_string(p).unwrap());
    }
    // Writing again replaces the files with identical bytes.
    let before = std::fs::read(&paths[0]).unwrap();
    write_pictures(dir.path(), &case, &result).unwrap();
    assert_eq!(std::fs::read(&paths[0]).unwrap(), before);
}

#[test]
fn write_pictures_into_a_missing_directory_is_an_io_error() {
    let case = conv_case();
    let result = check_case(&case, &injected(BugClass::StoreOffByOne));
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir");
    match write_pictures(&missing, &case, &result) {
        Err(PictureError::Io { path, .. }) => assert_eq!(path, missing.join(DIFF_SVG)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn results_without_a_mismatch_or_cores_get_no_pictures() {
    let case = mvm_case();
    // A fault on one core: no mismatch, a single-core program.
    let mut single = case.clone();
    single.spec.arch.cores = 1;
    single.spec.arch.arrays_per_core = 8;
    let result = check_case(&single, &RunConfig::default());
    assert_eq!(result.outcome, Outcome::Pass);
    assert!(pictures::planned(&single, &result).is_empty());
    assert!(render_pictures(&single, &result).unwrap().is_empty());
    // A compile error has no bundle.
    let result = CaseResult {
        outcome: Outcome::CompileError {
            message: "boom".into(),
        },
        bundle: None,
        oracle: None,
        machine_output: None,
        attribution: None,
    };
    assert!(pictures::planned(&case, &result).is_empty());
}

// ---------------------------------------------------------------------------------------------
// report.md

#[test]
fn report_of_a_small_multi_core_conv_mismatch() {
    let case = conv_case();
    let cfg = injected(BugClass::StoreOffByOne);
    let result = check_case(&case, &cfg);
    insta::assert_snapshot!(render_report(&case, &result, &cfg));
}

#[test]
fn report_of_a_small_mvm_mismatch() {
    let case = mvm_case();
    let cfg = injected(BugClass::DroppedPartialSum);
    let result = check_case(&case, &cfg);
    insta::assert_snapshot!(render_report(&case, &result, &cfg));
}

#[test]
fn report_of_a_large_mismatch_lists_differing_rows_only() {
    let spec = CaseSpec {
        op: Op::Mvm(Mvm {
            in_features: 3,
            out_features: 70,
            bias: false,
            relu: false,
        }),
        input_shape: vec![3, 3],
        arch: CaseArch {
            cores: 1,
            arrays_per_core: 8,
            array_rows: 4,
            array_cols: 16,
            local_memory_bytes: 65536,
        },
    };
    let case = random_tensors(&spec, 2).unwrap();
    let mut machine = pimdiff_oracle::reference(&case).unwrap();
    machine[[1, 69]] += 1;
    let result = result_with_output(&case, machine);
    let report = render_report(&case, &result, &RunConfig::default());
    // 70-element rows are cut after 64 values; only row n1 differs.
    assert!(report
        .contains("### Differing output rows, oracle (−) vs machine (+)\n\n1 of 3 rows differ.\n"));
    let minus = report.lines().find(|l| l.starts_with("-n1: ")).unwrap();
    assert!(minus.ends_with("… (6 more)"), "{minus}");
    assert_eq!(report.lines().filter(|l| l.starts_with("+n")).count(), 1);
    assert!(!report.contains("-n0: ") && !report.contains("-n2: "));
    // Tensors above 64 elements are named, not printed.
    assert!(report.contains(
        "weight [70, 3]: 210 elements, in `weight.npy` (tables are printed up to 64 elements).\n"
    ));
    assert!(report.contains("input [3, 3]:\n\n| | f0 | f1 | f2 |\n|---|---:|---:|---:|\n| n0 | "));
}

#[test]
fn report_of_a_passing_case_has_no_program_diff() {
    // ~2,500 instructions with optimizations on, more with them off: the assembly differs.
    let spec = CaseSpec {
        op: Op::Conv2d(Conv2d {
            in_channels: 4,
            out_channels: 4,
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1, 1, 1],
            dilation: [1, 1],
            groups: 1,
            bias: true,
            relu: true,
        }),
        input_shape: vec![1, 4, 12, 12],
        arch: CaseArch {
            cores: 2,
            arrays_per_core: 16,
            array_rows: 4,
            array_cols: 4,
            local_memory_bytes: 65536,
        },
    };
    let case = random_tensors(&spec, 3).unwrap();
    let cfg = RunConfig::default();
    let result = check_case(&case, &cfg);
    assert_eq!(result.outcome, Outcome::Pass);
    let report = render_report(&case, &result, &cfg);
    let program = &report[report.find("## Program").unwrap()..];
    let count: usize = result
        .bundle
        .as_ref()
        .unwrap()
        .program
        .cores
        .iter()
        .map(Vec::len)
        .sum();
    assert_eq!(
        program,
        format!("## Program\n\n{count} instructions on 2 core(s).\n\n")
    );
    assert!(!report.contains("```diff"));
}

#[test]
fn reports_and_pictures_are_the_same_for_an_external_compiler_in_any_temporary_directory() {
    // An external compiler that writes a bundle with an injected bug: each run has its own
    // temporary case and bundle directories, yet the report and pictures do not change.
    let case = conv_case();
    let template = tempfile::tempdir().unwrap();
    compile_mutated(
        BugClass::StoreOffByOne,
        pimdiff_compiler::Lowering::Channel,
        &case,
    )
    .unwrap()
    .write_dir(template.path())
    .unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_compiler.sh");
    let command = format!(
        "TEMPLATE={} sh {} copy {{case}} {{out}}",
        pimdiff::compilers::external::shell_quote(&template.path().to_string_lossy()),
        pimdiff::compilers::external::shell_quote(&fixture.to_string_lossy())
    );
    let cfg = RunConfig::with_compiler(CompilerUnderTest::External { command });
    let runs: Vec<(String, Vec<pictures::Picture>)> = (0..2)
        .map(|_| {
            let result = check_case(&case, &cfg);
            assert_eq!(result.outcome.kind(), Kind::Mismatch);
            (
                render_report(&case, &result, &cfg),
                render_pictures(&case, &result).unwrap(),
            )
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
    let (report, pictures) = &runs[0];
    // The command line names the template; the per-run directories appear nowhere.
    assert!(
        !report.contains("pimdiff-ext-"),
        "a temporary path in the report"
    );
    // The external bundle has the in-repo layout, so its tiles are recognised.
    let mapping = pictures
        .iter()
        .find(|p| p.name.file == MAPPING_SVG)
        .unwrap();
    assert!(mapping.svg.contains("tiles from the in-repo compiler"));
}

#[test]
fn a_finding_whose_oracle_output_moved_into_the_case_reports_the_same() {
    // A hunt moves the oracle's output into `case.expected` before it renders the report.
    let case = conv_case();
    let cfg = injected(BugClass::StoreOffByOne);
    let mut result = check_case(&case, &cfg);
    let report = render_report(&case, &result, &cfg);
    let pictures = render_pictures(&case, &result).unwrap();
    let mut saved = case.clone();
    saved.expected = result.oracle.take();
    assert_eq!(render_report(&saved, &result, &cfg), report);
    assert_eq!(render_pictures(&saved, &result).unwrap(), pictures);
}

#[test]
fn mapping_svg_stays_bounded_for_many_cores_and_groups() {
    use pimdiff::report::chipmap::{ChipMap, CoreMap, GroupTile, Transfer};
    use pimdiff::report::pictures::mapping;
    let group = |g: u32| GroupTile {
        group: g,
        arrays: vec![g],
        shape: Some((4, 4)),
        map_arrays: None,
        tile: None,
        cells_match: None,
        mvmuls: 1,
    };
    let map = ChipMap {
        cores: (0..40)
            .map(|core| CoreMap {
                core,
                arrays_per_core: 100,
                groups: (0..100).map(group).collect(),
            })
            .collect(),
        transfers: vec![
            Transfer {
                from: 0,
                to: 1,
                sends: 1,
                send_bytes: 4,
                recvs: 1,
                recv_bytes: 4,
            },
            Transfer {
                from: 0,
                to: 39,
                sends: 2,
                send_bytes: 8,
                recvs: 2,
                recv_bytes: 8,
            },
        ],
        tiles_inferred: false,
        stray_export_cores: vec![45],
    };
    let svg = mapping::draw(&map, false, false).unwrap();
    let texts = texts(&svg);
    let count = |prefix: &str| texts.iter().filter(|t| t.starts_with(prefix)).count();
    assert_eq!(count("core "), mapping::MAX_CORES_DRAWN + 1);
    assert_eq!(
        count("group "),
        mapping::MAX_CORES_DRAWN * mapping::MAX_GROUPS_DRAWN
    );
    assert_eq!(count("+76 more groups"), mapping::MAX_CORES_DRAWN);
    for note in [
        "cores 16–39 not drawn",
        "the crossbar export has core 45; the program has 40 cores",
        "core 0 → core 39: 2 msgs, 8 B",
        "0 → 1: 1 msg, 4 B",
    ] {
        assert!(texts.iter().any(|t| t == note), "{note:?} in {texts:?}");
    }
    assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
}
