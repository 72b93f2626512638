//! `op.mlir`: a case as one MLIR function on tensors (`func`, `arith`, `tensor`, `linalg`).
//!
//! `func.func @main(%input: tensor<...xi8>) -> tensor<...xi32>` computes the case exactly:
//!
//! 1. conv2d: `tensor.pad` with int8 zeros when the case has padding (`low` = top, left;
//!    `high` = bottom, right);
//! 2. the accumulator: the bias broadcast over the output (`linalg.broadcast`), or zeros
//!    (`linalg.fill`);
//! 3. the operator, accumulating into it with int8 operands sign-extended to int32:
//!    - conv2d, `groups = 1`: `linalg.conv_2d_nchw_fchw` over `weight.npy` as it is;
//!    - conv2d, `groups > 1`: the padded input is viewed as `[N, G, C/G, H, W]`
//!      (`tensor.expand_shape`), `linalg.conv_2d_ngchw_gfchw` runs with the weight as
//!      `[G, K/G, C/G, kh, kw]` (the same bytes as `weight.npy`), and the result is viewed as
//!      `[N, K, OH, OW]` again (`tensor.collapse_shape`);
//!    - both with `strides` and `dilations` attributes;
//!    - mvm: `linalg.matmul` of the input `[N, in]` by the **transpose** of `weight.npy`,
//!      `[in, out]` (as in `model.onnx`);
//! 4. ReLU, when the case has one: a `linalg.generic` applying `arith.maxsi(x, 0)`.
//!
//! The weights and bias are `arith.constant`s: nested literals when small
//! (≤ [`LITERAL_MAX_ELEMENTS`] elements), otherwise MLIR's hex form of the raw little-endian
//! bytes (`dense<"0x...">`), which keeps large cases compact and parses exactly.
//! `tests/interop_python.rs` compiles and runs the file with IREE (llvm-cpu).

use std::fmt::Write as _;

use pimdiff_oracle::{Case, Conv2d, Op};

/// Above this many elements a constant is written in hex form instead of as a nested literal.
pub const LITERAL_MAX_ELEMENTS: usize = 4096;

/// The case as MLIR text (the content of `op.mlir`).
pub fn module_text(case: &Case) -> String {
    let spec = &case.spec;
    let out_shape = spec.output_shape();
    let out_ty = tensor_type(&out_shape, "i32");
    let in_ty = tensor_type(&spec.input_shape, "i8");
    let mut body = Body::default();
    let result = match &spec.op {
        Op::Conv2d(p) => conv2d(&mut body, case, p),
        Op::Mvm(_) => mvm(&mut body, case),
    };
    let result = if spec.op.has_relu() {
        relu(&mut body, &result, &out_shape)
    } else {
        result
    };
    let mut text = String::new();
    let _ = writeln!(text, "// pimdiff case ({}).", super::summary(case));
    let _ = writeln!(
        text,
        "// Exact int8 x int8 -> int32 semantics; weight and bias are constants. Entry point: @main."
    );
    let _ = writeln!(text, "module {{");
    let _ = writeln!(text, "  func.func @main(%input: {in_ty}) -> {out_ty} {{");
    text.push_str(&body.text);
    let _ = writeln!(text, "    return {result} : {out_ty}");
    let _ = writeln!(text, "  }}");
    let _ = writeln!(text, "}}");
    text
}

/// The function body being written: lines of SSA statements.
#[derive(Default)]
struct Body {
    text: String,
}

impl Body {
    fn line(&mut self, s: impl AsRef<str>) {
        self.text.push_str("    ");
        self.text.push_str(s.as_ref());
        self.text.push('\n');
    }
}

