//! The side table: PIMCOMP-NN's VerificationInfo of a compile (`-v=YES`), read with serde into
//! compact typed records (never a JSON tree: a table is 100–380 MB of JSON).
//!
//! Top-level keys: `AG_info` (array groups: node, GEMM rows, crossbars), `node_list` (the
//! model), `instruction.core_list` (per core the IR instructions, `null` for unused cores),
//! `reshape_info`, `comm_pair_total_num` (the last two are not needed). See
//! `docs/pimcomp-numerics.md` §1 for the fields.

use std::path::Path;

use pimdiff_input::limits::MAX_TABLE_BYTES;
use pimdiff_isa::Opcode;

use serde::Deserialize;

use super::error::PimcompError;

/// The whole side table, typed.
#[derive(Debug, Deserialize)]
pub struct SideTable {
    #[serde(rename = "AG_info")]
    pub ags: Vec<AgInfo>,
    pub node_list: Vec<TableNode>,
    pub instruction: Instructions,
}

#[derive(Debug, Deserialize)]
pub struct Instructions {
    /// `core_list[c]`: core `c`'s instructions, `None` for an unused core.
    pub core_list: Vec<Option<Vec<TInst>>>,
}

/// One array group: rows `height_start..=height_end` of its node's GEMM matrix, split into
/// crossbars by columns.
#[derive(Debug, Deserialize)]
pub struct AgInfo {
    #[serde(rename = "AG_index")]
    pub index: u32,
    pub node_name: String,
    pub height_start: u32,
    pub height_end: u32,
    pub crossbar_num: u32,
    pub crossbar: Vec<CrossbarCols>,
}

#[derive(Debug, Deserialize)]
pub struct CrossbarCols {
    pub width_start: u32,
    pub width_end: u32,
}

/// One node of the model, as the frontend wrote it.
#[derive(Debug, Deserialize)]
pub struct TableNode {
    pub name: String,
    pub operation: String,
    #[serde(default)]
    pub output_dim: Vec<i64>,
    #[serde(default)]
    pub provider_index: Vec<i64>,
    #[serde(default)]
    pub param: Param,
    #[serde(default)]
    pub with_act: i64,
    #[serde(default)]
    pub act_type: i64,
    #[serde(default)]
    pub with_clip: i64,
}

/// The `param` fields the reference needs (others are ignored).
#[derive(Debug, Default, Deserialize)]
pub struct Param {
    pub kernel_h: Option<i64>,
    pub kernel_w: Option<i64>,
    pub stride_h: Option<i64>,
    pub stride_w: Option<i64>,
    pub pad_h0: Option<i64>,
    pub pad_h1: Option<i64>,
    pub pad_w0: Option<i64>,
    pub pad_w1: Option<i64>,
    pub dilation_h: Option<i64>,
    pub dilation_w: Option<i64>,
    pub group: Option<i64>,
    pub input_channel: Option<i64>,
    pub output_channel: Option<i64>,
    pub with_bias: Option<i64>,
    pub num_input: Option<i64>,
    pub num_output: Option<i64>,
    pub pool_method: Option<i64>,
    pub global: Option<i64>,
    pub eletype: Option<i64>,
}

/// The IR operations a table holds. Anything else is refused (exit 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum TOp {
    #[serde(rename = "LD")]
    Ld,
    #[serde(rename = "ST")]
    St,
    #[serde(rename = "LMV")]
    Lmv,
    #[serde(rename = "MVMUL")]
    Mvmul,
    #[serde(rename = "VVADD")]
    Vvadd,
    #[serde(rename = "VSUB", alias = "VVSUB")]
    Vvsub,
    #[serde(rename = "VVMUL")]
    Vvmul,
    #[serde(rename = "VVMAX")]
    Vvmax,
    #[serde(rename = "VRELU")]
    Vrelu,
    #[serde(rename = "VTANH")]
    Vtanh,
    #[serde(rename = "VSIGMOID")]
    Vsigm,
    #[serde(rename = "LLDI")]
    Lldi,
    #[serde(rename = "SEND")]
    Send,
    #[serde(rename = "RECV")]
    Recv,
    /// "This LMem vector is node n's output at pixel p": only in the table.
    #[serde(rename = "VER")]
    Ver,
}

impl TOp {
    /// The PIMSim opcode PIMCOMP-NN emits for this IR op, by name: PIMCOMP-NN names the ops
    /// after the instructions, so the lowercased name is a mnemonic or an alias of the
    /// instruction table (`VSUB` is `vvsub`). `None` for `VER`, which is only in the table.
    pub fn opcode(self) -> Option<Opcode> {
        Opcode::from_mnemonic(&self.name().to_ascii_lowercase())
    }

    pub fn name(self) -> &'static str {
        match self {
            TOp::Ld => "LD",
            TOp::St => "ST",
            TOp::Lmv => "LMV",
            TOp::Mvmul => "MVMUL",
            TOp::Vvadd => "VVADD",
            TOp::Vvsub => "VSUB",
            TOp::Vvmul => "VVMUL",
            TOp::Vvmax => "VVMAX",
            TOp::Vrelu => "VRELU",
            TOp::Vtanh => "VTANH",
            TOp::Vsigm => "VSIGMOID",
            TOp::Lldi => "LLDI",
            TOp::Send => "SEND",
            TOp::Recv => "RECV",
            TOp::Ver => "VER",
        }
    }
}

