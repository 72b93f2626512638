//! Round trips between the program forms: typed → JSON → typed, JSON → text → JSON (byte
//! identical), the directory form, and format detection (gzip by magic bytes, JSON vs text).

use std::io::Write;

use proptest::prelude::*;

use pimdiff_isa::formats::{self, asm, json};
use pimdiff_isa::gen;
use pimdiff_isa::inst::{BinVecOp, Inst, MemOp, Offset, Reg, UnVecOp, Width};
use pimdiff_isa::{ArchHints, GroupSpec, Program};

fn r(i: u32) -> Reg {
    Reg::new(i).unwrap()
}

fn to_json(p: &Program) -> Vec<u8> {
    let mut out = Vec::new();
    json::write_json(p, &mut out).unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn typed_json_typed_is_identity(p in gen::arb_program(4, 24)) {
        let text = to_json(&p);
        prop_assert_eq!(&json::read_json_slice(&text).unwrap(), &p);
        prop_assert_eq!(&json::read_json(text.as_slice()).unwrap(), &p);
    }

    #[test]
    fn json_text_json_is_identity(p in gen::arb_program(4, 24)) {
        let json1 = to_json(&p);
        let p1 = json::read_json_slice(&json1).unwrap();
        let text = asm::print(&p1);
        let p2 = asm::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        prop_assert_eq!(&p2, &p);
        let json2 = to_json(&p2);
        prop_assert_eq!(String::from_utf8(json1).unwrap(), String::from_utf8(json2).unwrap());
    }

    #[test]
    fn every_instruction_displays_as_parsable_text(p in gen::arb_program(2, 32)) {
        for inst in p.cores.iter().flatten() {
            let text = inst.to_string();
            prop_assert!(!text.contains('\n'));
            prop_assert_eq!(asm::parse_inst(&text).unwrap(), *inst, "{}", text);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn directory_form_round_trips(p in gen::arb_program(4, 16)) {
        let dir = tempfile::tempdir().unwrap();
        formats::write_program_dir(&p, dir.path()).unwrap();
        prop_assert_eq!(formats::read_program_dir(dir.path()).unwrap(), p.clone());
        prop_assert_eq!(formats::load_program(dir.path()).unwrap(), p);
    }
}

#[test]
fn display_uses_the_documented_syntax() {
    let w8 = Width::new(8).unwrap();
    let cases = [
        (Inst::Nop, "nop"),
        (Inst::Sldi { rd: r(2), imm: -5 }, "sldi r2, imm=-5"),
        (
            Inst::Sld {
                rd: r(1),
                rs1: r(2),
                offset: 4,
            },
            "sld r1, r2, off=4",
        ),
        (
            Inst::BinVec {
                op: BinVecOp::Vvadd,
                rd: r(3),
                rs1: r(1),
                rs2: r(2),
                len: 16,
                offset: Offset {
                    select: 0b011,
                    value: 4,
                },
            },
            "vvadd r3, r1, r2, len=16, off=4@0b011",
        ),
        (
            Inst::UnVec {
                op: UnVecOp::Vsigm,
                rd: r(0),
                rs1: r(1),
                len: 8,
                offset: Offset::ZERO,
            },
            "vsigm r0, r1, len=8",
        ),
        (
            Inst::Mvmul {
                rd: r(0),
                rs1: r(1),
                mbiw: w8,
                relu: false,
                group: 2,
            },
            "mvmul r0, r1, mbiw=8, relu=0, group=2",
        ),
        (
            Inst::Send {
                rs1: r(1),
                core: 3,
                size: 64,
                offset: 0,
            },
            "send r1, core=3, size=64",
        ),
        (
            Inst::Recv {
                rd: r(1),
                core: 3,
                size: 64,
                offset: -8,
            },
            "recv r1, core=3, size=64, off=-8",
        ),
        (
            Inst::Lldi {
                rd: r(0),
                imm: 0,
                size: 72,
                offset: 0,
                from_float: true,
            },
            "lldi r0, imm=0f, size=72",
        ),
        (
            Inst::Lldi {
                rd: r(0),
                imm: 255,
                size: 72,
                offset: 2,
                from_float: false,
            },
            "lldi r0, imm=255, size=72, off=2",
        ),
        (
            Inst::Mem {
                op: MemOp::Lmv,
                rd: r(4),
                rs1: r(5),
                size: 9,
                offset: Offset {
                    select: 0,
                    value: 3,
                },
            },
            "lmv r4, r5, size=9, off=3@0b000",
        ),
        (
            Inst::Setbw {
                ibiw: w8,
                obiw: Width::W32,
            },
            "setbw ibiw=8, obiw=32",
        ),
        (
            Inst::Wait {
                event: r(3),
                value: 2,
            },
            "wait e3, value=2",
        ),
        (
            Inst::Sync {
                event: r(3),
                core: 1,
            },
            "sync e3, core=1",
        ),
    ];
    for (inst, text) in cases {
        assert_eq!(inst.to_string(), text);
        assert_eq!(asm::parse_inst(text).unwrap(), inst, "{text}");
    }
}

#[test]
fn program_text_has_the_config_header_and_every_core() {
    let p = Program {
        cores: vec![vec![Inst::Sldi { rd: r(0), imm: 1 }], vec![]],
        groups: GroupSpec::ArrayGroupMap(vec![vec![2, 1], vec![]]),
        arch: ArchHints {
            array_rows: Some(16),
            mesh: Some([1, 2]),
            ..ArchHints::default()
        },
    };
    let text = asm::print(&p);
    assert_eq!(
        text,
        "; pimdiff assembly (syntax: isa-interp/src/formats/asm.rs)\n\
         .cores 2\n.groups map\n.map 0: 2, 1\n.map 1:\n.arch array_rows=16, mesh=1x2\n\
         \ncore 0:\n    sldi r0, imm=1\n\ncore 1:\n"
    );
    assert_eq!(asm::parse(&text).unwrap(), p);
}

#[test]
fn text_parser_accepts_the_lenient_spellings() {
    let text = "core 1:  ; comment\n  # another\n  ld r1, r2, off=-3, size=0x10\n  lldi r0, imm=2.9, size=1\n";
    let p = asm::parse(text).unwrap();
    assert_eq!(p.cores.len(), 2);
    assert!(p.cores[0].is_empty());
    assert_eq!(
        p.cores[1],
        vec![
            Inst::Mem {
                op: MemOp::Ld,
                rd: r(1),
                rs1: r(2),
                size: 16,
                offset: Offset {
                    select: 0,
                    value: -3
                }
            },
            Inst::Lldi {
                rd: r(0),
                imm: 2,
                size: 1,
                offset: 0,
                from_float: true
            },
        ]
    );
    assert_eq!(p.groups, GroupSpec::ExportOnly);
}

#[test]
fn directory_form_follows_the_pimsim_nn_rules() {
    let p = Program {
        cores: vec![
            vec![
                Inst::Send {
                    rs1: r(5),
                    core: 2,
                    size: 8,
                    offset: 0,
                },
                Inst::Mvmul {
                    rd: r(0),
                    rs1: r(1),
                    mbiw: Width::W8,
                    relu: true,
                    group: 0,
                },
            ],
            vec![],
            vec![Inst::Recv {
                rd: r(1),
                core: 0,
                size: 8,
                offset: 0,
            }],
        ],
        groups: GroupSpec::ArrayGroupMap(vec![vec![1], vec![], vec![]]),
        arch: ArchHints::default(),
    };
    let dir = tempfile::tempdir().unwrap();
    // A stale core file of an earlier, larger program is removed.
    std::fs::write(dir.path().join("core_7.json"), "[]").unwrap();
    formats::write_program_dir(&p, dir.path()).unwrap();
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(
        read("config.json"),
        "{\"array_group_map\":{\"core0\":[1],\"core1\":[],\"core2\":[]},\"core_cnt\":3}\n"
    );
    assert_eq!(read("core_1.json"), "[]\n");
    assert_eq!(
        read("core_0.json"),
        "[\n{\"op\": \"send\", \"rd\": 5, \"rs1\": 5, \"core\": 2, \"size\": 8, \
         \"offset\": {\"offset_select\": 0, \"offset_value\": 0}},\n\
         {\"op\": \"mvmul\", \"rd\": 0, \"rs1\": 1, \"mbiw\": 8, \"relu\": 1, \"group\": 0}\n]\n"
    );
    assert!(!dir.path().join("core_7.json").exists());
    assert_eq!(formats::read_program_dir(dir.path()).unwrap(), p);
}

#[test]
fn directory_reader_accepts_a_wrapped_config_and_missing_core_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"config": {"core_cnt": 3}}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("core_2.json"),
        r#"[{"op": "sldi", "rd": 1, "imm": 7}]"#,
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("xbars")).unwrap();
    std::fs::write(dir.path().join("xbars/core_0.json"), "not a program").unwrap();
    std::fs::write(dir.path().join("io.json"), "{}").unwrap();
    let p = formats::read_program_dir(dir.path()).unwrap();
    assert_eq!(
        p.cores,
        vec![vec![], vec![], vec![Inst::Sldi { rd: r(1), imm: 7 }]]
    );
    assert_eq!(p.groups, GroupSpec::ExportOnly);
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn load_program_detects_gzip_by_magic_and_json_versus_text() {
    let p = Program {
        cores: vec![
            vec![Inst::Lldi {
                rd: r(0),
                imm: 3,
                size: 4,
                offset: 0,
                from_float: true,
            }],
            vec![Inst::Nop],
        ],
        groups: GroupSpec::ArrayCount,
        arch: ArchHints {
            array_rows: Some(128),
            array_cols: Some(128),
            ..ArchHints::default()
        },
    };
    let dir = tempfile::tempdir().unwrap();
    let json_text = to_json(&p);
    let asm_text = asm::print(&p).into_bytes();
    let files = [
        ("plain.json", json_text.clone()),
        ("gzipped-json.bin", gzip(&json_text)),
        ("gzipped-text.json", gzip(&asm_text)),
        ("program.txt", asm_text.clone()),
        (
            "leading-blanks.dat",
            [b"\n\t  ".as_slice(), &json_text].concat(),
        ),
    ];
    for (name, bytes) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(formats::load_program(&path).unwrap(), p, "{name}");
        assert_eq!(formats::load_bytes(&bytes).unwrap(), p, "{name}");
    }
}

