//! `pimdiff lowerings --out DIR [--runs N] [--layer TEXT]...`: the channel-wise lowering
//! against the pixel-wise baseline on ResNet-18's distinct layers
//! ([`pimdiff_compiler::workloads`]): instruction counts per class, bundle bytes, compile
//! time (median of `--runs`), interpretation time, and whether each program's output equals
//! the oracle's. Writes `DIR/lowerings.md` (tables), `DIR/lowerings.svg` (bar chart of the
//! pixel-wise / channel-wise ratios) and `DIR/lowerings.json` (every number), atomically.
//!
//! Build with `--release`: the times are the compiler's and the interpreter's.
//!
//! Exit codes (`pimdiff::cli::exit_codes`): 0 both lowerings agree with the oracle on every
//! layer; 1 a program disagrees, faults or deadlocks, or the compiler fails internally (a
//! finding); 2 bad input (bad flags, an unwritable `DIR`); 4 no finding, but a lowering
//! declined a layer or its run ran out of steps, so that layer has no verdict.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use pimdiff_compiler::workloads::{resnet18_layers, Layer, RESNET18_ARCH};
use pimdiff_compiler::{compile, CompileOptions, Lowering};
use pimdiff_isa::inst::{Category, Opcode};
use serde::Serialize;

use super::exit_codes::{exit_with, help, EXIT_FINDING, EXIT_NO_VERDICT, EXIT_OK};
use crate::check::Outcome;
use crate::check::{run_bundle, RunConfig};
use crate::finding::Verdict;
use pimdiff_atomic::write_file as write_file_atomic;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (EXIT_OK, "both lowerings agree with the oracle on every layer"),
        (
            EXIT_FINDING,
            "a program disagrees, faults or deadlocks, or the compiler fails internally",
        ),
        (
            EXIT_NO_VERDICT,
            "no finding, but a lowering declined a layer or ran out of steps on it",
        ),
    ],
    "cargo run --release -- lowerings --out lowerings-out --layer 3x3",
))]
pub struct Args {
    /// Directory for lowerings.md, lowerings.svg and lowerings.json (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Compilations per layer and lowering; the median time is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Only the layers whose name contains this text (repeatable), e.g. `--layer 3x3`.
    #[arg(long = "layer", value_name = "TEXT")]
    pub layers: Vec<String>,
}

/// Instruction counts of one program by class: the instruction table's categories
/// ([`Opcode::category`]), the memory-bound one per opcode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Per memory-bound opcode, in [`Opcode::MEMORY_BOUND`] order (the thesis's; its `sst` is
    /// not an instruction of this ISA).
    pub memory: [u64; Opcode::MEMORY_BOUND.len()],
    /// [`Category::Matrix`]: `mvmul`.
    pub mvmul: u64,
    /// [`Category::Vector`]: `vv*`, `vrelu`, `vtanh`, `vsigm`, `vavg`, `vmv`, `vrsu`, `vrsl`.
    pub vector: u64,
    /// Scalar and control ([`Category::Scalar`], [`Category::Control`]): `sldi`, `s*`,
    /// `setbw`, `nop`, `wait`, `sync`.
    pub scalar: u64,
}

impl Counts {
    pub fn of(program: &pimdiff_isa::Program) -> Counts {
        let mut c = Counts::default();
        for inst in program.cores.iter().flatten() {
            let op = inst.opcode();
            match (op.memory_bound_rank(), op.category()) {
                (Some(i), _) => c.memory[i] += 1,
                (None, Category::Matrix) => c.mvmul += 1,
                (None, Category::Vector) => c.vector += 1,
                (None, _) => c.scalar += 1,
            }
        }
        c
    }

    pub fn memory_bound(&self) -> u64 {
        self.memory.iter().sum()
    }

    pub fn total(&self) -> u64 {
        self.memory_bound() + self.mvmul + self.vector + self.scalar
    }
}

/// One layer compiled one way.
#[derive(Clone, Debug, Serialize)]
pub struct Measure {
    pub counts: Counts,
    pub bundle_bytes: u64,
    pub compile_ms: f64,
    pub interpret_ms: f64,
    /// The interpreted output equals the oracle's.
    pub agrees: bool,
    /// The outcome when it does not.
    pub outcome: String,
    /// What the layer's check came to under this lowering.
    #[serde(skip)]
    pub verdict: Verdict,
}

