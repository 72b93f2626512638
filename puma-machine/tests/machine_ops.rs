//! Every core instruction on hand-written programs, with the exact registers and words it
//! leaves (docs/puma-isa.md, instruction by instruction).

mod util;

use pimdiff_puma::machine::{InstAt, Quirks, Unit, Writer};
use pimdiff_puma::{AluOp, CoreOpcode, TileOpcode};
use util::*;

#[test]
fn set_writes_the_integer_to_every_register_and_records_its_pc() {
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=-7, vec=3)\nset(d1=2559, imm=9)\nhlt()",
    ]));
    assert_eq!(
        regs(&m, 0, 599, 5),
        [None, Some(-7), Some(-7), Some(-7), None]
    );
    assert_eq!(reg(&m, 0, 2559), Some(9));
    let state = m.register(0, 0, 601).unwrap();
    assert_eq!(state.writer, Some(0));
    assert_eq!(m.register(0, 0, 2559).unwrap().writer, Some(1));
    assert_eq!(m.register(0, 0, 700).unwrap().writer, None);
    assert_eq!(m.stats().core(CoreOpcode::Set), 2);
    assert_eq!(m.stats().core(CoreOpcode::Hlt), 8, "every core halts");
    assert_eq!(m.stats().tile(TileOpcode::Halt), 1);
}

#[test]
fn output_registers_start_at_zero_and_the_others_empty() {
    let m = run_finished(one_tile(&["hlt()"]));
    assert_eq!(reg(&m, 0, 0), None);
    assert_eq!(reg(&m, 0, 255), None);
    assert_eq!(reg(&m, 0, 256), Some(0));
    assert_eq!(reg(&m, 0, 511), Some(0));
    assert_eq!(reg(&m, 0, 512), None);
}

#[test]
fn copy_moves_element_by_element_and_carries_empty_words() {
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=1)\nset(d1=601, imm=2)\ncopy(d1=601, r1=600, vec=2, src_type=1)\n\
         copy(d1=5, r1=600, vec=4)\ncopy(d1=300, r1=601, vec=1)\nhlt()",
    ]));
    // 601 ← 600 (1), then 602 ← 601 (now 1): the simulator's in-order element copy.
    assert_eq!(regs(&m, 0, 600, 3), [Some(1), Some(1), Some(1)]);
    // 603 was never written: its copy holds nothing, but was written.
    assert_eq!(regs(&m, 0, 5, 4), [Some(1), Some(1), Some(1), None]);
    assert_eq!(m.register(0, 0, 8).unwrap().writer, Some(3));
    assert_eq!(reg(&m, 0, 300), Some(1));
}

#[test]
fn load_reads_chunks_at_the_latched_address_and_counts_down() {
    let model = one_tile(&[
        "set(d1=520, imm=100)\nload(d1=520, r1=520, load_width=2, vec=2)\nset(d1=700, imm=103)\n\
         load(d1=7, r1=700, load_width=1)\nhlt()",
    ]);
    let mut m = machine(&model, Quirks::SIMULATOR);
    m.write_tile_memory(0, 100, &[10, 11, 12, 13], 2).unwrap();
    assert!(m.run().is_finished());
    // d1 = 520 overwrote the address register: the address was latched at decode.
    assert_eq!(
        regs(&m, 0, 520, 4),
        [Some(10), Some(11), Some(12), Some(13)]
    );
    assert_eq!(
        reg(&m, 0, 7),
        Some(13),
        "a load into a crossbar input register"
    );
    let words = m.read(0, 100, 4).unwrap();
    assert_eq!(
        words
            .iter()
            .map(|w| (w.valid, w.counter))
            .collect::<Vec<_>>(),
        [(true, 1), (true, 1), (true, 1), (false, 0)]
    );
    assert_eq!(m.stats().words_loaded, 5);
    assert_eq!(m.stats().core(CoreOpcode::Load), 2);
}

