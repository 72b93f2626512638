//! The meta-operators, typed: one variant per form the code generators print, with the
//! operands in template order (`docs/cim-mlc-isa.md` gives each one's meaning and evidence).
//! Addresses and lengths stay signed: CIM-MLC prints negative ones (`load - 128 - [1, 1] -
//! -96`), and refusing them is the machine's job (a fault naming the line), not the reader's.

use super::value::Value;
use crate::error::OperandError;

/// `[a, b]` as the templates print an inclusive range of cores, crossbars or wordlines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair(pub i64, pub i64);

/// One piece of an input window a `load` gathers (codegen/CrossbarWise.py:240-263,
/// WordlineWise.py:243-265): `'pad-N'` is N zeros, `[a, b]` the buffer's `[a, b)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    Zeros(i64),
    Range(i64, i64),
}

/// `CIM.read_core-conv - ifmsize - kernel - stride - padding - [c0,c1] - source - destination`
/// (CoreWiseCodeTem.py:2).
#[derive(Clone, Debug, PartialEq)]
pub struct ConvCore {
    pub ifmsize: Vec<i64>,
    pub kernel: Vec<i64>,
    pub stride: Vec<i64>,
    pub padding: Vec<i64>,
    pub cores: Pair,
    pub src: i64,
    pub dst: i64,
}

/// `CIM.read_core-fc - ifmsize - [c0, c1] - source - destination` (CoreWiseCodeTem.py:6).
#[derive(Clone, Debug, PartialEq)]
pub struct FcCore {
    pub ifmsize: Vec<i64>,
    pub cores: Pair,
    pub src: i64,
    pub dst: i64,
}

/// `MaxPool` or `AveragePool`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    Max,
    Average,
}

/// `{op_type} - ifmsize - kernel - stride - padding - source - destination`
/// (CoreWiseCodeTem.py:8, CrossbarCodeTem.py:8, WordlineCodeTem.py:8); absent attributes print as `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    pub kind: PoolKind,
    pub ifmsize: Vec<i64>,
    pub kernel: Option<Vec<i64>>,
    pub stride: Option<Vec<i64>>,
    pub padding: Option<Vec<i64>>,
    pub src: i64,
    pub dst: i64,
}

/// The activation functions CIM-MLC classes as `ActivFunc` (utils/util.py:150-153).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Relu,
    Sigmoid,
    Tanh,
    Erf,
}

/// The element-wise operators CIM-MLC classes as `ALUop` (utils/util.py:160-165).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Equal,
}

/// An operand's extent: a shape at the core level (`str(inp1[:])`, CoreWise.py:162), an
/// element count at the lower levels (`reduce(mul, inp1[:])`, CrossbarWise.py:507).
#[derive(Clone, Debug, PartialEq)]
pub enum Extent {
    Shape(Vec<i64>),
    Len(i64),
}

/// `{op_type} - source1 - source2 - extent1 - extent2 - destination` (ALUopTmpl).
#[derive(Clone, Debug, PartialEq)]
pub struct Alu {
    pub op: AluOp,
    pub src1: i64,
    pub src2: i64,
    pub extent1: Extent,
    pub extent2: Extent,
    pub dst: i64,
}

/// The layout operators that move a whole tensor: `Flatten`, `Reshape`, `Expand`,
/// `Transpose` (CoreWiseCodeTem.py:16-34).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeOp {
    Flatten,
    Reshape,
    Expand,
    Transpose,
}

/// `Flatten - src - length - ifmsize - axis - ofmsize - dst`, `Reshape - src - length -
/// ifmsize - ofmsize - dst`, `Transpose - src - length - ifmsize - perm - ofmsize - dst`.
#[derive(Clone, Debug, PartialEq)]
pub struct Relayout {
    pub op: ShapeOp,
    pub src: i64,
    pub len: i64,
    pub ifmsize: Vec<i64>,
    /// Flatten's `axis` (`None` printed when the attribute is absent).
    pub axis: Option<i64>,
    /// Transpose's `perm`.
    pub perm: Option<Vec<i64>>,
    pub ofmsize: Vec<i64>,
    pub dst: i64,
}

