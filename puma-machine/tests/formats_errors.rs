//! Every way a model directory can be malformed, each a typed error naming the file (and
//! the line, for one bad line); none panics.

use std::fs;
use std::path::Path;

use pimdiff_puma::formats::{
    load_model, ArgProblem, LoadError, LoadErrorKind, ProgramKind, SyntaxProblem, ValueProblem,
    WeightProblem, MAX_TILES, MAX_WEIGHTS_FILE_BYTES,
};

/// A directory with a valid one-tile model `m` (a tile that halts, eight idle cores), plus
/// `files` (name, contents) written over it.
fn model_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("m-tile0.puma"), "halt()\n").unwrap();
    for c in 0..8 {
        fs::write(dir.path().join(format!("m-tile0-core{c}.puma")), "hlt()\n").unwrap();
    }
    for (name, text) in files {
        fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn load_err(files: &[(&str, &str)]) -> LoadError {
    let dir = model_dir(files);
    load_model(dir.path(), "m").expect_err("the model is malformed")
}

/// The error of a core program of `text`, with the line it names.
fn core_err(text: &str) -> (Option<u32>, LoadErrorKind) {
    let e = load_err(&[("m-tile0-core3.puma", text)]);
    assert!(
        e.file.ends_with("m-tile0-core3.puma"),
        "{}",
        e.file.display()
    );
    (e.line, e.kind)
}

fn arg(line: u32, inst: &'static str, problem: ArgProblem) -> (u32, &'static str, ArgProblem) {
    (line, inst, problem)
}

fn arg_err(text: &str) -> (u32, &'static str, ArgProblem) {
    match core_err(text) {
        (Some(line), LoadErrorKind::Argument { inst, problem }) => (line, inst, problem),
        other => panic!("expected an argument error, got {other:?}"),
    }
}

fn bad_value(param: &'static str, problem: ValueProblem) -> ArgProblem {
    ArgProblem::BadValue { param, problem }
}

#[test]
fn a_valid_directory_loads() {
    let dir = model_dir(&[("m-report.out", "ignored"), ("other-tile0.puma", "x")]);
    let model = load_model(dir.path(), "m").unwrap();
    assert_eq!(model.tiles.len(), 1);
    assert_eq!(model.tiles[0].cores.len(), 8);
}

#[test]
fn syntax_errors_name_file_line_and_column() {
    let e = load_err(&[("m-tile0-core3.puma", "hlt()\nset(d1=010, imm=0)\nhlt()\n")]);
    assert_eq!(e.line, Some(2));
    assert!(matches!(
        e.kind,
        LoadErrorKind::Syntax {
            col: 8,
            problem: SyntaxProblem::LeadingZero
        }
    ));
    let text = e.to_string();
    assert!(
        text.ends_with("m-tile0-core3.puma:2: column 8: integer with a leading zero (Python 2 reads it as octal)"),
        "{text}"
    );
    for (line, problem) in [
        ("set(d1=1", SyntaxProblem::Expected("`,` or `)`")),
        ("set(d1=1) # note", SyntaxProblem::TrailingText),
        ("set(d1=x)", SyntaxProblem::NotALiteral),
        ("(d1=1)", SyntaxProblem::ExpectedName),
        ("alu('add, d1=1)", SyntaxProblem::UnterminatedString),
        ("set(d1=1, 2)", SyntaxProblem::PositionalAfterKeyword),
        ("set(d1=1e)", SyntaxProblem::BadNumber),
        (
            "set(d1=123456789012345678901234567890)",
            SyntaxProblem::IntegerTooLarge,
        ),
        ("mvm([[[[['1']]]]])", SyntaxProblem::TooDeep),
        ("alu('a\\b', d1=1)", SyntaxProblem::Escape),
        ("hlt()\r", SyntaxProblem::TrailingText),
    ] {
        match core_err(line) {
            (Some(1), LoadErrorKind::Syntax { problem: p, .. }) => assert_eq!(p, problem, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
}

#[test]
fn empty_lines_and_unknown_instructions() {
    assert!(matches!(
        core_err("hlt()\n\nhlt()"),
        (Some(2), LoadErrorKind::EmptyLine)
    ));
    assert!(matches!(
        core_err("hlt()\n  \t\nhlt()"),
        (Some(2), LoadErrorKind::EmptyLine)
    ));
    assert!(matches!(
        core_err("  \t\n"),
        (None, LoadErrorKind::Input(pimdiff_input::InputError::Empty))
    ));
    let (line, kind) = core_err("send(mem_addr=0, vtile_id=0, send_width=1, target_addr=0)");
    assert_eq!(line, Some(1));
    assert_eq!(
        kind.to_string(),
        "`send` is not a core instruction (it is a tile instruction)"
    );
    let e = load_err(&[("m-tile0.puma", "hlt()")]);
    assert!(matches!(
        e.kind,
        LoadErrorKind::UnknownInstruction {
            program: ProgramKind::Tile,
            ..
        }
    ));
    assert_eq!(
        core_err("train(['000'])").1.to_string(),
        "`train` is not a core instruction (training and deprecated instructions are not supported)"
    );
    assert_eq!(
        core_err("nop()").1.to_string(),
        "`nop` is not a core instruction"
    );
}

#[test]
fn arguments_that_do_not_fit_the_parameters() {
    assert_eq!(
        arg_err("set(d1=1, imm=0, width=2)"),
        arg(1, "set", ArgProblem::UnknownKeyword("width".into()))
    );
    assert_eq!(
        arg_err("set(1, 2, d1=3)"),
        arg(1, "set", ArgProblem::Duplicate("d1"))
    );
    assert_eq!(
        arg_err("hlt()\nset(d1=600)"),
        arg(2, "set", ArgProblem::Missing("imm"))
    );
    assert_eq!(
        arg_err("mvm()"),
        arg(1, "mvm", ArgProblem::Missing("xb_nma"))
    );
    assert_eq!(
        arg_err("hlt(1)"),
        arg(1, "hlt", ArgProblem::TooManyPositional { given: 1, max: 0 })
    );
    let wrong = |expected, found| ValueProblem::WrongType { expected, found };
    assert_eq!(
        arg_err("set(d1='a', imm=0)"),
        arg(1, "set", bad_value("d1", wrong("an integer", "a string")))
    );
    assert_eq!(
        arg_err("set(d1=1.5, imm=0)"),
        arg(1, "set", bad_value("d1", wrong("an integer", "a float")))
    );
    assert_eq!(
        arg_err("set(d1=-1, imm=0)"),
        arg(
            1,
            "set",
            bad_value(
                "d1",
                ValueProblem::OutOfRange {
                    value: -1,
                    min: 0,
                    max: u32::MAX as i64
                }
            )
        )
    );
    assert_eq!(
        arg_err("load(d1=1, r1=2, load_width=17)"),
        arg(
            1,
            "load",
            bad_value(
                "load_width",
                ValueProblem::OutOfRange {
                    value: 17,
                    min: 1,
                    max: 16
                }
            )
        )
    );
    assert_eq!(
        arg_err("store(d1=1, r1=2, vec=0)"),
        arg(
            1,
            "store",
            bad_value(
                "vec",
                ValueProblem::OutOfRange {
                    value: 0,
                    min: 1,
                    max: u32::MAX as i64
                }
            )
        )
    );
    assert_eq!(
        arg_err("alui('mul', d1=1, r1=2, imm='x')"),
        arg(1, "alui", bad_value("imm", wrong("a number", "a string")))
    );
    assert_eq!(
        arg_err("alu('frobnicate', d1=1, r1=2)"),
        arg(
            1,
            "alu",
            bad_value("aluop", ValueProblem::UnknownAluOp("frobnicate".into()))
        )
    );
    assert_eq!(
        arg_err("alu(3, d1=1, r1=2)"),
        arg(
            1,
            "alu",
            bad_value("aluop", wrong("a quoted operation name", "an integer"))
        )
    );
    assert_eq!(
        arg_err("alu_int('sig', d1=600, r1=600, r2=600)"),
        arg(
            1,
            "alu_int",
            bad_value("aluop", ValueProblem::UnknownIntOp("sig".into()))
        )
    );
    for mask in ["['1']", "['102']", "'11'", "['10', '01']", "[]"] {
        match arg_err(&format!("mvm({mask})")) {
            (
                1,
                "mvm",
                ArgProblem::BadValue {
                    param: "xb_nma",
                    problem: ValueProblem::BadMask { mvmus: 2, .. },
                },
            ) => {}
            other => panic!("{mask}: {other:?}"),
        }
    }
}

#[test]
fn tile_program_arguments() {
    let e = load_err(&[(
        "m-tile0.puma",
        "send(mem_addr=0, vtile_id=0, send_width=17, target_addr=0)\nhalt()",
    )]);
    assert_eq!(e.line, Some(1));
    assert!(e.file.ends_with("m-tile0.puma"));
    assert!(matches!(
        e.kind,
        LoadErrorKind::Argument {
            inst: "send",
            problem: ArgProblem::BadValue {
                param: "send_width",
                ..
            }
        }
    ));
    let e = load_err(&[(
        "m-tile0.puma",
        "halt()\nreceive(mem_addr=0, vtile_id=0, receive_width=2)",
    )]);
    assert_eq!(e.line, Some(2));
    assert!(matches!(
        e.kind,
        LoadErrorKind::Argument {
            inst: "receive",
            problem: ArgProblem::Missing("counter")
        }
    ));
}

#[test]
fn files_that_are_not_text() {
    let e = load_err(&[("m-tile0-core1.puma", "")]);
    assert!(e.file.ends_with("m-tile0-core1.puma"));
    assert!(matches!(
        e.kind,
        LoadErrorKind::Input(pimdiff_input::InputError::Empty)
    ));
    let dir = model_dir(&[]);
    fs::write(dir.path().join("m-tile0-core2.puma"), b"hlt()\n\xff\n").unwrap();
    let e = load_model(dir.path(), "m").unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::NotUtf8 { offset: 6 }));
    let dir = model_dir(&[]);
    fs::remove_file(dir.path().join("m-tile0-core2.puma")).unwrap();
    fs::create_dir(dir.path().join("m-tile0-core2.puma")).unwrap();
    let e = load_model(dir.path(), "m").unwrap_err();
    assert!(matches!(
        e.kind,
        LoadErrorKind::Input(pimdiff_input::InputError::NotAFile)
    ));
    let e = load_model(Path::new("/nonexistent/puma"), "m").unwrap_err();
    assert!(matches!(e.kind, LoadErrorKind::Io(_)));
}

fn weights(values: &[&str]) -> String {
    values.join(" ")
}

#[test]
fn weight_files() {
    let zeros = vec!["0.0"; 128 * 128];
    let name = "m-tile0-core1-mvmu1.weights";
    let dir = model_dir(&[(name, &weights(&zeros))]);
    let model = load_model(dir.path(), "m").unwrap();
    assert!(model.tiles[0].cores[1].mvmus[1].is_some());
    assert!(model.tiles[0].cores[1].mvmus[0].is_none());

    let e = load_err(&[(name, &weights(&zeros[1..]))]);
    assert!(e.file.ends_with(name));
    assert!(matches!(
        e.kind,
        LoadErrorKind::WeightCount {
            found: 16383,
            expected: 16384
        }
    ));
    let mut more = zeros.clone();
    more.push("1");
    assert!(matches!(
        load_err(&[(name, &weights(&more))]).kind,
        LoadErrorKind::WeightCount { found: 16385, .. }
    ));
    for (text, problem) in [
        ("0.25", WeightProblem::NotInteger),
        ("nan", WeightProblem::NotFinite),
        ("-inf", WeightProblem::NotFinite),
        ("1e12", WeightProblem::TooLarge),
        ("two", WeightProblem::NotANumber),
    ] {
        let mut v = zeros.clone();
        v[130] = text;
        let e = load_err(&[(name, &weights(&v))]);
        assert_eq!(e.line, Some(1));
        match e.kind {
            LoadErrorKind::BadWeight {
                index: 130,
                row: 1,
                col: 2,
                text: t,
                problem: p,
            } => {
                assert_eq!((t.as_str(), p), (text, problem));
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    // A file beyond its limit is refused before it is read.
    let huge = " ".repeat(MAX_WEIGHTS_FILE_BYTES.bytes as usize + 1);
    assert!(matches!(
        load_err(&[(name, &huge)]).kind,
        LoadErrorKind::Input(pimdiff_input::InputError::TooLarge { .. })
    ));
    // Values may spread over lines; the error names the value's line.
    let mut lines = weights(&zeros[..200]);
    lines.push('\n');
    lines.push_str("0.5 ");
    lines.push_str(&weights(&zeros[201..]));
    assert_eq!(load_err(&[(name, &lines)]).line, Some(2));
}

#[test]
fn missing_and_misnamed_files() {
    let empty = tempfile::tempdir().unwrap();
    let e = load_model(empty.path(), "m").unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: no `m-tile0.puma` here", empty.path().display())
    );
    let e = load_err(&[("m-tile2.puma", "halt()")]);
    assert!(matches!(
        e.kind,
        LoadErrorKind::MissingTile { tile: 1, last: 2 }
    ));
    let dir = model_dir(&[]);
    fs::remove_file(dir.path().join("m-tile0-core5.puma")).unwrap();
    let e = load_model(dir.path(), "m").unwrap_err();
    assert_eq!(
        e.kind.to_string(),
        "`m-tile0-core5.puma` is missing (every tile has 8 core programs)"
    );
    let bad_name = |name: &str| match load_err(&[(name, "hlt()")]).kind {
        LoadErrorKind::BadFileName { file, problem } => {
            assert_eq!(file, name);
            problem
        }
        other => panic!("{name}: {other:?}"),
    };
    assert_eq!(
        bad_name("m-tile0-core8.puma"),
        "core 8 does not exist (there are 8)"
    );
    assert_eq!(
        bad_name("m-tile0-core0-mvmu2.weights"),
        "MVMU 2 does not exist (there are 2)"
    );
    assert!(bad_name("m-tile01.puma").contains("leading zeros"));
    assert!(bad_name("m-tile0-core07.puma").contains("leading zeros"));
    assert!(bad_name("m-tilex.puma").contains("tile number"));
    let e = load_err(&[(&format!("m-tile{MAX_TILES}.puma"), "halt()")]);
    assert!(matches!(
        e.kind,
        LoadErrorKind::TooManyTiles {
            found: 1025,
            max: 1024
        }
    ));
    // Weights for a tile without programs name the missing tile.
    let e = load_err(&[("m-tile1-core0-mvmu0.weights", "0")]);
    assert!(matches!(
        e.kind,
        LoadErrorKind::MissingTile { tile: 1, last: 1 }
    ));
}
