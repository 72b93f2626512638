//! `pimdiff new-case --op conv2d|mvm [shape flags] [arch flags] [--seed S] [--expected] OUT_DIR`:
//! write a valid random case directory, a template to start from (the harness has its own,
//! richer generator), with its exports (`model.onnx`, `op.mlir`, `check.py`).
//!
//! Every flag has a small default (a 3→8 3×3 conv2d with padding 1 on an 8×8 image, or a
//! 20→7 MVM, on 4 cores of 8 arrays of 16×16), so `pimdiff new-case --op conv2d my-case` is
//! enough. Input and weight values are uniform int8, bias values small
//! ([`pimdiff_oracle::BIAS_RANGE`]). Exit codes (`pimdiff::cli::exit_codes`): 0 written, or
//! 2 when the flags describe an invalid case (the error names the field) or `OUT_DIR` already
//! holds something.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use pimdiff_oracle::{random_tensors, reference, CaseArch, CaseSpec, Conv2d, Mvm, Op};

use super::exit_codes::help;
use super::{exit, EXIT_OK};
use crate::interop::write_case_with_exports;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OpKind {
    Conv2d,
    Mvm,
}

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "the case directory is written")],
    "pimdiff new-case --op conv2d --stride 2 --expected my-case",
))]
pub struct Args {
    /// The operator.
    #[arg(long, value_enum)]
    pub op: OpKind,

    /// conv2d: input channels C [default: 3].
    #[arg(long, help_heading = "conv2d")]
    pub in_channels: Option<usize>,
    /// conv2d: output channels K [default: 8].
    #[arg(long, help_heading = "conv2d")]
    pub out_channels: Option<usize>,
    /// conv2d: kernel size, `KHxKW` or `K` for square [default: 3x3].
    #[arg(long, value_name = "KHxKW", value_parser = parse_kernel, help_heading = "conv2d")]
    pub kernel: Option<[usize; 2]>,
    /// conv2d: stride, `S` or `SH,SW` [default: 1].
    #[arg(long, value_name = "S|SH,SW", value_parser = parse_pair, help_heading = "conv2d")]
    pub stride: Option<[usize; 2]>,
    /// conv2d: zero padding, `P` for all sides or `T,L,B,R` [default: 1].
    #[arg(long, value_name = "P|T,L,B,R", value_parser = parse_padding, help_heading = "conv2d")]
    pub padding: Option<[usize; 4]>,
    /// conv2d: dilation, `D` or `DH,DW` [default: 1].
    #[arg(long, value_name = "D|DH,DW", value_parser = parse_pair, help_heading = "conv2d")]
    pub dilation: Option<[usize; 2]>,
    /// conv2d: groups; must divide both channel counts [default: 1].
    #[arg(long, help_heading = "conv2d")]
    pub groups: Option<usize>,
    /// conv2d: input height H [default: 8].
    #[arg(long, help_heading = "conv2d")]
    pub height: Option<usize>,
    /// conv2d: input width W [default: 8].
    #[arg(long, help_heading = "conv2d")]
    pub width: Option<usize>,

    /// mvm: input features [default: 20].
    #[arg(long, help_heading = "mvm")]
    pub in_features: Option<usize>,
    /// mvm: output features [default: 7].
    #[arg(long, help_heading = "mvm")]
    pub out_features: Option<usize>,

    /// Add a bias (writes bias.npy).
    #[arg(long)]
    pub bias: bool,
    /// Apply ReLU to the final result.
    #[arg(long)]
    pub relu: bool,
    /// Batch size N.
    #[arg(long, default_value_t = 1)]
    pub batch: usize,

    #[command(flatten)]
    pub arch: ArchArgs,

    /// Seed of the tensor values (ChaCha8); the same flags and seed give the same case.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also write expected.npy, computed by the oracle.
    #[arg(long)]
    pub expected: bool,
    /// The case directory to create (must not exist, or be empty).
    pub out_dir: PathBuf,
}

/// The architecture flags (`arch` in `case.json`), shared with `pimdiff import-onnx`.
#[derive(clap::Args, Debug, Clone)]
pub struct ArchArgs {
    /// Cores on the chip.
    #[arg(long, default_value_t = 4, help_heading = "architecture")]
    pub cores: usize,
    /// Crossbar arrays per core.
    #[arg(long, default_value_t = 8, help_heading = "architecture")]
    pub arrays_per_core: usize,
    /// Rows (inputs) of one array.
    #[arg(long, default_value_t = 16, help_heading = "architecture")]
    pub array_rows: usize,
    /// Columns (outputs) of one array.
    #[arg(long, default_value_t = 16, help_heading = "architecture")]
    pub array_cols: usize,
    /// Local memory of each core, in bytes.
    #[arg(long, default_value_t = 262144, help_heading = "architecture")]
    pub local_memory_bytes: usize,
}