/// Both lowerings of one layer.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub layer: String,
    pub channel: Measure,
    pub pixel: Measure,
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let scratch = args.out.join(".lowerings-bundle.tmp");
    let layers: Vec<Layer> = resnet18_layers()
        .into_iter()
        .filter(|l| args.layers.is_empty() || args.layers.iter().any(|t| l.name.contains(t)))
        .collect();
    if layers.is_empty() {
        anyhow::bail!("no layer matches {:?}", args.layers);
    }
    let mut rows = Vec::new();
    for layer in &layers {
        eprintln!("{} ...", layer.name);
        let [channel, pixel] = Lowering::ALL.map(|l| measure(layer, l, args.runs, &scratch));
        rows.push(Row {
            layer: layer.name.clone(),
            channel: channel?,
            pixel: pixel?,
        });
    }
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let write = |name: &str, bytes: &[u8]| {
        let path = args.out.join(name);
        write_file_atomic(&path, bytes).with_context(|| format!("writing {}", path.display()))
    };
    let md = markdown(&rows);
    write("lowerings.md", md.as_bytes())?;
    write("lowerings.svg", chart(&rows)?.as_bytes())?;
    write(
        "lowerings.json",
        serde_json::to_string_pretty(&rows)?.as_bytes(),
    )?;
    print!("{md}");
    let verdict = rows
        .iter()
        .flat_map(|r| [r.channel.verdict, r.pixel.verdict])
        .fold(Verdict::Clean, Verdict::and);
    Ok(exit_with(verdict))
}

/// Compile `runs` times (median time), count, write the bundle once for its size, interpret
/// once and compare with the oracle. A layer that does not compile is a disagreement.
fn measure(
    layer: &Layer,
    lowering: Lowering,
    runs: u32,
    scratch: &Path,
) -> anyhow::Result<Measure> {
    let case = &layer.case;
    let options = CompileOptions {
        lowering,
        ..CompileOptions::default()
    };
    let mut times = Vec::new();
    let mut bundle = None;
    for _ in 0..runs {
        let t = Instant::now();
        let b = compile(case, &options);
        times.push(t.elapsed());
        bundle = Some(b);
    }
    let bundle = match bundle.expect("runs >= 1") {
        Ok(b) => b,
        Err(e) => {
            return Ok(Measure {
                counts: Counts::default(),
                bundle_bytes: 0,
                compile_ms: 0.0,
                interpret_ms: 0.0,
                agrees: false,
                outcome: format!("{lowering}-wise: {e}"),
                verdict: match e {
                    pimdiff_compiler::CompileError::Unsupported(_) => Verdict::NoVerdict,
                    pimdiff_compiler::CompileError::Internal(_) => Verdict::Findings,
                },
            })
        }
    };
    bundle
        .write_dir(scratch)
        .with_context(|| format!("writing {}", scratch.display()))?;
    let bundle_bytes = dir_bytes(scratch)?;
    std::fs::remove_dir_all(scratch).with_context(|| format!("removing {}", scratch.display()))?;
    let oracle = pimdiff_oracle::reference(case).context("the oracle")?;
    let t = Instant::now();
    let (outcome, _) = run_bundle(case, &bundle, &oracle, &RunConfig::default());
    let interpret = t.elapsed();
    Ok(Measure {
        counts: Counts::of(&bundle.program),
        bundle_bytes,
        compile_ms: ms(median(&mut times)),
        interpret_ms: ms(interpret),
        agrees: outcome == Outcome::Pass,
        outcome: outcome.summary(),
        verdict: outcome.verdict(),
    })
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

fn ratio(pixel: f64, channel: f64) -> String {
    if channel > 0.0 {
        format!("{:.1}×", pixel / channel)
    } else {
        "–".into()
    }
}

/// The two tables: instruction classes per lowering, then the ratios and times.
pub fn markdown(rows: &[Row]) -> String {
    let a = RESNET18_ARCH;
    let mut s = format!(
        "ResNet-18 layers (batch 1, int8, bias + ReLU) on {} cores × {} arrays of {}×{}, {} KiB \
         local memory per core; both lowerings with padding and weight skipping.\n\n",
        a.cores,
        a.arrays_per_core,
        a.array_rows,
        a.array_cols,
        a.local_memory_bytes / 1024
    );
    let memory = Opcode::MEMORY_BOUND.map(Opcode::mnemonic).join(" | ");
    // The memory columns, then memory-bound, mvmul, vector, scalar, total and bundle bytes.
    let numbers = Opcode::MEMORY_BOUND.len() + 6;
    s.push_str(&format!(
        "| layer | lowering | {memory} | memory-bound | mvmul | vector | scalar | total | bundle bytes |\n\
         |---|---|{}\n",
        "--:|".repeat(numbers)
    ));
    for r in rows {
        for (name, m) in [("channel", &r.channel), ("pixel", &r.pixel)] {
            let c = &m.counts;
            let mem: Vec<String> = c.memory.iter().map(u64::to_string).collect();
            s.push_str(&format!(
                "| {} | {name} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.layer,
                mem.join(" | "),
                c.memory_bound(),
                c.mvmul,
                c.vector,
                c.scalar,
                c.total(),
                m.bundle_bytes
            ));
        }
    }
    s.push_str(
        "\n| layer | memory-bound px/ch | total px/ch | bundle px/ch | compile ms ch | compile ms px | compile px/ch | interpret ms ch | interpret ms px | interpret px/ch | both agree with the oracle |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n",
    );
    let mut sum = [0f64; 8];
    for r in rows {
        let (c, p) = (&r.channel, &r.pixel);
        let v = [
            c.counts.memory_bound() as f64,
            p.counts.memory_bound() as f64,
            c.counts.total() as f64,
            p.counts.total() as f64,
            c.bundle_bytes as f64,
            p.bundle_bytes as f64,
            c.compile_ms,
            p.compile_ms,
        ];
        for (acc, x) in sum.iter_mut().zip(v) {
            *acc += x;
        }
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} | {:.1} | {:.1} | {} | {} |\n",
            r.layer,
            ratio(v[1], v[0]),
            ratio(v[3], v[2]),
            ratio(v[5], v[4]),
            c.compile_ms,
            p.compile_ms,
            ratio(p.compile_ms, c.compile_ms),
            c.interpret_ms,
            p.interpret_ms,
            ratio(p.interpret_ms, c.interpret_ms),
            agreement(c, p)
        ));
    }
    s.push_str(&format!(
        "| **all layers** | {} | {} | {} | {:.1} | {:.1} | {} | | | | |\n",
        ratio(sum[1], sum[0]),
        ratio(sum[3], sum[2]),
        ratio(sum[5], sum[4]),
        sum[6],
        sum[7],
        ratio(sum[7], sum[6]),
    ));
    s
}