/// A meta-operator.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    ConvCore(ConvCore),
    FcCore(FcCore),
    /// `Mov - src - dst - length` (core level) and `load - src - dst - length` with two
    /// buffer addresses (the pooling's copy at the lower levels, CrossbarWise.py:386).
    Copy {
        src: i64,
        dst: i64,
        len: i64,
    },
    Pool(Pool),
    /// `{op_type} - length - source -destination` (ActivFuncTmpl).
    Activation {
        func: Func,
        len: i64,
        src: i64,
        dst: i64,
    },
    Alu(Alu),
    Relayout(Relayout),
    /// `load - <window> - [x0, x1] - length`: an input window into crossbars (conv,
    /// CrossbarWise.py:275; WordlineWise.py:289).
    LoadWindow {
        pieces: Vec<Piece>,
        xbs: Pair,
    },
    /// `load - source - [x0, x1] - length`: `length` buffer elements into crossbars
    /// (Gemm/MatMul, CrossbarWise.py:330; WordlineWise.py:369).
    LoadVector {
        src: i64,
        xbs: Pair,
        len: i64,
    },
    /// `CIM.read_xb - [x0, x1]` (CrossbarCodeTem.py:3).
    ReadXb {
        xbs: Pair,
    },
    /// `CIM.read_wl- [r0, r1] - [x0, x1]` (WordlineCodeTem.py:3).
    ReadWl {
        rows: Pair,
        xbs: Pair,
    },
    /// `load - [x] - destination - length`: a crossbar's results into the buffer
    /// (WordlineWise.py:388).
    Store {
        xb: i64,
        dst: i64,
        len: i64,
    },
    /// `Add-[x0, x1]-destination-length`: the sum of crossbars' results into the buffer
    /// (WordlineWise.py:381).
    SumXb {
        xbs: Pair,
        dst: i64,
        len: i64,
    },
    /// `None`: an instruction slot a code generator left empty (a transform or indexing node
    /// whose inputs did not fit its pattern, CrossbarWise.py:709, :786).
    Missing,
    /// A meta-operator this machine does not model (Softmax, Gather, Slice, Where, ...), or a
    /// name no template prints; running one is `RunOutcome::Unsupported`.
    Other {
        name: String,
    },
}

impl Op {
    /// The name as the flow prints it, for faults and traces.
    pub fn name(&self) -> &str {
        match self {
            Op::ConvCore(_) => "CIM.read_core-conv",
            Op::FcCore(_) => "CIM.read_core-fc",
            Op::Copy { .. } => "Mov",
            Op::Pool(p) => match p.kind {
                PoolKind::Max => "MaxPool",
                PoolKind::Average => "AveragePool",
            },
            Op::Activation { func, .. } => match func {
                Func::Relu => "Relu",
                Func::Sigmoid => "Sigmoid",
                Func::Tanh => "Tanh",
                Func::Erf => "Erf",
            },
            Op::Alu(a) => alu_name(a.op),
            Op::Relayout(r) => match r.op {
                ShapeOp::Flatten => "Flatten",
                ShapeOp::Reshape => "Reshape",
                ShapeOp::Expand => "Expand",
                ShapeOp::Transpose => "Transpose",
            },
            Op::LoadWindow { .. } | Op::LoadVector { .. } | Op::Store { .. } => "load",
            Op::ReadXb { .. } => "CIM.read_xb",
            Op::ReadWl { .. } => "CIM.read_wl",
            Op::SumXb { .. } => "Add",
            Op::Missing => "None",
            Op::Other { name } => name,
        }
    }
}

fn alu_name(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "Add",
        AluOp::Sub => "Sub",
        AluOp::Mul => "Mul",
        AluOp::Div => "Div",
        AluOp::Pow => "Pow",
        AluOp::Equal => "Equal",
    }
}

/// Reads the operands of one instruction in template order.
struct Operands<'a> {
    op: &'a str,
    values: &'a [Value],
}

impl<'a> Operands<'a> {
    fn arity(&self, n: usize) -> Result<(), OperandError> {
        if self.values.len() == n {
            Ok(())
        } else {
            Err(OperandError::Arity {
                op: self.op.to_string(),
                expected: n.to_string(),
                found: self.values.len(),
            })
        }
    }