#[test]
fn store_writes_valid_words_with_the_counter_and_its_writer() {
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=5, vec=4)\nset(d1=520, imm=40)\nstore(d1=520, r1=600, counter=3, store_width=4)\nhlt()",
    ]));
    let words = m.read(0, 40, 5).unwrap();
    let at = Writer::Inst(InstAt {
        tile: 0,
        unit: Unit::Core(0),
        pc: 2,
    });
    for w in &words[..4] {
        assert_eq!((w.value, w.valid, w.counter), (Some(5), true, 3));
        assert_eq!((w.writer, w.origin), (Some(at), Some(at)));
    }
    assert!(!words[4].was_written());
    assert_eq!(m.stats().words_stored, 4);
}

/// A store of two chunks of 2 words from registers 600.. holding 0, 1, 2, ...
fn strided_store(quirks: Quirks) -> Vec<Option<i64>> {
    let mut program = String::new();
    for i in 0..20 {
        program += &format!("set(d1={}, imm={i})\n", 600 + i);
    }
    program += "set(d1=520, imm=0)\nstore(d1=520, r1=600, store_width=2, vec=2)\nhlt()";
    let model = one_tile(&[&program]);
    let m = run_finished_with(model, quirks);
    m.read_values(0, 0, 4).unwrap()
}

#[test]
fn a_vector_store_reads_its_chunks_sixteen_registers_apart_in_the_simulator() {
    assert_eq!(
        strided_store(Quirks::SIMULATOR),
        [Some(0), Some(1), Some(16), Some(17)]
    );
    let compiler = Quirks {
        store_bus_stride: false,
        ..Quirks::SIMULATOR
    };
    assert_eq!(
        strided_store(compiler),
        [Some(0), Some(1), Some(2), Some(3)]
    );
}

#[test]
fn a_store_of_empty_registers_stores_empty_words() {
    let m = run_finished(one_tile(&[
        "set(d1=520, imm=8)\nstore(d1=520, r1=600, store_width=2)\nhlt()",
    ]));
    let w = m.read(0, 8, 2).unwrap();
    assert_eq!(
        (w[0].value, w[0].valid, w[0].was_written()),
        (None, true, true)
    );
    assert_eq!(m.stats().undefined_words_stored, 2);
}

/// Core 0 copies `inputs` into MVMU 0's input registers and multiplies; returns the first
/// `outputs` outputs.
fn mvm(
    quirks: Quirks,
    inputs: &[i64],
    cell: impl Fn(u32, u32) -> i32,
    outputs: u32,
) -> Vec<Option<i64>> {
    let mut program = String::new();
    for (i, v) in inputs.iter().enumerate() {
        program += &format!("set(d1={}, imm={v})\n", 600 + i);
    }
    program += &format!(
        "copy(d1=0, r1=600, vec={})\nmvm(['10'])\nhlt()",
        inputs.len()
    );
    let mut model = one_tile(&[&program]);
    set_weights(&mut model, 0, 0, 0, cell);
    let m = run_finished_with(model, quirks);
    regs(&m, 0, 256, outputs)
}

#[test]
fn mvm_multiplies_with_the_file_row_meeting_the_input_in_the_simulator() {
    // File cell (r, c) = 10·r + c on a 2 × 3 corner.
    let cell = |r: u32, c: u32| {
        if r < 2 && c < 3 {
            (10 * r + c) as i32 + 1
        } else {
            0
        }
    };
    // Simulator: out[c] = Σ_r in[r] · w[r][c] = 5·w[0][c] + 7·w[1][c].
    assert_eq!(
        mvm(Quirks::SIMULATOR, &[5, 7], cell, 4),
        [
            Some(5 + 7 * 11),
            Some(5 * 2 + 7 * 12),
            Some(5 * 3 + 7 * 13),
            Some(0)
        ]
    );
    // The compiler's M · x: out[r] = Σ_c w[r][c] · in[c].
    let compiler = Quirks {
        weights_row_is_input: false,
        ..Quirks::SIMULATOR
    };
    assert_eq!(
        mvm(compiler, &[5, 7, 1], cell, 3),
        [Some(5 + 7 * 2 + 3), Some(5 * 11 + 7 * 12 + 13), Some(0)]
    );
}

