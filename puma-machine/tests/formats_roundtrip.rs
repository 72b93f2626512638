//! The decoder and the printer against the instruction tables: for every instruction, calls
//! spelled in any of Python's ways (positional or keyword arguments in any order, defaults
//! given or left out) decode to the instruction whose printed line is the canonical spelling,
//! and that line decodes back to the same instruction. The calls are generated from
//! `CoreOpcode::params` / `TileOpcode::params`, so a new row of a table is covered at once.

use std::path::Path;

use pimdiff_puma::formats::{parse_core_program, parse_tile_program};
use pimdiff_puma::isa::Param;
use pimdiff_puma::{AluOp, CoreOpcode, IntOp, TileOpcode};
use proptest::prelude::*;

/// A literal of `kind`, as the printer writes it.
fn value(kind: &str) -> BoxedStrategy<String> {
    let u32s = || prop_oneof![0..2000u32, any::<u32>()];
    match kind {
        "reg" | "addr" | "count" | "target" => u32s().prop_map(|v| v.to_string()).boxed(),
        "count1" => (1..=u32::MAX).prop_map(|v| v.to_string()).boxed(),
        "ldst" | "sendw" => (1..=16u32).prop_map(|v| v.to_string()).boxed(),
        "int" => any::<i64>().prop_map(|v| v.to_string()).boxed(),
        "real" => prop_oneof![
            (-64i32..64).prop_map(|v| v as f64 / 8.0),
            any::<f64>().prop_filter("finite", |v| v.is_finite()),
        ]
        .prop_map(|v| format!("{v:?}"))
        .boxed(),
        "mask" => "[01]{2}".prop_map(|s| format!("['{s}']")).boxed(),
        "aluop" => proptest::sample::select(AluOp::ALL)
            .prop_map(|op| format!("'{}'", op.name()))
            .boxed(),
        "intop" => proptest::sample::select(IntOp::ALL)
            .prop_map(|op| format!("'{}'", op.name()))
            .boxed(),
        other => panic!("a kind without a generator: {other}"),
    }
}

/// A call of `mnemonic`: a value (or the default) per parameter, how many lead
/// positionally, the order of the keyword arguments.
type Spelling = (Vec<Option<String>>, usize, Vec<usize>);

fn spelling(params: &'static [Param]) -> BoxedStrategy<Spelling> {
    let values: Vec<BoxedStrategy<Option<String>>> = params
        .iter()
        .map(|p| {
            let v = value(p.kind);
            if p.default.is_some() {
                prop_oneof![Just(None), v.prop_map(Some)].boxed()
            } else {
                v.prop_map(Some).boxed()
            }
        })
        .collect();
    values
        .prop_flat_map(|vals| {
            let lead = vals.iter().take_while(|v| v.is_some()).count();
            let order: Vec<usize> = (0..vals.len()).collect();
            (Just(vals), 0..=lead, Just(order).prop_shuffle())
        })
        .boxed()
}

fn line(mnemonic: &str, params: &[Param], (vals, lead, order): &Spelling) -> String {
    let mut args: Vec<String> = vals[..*lead].iter().flatten().cloned().collect();
    for &i in order.iter().filter(|&&i| i >= *lead) {
        if let Some(v) = &vals[i] {
            args.push(format!("{}={v}", params[i].name));
        }
    }
    format!("{mnemonic}({})", args.join(", "))
}

/// The printer's spelling: leading operation names and masks positional, defaults left out.
fn canonical(mnemonic: &str, params: &[Param], vals: &[Option<String>]) -> String {
    let mut args = Vec::new();
    let mut positional = true;
    for (p, v) in params.iter().zip(vals) {
        let given = v.as_deref().filter(|v| Some(*v) != p.default);
        let Some(v) = given else {
            positional = false;
            continue;
        };
        positional &= ["aluop", "mask", "intop"].contains(&p.kind);
        args.push(if positional {
            v.to_string()
        } else {
            format!("{}={v}", p.name)
        });
    }
    format!("{mnemonic}({})", args.join(", "))
}

fn core_case() -> impl Strategy<Value = (CoreOpcode, Spelling)> {
    proptest::sample::select(CoreOpcode::ALL).prop_flat_map(|op| (Just(op), spelling(op.params())))
}

fn tile_case() -> impl Strategy<Value = (TileOpcode, Spelling)> {
    proptest::sample::select(TileOpcode::ALL).prop_flat_map(|op| (Just(op), spelling(op.params())))
}

proptest! {
    #[test]
    fn core_calls_decode_print_and_decode_back((op, s) in core_case()) {
        let params = op.params();
        let text = line(op.mnemonic(), params, &s);
        let insts = parse_core_program(&text, Path::new("generated")).unwrap();
        prop_assert_eq!(insts[0].opcode(), op);
        let printed = insts[0].to_string();
        prop_assert_eq!(&printed, &canonical(op.mnemonic(), params, &s.0));
        prop_assert_eq!(parse_core_program(&printed, Path::new("printed")).unwrap(), insts);
    }

    #[test]
    fn tile_calls_decode_print_and_decode_back((op, s) in tile_case()) {
        let params = op.params();
        let text = line(op.mnemonic(), params, &s);
        let insts = parse_tile_program(&text, Path::new("generated")).unwrap();
        prop_assert_eq!(insts[0].opcode(), op);
        let printed = insts[0].to_string();
        prop_assert_eq!(&printed, &canonical(op.mnemonic(), params, &s.0));
        prop_assert_eq!(parse_tile_program(&printed, Path::new("printed")).unwrap(), insts);
    }

    /// Any text as a program, from the calls' own alphabet or any characters at all: an
    /// error or a program, never a panic.
    #[test]
    fn any_text_loads_or_fails_cleanly(
        text in prop_oneof!["[a-z_(),=' \\[\\]0-9.\\-\n]{0,80}", "\\PC{0,40}", "set\\(d1=\\PC{0,8}\\)"]
    ) {
        let _ = parse_core_program(&text, Path::new("any"));
        let _ = parse_tile_program(&text, Path::new("any"));
    }
}

#[test]
fn the_tables_name_the_simulators_prototypes() {
    let names = |params: &[Param]| params.iter().map(|p| p.name).collect::<Vec<_>>();
    assert_eq!(
        names(CoreOpcode::Load.params()),
        ["d1", "r1", "load_width", "vec"]
    );
    assert_eq!(
        names(CoreOpcode::Store.params()),
        ["d1", "r1", "counter", "store_width", "vec"]
    );
    assert_eq!(
        names(CoreOpcode::Alu.params()),
        ["aluop", "d1", "r1", "r2", "imm", "vec"]
    );
    assert_eq!(
        names(TileOpcode::Receive.params()),
        ["mem_addr", "vtile_id", "receive_width", "counter", "vec"]
    );
    assert_eq!(CoreOpcode::Store.params()[2].default, Some("1"));
    assert_eq!(CoreOpcode::Mvm.params()[0].default, None);
    assert_eq!(CoreOpcode::COUNT, 11);
    assert_eq!(TileOpcode::COUNT, 3);
}