    fn wrong(&self, index: usize, field: &'static str, expected: &'static str) -> OperandError {
        OperandError::Kind {
            op: self.op.to_string(),
            index: index + 1,
            field,
            expected,
            found: self.values[index].to_string(),
        }
    }

    fn int(&self, i: usize, field: &'static str) -> Result<i64, OperandError> {
        match self.values[i] {
            Value::Int(v) => Ok(v),
            _ => Err(self.wrong(i, field, "an integer")),
        }
    }

    fn ints(&self, i: usize, field: &'static str) -> Result<Vec<i64>, OperandError> {
        ints_of(&self.values[i]).ok_or_else(|| self.wrong(i, field, "a list of integers"))
    }

    fn opt_ints(&self, i: usize, field: &'static str) -> Result<Option<Vec<i64>>, OperandError> {
        match &self.values[i] {
            Value::None => Ok(None),
            v => ints_of(v)
                .map(Some)
                .ok_or_else(|| self.wrong(i, field, "a list of integers or None")),
        }
    }

    fn opt_int(&self, i: usize, field: &'static str) -> Result<Option<i64>, OperandError> {
        match self.values[i] {
            Value::None => Ok(None),
            Value::Int(v) => Ok(Some(v)),
            _ => Err(self.wrong(i, field, "an integer or None")),
        }
    }

    fn pair(&self, i: usize, field: &'static str) -> Result<Pair, OperandError> {
        match ints_of(&self.values[i]).as_deref() {
            Some([a, b]) => Ok(Pair(*a, *b)),
            _ => Err(self.wrong(i, field, "a pair [a, b]")),
        }
    }

    fn extent(&self, i: usize, field: &'static str) -> Result<Extent, OperandError> {
        match &self.values[i] {
            Value::Int(v) => Ok(Extent::Len(*v)),
            v => ints_of(v)
                .map(Extent::Shape)
                .ok_or_else(|| self.wrong(i, field, "an integer or a shape")),
        }
    }
}