/// The `stage` of an instruction; only the three of LD/ST matter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Stage {
    #[serde(rename = "INPUT")]
    Input,
    #[serde(rename = "BIAS")]
    Bias,
    #[serde(rename = "OUTPUT")]
    Output,
    #[default]
    #[serde(other)]
    Other,
}

/// One IR instruction, compact: absent fields are 0 (which fields an op carries is checked
/// where they are used, by the alignment).
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(try_from = "RawInst")]
pub struct TInst {
    pub op: TOp,
    /// `op.opcode()`, looked up once when the table is read.
    pub opcode: Option<Opcode>,
    pub stage: Stage,
    pub node: i32,
    pub dst: i32,
    pub dst_off: i32,
    pub src1: i32,
    pub src1_off: i32,
    pub src2: i32,
    pub src2_off: i32,
    /// `element_num`, or `input_element_num` for MVMUL.
    pub len: i32,
    /// `output_element_num` (MVMUL).
    pub out_len: i32,
    /// `input_cycle_index`: the output pixel.
    pub cycle: i32,
    /// The global AG (`source` of MVMUL) or the peer core (SEND `to_core`, RECV `from_core`).
    pub peer: i32,
    pub imm: f64,
}

#[derive(Deserialize)]
struct RawInst {
    operation: TOp,
    #[serde(default)]
    stage: Stage,
    node_index: Option<i64>,
    source: Option<i64>,
    source_address: Option<i64>,
    source_offset: Option<i64>,
    source_1_address: Option<i64>,
    source_1_offset: Option<i64>,
    source_2_address: Option<i64>,
    source_2_offset: Option<i64>,
    destination_address: Option<i64>,
    destination_offset: Option<i64>,
    element_num: Option<i64>,
    input_element_num: Option<i64>,
    output_element_num: Option<i64>,
    input_cycle_index: Option<i64>,
    from_core: Option<i64>,
    to_core: Option<i64>,
    imm_value: Option<f64>,
}

impl TryFrom<RawInst> for TInst {
    type Error = String;

    fn try_from(r: RawInst) -> Result<TInst, String> {
        let small = |name: &str, v: Option<i64>| -> Result<i32, String> {
            let v = v.unwrap_or(0);
            i32::try_from(v)
                .map_err(|_| format!("{} {name} = {v} is out of range", r.operation.name()))
        };
        let (src1, src1_off) = match r.operation {
            TOp::Vvadd | TOp::Vvsub | TOp::Vvmul | TOp::Vvmax => {
                (r.source_1_address, r.source_1_offset)
            }
            _ => (r.source_address, r.source_offset),
        };
        let peer = match r.operation {
            TOp::Mvmul => r.source,
            TOp::Send => r.to_core,
            TOp::Recv => r.from_core,
            _ => None,
        };
        let len = match r.operation {
            TOp::Mvmul => r.input_element_num,
            _ => r.element_num,
        };
        Ok(TInst {
            op: r.operation,
            opcode: r.operation.opcode(),
            stage: r.stage,
            node: small("node_index", r.node_index)?,
            dst: small("destination_address", r.destination_address)?,
            dst_off: small("destination_offset", r.destination_offset)?,
            src1: small("source_address", src1)?,
            src1_off: small("source_offset", src1_off)?,
            src2: small("source_2_address", r.source_2_address)?,
            src2_off: small("source_2_offset", r.source_2_offset)?,
            len: small("element_num", len)?,
            out_len: small("output_element_num", r.output_element_num)?,
            cycle: small("input_cycle_index", r.input_cycle_index)?,
            peer: small("source/core", peer)?,
            imm: r.imm_value.unwrap_or(0.0),
        })
    }
}

/// Reads a side table, plain or gzip-compressed (detected by its magic bytes), through the
/// bounded reader (`MAX_TABLE_BYTES` compressed and inflated, and the gzip ratio limit).
pub fn read_table(path: &Path) -> Result<SideTable, PimcompError> {
    let text = pimdiff_input::read_gzip_or_plain(path, MAX_TABLE_BYTES)
        .map_err(|e| PimcompError::input(path, "the side table", e))?;
    serde_json::from_slice(&text).map_err(|e| PimcompError::Table {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ir_op_but_ver_is_a_pimsim_opcode_by_name() {
        let ops = [
            (TOp::Ld, Some(Opcode::Ld)),
            (TOp::St, Some(Opcode::St)),
            (TOp::Lmv, Some(Opcode::Lmv)),
            (TOp::Mvmul, Some(Opcode::Mvmul)),
            (TOp::Vvadd, Some(Opcode::Vvadd)),
            (TOp::Vvsub, Some(Opcode::Vvsub)),
            (TOp::Vvmul, Some(Opcode::Vvmul)),
            (TOp::Vvmax, Some(Opcode::Vvmax)),
            (TOp::Vrelu, Some(Opcode::Vrelu)),
            (TOp::Vtanh, Some(Opcode::Vtanh)),
            (TOp::Vsigm, Some(Opcode::Vsigm)),
            (TOp::Lldi, Some(Opcode::Lldi)),
            (TOp::Send, Some(Opcode::Send)),
            (TOp::Recv, Some(Opcode::Recv)),
            (TOp::Ver, None),
        ];
        for (op, opcode) in ops {
            assert_eq!(op.opcode(), opcode, "{}", op.name());
        }
        let inst: TInst = serde_json::from_str(r#"{"operation": "VVSUB"}"#).unwrap();
        assert_eq!((inst.op, inst.opcode), (TOp::Vvsub, Some(Opcode::Vvsub)));
    }
}
