//! Shared helpers of the compiler's tests: building cases, running a bundle on the
//! interpreter, small deterministic random tensors.

#![allow(dead_code)]

use ndarray::{Array1, ArrayD, IxDyn};
use pimdiff_compiler::{compile, CompileError, CompileOptions};
use pimdiff_isa::bundle::Bundle;
use pimdiff_isa::machine::{Machine, MachineOptions, RunOutcome};
use pimdiff_isa::{Arch, ArchHints};
use pimdiff_oracle::{Case, CaseArch, CaseSpec, Conv2d, Mvm, Op};

/// The architecture a bundle for `case` runs on.
pub fn arch_of(case: &Case) -> Arch {
    let a = &case.spec.arch;
    let hints = &Arch::default_mesh(a.cores as u32);
    Arch {
        cores: a.cores as u32,
        arrays_per_core: a.arrays_per_core as u32,
        array_rows: a.array_rows as u32,
        array_cols: a.array_cols as u32,
        local_memory_bytes: a.local_memory_bytes as u32,
        mesh_rows: hints[0],
        mesh_cols: hints[1],
        frac_bits: 0,
    }
}

/// Run a compiled bundle with the case's input; the logical output or a description of
/// what went wrong.
pub fn run_bundle(case: &Case, bundle: &Bundle) -> Result<ArrayD<i32>, String> {
    run_bundle_with(case, bundle, MachineOptions::default())
}

/// [`run_bundle`] with machine options (e.g. a random schedule).
pub fn run_bundle_with(
    case: &Case,
    bundle: &Bundle,
    options: MachineOptions,
) -> Result<ArrayD<i32>, String> {
    // The program's own hints must state the whole architecture of the case.
    let cores = bundle.program.cores.len() as u32;
    let arch = Arch::resolve(&bundle.program.arch, cores, &ArchHints::default());
    if arch != arch_of(case) {
        return Err(format!(
            "program hints {:?} resolve to {arch:?}",
            bundle.program.arch
        ));
    }
    let mut m = Machine::new(&bundle.program, &bundle.xbars, arch, options)
        .map_err(|e| format!("setup: {e}"))?;
    let input = bundle
        .manifest
        .encode_input(&case.input)
        .map_err(|e| e.to_string())?;
    m.write_gmem(bundle.manifest.input.addr, &input)
        .map_err(|e| e.to_string())?;
    for c in &bundle.manifest.constants {
        m.write_gmem(c.addr, &c.data).map_err(|e| e.to_string())?;
    }
    match m.run() {
        RunOutcome::Finished => {}
        other => return Err(format!("run: {other:?}")),
    }
    let out = &bundle.manifest.output;
    let bytes = m
        .read_gmem(out.addr, out.byte_len() as u32)
        .map_err(|e| e.to_string())?;
    bundle
        .manifest
        .decode_output(&bytes)
        .map_err(|e| e.to_string())
}

/// Compile and run; `Ok(None)` when the compiler declines the case.
pub fn compile_and_run(
    case: &Case,
    options: &CompileOptions,
) -> Result<Option<ArrayD<i32>>, String> {
    match compile(case, options) {
        Ok(b) => run_bundle(case, &b).map(Some),
        Err(CompileError::Unsupported(_)) => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// A tiny deterministic generator (xorshift64*), so tests need no extra crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A small int8 value, zero about a third of the time.
    pub fn small(&mut self) -> i8 {
        (self.below(7) as i8) - 3
    }
}

pub fn arch(
    cores: usize,
    arrays_per_core: usize,
    rows: usize,
    cols: usize,
    lmem: usize,
) -> CaseArch {
    CaseArch {
        cores,
        arrays_per_core,
        array_rows: rows,
        array_cols: cols,
        local_memory_bytes: lmem,
    }
}

/// A conv2d case with values `(i * 7 + 3) % 5 - 2` style patterns from `seed`.
pub fn conv_case(conv: Conv2d, n: usize, h: usize, w: usize, arch: CaseArch, seed: u64) -> Case {
    let mut rng = Rng(seed);
    let spec = CaseSpec {
        op: Op::Conv2d(conv),
        input_shape: vec![n, conv.in_channels, h, w],
        arch,
    };
    let input = random(&mut rng, &[n, conv.in_channels, h, w]);
    let weight = random(
        &mut rng,
        &[
            conv.out_channels,
            conv.in_channels / conv.groups,
            conv.kernel[0],
            conv.kernel[1],
        ],
    );
    let bias = conv
        .bias
        .then(|| Array1::from_iter((0..conv.out_channels).map(|_| rng.below(41) as i32 - 20)));
    Case::new(spec, input, weight, bias, None).expect("valid case")
}

pub fn mvm_case(mvm: Mvm, n: usize, arch: CaseArch, seed: u64) -> Case {
    let mut rng = Rng(seed);
    let spec = CaseSpec {
        op: Op::Mvm(mvm),
        input_shape: vec![n, mvm.in_features],
        arch,
    };
    let input = random(&mut rng, &[n, mvm.in_features]);
    let weight = random(&mut rng, &[mvm.out_features, mvm.in_features]);
    let bias = mvm
        .bias
        .then(|| Array1::from_iter((0..mvm.out_features).map(|_| rng.below(41) as i32 - 20)));
    Case::new(spec, input, weight, bias, None).expect("valid case")
}

pub fn random(rng: &mut Rng, shape: &[usize]) -> ArrayD<i8> {
    let len: usize = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), (0..len).map(|_| rng.small()).collect()).expect("shape")
}

pub fn conv(c: usize, k: usize, kernel: [usize; 2]) -> Conv2d {
    Conv2d {
        in_channels: c,
        out_channels: k,
        kernel,
        stride: [1, 1],
        padding: [0; 4],
        dilation: [1, 1],
        groups: 1,
        bias: false,
        relu: false,
    }
}