fn conv2d(body: &mut Body, case: &Case, p: &Conv2d) -> String {
    let spec = &case.spec;
    let [n, c, h, w] = four(&spec.input_shape);
    let out_shape = spec.output_shape();
    let [_, k, oh, ow] = four(&out_shape);
    let [top, left, bottom, right] = p.padding;
    let (hp, wp) = (h + top + bottom, w + left + right);
    let padded_ty = tensor_type(&[n, c, hp, wp], "i8");
    let mut input = "%input".to_string();
    if p.padding != [0; 4] {
        body.line("%zero_i8 = arith.constant 0 : i8");
        body.line(format!(
            "%padded = tensor.pad %input low[0, 0, {top}, {left}] high[0, 0, {bottom}, {right}] {{"
        ));
        body.line("^bb0(%i: index, %j: index, %y: index, %x: index):");
        body.line("  tensor.yield %zero_i8 : i8");
        body.line(format!(
            "}} : {} to {padded_ty}",
            tensor_type(&spec.input_shape, "i8")
        ));
        input = "%padded".to_string();
    }
    let attrs = format!(
        "{{dilations = dense<[{}, {}]> : tensor<2xi64>, strides = dense<[{}, {}]> : tensor<2xi64>}}",
        p.dilation[0], p.dilation[1], p.stride[0], p.stride[1]
    );
    let g = p.groups;
    if g == 1 {
        let weight = constant(body, "weight", &case.weight.view().into_dyn(), None);
        let acc = accumulator(body, case, &out_shape, None);
        let w_ty = tensor_type(case.weight.shape(), "i8");
        body.line(format!(
            "%conv = linalg.conv_2d_nchw_fchw {attrs} ins({input}, {weight} : {padded_ty}, {w_ty}) \
             outs({acc} : {}) -> {}",
            tensor_type(&out_shape, "i32"),
            tensor_type(&out_shape, "i32")
        ));
        return "%conv".to_string();
    }
    let (cg, kg) = (c / g, k / g);
    let [_, _, kh, kw] = four(case.weight.shape());
    let grouped_in = [n, g, cg, hp, wp];
    let grouped_out = [n, g, kg, oh, ow];
    body.line(format!(
        "%grouped = tensor.expand_shape {input} [[0], [1, 2], [3], [4]] output_shape [{}] : \
         {padded_ty} into {}",
        list(&grouped_in),
        tensor_type(&grouped_in, "i8")
    ));
    let w_shape = [g, kg, cg, kh, kw];
    let weight = constant(
        body,
        "weight",
        &case.weight.view().into_dyn(),
        Some(&w_shape),
    );
    let acc = accumulator(body, case, &grouped_out, Some(&[g, kg]));
    body.line(format!(
        "%conv_g = linalg.conv_2d_ngchw_gfchw {attrs} ins(%grouped, {weight} : {}, {}) \
         outs({acc} : {}) -> {}",
        tensor_type(&grouped_in, "i8"),
        tensor_type(&w_shape, "i8"),
        tensor_type(&grouped_out, "i32"),
        tensor_type(&grouped_out, "i32")
    ));
    body.line(format!(
        "%conv = tensor.collapse_shape %conv_g [[0], [1, 2], [3], [4]] : {} into {}",
        tensor_type(&grouped_out, "i32"),
        tensor_type(&out_shape, "i32")
    ));
    "%conv".to_string()
}

fn mvm(body: &mut Body, case: &Case) -> String {
    let out_shape = case.spec.output_shape();
    let transposed = case.weight.t().as_standard_layout().into_owned();
    let weight = constant(body, "weight_t", &transposed.view().into_dyn(), None);
    let acc = accumulator(body, case, &out_shape, None);
    body.line(format!(
        "%mvm = linalg.matmul ins(%input, {weight} : {}, {}) outs({acc} : {}) -> {}",
        tensor_type(&case.spec.input_shape, "i8"),
        tensor_type(transposed.shape(), "i8"),
        tensor_type(&out_shape, "i32"),
        tensor_type(&out_shape, "i32")
    ));
    "%mvm".to_string()
}

/// The initial accumulator of shape `shape`: the bias broadcast along every dimension but the
/// channel one(s) (`bias_shape` splits K into `[G, K/G]` for a grouped convolution), or zeros.
fn accumulator(
    body: &mut Body,
    case: &Case,
    shape: &[usize],
    bias_shape: Option<&[usize]>,
) -> String {
    let ty = tensor_type(shape, "i32");
    body.line(format!("%empty = tensor.empty() : {ty}"));
    let Some(bias) = &case.bias else {
        body.line("%zero_i32 = arith.constant 0 : i32");
        body.line(format!(
            "%acc = linalg.fill ins(%zero_i32 : i32) outs(%empty : {ty}) -> {ty}"
        ));
        return "%acc".to_string();
    };
    let bias_view = bias.view().into_dyn();
    let b = constant(body, "bias", &bias_view, bias_shape);
    let b_shape = bias_shape.map_or_else(|| vec![bias.len()], <[usize]>::to_vec);
    // The bias covers dimension 1 (conv2d: K, or G and K/G; mvm: out); the rest are broadcast.
    let kept = 1..1 + b_shape.len();
    let dimensions: Vec<usize> = (0..shape.len()).filter(|d| !kept.contains(d)).collect();
    body.line(format!(
        "%acc = linalg.broadcast ins({b} : {}) outs(%empty : {ty}) dimensions = [{}]",
        tensor_type(&b_shape, "i32"),
        list(&dimensions)
    ));
    "%acc".to_string()
}

