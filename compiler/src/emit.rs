//! Each stage's intermediate form as readable text (`pimdiff compile --emit STAGE`), so a
//! miscompilation can be traced to the stage that made it. Formatting happens only here,
//! never on the compile path.

use std::fmt::Write as _;

use pimdiff_oracle::Case;

use crate::tiling::Skip;
use crate::{plan, Bufferized, CompileError, CompileOptions, Compiled};

/// A stage whose IR [`emit`] prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Tiles, crossbar matrices, one `applyFilters` per output tile.
    Spatial,
    /// Cores and arrays of each crossbar; owner and contributors of each reduction.
    Mapping,
    /// Bufferization: GMem layout, chunks, LMem maps, per-chunk transfers.
    Pim,
    /// The generated program.
    Asm,
    /// The generated program, each instruction followed by the `stage::function` that
    /// emitted it (as an assembly comment).
    Provenance,
}

impl std::str::FromStr for Stage {
    type Err = String;
    fn from_str(s: &str) -> Result<Stage, String> {
        match s {
            "spatial" => Ok(Stage::Spatial),
            "mapping" => Ok(Stage::Mapping),
            "pim" => Ok(Stage::Pim),
            "asm" => Ok(Stage::Asm),
            "provenance" => Ok(Stage::Provenance),
            _ => Err(format!(
                "unknown stage {s:?} (expected spatial, mapping, pim, asm or provenance)"
            )),
        }
    }
}

/// The text of `stage`'s IR for a case.
pub fn emit(case: &Case, options: &CompileOptions, stage: Stage) -> Result<String, CompileError> {
    let mut out = String::new();
    match stage {
        Stage::Spatial => {
            // Tiling alone: a case that does not map can still be looked at.
            let spatial = crate::tiling::tile(case, options)?;
            spatial_text(&spatial, &mut out);
        }
        Stage::Mapping => {
            let spatial = crate::tiling::tile(case, options)?;
            let arch = &case.spec.arch;
            let mapping = crate::mapping::map(&spatial, arch.cores, arch.arrays_per_core)?;
            mapping_text(&spatial, &mapping, &mut out);
        }
        Stage::Pim => {
            let c = plan(case, options)?;
            match &c.buffers {
                Bufferized::Channel(b) => {
                    crate::buffers::describe(b, &mut out);
                    transfers_text(&c, &mut out);
                }
                Bufferized::Pixel(b) => {
                    crate::pixel::buffers::describe(&c.spatial, &c.mapping, b, &mut out)
                }
            }
        }
        Stage::Asm => {
            let bundle = crate::compile(case, options)?;
            out = asm_text(&bundle.program);
        }
        Stage::Provenance => {
            let (bundle, provenance) = crate::compile_with_provenance(case, options)?;
            provenance_text(&bundle.program, &provenance, &mut out);
        }
    }
    Ok(out)
}