#[test]
fn large_texts_take_the_parallel_path_with_the_same_result() {
    // ~10 MB of JSON: above the threshold where cores are parsed on several threads.
    let insts: Vec<Inst> = (0..40_000)
        .map(|i| Inst::BinVec {
            op: BinVecOp::Vvmax,
            rd: r(i % 32),
            rs1: r((i + 1) % 32),
            rs2: r(2),
            len: i,
            offset: Offset {
                select: (i % 8) as u8,
                value: -(i as i32),
            },
        })
        .collect();
    let p = Program {
        cores: (0..6)
            .map(|c| insts[..40_000 - c * 1000].to_vec())
            .collect(),
        groups: GroupSpec::ExportOnly,
        arch: ArchHints::default(),
    };
    let text = to_json(&p);
    assert!(text.len() > 8 << 20, "{}", text.len());
    assert_eq!(json::read_json_slice(&text).unwrap(), p);
    // Gzip: the cores (over a megabyte each) are also cut between instructions.
    assert_eq!(formats::load_bytes(&gzip(&text)).unwrap(), p);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Damaged JSON and text never panic a reader: they load (to a program that writes back
    /// and reads again identically) or give an error.
    #[test]
    fn damaged_inputs_never_panic(
        p in gen::arb_program(3, 8),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        gz in any::<bool>(),
    ) {
        for text in [to_json(&p), asm::print(&p).into_bytes()] {
            let damaged = gen::damage(text, &edits);
            let bytes = if gz { gzip(&damaged) } else { damaged.clone() };
            if let Ok(q) = formats::load_bytes(&bytes) {
                prop_assert_eq!(json::read_json_slice(&to_json(&q)).unwrap(), q.clone());
                prop_assert_eq!(asm::parse(&asm::print(&q)).unwrap(), q);
            }
            let _ = json::read_json(damaged.as_slice());
            let _ = asm::parse(&String::from_utf8_lossy(&damaged));
        }
    }
}