fn ints_of(v: &Value) -> Option<Vec<i64>> {
    match v {
        Value::List(items) => items
            .iter()
            .map(|x| match x {
                Value::Int(i) => Some(*i),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// The typed meta-operator for a name and its operands.
pub fn from_parsed(name: &str, values: &[Value]) -> Result<Op, OperandError> {
    let o = Operands { op: name, values };
    let op = match name {
        "CIM.read_core-conv" => {
            o.arity(7)?;
            Op::ConvCore(ConvCore {
                ifmsize: o.ints(0, "ifmsize")?,
                kernel: o.ints(1, "kernel")?,
                stride: o.ints(2, "stride")?,
                padding: o.ints(3, "padding")?,
                cores: o.pair(4, "cores")?,
                src: o.int(5, "source")?,
                dst: o.int(6, "destination")?,
            })
        }
        "CIM.read_core-fc" => {
            o.arity(4)?;
            Op::FcCore(FcCore {
                ifmsize: o.ints(0, "ifmsize")?,
                cores: o.pair(1, "cores")?,
                src: o.int(2, "source")?,
                dst: o.int(3, "destination")?,
            })
        }
        "Mov" => {
            o.arity(3)?;
            Op::Copy {
                src: o.int(0, "source")?,
                dst: o.int(1, "destination")?,
                len: o.int(2, "length")?,
            }
        }
        "MaxPool" | "AveragePool" => pool(&o, name)?,
        "Relu" | "Sigmoid" | "Tanh" | "Erf" => {
            o.arity(3)?;
            Op::Activation {
                func: match name {
                    "Relu" => Func::Relu,
                    "Sigmoid" => Func::Sigmoid,
                    "Tanh" => Func::Tanh,
                    _ => Func::Erf,
                },
                len: o.int(0, "length")?,
                src: o.int(1, "source")?,
                dst: o.int(2, "destination")?,
            }
        }
        "Add" if values.len() == 3 => {
            o.arity(3)?;
            Op::SumXb {
                xbs: o.pair(0, "crossbars")?,
                dst: o.int(1, "destination")?,
                len: o.int(2, "length")?,
            }
        }
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Equal" => alu(&o, name)?,
        "Flatten" | "Reshape" | "Expand" | "Transpose" => relayout(&o, name)?,
        "load" => load(&o)?,
        "CIM.read_xb" => {
            o.arity(1)?;
            Op::ReadXb {
                xbs: o.pair(0, "crossbars")?,
            }
        }
        "CIM.read_wl" => {
            o.arity(2)?;
            Op::ReadWl {
                rows: o.pair(0, "wordlines")?,
                xbs: o.pair(1, "crossbars")?,
            }
        }
        "None" if values.is_empty() => Op::Missing,
        _ => Op::Other {
            name: name.to_string(),
        },
    };
    Ok(op)
}

fn pool(o: &Operands<'_>, name: &str) -> Result<Op, OperandError> {
    o.arity(6)?;
    Ok(Op::Pool(Pool {
        kind: if name == "MaxPool" {
            PoolKind::Max
        } else {
            PoolKind::Average
        },
        ifmsize: o.ints(0, "ifmsize")?,
        kernel: o.opt_ints(1, "kernel")?,
        stride: o.opt_ints(2, "stride")?,
        padding: o.opt_ints(3, "padding")?,
        src: o.int(4, "source")?,
        dst: o.int(5, "destination")?,
    }))
}

fn alu(o: &Operands<'_>, name: &str) -> Result<Op, OperandError> {
    o.arity(5)?;
    let op = match name {
        "Add" => AluOp::Add,
        "Sub" => AluOp::Sub,
        "Mul" => AluOp::Mul,
        "Div" => AluOp::Div,
        "Pow" => AluOp::Pow,
        _ => AluOp::Equal,
    };
    Ok(Op::Alu(Alu {
        op,
        src1: o.int(0, "source1")?,
        src2: o.int(1, "source2")?,
        extent1: o.extent(2, "length1")?,
        extent2: o.extent(3, "length2")?,
        dst: o.int(4, "destination")?,
    }))
}

fn relayout(o: &Operands<'_>, name: &str) -> Result<Op, OperandError> {
    let (op, n) = match name {
        "Flatten" => (ShapeOp::Flatten, 6),
        "Transpose" => (ShapeOp::Transpose, 6),
        "Reshape" => (ShapeOp::Reshape, 5),
        _ => (ShapeOp::Expand, 5),
    };
    o.arity(n)?;
    let (axis, perm) = match op {
        ShapeOp::Flatten => (o.opt_int(3, "axis")?, None),
        ShapeOp::Transpose => (None, o.opt_ints(3, "perm")?),
        _ => (None, None),
    };
    Ok(Op::Relayout(Relayout {
        op,
        src: o.int(0, "source")?,
        len: o.int(1, "length")?,
        ifmsize: o.ints(2, "ifmsize")?,
        axis,
        perm,
        ofmsize: o.ints(n - 2, "ofmsize")?,
        dst: o.int(n - 1, "destination")?,
    }))
}

/// The four forms of `load` (MovTmpl of the two lower levels), told apart by their operands'
/// kinds: buffer → buffer, buffer → crossbars, window → crossbars, crossbar → buffer.
fn load(o: &Operands<'_>) -> Result<Op, OperandError> {
    o.arity(3)?;
    let v = o.values;
    Ok(match (&v[0], &v[1]) {
        (Value::Int(src), Value::Int(dst)) => Op::Copy {
            src: *src,
            dst: *dst,
            len: o.int(2, "length")?,
        },
        (Value::Int(src), _) => Op::LoadVector {
            src: *src,
            xbs: o.pair(1, "crossbars")?,
            len: o.int(2, "length")?,
        },
        (Value::List(items), Value::Int(dst)) => match items.as_slice() {
            [Value::Int(xb)] => Op::Store {
                xb: *xb,
                dst: *dst,
                len: o.int(2, "length")?,
            },
            _ => return Err(o.wrong(0, "crossbar", "a one-crossbar list [x]")),
        },
        (Value::List(_), _) => Op::LoadWindow {
            pieces: window(&v[0]).ok_or_else(|| {
                o.wrong(
                    0,
                    "window",
                    "'pad-N' strings and [start, end) address pairs",
                )
            })?,
            xbs: o.pair(1, "crossbars")?,
        },
        _ => return Err(o.wrong(0, "source", "an address, a window or [crossbar]")),
    })
}

/// A window's pieces in order: every `'pad-N'` a run of zeros, every two consecutive
/// addresses (at whatever nesting) a range.
fn window(v: &Value) -> Option<Vec<Piece>> {
    fn walk(v: &Value, pieces: &mut Vec<Piece>, open: &mut Option<i64>) -> Option<()> {
        match v {
            Value::Str(s) => {
                if open.is_some() {
                    return None;
                }
                let n = s.strip_prefix("pad-")?.parse::<i64>().ok()?;
                pieces.push(Piece::Zeros(n));
            }
            Value::Int(a) => match open.take() {
                None => *open = Some(*a),
                Some(start) => pieces.push(Piece::Range(start, *a)),
            },
            Value::List(items) => {
                for item in items {
                    walk(item, pieces, open)?;
                }
            }
            _ => return None,
        }
        Some(())
    }
    let mut pieces = Vec::new();
    let mut open = None;
    walk(v, &mut pieces, &mut open)?;
    open.is_none().then_some(pieces)
}

#[cfg(test)]
mod tests {
    use super::super::value::parse_line;
    use super::*;

    fn op(text: &str) -> Result<Op, OperandError> {
        let p = parse_line(text).unwrap();
        from_parsed(&p.name, &p.operands)
    }

    #[test]
    fn the_four_loads() {
        assert_eq!(
            op("load - 768 - 768 - 512").unwrap(),
            Op::Copy {
                src: 768,
                dst: 768,
                len: 512
            }
        );
        assert_eq!(
            op("load - 0 - [0, 1] - 32").unwrap(),
            Op::LoadVector {
                src: 0,
                xbs: Pair(0, 1),
                len: 32
            }
        );
        assert_eq!(
            op("load - [0] - 32 - 10").unwrap(),
            Op::Store {
                xb: 0,
                dst: 32,
                len: 10
            }
        );
        assert_eq!(
            op("load - [['pad-9'], ['pad-3', 0, 6], [18, 24, 'pad-3']] - [0, 0] - 0").unwrap(),
            Op::LoadWindow {
                pieces: vec![
                    Piece::Zeros(9),
                    Piece::Zeros(3),
                    Piece::Range(0, 6),
                    Piece::Range(18, 24),
                    Piece::Zeros(3)
                ],
                xbs: Pair(0, 0)
            }
        );
        assert_eq!(
            op("load - [[4, 6], 'pad-3', [24, 30]] - [1, 1] - None").unwrap(),
            Op::LoadWindow {
                pieces: vec![Piece::Range(4, 6), Piece::Zeros(3), Piece::Range(24, 30)],
                xbs: Pair(1, 1)
            }
        );
    }

    #[test]
    fn operands_of_the_wrong_kind_are_named() {
        assert_eq!(
            op("Mov - 1 - 2").unwrap_err().to_string(),
            "`Mov` takes 3 operands, found 2"
        );
        assert_eq!(
            op("CIM.read_xb - 3").unwrap_err().to_string(),
            "`CIM.read_xb` operand 1 (crossbars): expected a pair [a, b], found 3"
        );
        assert_eq!(
            op("load - [[0, 9], [3]] - [0, 0] - 0")
                .unwrap_err()
                .to_string(),
            "`load` operand 1 (window): expected 'pad-N' strings and [start, end) address \
             pairs, found [[0, 9], [3]]"
        );
        assert_eq!(
            op("load - [0, 1] - 5 - 1").unwrap_err().to_string(),
            "`load` operand 1 (crossbar): expected a one-crossbar list [x], found [0, 1]"
        );
        assert_eq!(
            op("Softmax - [1, 10] - 0 - 10").unwrap(),
            Op::Other {
                name: "Softmax".into()
            }
        );
        assert_eq!(op("None").unwrap(), Op::Missing);
    }
}
