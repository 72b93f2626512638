//! Compile the ResNet-18 conv layers and its FC layer on 128×128 arrays (64 cores of 64
//! arrays, 1 MiB of local memory each) and report, per layer: compile time, instructions
//! split into memory-bound (ld, st, lmv, lldi, send, recv), compute (mvmul and the vector
//! ops) and the rest (sldi, setbw), and arrays used.
//!
//! `cargo bench -p pimdiff-compiler --bench resnet18` (a plain `main`, no criterion: each
//! layer is compiled a few times and the best time is shown).

use std::time::{Duration, Instant};

use ndarray::{Array1, ArrayD, IxDyn};
use pimdiff_compiler::{compile, CompileOptions};
use pimdiff_isa::inst::Opcode;
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

fn tensor(shape: &[usize], seed: u64) -> ArrayD<i8> {
    let len: usize = shape.iter().product();
    let mut x = seed | 1;
    ArrayD::from_shape_vec(
        IxDyn(shape),
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 7) as i8 - 3
            })
            .collect(),
    )
    .expect("shape")
}

const ARCH: CaseArch = CaseArch {
    cores: 64,
    arrays_per_core: 64,
    array_rows: 128,
    array_cols: 128,
    local_memory_bytes: 1 << 20,
};

/// A case built field by field: the bench measures the compiler, not the oracle's check.
fn conv_layer(c: usize, k: usize, kernel: usize, stride: usize, pad: usize, hw: usize) -> Case {
    let op = Conv2d {
        in_channels: c,
        out_channels: k,
        kernel: [kernel; 2],
        stride: [stride; 2],
        padding: [pad; 4],
        dilation: [1, 1],
        groups: 1,
        bias: true,
        relu: true,
    };
    Case {
        spec: CaseSpec {
            op: Op::Conv2d(op),
            input_shape: vec![1, c, hw, hw],
            arch: ARCH,
        },
        input: tensor(&[1, c, hw, hw], 1),
        weight: tensor(&[k, c, kernel, kernel], 2),
        bias: Some(Array1::from_iter((0..k as i32).map(|v| v - 50))),
        expected: None,
    }
}

fn fc_layer(inf: usize, outf: usize) -> Case {
    let op = Mvm {
        in_features: inf,
        out_features: outf,
        bias: true,
        relu: false,
    };
    Case {
        spec: CaseSpec {
            op: Op::Mvm(op),
            input_shape: vec![1, inf],
            arch: ARCH,
        },
        input: tensor(&[1, inf], 3),
        weight: tensor(&[outf, inf], 4),
        bias: Some(Array1::from_iter((0..outf as i32).map(|v| v - 500))),
        expected: None,
    }
}

/// Compile time of the tiny cases a hunt runs thousands of per second.
fn tiny_cases() {
    let arch = CaseArch {
        cores: 2,
        arrays_per_core: 32,
        array_rows: 4,
        array_cols: 4,
        local_memory_bytes: 4096,
    };
    let mut cases = Vec::new();
    for (i, (c, k, hw)) in [(3, 4, 5), (5, 6, 4), (2, 2, 3), (4, 3, 6)]
        .into_iter()
        .enumerate()
    {
        let mut case = conv_layer(c, k, 3, 1, 1, hw);
        case.spec.arch = arch;
        case.input = tensor(&[1, c, hw, hw], i as u64 + 10);
        cases.push(case);
    }
    let mut fc = fc_layer(8, 5);
    fc.spec.arch = arch;
    cases.push(fc);
    let rounds = 2000;
    let t = Instant::now();
    let mut insts = 0usize;
    for _ in 0..rounds {
        for case in &cases {
            let b = compile(case, &CompileOptions::default()).expect("compiles");
            insts += b.program.cores.iter().map(Vec::len).sum::<usize>();
        }
    }
    let per = t.elapsed().as_secs_f64() / (rounds * cases.len()) as f64;
    println!(
        "tiny cases (conv 3x3 up to 5->6 on <= 6x6, fc 8->5; 2 cores of 32 4x4 arrays): {:.1} µs per compile, {} instructions on average\n",
        per * 1e6,
        insts / (rounds * cases.len())
    );
}

fn main() {
    tiny_cases();
    // `cargo bench --bench resnet18 -- tiny`: the tiny cases only (for profiling).
    if std::env::args().any(|a| a == "tiny") {
        return;
    }
    let layers = [
        ("conv1 7x7/2 3->64 @224", conv_layer(3, 64, 7, 2, 3, 224)),
        ("3x3 64->64 @56", conv_layer(64, 64, 3, 1, 1, 56)),
        ("3x3 128->128 @28", conv_layer(128, 128, 3, 1, 1, 28)),
        ("3x3 256->256 @14", conv_layer(256, 256, 3, 1, 1, 14)),
        ("3x3 512->512 @7", conv_layer(512, 512, 3, 1, 1, 7)),
        ("fc 512->1000", fc_layer(512, 1000)),
    ];
    println!(
        "| layer | compile ms | instructions | memory-bound | compute | other | mvmul | arrays | cores | chunks |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let options = CompileOptions::default();
    for (name, case) in &layers {
        let mut best = Duration::MAX;
        let mut bundle = None;
        for _ in 0..3 {
            let t = Instant::now();
            let b = compile(case, &options).expect("compiles");
            best = best.min(t.elapsed());
            bundle = Some(b);
        }
        let bundle = bundle.expect("compiled");
        let (mut total, mut mem, mut compute, mut mvmul) = (0u64, 0u64, 0u64, 0u64);
        for inst in bundle.program.cores.iter().flatten() {
            let op = inst.opcode();
            total += 1;
            if op.is_memory_bound() {
                mem += 1;
            } else if !matches!(op, Opcode::Sldi | Opcode::Setbw | Opcode::Nop) {
                compute += 1;
            }
            if op == Opcode::Mvmul {
                mvmul += 1;
            }
        }
        let arrays: usize = bundle.xbars.cores.values().map(|c| c.groups.len()).sum();
        let cores = bundle
            .program
            .cores
            .iter()
            .filter(|c| !c.is_empty())
            .count();
        let chunks = pimdiff_compiler::emit(case, &options, pimdiff_compiler::Stage::Pim)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("chunks:"))
                    .map(str::to_string)
            })
            .unwrap_or_default();
        println!(
            "| {name} | {:.1} | {total} | {mem} | {compute} | {} | {mvmul} | {arrays} | {cores} | {} |",
            best.as_secs_f64() * 1e3,
            total - mem - compute,
            chunks.trim_start_matches("chunks: ")
        );
    }
}