fn relu(body: &mut Body, value: &str, shape: &[usize]) -> String {
    let ty = tensor_type(shape, "i32");
    let rank = shape.len();
    let dims: Vec<String> = (0..rank).map(|i| format!("d{i}")).collect();
    let identity = format!("affine_map<({0}) -> ({0})>", dims.join(", "));
    let iterators = vec!["\"parallel\""; rank].join(", ");
    body.line(format!("%relu_init = tensor.empty() : {ty}"));
    body.line(format!(
        "%relu = linalg.generic {{indexing_maps = [{identity}, {identity}], iterator_types = [{iterators}]}} \
         ins({value} : {ty}) outs(%relu_init : {ty}) {{"
    ));
    body.line("^bb0(%v: i32, %unused: i32):");
    body.line("  %zero = arith.constant 0 : i32");
    body.line("  %max = arith.maxsi %v, %zero : i32");
    body.line("  linalg.yield %max : i32");
    body.line(format!("}} -> {ty}"));
    "%relu".to_string()
}

/// Writes `%name = arith.constant dense<...> : tensor<...>` and returns `%name`. `shape`
/// reinterprets the row-major elements (same count) when given.
fn constant<A: Element>(
    body: &mut Body,
    name: &str,
    array: &ndarray::ArrayViewD<A>,
    shape: Option<&[usize]>,
) -> String {
    let shape = shape.unwrap_or(array.shape());
    let ty = tensor_type(shape, A::MLIR);
    let values: Vec<A> = array.iter().copied().collect();
    let literal = if values.len() <= LITERAL_MAX_ELEMENTS {
        nested(&values, shape)
    } else {
        let mut hex = String::with_capacity(2 + values.len() * 2 * A::BYTES);
        hex.push_str("\"0x");
        for v in &values {
            for byte in v.le_bytes() {
                let _ = write!(hex, "{byte:02X}");
            }
        }
        hex.push('"');
        hex
    };
    body.line(format!("%{name} = arith.constant dense<{literal}> : {ty}"));
    format!("%{name}")
}

/// `[[1, 2], [3, 4]]` for row-major `values` of `shape`.
fn nested<A: Element>(values: &[A], shape: &[usize]) -> String {
    match shape.split_first() {
        None => values.first().map(|v| v.to_string()).unwrap_or_default(),
        Some((&first, rest)) => {
            let inner: usize = rest.iter().product();
            let parts: Vec<String> = (0..first)
                .map(|i| nested(&values[i * inner..(i + 1) * inner], rest))
                .collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// The element types constants are made of.
trait Element: Copy + std::fmt::Display {
    const MLIR: &'static str;
    const BYTES: usize;
    fn le_bytes(self) -> Vec<u8>;
}

impl Element for i8 {
    const MLIR: &'static str = "i8";
    const BYTES: usize = 1;
    fn le_bytes(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

impl Element for i32 {
    const MLIR: &'static str = "i32";
    const BYTES: usize = 4;
    fn le_bytes(self) -> Vec<u8> {
        self.to_le_bytes().to_vec()
    }
}

fn tensor_type(shape: &[usize], elem: &str) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("tensor<{}x{elem}>", dims.join("x"))
}

fn list(values: &[usize]) -> String {
    values
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The four dimensions of a rank-4 shape (a valid case's conv2d shapes always are).
fn four(shape: &[usize]) -> [usize; 4] {
    let mut dims = [1; 4];
    for (d, &s) in dims.iter_mut().zip(shape) {
        *d = s;
    }
    dims
}
