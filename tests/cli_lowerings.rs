//! `pimdiff lowerings` and `pimdiff compile --lowering` through the binary: outputs, exit
//! codes 0 / 2, and bad flags.

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;

use pimdiff::cli::lowerings::{markdown, Counts};
use pimdiff_isa::{Opcode, Program};

use cli::pimdiff;

fn case(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus/features")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn lowerings_writes_the_table_the_chart_and_the_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let o = pimdiff(&[
        "lowerings",
        "--out",
        out.to_str().unwrap(),
        "--runs",
        "1",
        "--layer",
        "fc",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    let md = std::fs::read_to_string(out.join("lowerings.md")).unwrap();
    assert_eq!(md, stdout);
    // The FC layer: 8 output tiles of 128 (1000 outputs) x 4 input tiles on one core. The
    // channel-wise lowering loads each tile's bias and stores each tile; the pixel-wise one
    // loads the bias of its one run of tiles and stores it at once.
    assert!(
        md.contains("| fc 512->1000 | channel | 9 | 8 | 0 | 0 | 0 | 0 | 0 | 17 | 32 |"),
        "{md}"
    );
    assert!(
        md.contains("| fc 512->1000 | pixel | 2 | 1 | 0 | 0 | 0 | 0 | 0 | 3 | 32 |"),
        "{md}"
    );
    assert!(md.contains("| yes |"), "{md}");
    assert_eq!(md.matches("\n| fc 512->1000 |").count(), 3, "{md}");
    let svg = std::fs::read_to_string(out.join("lowerings.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("fc 512-&gt;1000") || svg.contains("fc 512->1000"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("lowerings.json")).unwrap())
            .unwrap();
    assert_eq!(json[0]["layer"], "fc 512->1000");
    assert_eq!(json[0]["pixel"]["counts"]["mvmul"], 32);
    assert_eq!(json[0]["channel"]["agrees"], true);
    // No temporary bundle is left behind.
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["lowerings.json", "lowerings.md", "lowerings.svg"]);
}

/// Every opcode `index + 1` times (`Opcode::ALL` order), so that each count says which
/// opcodes went into it.
#[test]
fn counts_put_every_opcode_in_its_class_and_column() {
    let insts = Opcode::ALL
        .iter()
        .enumerate()
        .flat_map(|(i, op)| std::iter::repeat_n(op.template(), i + 1))
        .collect();
    let program = Program {
        cores: vec![insts],
        ..Program::default()
    };
    let c = Counts::of(&program);
    // ld, st, lldi, lmv, sld, send, recv.
    assert_eq!(c.memory, [25, 26, 27, 28, 3, 29, 30]);
    assert_eq!(c.mvmul, 10);
    // vvadd .. vrsl: 11 + 12 + ... + 24.
    assert_eq!(c.vector, 245);
    // nop, sldi, sadd, ssub, smul, saddi, smuli, setbw, wait, sync.
    assert_eq!(c.scalar, 1 + 2 + 4 + 5 + 6 + 7 + 8 + 9 + 31 + 32);
    assert_eq!((c.memory_bound(), c.total()), (168, 528));
    assert!(markdown(&[]).contains(
        "\n| layer | lowering | ld | st | lldi | lmv | sld | send | recv | memory-bound | mvmul | vector | scalar | total | bundle bytes |\n\
         |---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n"
    ));
}

#[test]
fn lowerings_bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    for (args, message) in [
        (
            vec!["lowerings", "--out", out, "--layer", "no-such-layer"],
            "no layer matches",
        ),
        (vec!["lowerings", "--out", out, "--runs", "0"], "--runs"),
        (vec!["lowerings"], "--out"),
    ] {
        let o = pimdiff(&args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    // An output directory that is a file.
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let o = pimdiff(&[
        "lowerings",
        "--out",
        file.to_str().unwrap(),
        "--layer",
        "fc",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("creating"));
}

#[test]
fn compile_with_the_pixel_wise_lowering() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle");
    let padding = case("conv-padding");
    let o = pimdiff(&[
        "compile",
        &padding,
        "-o",
        bundle.to_str().unwrap(),
        "--lowering",
        "pixel",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(bundle.join("config.json").is_file());
    assert!(bundle.join("io.json").is_file());
    let pim = pimdiff(&["compile", &padding, "--emit", "pim", "--lowering", "pixel"]);
    assert_eq!(pim.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&pim.stdout).contains("pixel-wise: "));
    let channel = pimdiff(&["compile", &padding, "--emit", "pim"]);
    assert!(String::from_utf8_lossy(&channel.stdout).contains("chunks: "));
    let prov = pimdiff(&[
        "compile",
        &padding,
        "--emit",
        "provenance",
        "--lowering",
        "pixel",
    ]);
    let text = String::from_utf8_lossy(&prov.stdout);
    assert_eq!(prov.status.code(), Some(0));
    assert!(text.contains("; pixel::codegen::load_patches"), "{text}");
    let o = pimdiff(&[
        "compile",
        &padding,
        "--emit",
        "asm",
        "--lowering",
        "diagonal",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown lowering \"diagonal\""));
}
