//! A real PIMCOMP-NN program loads with exact, known facts. The ten programs in
//! `shared/external/pimcomp/` are all loaded (in release mode) by `benches/load.rs`; this
//! debug-mode test takes the smallest, `alexnet-element.json.gz`.

use std::path::PathBuf;

use pimdiff_isa::formats::{self, json};
use pimdiff_isa::inst::{Inst, Reg, Width};
use pimdiff_isa::{ArchHints, GroupSpec};

fn pimcomp_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/external/pimcomp")
}

fn r(i: u32) -> Reg {
    Reg::new(i).unwrap()
}

#[test]
fn alexnet_element_loads_with_exact_facts_and_round_trips() {
    let path = pimcomp_dir().join("alexnet-element.json.gz");
    if !path.exists() {
        println!("skipped: {} absent", path.display());
        return;
    }
    let program = formats::load_program(&path).unwrap();
    assert_eq!(program.cores.len(), 105);
    assert_eq!(program.groups, GroupSpec::ArrayCount);
    assert_eq!(
        program.arch,
        ArchHints {
            arrays_per_core: Some(64),
            array_rows: Some(128),
            array_cols: Some(128),
            cell_precision: Some(2),
            adc_count: Some(16),
            ..ArchHints::default()
        }
    );
    let total: usize = program.cores.iter().map(Vec::len).sum();
    assert_eq!(total, 1_015_972);
    assert_eq!(program.cores[0].len(), 101_806);
    assert_eq!(program.cores[1].len(), 103_474);
    assert_eq!(program.cores[10].len(), 10_452);
    assert_eq!(program.cores[104].len(), 44);
    let w8 = Width::new(8).unwrap();
    assert_eq!(program.cores[0][0], Inst::Setbw { ibiw: w8, obiw: w8 });
    assert_eq!(program.cores[0][1], Inst::Sldi { rd: r(0), imm: 0 });
    assert_eq!(
        program.cores[104][43],
        Inst::Send {
            rs1: r(0),
            core: 100,
            size: 1000,
            offset: 0
        }
    );
    // The first float immediate of the file (`"imm": 0.0`).
    assert_eq!(
        program.cores[6][12_592],
        Inst::Lldi {
            rd: r(0),
            imm: 0,
            size: 128,
            offset: 0,
            from_float: true
        }
    );

    // Our JSON writer and reader preserve it exactly.
    let mut text = Vec::new();
    json::write_json(&program, &mut text).unwrap();
    assert_eq!(json::read_json_slice(&text).unwrap(), program);
}