#[test]
fn mvm_is_exact_on_raw_words_and_reads_empty_inputs_as_zero() {
    let cell = |r: u32, c: u32| if c == 0 { r as i32 - 64 } else { 0 };
    let inputs: Vec<i64> = (0..3).map(|i| fx(i - 1) + 1).collect();
    let out = mvm(Quirks::SIMULATOR, &inputs, cell, 1);
    let want: i64 = inputs
        .iter()
        .enumerate()
        .map(|(r, x)| x * (r as i64 - 64))
        .sum();
    assert_eq!(out, [Some(want)]);
}

#[test]
fn every_mvm_runs_every_mvmu_in_the_simulator() {
    // MVMU 1's outputs are overwritten with 9s by a copy; an mvm of MVMU 0 alone then resets
    // them in the simulator (MVMU 1 has no weights: zeros), not in the compiler's reading.
    let program = "set(d1=600, imm=9)\ncopy(d1=384, r1=600)\nmvm(['10'])\nhlt()";
    let model = one_tile(&[program]);
    assert_eq!(reg(&run_finished(model.clone()), 0, 384), Some(0));
    let compiler = Quirks {
        mvm_runs_every_mvmu: false,
        ..Quirks::SIMULATOR
    };
    let m = run_finished_with(model, compiler);
    assert_eq!(reg(&m, 0, 384), Some(9));
    assert_eq!(m.stats().mvmu_runs, 1);
}

#[test]
fn mvm_strides_its_inputs_when_r1_and_r2_are_positive() {
    let mut program = String::new();
    for i in 0..8 {
        program += &format!("set(d1={}, imm={})\n", 600 + i, i + 1);
    }
    program += "copy(d1=0, r1=600, vec=8)\nmvm(['10'], r1=1, r2=4)\nhlt()";
    let m = run_finished(one_tile(&[&program]));
    // For i < 128/4, j < 3: in[4i + j] ← in[4i + j + 1]; the rest empty.
    assert_eq!(
        regs(&m, 0, 0, 9),
        [
            Some(2),
            Some(3),
            Some(4),
            None,
            Some(6),
            Some(7),
            Some(8),
            None,
            None
        ]
    );
}

/// `alu(op, ...)` on registers 600 (a) and 601 (b) into 602, with `imm`.
fn alu(op: &str, a: i64, b: i64, imm: i64) -> Option<i64> {
    let program = format!(
        "set(d1=600, imm={a})\nset(d1=601, imm={b})\nalu('{op}', d1=602, r1=600, r2=601, imm={imm})\nhlt()"
    );
    reg(&run_finished(one_tile(&[&program])), 0, 602)
}

#[test]
fn alu_operations_on_fixed_point_words() {
    assert_eq!(alu("add", fx(3), fx(-5), 0), Some(fx(-2)));
    assert_eq!(alu("sub", fx(3), fx(-5), 0), Some(fx(8)));
    // 1.5 · 1.5 = 2.25; 1/4096 · 1/4096 rounds to 0; 3/4096 · 2048/4096 = 1.5/4096 → 2/4096.
    assert_eq!(alu("mul", 6144, 6144, 0), Some(9216));
    assert_eq!(alu("mul", 1, 1, 0), Some(0));
    assert_eq!(alu("mul", 3, 2048, 0), Some(2));
    assert_eq!(alu("mul", -3, 2048, 0), Some(-2));
    assert_eq!(alu("max", fx(-1), fx(-4), 0), Some(fx(-1)));
    assert_eq!(alu("relu", fx(-1), 0, 0), Some(0));
    assert_eq!(alu("relu", 5, 0, 0), Some(5));
    assert_eq!(alu("sig", 0, 0, 0), Some(2048));
    // 4096 / (1 + e^-1) = 2994.39; tanh(1) · 4096 = 3119.49.
    assert_eq!(alu("sig", fx(1), 0, 0), Some(2994));
    assert_eq!(alu("sig", fx(-1), 0, 0), Some(4096 - 2994));
    assert_eq!(alu("tanh", fx(1), 0, 0), Some(3119));
    assert_eq!(alu("tanh", fx(-1), 0, 0), Some(-3119));
    assert_eq!(alu("sna", 5, 3, 4), Some(5 + (3 << 4)));
}