fn spatial_text(s: &crate::tiling::Spatial, out: &mut String) {
    let p = &s.problem;
    if p.mvm {
        let _ = writeln!(
            out,
            "mvm N={} in={} out={} bias={} relu={}",
            p.n, p.c, p.k, p.bias, p.relu
        );
    } else {
        let _ = writeln!(
            out,
            "conv2d N={} C={} H={} W={} -> K={} OH={} OW={} kernel={}x{} stride={}x{} dilation={}x{} \
             padding=[{},{},{},{}] groups={} bias={} relu={}",
            p.n, p.c, p.h, p.w, p.k, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pt, p.pl, p.pb, p.pr,
            p.groups, p.bias, p.relu
        );
    }
    let _ = writeln!(
        out,
        "%in = input NHWC int8 [{}, {}, {}, {}]",
        p.n, p.h, p.w, p.c
    );
    for (ci, class) in s.classes.iter().enumerate() {
        let xs = &s.xbars[s.class_xbars[ci].clone()];
        let mut tiles: Vec<(usize, usize)> = xs.iter().map(|x| (x.c0, x.c0 + x.rows)).collect();
        tiles.dedup();
        let tiles: Vec<String> = tiles.iter().map(|(a, b)| format!("c{a}..{b}")).collect();
        let kept = xs.iter().filter(|x| x.skip.is_none()).count();
        let _ = writeln!(
            out,
            "%t{ci} = applyFilters(%in[{}], {} crossbars, {} kept) -> out[k{}..{}] (group {})",
            tiles.join(", "),
            xs.len(),
            kept,
            class.k0,
            class.k0 + class.width,
            class.group
        );
        for (xi, x) in s.class_xbars[ci].clone().zip(xs) {
            let skip = match x.skip {
                None => "",
                Some(Skip::ZeroWeights) => "  skipped: zero weights",
                Some(Skip::AlwaysPadding) => "  skipped: always in padding",
            };
            let _ = writeln!(
                out,
                "  xb{xi}: c{}..{} x k{}..{} at ({}, {}) {}x{}{skip}",
                x.c0,
                x.c0 + x.rows,
                class.k0,
                class.k0 + class.width,
                x.i,
                x.j,
                x.rows,
                class.width
            );
        }
    }
    let _ = writeln!(
        out,
        "%out = concat(%t0..%t{}) NHWC int32",
        s.classes.len().saturating_sub(1)
    );
}

fn mapping_text(s: &crate::tiling::Spatial, m: &crate::mapping::Mapping, out: &mut String) {
    let used: usize = m.arrays_used.iter().sum();
    let _ = writeln!(
        out,
        "{} crossbars on {} core(s); arrays used per core: {:?}",
        used, m.cores, m.arrays_used
    );
    for (ci, red) in m.reductions.iter().enumerate() {
        let class = s.classes[ci];
        let _ = write!(
            out,
            "class {ci} out[k{}..{}]: owner core {}",
            class.k0,
            class.k0 + class.width,
            red.owner
        );
        if red.parts.is_empty() {
            let _ = write!(out, " (no crossbars: bias/zero only)");
        }
        out.push('\n');
        for part in &red.parts {
            let role = if part.core == red.owner {
                "computes"
            } else {
                "contributes"
            };
            let _ = write!(out, "  core {} {role}:", part.core);
            for &pi in &part.placements {
                let pl = m.placements[pi];
                let _ = write!(out, " xb{}->array{}/group{}", pl.xbar, pl.array, pl.array);
            }
            out.push('\n');
        }
    }
}

fn transfers_text(c: &Compiled, out: &mut String) {
    let _ = writeln!(out, "per chunk, in this order:");
    for (ci, red) in c.mapping.reductions.iter().enumerate() {
        let w = c.spatial.classes[ci].width;
        for part in red.parts.iter().filter(|p| p.core != red.owner) {
            let _ = writeln!(
                out,
                "  class {ci}: core {} sends pixels x {w} int32 partial sums to core {} (recv + vvadd)",
                part.core, red.owner
            );
        }
        let p = &c.spatial.problem;
        let mut fin = Vec::new();
        if p.bias {
            fin.push("bias");
        }
        if p.relu {
            fin.push(if p.bias || red.total != 1 {
                "vrelu"
            } else {
                "relu in mvmul"
            });
        }
        fin.push("st");
        let _ = writeln!(
            out,
            "  class {ci}: core {} finalizes: {}",
            red.owner,
            fin.join(", ")
        );
    }
}

/// The program as assembly text (the ISA crate's printer, so it parses back).
pub(crate) fn asm_text(program: &pimdiff_isa::Program) -> String {
    pimdiff_isa::formats::asm::print(program)
}

/// Every core's instructions, each with its provenance label as a trailing comment.
fn provenance_text(
    program: &pimdiff_isa::Program,
    provenance: &crate::Provenance,
    out: &mut String,
) {
    for (core, insts) in program.cores.iter().enumerate() {
        let _ = writeln!(out, "core {core}:");
        for (i, inst) in insts.iter().enumerate() {
            let text = inst.to_string();
            let label = provenance.label(core, i).unwrap_or("?");
            let _ = writeln!(out, "    {text:<44} ; {label}");
        }
    }
}
