//! Every kind of load error, with its exact kind and location, and the accepted variants of
//! isa.md's field rules (spellings, float immediates, core key order, both config forms).

use pimdiff_isa::formats::asm::{self, AsmErrorKind};
use pimdiff_isa::formats::{self, json, CoreKeyProblem, FieldProblem, InstError, LoadErrorKind};
use pimdiff_isa::inst::{BinVecOp, Inst, MemOp, Offset, Opcode, Reg, UnVecOp, Width};
use pimdiff_isa::{ArchHints, GroupSpec, Program};

fn r(i: u32) -> Reg {
    Reg::new(i).unwrap()
}

/// Load a program whose core 3 is `nop` followed by `inst`.
fn load_inst(inst: &str) -> Result<Inst, InstError> {
    let text = format!(r#"{{"config": {{"core_cnt": 4}}, "core3": [{{"op": "nop"}}, {inst}]}}"#);
    match json::read_json_slice(text.as_bytes()) {
        Ok(p) => Ok(p.cores[3][1]),
        Err(e) => Err(e
            .inst()
            .cloned()
            .unwrap_or_else(|| panic!("not an instruction error: {e}"))),
    }
}

fn inst_err(inst: &str, op: Option<Opcode>, field: Option<&'static str>, problem: FieldProblem) {
    assert_eq!(
        load_inst(inst),
        Err(InstError {
            core: 3,
            index: 1,
            op,
            field,
            problem
        }),
        "{inst}"
    );
}

fn load(text: &str) -> Result<Program, LoadErrorKind> {
    json::read_json_slice(text.as_bytes()).map_err(|e| e.kind)
}

#[test]
fn unknown_op_and_bad_op_fields() {
    inst_err(
        r#"{"op": "jmp"}"#,
        None,
        Some("op"),
        FieldProblem::UnknownOp("jmp".into()),
    );
    inst_err(r#"{"rd": 1}"#, None, Some("op"), FieldProblem::Missing);
    inst_err(
        r#"{"op": 7}"#,
        None,
        Some("op"),
        FieldProblem::WrongType {
            expected: "a string",
            found: "an integer",
        },
    );
    inst_err("3", None, None, FieldProblem::NotAnObject("an integer"));
    inst_err("[1]", None, None, FieldProblem::NotAnObject("an array"));
}

#[test]
fn registers_widths_and_selects_out_of_range() {
    inst_err(
        r#"{"op": "sadd", "rd": 32, "rs1": 0, "rs2": 0}"#,
        Some(Opcode::Sadd),
        Some("rd"),
        FieldProblem::RegisterOutOfRange(32),
    );
    inst_err(
        r#"{"op": "sadd", "rd": 0, "rs1": -1, "rs2": 0}"#,
        Some(Opcode::Sadd),
        Some("rs1"),
        FieldProblem::RegisterOutOfRange(-1),
    );
    inst_err(
        r#"{"op": "setbw", "ibiw": 0, "obiw": 8}"#,
        Some(Opcode::Setbw),
        Some("ibiw"),
        FieldProblem::WidthOutOfRange(0),
    );
    inst_err(
        r#"{"op": "mvmul", "rd": 0, "rs1": 1, "mbiw": 33, "relu": 0, "group": 0}"#,
        Some(Opcode::Mvmul),
        Some("mbiw"),
        FieldProblem::WidthOutOfRange(33),
    );
    inst_err(
        r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": 4, "offset": {"offset_select": 8, "offset_value": 0}}"#,
        Some(Opcode::Vvadd),
        Some("offset.offset_select"),
        FieldProblem::OffsetSelectOutOfRange(8),
    );
    inst_err(
        r#"{"op": "wait", "event_register": 40, "wait_value": 1}"#,
        Some(Opcode::Wait),
        Some("event_register"),
        FieldProblem::RegisterOutOfRange(40),
    );
}

#[test]
fn missing_fields_and_wrong_types() {
    inst_err(
        r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2}"#,
        Some(Opcode::Vvadd),
        Some("len"),
        FieldProblem::Missing,
    );
    inst_err(
        r#"{"op": "mvmul", "rd": 0, "rs1": 1, "relu": 0, "group": 0}"#,
        Some(Opcode::Mvmul),
        Some("mbiw"),
        FieldProblem::Missing,
    );
    inst_err(
        r#"{"op": "lmv", "rd": 0, "rs1": 1}"#,
        Some(Opcode::Lmv),
        Some("len"),
        FieldProblem::Missing,
    );
    inst_err(
        r#"{"op": "send", "core": 1, "size": 4}"#,
        Some(Opcode::Send),
        Some("rs1"),
        FieldProblem::Missing,
    );
    inst_err(
        r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": "16"}"#,
        Some(Opcode::Vvadd),
        Some("len"),
        FieldProblem::WrongType {
            expected: "a non-negative integer",
            found: "a string",
        },
    );
    inst_err(
        r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": 16.0}"#,
        Some(Opcode::Vvadd),
        Some("len"),
        FieldProblem::WrongType {
            expected: "a non-negative integer",
            found: "a float",
        },
    );
    inst_err(
        r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": -1}"#,
        Some(Opcode::Vvadd),
        Some("len"),
        FieldProblem::OutOfRange {
            expected: "a non-negative integer",
            found: "-1".into(),
        },
    );
    inst_err(
        r#"{"op": "ld", "rd": 0, "rs1": 1, "size": 4294967296}"#,
        Some(Opcode::Ld),
        Some("size"),
        FieldProblem::OutOfRange {
            expected: "an integer in 0..=4294967295",
            found: "4294967296".into(),
        },
    );
    inst_err(
        r#"{"op": "sadd", "rd": null, "rs1": 0, "rs2": 0}"#,
        Some(Opcode::Sadd),
        Some("rd"),
        FieldProblem::WrongType {
            expected: "a register index",
            found: "null",
        },
    );
    inst_err(
        r#"{"op": "ld", "rd": 0, "rs1": 1, "size": 4, "offset": 3}"#,
        Some(Opcode::Ld),
        Some("offset"),
        FieldProblem::WrongType {
            expected: "an offset object",
            found: "an integer",
        },
    );
    inst_err(
        r#"{"op": "mvmul", "rd": 0, "rs1": 1, "mbiw": 8, "relu": 2, "group": 0}"#,
        Some(Opcode::Mvmul),
        Some("relu"),
        FieldProblem::OutOfRange {
            expected: "0 or 1",
            found: "2".into(),
        },
    );
}

#[test]
fn two_spellings_must_agree() {
    inst_err(
        r#"{"op": "send", "rd": 1, "rs1": 2, "core": 0, "size": 4}"#,
        Some(Opcode::Send),
        Some("rs1"),
        FieldProblem::Disagree {
            other: "rd",
            value: 2,
            other_value: 1,
        },
    );
    inst_err(
        r#"{"op": "ld", "rd": 0, "rs1": 1, "len": 4, "size": 8}"#,
        Some(Opcode::Ld),
        Some("size"),
        FieldProblem::Disagree {
            other: "len",
            value: 8,
            other_value: 4,
        },
    );
    inst_err(
        r#"{"op": "recv", "rd": 0, "core": 1, "size": 4, "offset_value": 4, "offset": {"offset_select": 0, "offset_value": 5}}"#,
        Some(Opcode::Recv),
        Some("offset_value"),
        FieldProblem::Disagree {
            other: "offset.offset_value",
            value: 4,
            other_value: 5,
        },
    );
    // Agreeing spellings, and either one alone, are accepted.
    let send = Inst::Send {
        rs1: r(2),
        core: 0,
        size: 4,
        offset: 0,
    };
    assert_eq!(
        load_inst(r#"{"op": "send", "rd": 2, "rs1": 2, "core": 0, "size": 4}"#),
        Ok(send)
    );
    assert_eq!(
        load_inst(r#"{"op": "send", "rd": 2, "core": 0, "size": 4}"#),
        Ok(send)
    );
    assert_eq!(
        load_inst(r#"{"op": "send", "rs1": 2, "core": 0, "len": 4}"#),
        Ok(send)
    );
    assert_eq!(
        load_inst(
            r#"{"op": "sld", "rd": 1, "rs1": 2, "offset_value": -4, "offset": {"offset_value": -4}}"#
        ),
        Ok(Inst::Sld {
            rd: r(1),
            rs1: r(2),
            offset: -4
        })
    );
}

#[test]
fn error_message_names_core_instruction_op_and_field() {
    let text = r#"{"config": {"core_cnt": 4}, "core3": [{"op": "nop"}, {"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": -1}]}"#;
    let e = json::read_json_slice(text.as_bytes()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "core 3, instruction 1 (vvadd): field \"len\": expected a non-negative integer, found -1"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    std::fs::write(&path, text).unwrap();
    let e = formats::load_program(&path).unwrap_err();
    assert_eq!(e.file.as_deref(), Some(path.as_path()));
    assert!(
        e.to_string().starts_with(&format!(
            "{}: core 3, instruction 1 (vvadd)",
            path.display()
        )),
        "{e}"
    );
}

#[test]
fn immediates_and_spellings_follow_isa_md() {
    let lldi = |imm: &str| {
        load_inst(&format!(
            r#"{{"op": "lldi", "rd": 0, "imm": {imm}, "len": 4}}"#
        ))
    };
    let byte = |imm: u8, from_float: bool| {
        Ok(Inst::Lldi {
            rd: r(0),
            imm,
            size: 4,
            offset: 0,
            from_float,
        })
    };
    assert_eq!(lldi("0.005917159763313609"), byte(0, true));
    assert_eq!(lldi("1.99"), byte(1, true));
    assert_eq!(lldi("-2.5"), byte(254, true));
    assert_eq!(lldi("255"), byte(255, false));
    assert_eq!(lldi("-1"), byte(255, false));
    assert_eq!(
        lldi("256"),
        Err(InstError {
            core: 3,
            index: 1,
            op: Some(Opcode::Lldi),
            field: Some("imm"),
            problem: FieldProblem::OutOfRange {
                expected: "an integer in -128..=255",
                found: "256".into()
            }
        })
    );
    assert_eq!(
        lldi("300.5").unwrap_err().problem,
        FieldProblem::OutOfRange {
            expected: "an integer in -128..=255",
            found: "300.5".into()
        }
    );

    let sldi = |imm: &str| load_inst(&format!(r#"{{"op": "sldi", "rd": 0, "imm": {imm}}}"#));
    assert_eq!(sldi("4294967295"), Ok(Inst::Sldi { rd: r(0), imm: -1 }));
    assert_eq!(
        sldi("-2147483648"),
        Ok(Inst::Sldi {
            rd: r(0),
            imm: i32::MIN
        })
    );
    let range = "an integer in -2147483648..=4294967295";
    assert_eq!(
        sldi("4294967296").unwrap_err().problem,
        FieldProblem::OutOfRange {
            expected: range,
            found: "4294967296".into()
        }
    );
    assert_eq!(
        sldi("-2147483649").unwrap_err().problem,
        FieldProblem::OutOfRange {
            expected: range,
            found: "-2147483649".into()
        }
    );

    assert_eq!(
        load_inst(r#"{"op": "vsub", "rd": 0, "rs1": 1, "rs2": 2, "len": 3}"#),
        Ok(Inst::BinVec {
            op: BinVecOp::Vvsub,
            rd: r(0),
            rs1: r(1),
            rs2: r(2),
            len: 3,
            offset: Offset::ZERO
        })
    );
    assert_eq!(
        load_inst(
            r#"{"op": "vsigmoid", "rd": 0, "rs1": 1, "len": 3, "offset": {"offset_select": 5, "offset_value": -2}}"#
        ),
        Ok(Inst::UnVec {
            op: UnVecOp::Vsigm,
            rd: r(0),
            rs1: r(1),
            len: 3,
            offset: Offset {
                select: 5,
                value: -2
            }
        })
    );
    assert_eq!(
        load_inst(
            r#"{"op": "mvmul", "rd": 0, "rs1": 1, "mbiw": 8, "relu": true, "group": 3, "comment": [1, {"x": 2}]}"#
        ),
        Ok(Inst::Mvmul {
            rd: r(0),
            rs1: r(1),
            mbiw: Width::W8,
            relu: true,
            group: 3
        })
    );
    // Fields an op does not use are ignored, whatever their value.
    assert_eq!(
        load_inst(
            r#"{"op": "vmv", "rd": 0, "rs1": 1, "rs2": 2, "len": 3, "offset": "unused", "size": -4}"#
        ),
        Ok(Inst::Vmv {
            rd: r(0),
            rs1: r(1),
            rs2: r(2),
            len: 3
        })
    );
    assert_eq!(
        load_inst(
            r#"{"op": "lmv", "rd": 0, "rs1": 1, "size": 9, "offset": {"offset_select": 2, "offset_value": 1}}"#
        ),
        Ok(Inst::Mem {
            op: MemOp::Lmv,
            rd: r(0),
            rs1: r(1),
            size: 9,
            offset: Offset {
                select: 2,
                value: 1
            }
        })
    );
}

#[test]
fn core_keys_are_ordered_by_number_and_checked() {
    let p = load(
        r#"{"core10": [{"op": "sldi", "rd": 0, "imm": 10}], "config": {"core_cnt": 12},
            "core2": [{"op": "sldi", "rd": 0, "imm": 2}]}"#,
    )
    .unwrap();
    assert_eq!(p.cores.len(), 12);
    assert_eq!(p.cores[2], vec![Inst::Sldi { rd: r(0), imm: 2 }]);
    assert_eq!(p.cores[10], vec![Inst::Sldi { rd: r(0), imm: 10 }]);
    assert!(p
        .cores
        .iter()
        .enumerate()
        .all(|(i, c)| c.is_empty() == (i != 2 && i != 10)));

    let key_err = |text: &str, key: &str, problem: CoreKeyProblem| match load(text) {
        Err(LoadErrorKind::CoreKey { key: k, problem: p }) => {
            assert_eq!((k.as_str(), p), (key, problem), "{text}")
        }
        other => panic!("{text}: {other:?}"),
    };
    key_err(
        r#"{"config": {"core_cnt": 2}, "core2": []}"#,
        "core2",
        CoreKeyProblem::BeyondCoreCount {
            core: 2,
            core_cnt: 2,
        },
    );
    key_err(
        r#"{"config": {"core_cnt": 2}, "core01": []}"#,
        "core01",
        CoreKeyProblem::NotACoreKey,
    );
    key_err(
        r#"{"config": {"core_cnt": 2}, "Core1": []}"#,
        "Core1",
        CoreKeyProblem::NotACoreKey,
    );
    key_err(
        r#"{"config": {"core_cnt": 2}, "core1": [], "core1": []}"#,
        "core1",
        CoreKeyProblem::Duplicate(1),
    );
}

#[test]
fn config_errors() {
    let config_err = |text: &str, field: &str, problem: FieldProblem| match load(text) {
        Err(LoadErrorKind::Config {
            field: f,
            problem: p,
        }) => assert_eq!((f.as_str(), p), (field, problem), "{text}"),
        other => panic!("{text}: {other:?}"),
    };
    config_err(r#"{"core0": []}"#, "config", FieldProblem::Missing);
    config_err(r#"{"config": {}}"#, "core_cnt", FieldProblem::Missing);
    config_err(
        r#"{"config": {"core_cnt": "4"}}"#,
        "core_cnt",
        FieldProblem::WrongType {
            expected: "a non-negative integer",
            found: "a string",
        },
    );
    config_err(
        r#"{"config": {"core_cnt": 70000}}"#,
        "core_cnt",
        FieldProblem::OutOfRange {
            expected: "at most 65536 cores",
            found: "70000".into(),
        },
    );
    config_err(
        r#"{"config": {"core_cnt": 2, "xbar_size": [128, 128], "arch": {"array_rows": 64}}}"#,
        "arch.array_rows",
        FieldProblem::Disagree {
            other: "xbar_size[0]",
            value: 64,
            other_value: 128,
        },
    );
    config_err(
        r#"{"config": {"core_cnt": 2, "array_group_map": {"core2": [1]}}}"#,
        "array_group_map.core2",
        FieldProblem::OutOfRange {
            expected: "a core below core_cnt",
            found: "2".into(),
        },
    );
    config_err(
        r#"{"config": {"core_cnt": 2, "xbar_size": [128]}}"#,
        "xbar_size",
        FieldProblem::OutOfRange {
            expected: "an array of 2 integers",
            found: "1 elements".into(),
        },
    );
}

#[test]
fn both_config_forms_and_our_arch_object() {
    let p =
        load(r#"{"config": {"core_cnt": 3, "array_group_map": {"core2": [2, 1], "core0": [4]}}}"#)
            .unwrap();
    assert_eq!(
        p.groups,
        GroupSpec::ArrayGroupMap(vec![vec![4], vec![], vec![2, 1]])
    );
    assert_eq!(p.arch, ArchHints::default());

    let p = load(
        r#"{"config": {"adc_count": 16, "cell_precision": 2, "core_cnt": 1, "xbar_array_count": 64, "xbar_size": [128, 256]}}"#,
    )
    .unwrap();
    assert_eq!(p.groups, GroupSpec::ArrayCount);
    assert_eq!(
        p.arch,
        ArchHints {
            arrays_per_core: Some(64),
            array_rows: Some(128),
            array_cols: Some(256),
            cell_precision: Some(2),
            adc_count: Some(16),
            ..ArchHints::default()
        }
    );

    let p = load(
        r#"{"config": {"core_cnt": 1, "arch": {"arrays_per_core": 8, "array_rows": 16, "array_cols": 32,
            "local_memory_bytes": 4096, "mesh": [2, 3], "frac_bits": 4}}}"#,
    )
    .unwrap();
    assert_eq!(p.groups, GroupSpec::ExportOnly);
    assert_eq!(
        p.arch,
        ArchHints {
            arrays_per_core: Some(8),
            array_rows: Some(16),
            array_cols: Some(32),
            local_memory_bytes: Some(4096),
            mesh: Some([2, 3]),
            frac_bits: Some(4),
            ..ArchHints::default()
        }
    );
    // PIMCOMP-NN's reading without any PIMCOMP-NN field is kept by the explicit marker.
    let p = Program {
        cores: vec![vec![]],
        groups: GroupSpec::ArrayCount,
        arch: ArchHints::default(),
    };
    let mut text = Vec::new();
    json::write_json(&p, &mut text).unwrap();
    assert!(String::from_utf8_lossy(&text).contains(r#""arch":{"group_reading":"array_count"}"#));
    assert_eq!(json::read_json_slice(&text).unwrap(), p);
}

#[test]
fn malformed_json_names_line_and_column() {
    match load("{\"config\": {\"core_cnt\": 1},\n \"core0\": [{\"op\": \"nop\"},]}") {
        Err(LoadErrorKind::Json {
            line: 2, column, ..
        }) => assert_eq!(column, 26),
        other => panic!("{other:?}"),
    }
    match load("[1, 2]") {
        Err(LoadErrorKind::Json { line: 1, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn large_texts_report_the_same_first_error_as_small_ones() {
    // Over the parallel threshold, with bad instructions in cores 1 and 4: the error is the
    // first in file order, as the sequential reader reports it.
    let good = r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2, "len": 16, "offset": {"offset_select": 0, "offset_value": 0}}"#;
    let mut text = String::from(r#"{"config": {"core_cnt": 6}"#);
    for core in 0..6 {
        text.push_str(&format!(",\n\"core{core}\": ["));
        for i in 0..12_000 {
            if i > 0 {
                text.push(',');
            }
            if (core == 1 && i == 9_000) || (core == 4 && i == 5) {
                text.push_str(r#"{"op": "vvadd", "rd": 0, "rs1": 1, "rs2": 2}"#);
            } else {
                text.push_str(good);
            }
        }
        text.push(']');
    }
    text.push('}');
    assert!(text.len() > 4 << 20);
    let e = json::read_json_slice(text.as_bytes()).unwrap_err();
    assert_eq!(
        e.inst(),
        Some(&InstError {
            core: 1,
            index: 9_000,
            op: Some(Opcode::Vvadd),
            field: Some("len"),
            problem: FieldProblem::Missing
        })
    );
}

#[test]
fn a_directory_names_the_file_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), r#"{"core_cnt": 2}"#).unwrap();
    std::fs::write(
        dir.path().join("core_1.json"),
        r#"[{"op": "nop"}, {"op": "halt"}]"#,
    )
    .unwrap();
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert_eq!(e.file, Some(dir.path().join("core_1.json")));
    assert_eq!(
        e.inst(),
        Some(&InstError {
            core: 1,
            index: 1,
            op: None,
            field: Some("op"),
            problem: FieldProblem::UnknownOp("halt".into())
        })
    );

    std::fs::write(dir.path().join("core_1.json"), "[]").unwrap();
    std::fs::write(dir.path().join("core_2.json"), "[]").unwrap();
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert_eq!(e.file, Some(dir.path().join("core_2.json")));
    assert!(matches!(
        e.kind,
        LoadErrorKind::CoreKey {
            problem: CoreKeyProblem::BeyondCoreCount {
                core: 2,
                core_cnt: 2
            },
            ..
        }
    ));

    std::fs::remove_file(dir.path().join("core_2.json")).unwrap();
    std::fs::remove_file(dir.path().join("config.json")).unwrap();
    let e = formats::read_program_dir(dir.path()).unwrap_err();
    assert_eq!(e.file, Some(dir.path().join("config.json")));
    assert!(matches!(e.kind, LoadErrorKind::Io(_)));
}

#[test]
fn assembly_errors_name_line_and_column() {
    let at = |text: &str| asm::parse(text).map(|_| ()).unwrap_err();
    let e = at("core 0:\n    vvadd r3, r1, r2, len=x\n");
    assert_eq!((e.line, e.column), (2, 27));
    assert!(matches!(e.kind, AsmErrorKind::Syntax(_)));

    let e = at("core 0:\n  sadd r1, r32, r0\n");
    assert_eq!((e.line, e.column), (2, 12));
    assert_eq!(
        e.kind,
        AsmErrorKind::Field {
            op: Opcode::Sadd,
            field: "rs1",
            problem: FieldProblem::RegisterOutOfRange(32)
        }
    );
    assert_eq!(
        e.to_string(),
        "line 2, column 12: sadd: field \"rs1\": register index 32 out of range (0..=31)"
    );

    let e = at("core 0:\n  setbw ibiw=0, obiw=33\n");
    assert_eq!((e.line, e.column), (2, 14));
    assert_eq!(
        e.kind,
        AsmErrorKind::Field {
            op: Opcode::Setbw,
            field: "ibiw",
            problem: FieldProblem::WidthOutOfRange(0)
        }
    );

    let e = at("core 0:\n  ld r1, r2, off=1@8, size=4\n");
    assert_eq!((e.line, e.column), (2, 18));
    assert_eq!(
        e.kind,
        AsmErrorKind::Field {
            op: Opcode::Ld,
            field: "off",
            problem: FieldProblem::OffsetSelectOutOfRange(8)
        }
    );

    let e = at("core 0:\n  vvadd r3, r1, r2\n");
    assert_eq!(
        e.kind,
        AsmErrorKind::Field {
            op: Opcode::Vvadd,
            field: "len",
            problem: FieldProblem::Missing
        }
    );
    assert_eq!(
        at("core 0:\n  jmp r1\n").kind,
        AsmErrorKind::UnknownOp("jmp".into())
    );
    assert_eq!(at("nop\n").kind, AsmErrorKind::OutsideSection);
    assert_eq!(
        at("core 0:\ncore 0:\n").kind,
        AsmErrorKind::DuplicateCore(0)
    );
    assert_eq!(
        at(".cores 1\ncore 1:\n").kind,
        AsmErrorKind::CoreBeyondCount { core: 1, cores: 1 }
    );
    assert_eq!(
        at("core 0:\n  send r1, core=1, size=4, off=0@1\n").kind,
        AsmErrorKind::Syntax("send's offset has no select bits".into())
    );
    assert_eq!(
        at("core 0:\n  vrelu r1, len=4\n").kind,
        AsmErrorKind::RegisterCount {
            op: Opcode::Vrelu,
            expected: 2,
            found: 1
        }
    );
    assert_eq!(
        at("core 0:\n  nop size=1\n").kind,
        AsmErrorKind::UnknownKey {
            op: Opcode::Nop,
            key: "size".into()
        }
    );
    assert_eq!(
        at("core 0:\n  sldi r1, imm=1, imm=2\n").kind,
        AsmErrorKind::DuplicateKey("imm".into())
    );
    assert!(matches!(
        at(".map 0: 1\ncore 0:\n").kind,
        AsmErrorKind::Directive(_)
    ));

    // Through load_program, the error names the file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("prog.s");
    std::fs::write(&path, "core 0:\n  jmp r1\n").unwrap();
    let e = formats::load_program(&path).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: line 2, column 3: unknown op \"jmp\"", path.display())
    );
}