fn agreement(c: &Measure, p: &Measure) -> String {
    match (c.agrees, p.agrees) {
        (true, true) => "yes".into(),
        _ => format!("no: channel {}, pixel {}", c.outcome, p.outcome),
    }
}

/// A bar chart (SVG, plotters): per layer, pixel-wise / channel-wise ratios of memory-bound
/// instructions and of compile time, on a log scale.
pub fn chart(rows: &[Row]) -> anyhow::Result<String> {
    use plotters::prelude::*;
    let n = rows.len();
    let ratios: Vec<[f64; 2]> = rows
        .iter()
        .map(|r| {
            let mem = r.pixel.counts.memory_bound() as f64
                / r.channel.counts.memory_bound().max(1) as f64;
            let time = r.pixel.compile_ms / r.channel.compile_ms.max(1e-6);
            [mem.max(0.05), time.max(0.05)]
        })
        .collect();
    let top = ratios.iter().flatten().fold(2.0f64, |a, &b| a.max(b)) * 1.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1200, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "ResNet-18 layers: pixel-wise / channel-wise (higher = channel-wise better)",
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(150)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, (0.05f64..top).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("ratio (log scale)")
            .draw()?;
        // Layer names under their bars, written downwards.
        let style = ("sans-serif", 13)
            .into_font()
            .transform(FontTransform::Rotate90)
            .color(&BLACK);
        for (i, r) in rows.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.05));
            root.draw(&Text::new(r.layer.clone(), (x + 6, y + 8), style.clone()))?;
        }
        let colors = [RGBColor(31, 119, 180), RGBColor(255, 127, 14)];
        let names = ["memory-bound instructions", "compile time"];
        for (k, (&color, name)) in colors.iter().zip(names).enumerate() {
            chart
                .draw_series(ratios.iter().enumerate().map(|(i, r)| {
                    let x0 = i as f64 + 0.1 + 0.4 * k as f64;
                    Rectangle::new([(x0, 1.0), (x0 + 0.38, r[k])], color.filled())
                }))?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
        }
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 1.0), (n as f64, 1.0)],
            BLACK,
        )))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
    }
    Ok(svg)
}