#[test]
fn unary_alu_operations_ignore_r2_and_vectors_go_in_order() {
    // r2 defaults to 0, an empty crossbar register: never read by `sig`.
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=0, vec=3)\nalu('sig', d1=600, r1=600, vec=3)\n\
         set(d1=700, imm=1)\nalu('add', d1=701, r1=700, r2=700, vec=3)\nhlt()",
    ]));
    assert_eq!(regs(&m, 0, 600, 3), [Some(2048); 3]);
    // 701 = 700 + 700, 702 = 701 + 701, 703 = 702 + 702.
    assert_eq!(regs(&m, 0, 700, 4), [Some(1), Some(2), Some(4), Some(8)]);
    assert_eq!(m.stats().alu(AluOp::Sig), 3);
    assert_eq!(m.stats().alu(AluOp::Add), 3);
}

#[test]
fn alui_scales_its_immediate_and_takes_it_as_the_first_operand() {
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=6)\nalui('mul', d1=601, r1=600, imm=0.5)\n\
         alui('sub', d1=602, r1=600, imm=1)\nalui('sig', d1=603, r1=700, imm=0.0)\nhlt()",
    ]));
    // 0.5 → 2048: 2048 · 6 / 4096 = 3; 1 - 6/4096 → 4096 - 6; sig(imm) with r1 unread.
    assert_eq!(regs(&m, 0, 601, 3), [Some(3), Some(4090), Some(2048)]);
}

#[test]
fn alu_results_go_to_crossbar_registers_only_in_the_compilers_reading() {
    let program = "set(d1=600, imm=2)\nalu('add', d1=3, r1=600, r2=600)\nhlt()";
    let m = run_finished_with(one_tile(&[program]), Quirks::COMPILER);
    assert_eq!(reg(&m, 0, 3), Some(4));
}

#[test]
fn alu_int_is_python_integer_arithmetic() {
    let m = run_finished(one_tile(&[
        "set(d1=600, imm=-7)\nset(d1=601, imm=2)\nalu_int('add', d1=610, r1=600, r2=601)\n\
         alu_int('sub', d1=611, r1=600, r2=601)\nalu_int('mul', d1=612, r1=600, r2=601)\n\
         alu_int('div', d1=613, r1=600, r2=601)\nalu_int('mod', d1=614, r1=600, r2=601)\nhlt()",
    ]));
    assert_eq!(
        regs(&m, 0, 610, 5),
        [Some(-5), Some(-9), Some(-14), Some(-4), Some(1)]
    );
}

#[test]
fn jmp_and_beq_make_a_counted_loop() {
    // 600 counts up by 601 until it equals 602; 603 counts the iterations.
    let program =
        "set(d1=600, imm=0)\nset(d1=601, imm=1)\nset(d1=602, imm=5)\nset(d1=603, imm=0)\n\
                   alu_int('add', d1=600, r1=600, r2=601)\nalu_int('add', d1=603, r1=603, r2=601)\n\
                   beq(r1=600, r2=602, imm=8)\njmp(imm=4)\nhlt()";
    let m = run_finished(one_tile(&[program]));
    assert_eq!(regs(&m, 0, 600, 4), [Some(5), Some(1), Some(5), Some(5)]);
    assert_eq!(m.stats().core(CoreOpcode::Beq), 5);
    assert_eq!(m.stats().core(CoreOpcode::Jmp), 4);
    assert_eq!(m.stats().core(CoreOpcode::AluInt), 10);
}

#[test]
fn hlt_stops_the_core_before_what_follows() {
    let m = run_finished(one_tile(&["hlt()\nset(d1=600, imm=1)"]));
    assert_eq!(reg(&m, 0, 600), None);
    assert_eq!(m.pc(0, Unit::Core(0)), Some(0));
}