impl ArchArgs {
    /// The flags as a case's architecture (validated with the case).
    pub fn to_arch(&self) -> CaseArch {
        CaseArch {
            cores: self.cores,
            arrays_per_core: self.arrays_per_core,
            array_rows: self.array_rows,
            array_cols: self.array_cols,
            local_memory_bytes: self.local_memory_bytes,
        }
    }
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let spec = spec(&args)?;
    let mut case =
        random_tensors(&spec, args.seed).context("the flags do not describe a valid case")?;
    if args.expected {
        case.expected = Some(reference(&case).context("computing expected.npy")?);
    }
    write_case_with_exports(&case, &args.out_dir)
        .with_context(|| format!("writing {}", args.out_dir.display()))?;
    println!(
        "wrote {}: {}, input {:?}, weight {:?}, output {:?}{}{}, seed {}",
        args.out_dir.display(),
        spec.op.kind(),
        spec.input_shape,
        spec.weight_shape(),
        spec.output_shape(),
        if spec.op.has_bias() { ", bias" } else { "" },
        if args.expected { ", expected.npy" } else { "" },
        args.seed
    );
    Ok(exit(EXIT_OK))
}

/// The spec the flags describe (validated later, by `random_tensors`).
fn spec(a: &Args) -> anyhow::Result<CaseSpec> {
    let arch = a.arch.to_arch();
    let conv_flags = [
        ("--in-channels", a.in_channels.is_some()),
        ("--out-channels", a.out_channels.is_some()),
        ("--kernel", a.kernel.is_some()),
        ("--stride", a.stride.is_some()),
        ("--padding", a.padding.is_some()),
        ("--dilation", a.dilation.is_some()),
        ("--groups", a.groups.is_some()),
        ("--height", a.height.is_some()),
        ("--width", a.width.is_some()),
    ];
    let mvm_flags = [
        ("--in-features", a.in_features.is_some()),
        ("--out-features", a.out_features.is_some()),
    ];
    let (foreign, other) = match a.op {
        OpKind::Conv2d => (&mvm_flags[..], "mvm"),
        OpKind::Mvm => (&conv_flags[..], "conv2d"),
    };
    if let Some((flag, _)) = foreign.iter().find(|(_, given)| *given) {
        bail!("{flag} applies to --op {other} only");
    }
    Ok(match a.op {
        OpKind::Conv2d => {
            let p = Conv2d {
                in_channels: a.in_channels.unwrap_or(3),
                out_channels: a.out_channels.unwrap_or(8),
                kernel: a.kernel.unwrap_or([3, 3]),
                stride: a.stride.unwrap_or([1, 1]),
                padding: a.padding.unwrap_or([1; 4]),
                dilation: a.dilation.unwrap_or([1, 1]),
                groups: a.groups.unwrap_or(1),
                bias: a.bias,
                relu: a.relu,
            };
            let input_shape = vec![
                a.batch,
                p.in_channels,
                a.height.unwrap_or(8),
                a.width.unwrap_or(8),
            ];
            CaseSpec {
                op: Op::Conv2d(p),
                input_shape,
                arch,
            }
        }
        OpKind::Mvm => {
            let p = Mvm {
                in_features: a.in_features.unwrap_or(20),
                out_features: a.out_features.unwrap_or(7),
                bias: a.bias,
                relu: a.relu,
            };
            CaseSpec {
                op: Op::Mvm(p),
                input_shape: vec![a.batch, p.in_features],
                arch,
            }
        }
    })
}

fn parse_kernel(s: &str) -> Result<[usize; 2], String> {
    let parts: Vec<&str> = s.split(['x', 'X']).collect();
    let nums = numbers(&parts)?;
    match nums[..] {
        [k] => Ok([k, k]),
        [kh, kw] => Ok([kh, kw]),
        _ => Err(format!("{s:?}: expected KHxKW (e.g. 3x3) or K")),
    }
}

fn parse_pair(s: &str) -> Result<[usize; 2], String> {
    match numbers(&s.split(',').collect::<Vec<_>>())?[..] {
        [v] => Ok([v, v]),
        [h, w] => Ok([h, w]),
        _ => Err(format!(
            "{s:?}: expected one value or two (along H, along W)"
        )),
    }
}

fn parse_padding(s: &str) -> Result<[usize; 4], String> {
    match numbers(&s.split(',').collect::<Vec<_>>())?[..] {
        [p] => Ok([p; 4]),
        [t, l, b, r] => Ok([t, l, b, r]),
        _ => Err(format!(
            "{s:?}: expected one value or four (top, left, bottom, right)"
        )),
    }
}

fn numbers(parts: &[&str]) -> Result<Vec<usize>, String> {
    parts
        .iter()
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .map_err(|_| format!("{p:?} is not a non-negative integer"))
        })
        .collect()
}
