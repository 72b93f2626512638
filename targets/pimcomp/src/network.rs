//! Random neural networks as PIMCOMP-NN model JSON, for `pimdiff hunt --target pimcomp-nn`.
//!
//! A [`Network`] is a list of nodes in topological order: node 0 is the input, the last node
//! is the only one without consumers (element mode stores the last node's output, see
//! `scripts/pimcomp-patches/0001-*`). Nodes hold only their own parameters; input shapes are
//! inferred ([`Network::shapes`]), so a minimizer can drop a node or shrink a channel count and
//! every consumer follows.
//!
//! [`Network::to_model_json`] writes the model exactly as PIMCOMP-NN's frontend
//! (`frontend/frontend.py`) writes it from ONNX: keys in its order (sorted node keys, then
//! `input_dim_num`, `input_dim`, `new_node_index`, `consumer_index`, `provider_index`), a
//! standalone ReLU fused into a single-consumer CONV/FC (`fuse_operators`), Clip kept as a node,
//! `reshape_info` for the FLATTEN/RESHAPE before an FC, four-space indentation.
//!
//! [`network_from_seed`] draws case `k` of a hunt from its case seed: chains and branches
//! (concat, residual add), edge shapes (1×1 outputs, Cin = 3, channel counts around 128,
//! kernels larger than the unpadded input), small enough that a compile takes well under a
//! second. [`check_model_json`] is an independent schema and shape check of model JSON.

use std::collections::BTreeMap;
use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Convolution parameters (input channels come from the provider).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvSpec {
    pub out_channels: usize,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// `[h0, h1, w0, w1]`: top, bottom, left, right.
    pub pads: [usize; 4],
    pub group: usize,
    pub bias: bool,
    /// ReLU fused into the node (`with_act`).
    pub relu: bool,
}

/// Pooling parameters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolSpec {
    pub max: bool,
    /// Global average pool: the kernel is the input's size.
    pub global: bool,
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pads: [usize; 4],
}

/// One node's operator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetOp {
    Input {
        channels: usize,
        height: usize,
        width: usize,
    },
    Conv(ConvSpec),
    Fc {
        out: usize,
        bias: bool,
        relu: bool,
    },
    Pool(PoolSpec),
    Relu,
    Clip {
        min: f64,
        max: f64,
    },
    Lrn,
    Dropout,
    Softmax,
    /// ONNX Reshape to `[1, C·H·W]` (before an FC).
    Reshape,
    /// ONNX Flatten to `[1, C·H·W]` (before an FC).
    Flatten,
    Concat,
    Add,
}

impl NetOp {
    /// The frontend's operation name.
    pub fn operation(&self) -> &'static str {
        match self {
            NetOp::Input { .. } => "OP_INPUT",
            NetOp::Conv(_) => "OP_CONV",
            NetOp::Fc { .. } => "OP_FC",
            NetOp::Pool(_) => "OP_POOL",
            NetOp::Relu => "OP_RELU",
            NetOp::Clip { .. } => "OP_CLIP",
            NetOp::Lrn => "OP_LRN",
            NetOp::Dropout => "OP_DROPOUT",
            NetOp::Softmax => "OP_SOFTMAX",
            NetOp::Reshape => "OP_RESHAPE",
            NetOp::Flatten => "OP_FLATTEN",
            NetOp::Concat => "OP_CONCAT",
            NetOp::Add => "OP_ELTWISE",
        }
    }
}

/// One node: its name, operator and providers (indices of earlier nodes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetNode {
    pub name: String,
    pub op: NetOp,
    pub inputs: Vec<usize>,
}

/// A network in topological order (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Network {
    pub nodes: Vec<NetNode>,
}

/// A tensor's shape without the batch dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `[1, C, H, W]`.
    Spatial { c: usize, h: usize, w: usize },
    /// `[1, F]`.
    Flat(usize),
}

impl Shape {
    /// The frontend's `output_dim`.
    pub fn dims(self) -> Vec<usize> {
        match self {
            Shape::Spatial { c, h, w } => vec![1, c, h, w],
            Shape::Flat(f) => vec![1, f],
        }
    }

    pub fn elements(self) -> usize {
        match self {
            Shape::Spatial { c, h, w } => c * h * w,
            Shape::Flat(f) => f,
        }
    }
}

/// Why a network is not well formed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {node} ({name}): {message}")]
pub struct NetError {
    pub node: usize,
    pub name: String,
    pub message: String,
}

/// Sliding-window output size, ONNX's floor rule; `None` when the padded input is smaller
/// than the kernel.
fn window_out(input: usize, k: usize, s: usize, p0: usize, p1: usize) -> Option<usize> {
    let padded = input + p0 + p1;
    (s >= 1 && k >= 1 && padded >= k).then(|| (padded - k) / s + 1)
}

impl Network {
    /// Every node's output shape, or why the network is not well formed: topological order,
    /// one input first, one sink last, operand shapes that fit.
    pub fn shapes(&self) -> Result<Vec<Shape>, NetError> {
        let mut shapes: Vec<Shape> = Vec::with_capacity(self.nodes.len());
        let mut consumers = vec![0usize; self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            let err = |message: String| NetError {
                node: i,
                name: n.name.clone(),
                message,
            };
            if n.inputs.iter().any(|&p| p >= i) {
                return Err(err("a provider is not an earlier node".into()));
            }
            for &p in &n.inputs {
                consumers[p] += 1;
            }
            let ins: Vec<Shape> = n.inputs.iter().map(|&p| shapes[p]).collect();
            let shape = node_shape(&n.op, &ins, i).map_err(err)?;
            if shape.elements() == 0 {
                return Err(err("empty output".into()));
            }
            shapes.push(shape);
        }
        let last = self.nodes.len().saturating_sub(1);
        if let Some((i, _)) = consumers
            .iter()
            .enumerate()
            .find(|&(i, &c)| (c == 0) != (i == last))
        {
            let message = if i == last {
                "the last node has consumers".to_string()
            } else {
                "only the last node may have no consumers".to_string()
            };
            return Err(NetError {
                node: i,
                name: self.nodes[i].name.clone(),
                message,
            });
        }
        let mut names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(NetError {
                node: 0,
                name: self.nodes[0].name.clone(),
                message: "node names are not unique".into(),
            });
        }
        Ok(shapes)
    }

    /// The consumers of each node, in node order.
    pub fn consumers(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate() {
            for &p in &n.inputs {
                out[p].push(i);
            }
        }
        out
    }

    /// The size measures a minimizer reduces: (nodes, largest channel count, largest spatial
    /// size).
    pub fn size(&self) -> (usize, usize, usize) {
        let shapes = self.shapes().unwrap_or_default();
        let channels = shapes
            .iter()
            .map(|s| match s {
                Shape::Spatial { c, .. } => *c,
                Shape::Flat(f) => *f,
            })
            .max()
            .unwrap_or(0);
        let spatial = shapes
            .iter()
            .map(|s| match s {
                Shape::Spatial { h, w, .. } => (*h).max(*w),
                Shape::Flat(_) => 1,
            })
            .max()
            .unwrap_or(0);
        (self.nodes.len(), channels, spatial)
    }

    /// The model JSON, byte for byte in the frontend's layout (see the module docs).
    pub fn to_model_json(&self) -> Result<String, NetError> {
        let shapes = self.shapes()?;
        let consumers = self.consumers();
        let mut list = Vec::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            list.push(node_json(self, &shapes, &consumers, i, n));
        }
        let mut reshape_info = Value::Object(Default::default());
        for (i, n) in self.nodes.iter().enumerate() {
            if matches!(n.op, NetOp::Reshape | NetOp::Flatten)
                && consumers[i].len() == 1
                && matches!(self.nodes[consumers[i][0]].op, NetOp::Fc { .. })
                && shapes[n.inputs[0]].dims().len() != 2
            {
                reshape_info = json!({
                    "name": self.nodes[consumers[i][0]].name,
                    "input_dim": shapes[n.inputs[0]].dims(),
                    "output_dim": shapes[i].dims(),
                });
            }
        }
        let doc = ModelDoc {
            node_list: list,
            reshape_info,
        };
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        doc.serialize(&mut ser).map_err(|e| NetError {
            node: 0,
            name: String::new(),
            message: e.to_string(),
        })?;
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

/// The output shape of `op` over its operands' shapes.
fn node_shape(op: &NetOp, ins: &[Shape], index: usize) -> Result<Shape, String> {
    let one = || -> Result<Shape, String> {
        match ins {
            [s] => Ok(*s),
            _ => Err(format!("expects one provider, has {}", ins.len())),
        }
    };
    let spatial = || -> Result<(usize, usize, usize), String> {
        match one()? {
            Shape::Spatial { c, h, w } => Ok((c, h, w)),
            Shape::Flat(_) => Err("expects a [1, C, H, W] input".into()),
        }
    };
    match op {
        NetOp::Input {
            channels,
            height,
            width,
        } => {
            if index != 0 || !ins.is_empty() {
                return Err("the input must be node 0, without providers".into());
            }
            Ok(Shape::Spatial {
                c: *channels,
                h: *height,
                w: *width,
            })
        }
        _ if index == 0 => Err("node 0 must be the input".into()),
        NetOp::Conv(c) => {
            let (cin, h, w) = spatial()?;
            if c.group == 0 || cin % c.group != 0 || c.out_channels % c.group != 0 {
                return Err(format!(
                    "group {} does not divide Cin {cin} and Cout {}",
                    c.group, c.out_channels
                ));
            }
            let oh = window_out(h, c.kernel[0], c.stride[0], c.pads[0], c.pads[1]);
            let ow = window_out(w, c.kernel[1], c.stride[1], c.pads[2], c.pads[3]);
            match (oh, ow) {
                (Some(oh), Some(ow)) => Ok(Shape::Spatial {
                    c: c.out_channels,
                    h: oh,
                    w: ow,
                }),
                _ => Err("the kernel is larger than the padded input".into()),
            }
        }
        NetOp::Pool(p) => {
            let (c, h, w) = spatial()?;
            if p.global {
                return Ok(Shape::Spatial { c, h: 1, w: 1 });
            }
            if p.pads[0..2].iter().any(|&x| x >= p.kernel[0])
                || p.pads[2..4].iter().any(|&x| x >= p.kernel[1])
            {
                return Err("a pool pad is not smaller than its kernel".into());
            }
            let oh = window_out(h, p.kernel[0], p.stride[0], p.pads[0], p.pads[1]);
            let ow = window_out(w, p.kernel[1], p.stride[1], p.pads[2], p.pads[3]);
            match (oh, ow) {
                (Some(oh), Some(ow)) => Ok(Shape::Spatial { c, h: oh, w: ow }),
                _ => Err("the kernel is larger than the padded input".into()),
            }
        }
        NetOp::Fc { out, .. } => match one()? {
            Shape::Flat(_) => Ok(Shape::Flat(*out)),
            Shape::Spatial { .. } => Err("an FC needs a [1, F] input (RESHAPE/FLATTEN)".into()),
        },
        NetOp::Reshape | NetOp::Flatten => match one()? {
            s @ Shape::Spatial { .. } => Ok(Shape::Flat(s.elements())),
            Shape::Flat(_) => Err("reshapes a [1, F] tensor".into()),
        },
        NetOp::Relu | NetOp::Clip { .. } | NetOp::Lrn | NetOp::Dropout | NetOp::Softmax => one(),
        NetOp::Concat => {
            if ins.len() < 2 {
                return Err("a concat needs two providers or more".into());
            }
            let mut total = 0;
            for s in ins {
                match (s, ins[0]) {
                    (Shape::Spatial { c, h, w }, Shape::Spatial { h: h0, w: w0, .. })
                        if *h == h0 && *w == w0 =>
                    {
                        total += c
                    }
                    _ => return Err("concat operands differ in H or W".into()),
                }
            }
            let Shape::Spatial { h, w, .. } = ins[0] else {
                unreachable!("checked above")
            };
            Ok(Shape::Spatial { c: total, h, w })
        }
        NetOp::Add => {
            if ins.len() != 2 || ins[0] != ins[1] {
                return Err("an eltwise add needs two providers of one shape".into());
            }
            Ok(ins[0])
        }
    }
}

/// One node of the model file, fields in the frontend's order.
#[derive(Serialize)]
struct NodeJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    act_type: Option<i64>,
    bitwidth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    clip_max: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    clip_min: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer: Option<Vec<String>>,
    consumer_num: usize,
    index: usize,
    name: String,
    operation: &'static str,
    output_dim: Vec<usize>,
    output_dim_num: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    param: Option<BTreeMap<&'static str, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<Vec<String>>,
    provider_num: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    with_act: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    with_bn: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    with_clip: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_dim_num: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input_dim: Option<Vec<usize>>,
    new_node_index: usize,
    consumer_index: Vec<usize>,
    provider_index: Vec<usize>,
}

#[derive(Serialize)]
struct ModelDoc {
    node_list: Vec<NodeJson>,
    reshape_info: Value,
}

fn node_json(
    net: &Network,
    shapes: &[Shape],
    consumers: &[Vec<usize>],
    i: usize,
    n: &NetNode,
) -> NodeJson {
    let weighted = matches!(n.op, NetOp::Conv(_) | NetOp::Fc { .. });
    let relu = match &n.op {
        NetOp::Conv(c) => c.relu,
        NetOp::Fc { relu, .. } => *relu,
        _ => false,
    };
    let name_of = |j: &usize| net.nodes[*j].name.clone();
    let input_dims = n.inputs.first().map(|&p| shapes[p].dims());
    NodeJson {
        act_type: weighted.then_some(if relu { 0 } else { -1 }),
        bitwidth: 16,
        clip_max: weighted.then_some(10_000_000),
        clip_min: weighted.then_some(-10_000_000),
        consumer: (!consumers[i].is_empty()).then(|| consumers[i].iter().map(name_of).collect()),
        consumer_num: consumers[i].len(),
        index: i,
        name: n.name.clone(),
        operation: n.op.operation(),
        output_dim: shapes[i].dims(),
        output_dim_num: shapes[i].dims().len(),
        param: params(&n.op, n.inputs.first().map(|&p| shapes[p])),
        provider: (!n.inputs.is_empty()).then(|| n.inputs.iter().map(name_of).collect()),
        provider_num: n.inputs.len(),
        with_act: weighted.then_some(relu as u8),
        with_bn: weighted.then_some(0),
        with_clip: weighted.then_some(0),
        input_dim_num: input_dims.as_ref().map(Vec::len),
        input_dim: input_dims,
        new_node_index: i,
        consumer_index: consumers[i].clone(),
        provider_index: n.inputs.clone(),
    }
}

/// The `param` object of a node, keys sorted as the frontend sorts them.
fn params(op: &NetOp, input: Option<Shape>) -> Option<BTreeMap<&'static str, Value>> {
    let mut p = BTreeMap::new();
    let window =
        |p: &mut BTreeMap<&'static str, Value>, k: [usize; 2], s: [usize; 2], pads: [usize; 4]| {
            p.insert("kernel_h", json!(k[0]));
            p.insert("kernel_w", json!(k[1]));
            p.insert("stride_h", json!(s[0]));
            p.insert("stride_w", json!(s[1]));
            p.insert("pad_h0", json!(pads[0]));
            p.insert("pad_h1", json!(pads[1]));
            p.insert("pad_w0", json!(pads[2]));
            p.insert("pad_w1", json!(pads[3]));
        };
    match op {
        NetOp::Conv(c) => {
            window(&mut p, c.kernel, c.stride, c.pads);
            p.insert("dilation_h", json!(1));
            p.insert("dilation_w", json!(1));
            p.insert("group", json!(c.group));
            let cin = match input {
                Some(Shape::Spatial { c, .. }) => c,
                _ => 0,
            };
            p.insert("input_channel", json!(cin));
            p.insert("output_channel", json!(c.out_channels));
            p.insert("with_bias", json!(c.bias as u8));
        }
        NetOp::Pool(pool) => {
            let (kernel, stride, pads) = match (pool.global, input) {
                (true, Some(Shape::Spatial { h, w, .. })) => ([h, w], [1, 1], [0; 4]),
                _ => (pool.kernel, pool.stride, pool.pads),
            };
            window(&mut p, kernel, stride, pads);
            p.insert("pool_method", json!(if pool.max { 0 } else { 1 }));
            p.insert("global", json!(pool.global as u8));
        }
        NetOp::Fc { out, bias, .. } => {
            p.insert("num_input", json!(input.map_or(0, Shape::elements)));
            p.insert("num_output", json!(out));
            p.insert("with_bias", json!(*bias as u8));
        }
        NetOp::Add => {
            p.insert("eletype", json!(2));
        }
        NetOp::Clip { min, max } => {
            p.insert("min", json!(min));
            p.insert("max", json!(max));
        }
        _ => return None,
    }
    Some(p)
}

/// Bounds of the network generator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetConfig {
    /// Largest input height and width.
    pub max_spatial: usize,
    /// Largest channel count of a CONV or FC output.
    pub max_channels: usize,
    /// Largest number of blocks (a block adds one to five nodes).
    pub max_blocks: usize,
    /// Largest kernel size.
    pub max_kernel: usize,
}

impl Default for NetConfig {
    fn default() -> NetConfig {
        NetConfig {
            max_spatial: 12,
            max_channels: 136,
            max_blocks: 4,
            max_kernel: 5,
        }
    }
}

/// The network of one case seed (see the module docs).
pub fn network_from_seed(cfg: &NetConfig, seed: u64) -> Network {
    let mut b = Builder {
        rng: ChaCha8Rng::seed_from_u64(seed),
        cfg: cfg.clone(),
        net: Network { nodes: Vec::new() },
        counter: 0,
    };
    b.build();
    b.net
}

struct Builder {
    rng: ChaCha8Rng,
    cfg: NetConfig,
    net: Network,
    counter: usize,
}

impl Builder {
    fn push(&mut self, stem: &str, op: NetOp, inputs: Vec<usize>) -> usize {
        self.counter += 1;
        let name = format!("{stem}{}", self.counter);
        self.net.nodes.push(NetNode { name, op, inputs });
        self.net.nodes.len() - 1
    }

    fn shape(&self, i: usize) -> Shape {
        let prefix = Network {
            nodes: self.net.nodes[..=i].to_vec(),
        };
        // Shapes of a prefix: every node is checked as it is added, so only the sink rule can
        // fail here, and it is not needed.
        let mut shapes = Vec::new();
        for (j, n) in prefix.nodes.iter().enumerate() {
            let ins: Vec<Shape> = n.inputs.iter().map(|&p| shapes[p]).collect();
            shapes.push(node_shape(&n.op, &ins, j).unwrap_or(Shape::Flat(1)));
        }
        shapes[i]
    }

    fn channels(&mut self) -> usize {
        let max = self.cfg.max_channels.max(1);
        match self.rng.random_range(0..10) {
            0 => [127, 128, 129, 3, 1][self.rng.random_range(0..5)].min(max),
            1..=3 => self.rng.random_range(1..=max.min(8)),
            _ => self.rng.random_range(1..=max.min(32)),
        }
    }

    fn build(&mut self) {
        let max_s = self.cfg.max_spatial.max(1);
        let c = if self.rng.random_bool(0.4) {
            3
        } else {
            self.rng.random_range(1..=16)
        };
        let h = self.rng.random_range(1..=max_s);
        let w = if self.rng.random_bool(0.7) {
            h
        } else {
            self.rng.random_range(1..=max_s)
        };
        let mut cur = self.push(
            "data",
            NetOp::Input {
                channels: c,
                height: h,
                width: w,
            },
            vec![],
        );
        // The first operator is a CONV or FC most of the time: an input fed only to pools and
        // pass-throughs compiles nothing.
        cur = self.conv(cur);
        let blocks = self.rng.random_range(0..=self.cfg.max_blocks);
        for _ in 0..blocks {
            cur = match self.rng.random_range(0..10) {
                0..=2 => self.conv(cur),
                3..=4 => self.pool(cur),
                5 => self.branch_concat(cur),
                6 => self.residual(cur),
                _ => self.pass_through(cur),
            };
        }
        if self.rng.random_bool(0.4) {
            cur = self.classifier(cur);
        }
        if self.rng.random_bool(0.15) {
            self.push("prob", NetOp::Softmax, vec![cur]);
        }
    }

    /// A random convolution of `from` (when its input is spatial).
    fn conv(&mut self, from: usize) -> usize {
        let Shape::Spatial { c: cin, h, w } = self.shape(from) else {
            return from;
        };
        let k_max = self.cfg.max_kernel.max(1);
        let mut pads = [0usize; 4];
        if self.rng.random_bool(0.5) {
            for p in &mut pads {
                *p = self.rng.random_range(0..=2);
            }
        }
        let fit = |dim: usize, p0: usize, p1: usize| (dim + p0 + p1).clamp(1, k_max);
        let kh_max = fit(h, pads[0], pads[1]);
        let kw_max = fit(w, pads[2], pads[3]);
        let kh = self.rng.random_range(1..=kh_max);
        let kw = if self.rng.random_bool(0.8) {
            kh.min(kw_max)
        } else {
            self.rng.random_range(1..=kw_max)
        };
        let stride = [self.rng.random_range(1..=3), self.rng.random_range(1..=3)];
        let stride = if self.rng.random_bool(0.6) {
            [1, 1]
        } else {
            stride
        };
        let (group, out) = match self.rng.random_range(0..10) {
            0 => (cin, cin),
            1 if cin % 2 == 0 => (2, 2 * self.rng.random_range(1..=8)),
            _ => (1, self.channels()),
        };
        let spec = ConvSpec {
            out_channels: out,
            kernel: [kh, kw],
            stride,
            pads,
            group,
            bias: self.rng.random_bool(0.85),
            relu: self.rng.random_bool(0.5),
        };
        self.push("conv", NetOp::Conv(spec), vec![from])
    }

    fn pool(&mut self, from: usize) -> usize {
        let Shape::Spatial { h, w, .. } = self.shape(from) else {
            return from;
        };
        let max = self.rng.random_bool(0.7);
        if !max && self.rng.random_bool(0.3) {
            let spec = PoolSpec {
                max: false,
                global: true,
                kernel: [h, w],
                stride: [1, 1],
                pads: [0; 4],
            };
            return self.push("gap", NetOp::Pool(spec), vec![from]);
        }
        let kh = self.rng.random_range(1..=h.clamp(1, 3));
        let kw = self.rng.random_range(1..=w.clamp(1, 3));
        let mut pads = [0usize; 4];
        if self.rng.random_bool(0.3) {
            pads = [
                self.rng.random_range(0..kh),
                self.rng.random_range(0..kh),
                self.rng.random_range(0..kw),
                self.rng.random_range(0..kw),
            ];
        }
        let s = self.rng.random_range(1..=2);
        let spec = PoolSpec {
            max,
            global: false,
            kernel: [kh, kw],
            stride: [s, s],
            pads,
        };
        self.push("pool", NetOp::Pool(spec), vec![from])
    }

    /// A convolution that keeps H and W (kernel 1, or 3 with pads 1), for branches.
    fn same_conv(&mut self, from: usize, out: usize) -> usize {
        let Shape::Spatial { h, w, .. } = self.shape(from) else {
            return from;
        };
        let k = if h >= 1 && w >= 1 && self.rng.random_bool(0.5) {
            3
        } else {
            1
        };
        let p = k / 2;
        let spec = ConvSpec {
            out_channels: out,
            kernel: [k, k],
            stride: [1, 1],
            pads: [p; 4],
            group: 1,
            bias: true,
            relu: self.rng.random_bool(0.5),
        };
        self.push("conv", NetOp::Conv(spec), vec![from])
    }

    fn branch_concat(&mut self, from: usize) -> usize {
        if !matches!(self.shape(from), Shape::Spatial { .. }) {
            return from;
        }
        let arms = self.rng.random_range(2..=3);
        let mut ins = Vec::new();
        // A dense-style arm: the branch point itself is concatenated with the new features.
        if self.rng.random_bool(0.25) {
            ins.push(from);
        }
        while ins.len() < arms {
            let a = ins.len();
            let out = self.rng.random_range(1..=16);
            let arm = if a == arms - 1 && self.rng.random_bool(0.3) {
                let spec = PoolSpec {
                    max: true,
                    global: false,
                    kernel: [1, 1],
                    stride: [1, 1],
                    pads: [0; 4],
                };
                self.push("pool", NetOp::Pool(spec), vec![from])
            } else {
                self.same_conv(from, out)
            };
            ins.push(arm);
        }
        // The operands in the model's order, which is not always node order: a compiler must
        // join them as listed.
        if self.rng.random_bool(0.3) {
            ins.reverse();
        }
        self.push("concat", NetOp::Concat, ins)
    }

    fn residual(&mut self, from: usize) -> usize {
        let Shape::Spatial { c, .. } = self.shape(from) else {
            return from;
        };
        let body = self.same_conv(from, c);
        let body = if self.rng.random_bool(0.5) {
            self.same_conv(body, c)
        } else {
            body
        };
        let add = self.push("add", NetOp::Add, vec![body, from]);
        if self.rng.random_bool(0.5) {
            self.push("relu", NetOp::Relu, vec![add])
        } else {
            add
        }
    }

    fn pass_through(&mut self, from: usize) -> usize {
        let fused = match &mut self.net.nodes[from].op {
            NetOp::Conv(ConvSpec { relu, .. }) | NetOp::Fc { relu, .. } => Some(relu),
            _ => None,
        };
        match self.rng.random_range(0..4) {
            0 => match fused {
                // The frontend fuses a ReLU into its single-consumer CONV/FC provider.
                Some(relu) => {
                    *relu = true;
                    from
                }
                None => self.push("relu", NetOp::Relu, vec![from]),
            },
            1 => self.push("clip", NetOp::Clip { min: 0.0, max: 6.0 }, vec![from]),
            2 if matches!(self.shape(from), Shape::Spatial { .. }) => {
                self.push("lrn", NetOp::Lrn, vec![from])
            }
            _ => self.push("drop", NetOp::Dropout, vec![from]),
        }
    }

    fn classifier(&mut self, from: usize) -> usize {
        let mut cur = from;
        if matches!(self.shape(cur), Shape::Spatial { .. }) {
            let op = if self.rng.random_bool(0.5) {
                NetOp::Reshape
            } else {
                NetOp::Flatten
            };
            cur = self.push("flat", op, vec![cur]);
        }
        let fcs = self.rng.random_range(1..=2);
        for f in 0..fcs {
            let out = self.channels();
            let bias = self.rng.random_bool(0.85);
            let relu = f + 1 < fcs && self.rng.random_bool(0.6);
            cur = self.push("fc", NetOp::Fc { out, bias, relu }, vec![cur]);
            if f + 1 < fcs && self.rng.random_bool(0.4) {
                cur = self.push("drop", NetOp::Dropout, vec![cur]);
            }
        }
        cur
    }
}

impl fmt::Display for Network {
    /// One line per node: `index name OPERATION <- providers`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(f, "{i} {} {} <- {:?}", n.name, n.op.operation(), n.inputs)?;
        }
        Ok(())
    }
}

/// Checks model JSON the way PIMCOMP-NN's loader reads it, independently of [`Network`]:
/// every node has the keys its operation needs, `index`/`new_node_index` equal its position,
/// names and indices of providers and consumers agree both ways, `input_dim` is the first
/// provider's `output_dim`, and CONV/POOL/FC/CONCAT/ELTWISE output dimensions follow from
/// their inputs and parameters.
pub fn check_model_json(text: &str) -> Result<(), String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let list = doc["node_list"].as_array().ok_or("no node_list array")?;
    if !doc["reshape_info"].is_object() {
        return Err("no reshape_info object".into());
    }
    let dims = |v: &Value| -> Option<Vec<usize>> {
        v.as_array()?
            .iter()
            .map(|x| x.as_u64().map(|x| x as usize))
            .collect()
    };
    for (i, n) in list.iter().enumerate() {
        let ctx = |m: &str| format!("node {i}: {m}");
        let int = |k: &str| n[k].as_u64().ok_or_else(|| ctx(&format!("{k} missing")));
        if int("index")? as usize != i || int("new_node_index")? as usize != i {
            return Err(ctx("index is not its position"));
        }
        let op = n["operation"].as_str().ok_or_else(|| ctx("no operation"))?;
        let out = dims(&n["output_dim"]).ok_or_else(|| ctx("no output_dim"))?;
        if int("output_dim_num")? as usize != out.len() {
            return Err(ctx("output_dim_num"));
        }
        let providers = dims(&n["provider_index"]).ok_or_else(|| ctx("no provider_index"))?;
        let consumers = dims(&n["consumer_index"]).ok_or_else(|| ctx("no consumer_index"))?;
        if int("provider_num")? as usize != providers.len()
            || int("consumer_num")? as usize != consumers.len()
        {
            return Err(ctx("provider_num/consumer_num"));
        }
        for (key, idx) in [("provider", &providers), ("consumer", &consumers)] {
            let names: Vec<&str> = n[key]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let want: Vec<&str> = idx
                .iter()
                .map(|&j| list.get(j).and_then(|m| m["name"].as_str()).unwrap_or(""))
                .collect();
            if names != want {
                return Err(ctx(&format!("{key} names do not match {key}_index")));
            }
        }
        for &p in &providers {
            let back = dims(&list[p]["consumer_index"]).unwrap_or_default();
            if p >= i || !back.contains(&i) {
                return Err(ctx("a provider does not list this node as a consumer"));
            }
        }
        if op == "OP_INPUT" {
            if i != 0 || !providers.is_empty() {
                return Err(ctx("OP_INPUT must be node 0"));
            }
            continue;
        }
        let first = dims(&list[providers[0]]["output_dim"]).unwrap_or_default();
        if dims(&n["input_dim"]).as_ref() != Some(&first)
            || int("input_dim_num")? as usize != first.len()
        {
            return Err(ctx("input_dim is not the first provider's output_dim"));
        }
        check_op_dims(n, op, &first, &out, list, &providers).map_err(|m| ctx(&m))?;
    }
    Ok(())
}

fn check_op_dims(
    n: &Value,
    op: &str,
    input: &[usize],
    out: &[usize],
    list: &[Value],
    providers: &[usize],
) -> Result<(), String> {
    let p = |k: &str| {
        n["param"][k]
            .as_u64()
            .map(|v| v as usize)
            .ok_or(format!("param.{k} missing"))
    };
    let window = |i: usize, k: &str, s: &str, a: &str, b: &str| -> Result<usize, String> {
        window_out(input[i], p(k)?, p(s)?, p(a)?, p(b)?).ok_or("kernel larger than input".into())
    };
    let expect = match op {
        "OP_CONV" | "OP_POOL" => {
            if input.len() != 4 {
                return Err("needs a 4-d input".into());
            }
            let c = if op == "OP_CONV" {
                if p("input_channel")? != input[1] {
                    return Err("input_channel".into());
                }
                let g = p("group")?;
                if g == 0 || !input[1].is_multiple_of(g) || !p("output_channel")?.is_multiple_of(g)
                {
                    return Err("group".into());
                }
                for k in [
                    "act_type",
                    "with_act",
                    "with_bn",
                    "with_clip",
                    "clip_min",
                    "clip_max",
                ] {
                    n[k].as_i64().ok_or(format!("{k} missing"))?;
                }
                p("output_channel")?
            } else {
                p("pool_method")?;
                p("global")?;
                input[1]
            };
            let oh = window(2, "kernel_h", "stride_h", "pad_h0", "pad_h1")?;
            let ow = window(3, "kernel_w", "stride_w", "pad_w0", "pad_w1")?;
            vec![1, c, oh, ow]
        }
        "OP_FC" => {
            if input.len() != 2 || p("num_input")? != input[1] {
                return Err("num_input".into());
            }
            p("with_bias")?;
            vec![1, p("num_output")?]
        }
        "OP_RESHAPE" | "OP_FLATTEN" => vec![1, input.iter().product()],
        "OP_CONCAT" => {
            let mut d = input.to_vec();
            d[1] = providers
                .iter()
                .map(|&j| list[j]["output_dim"][1].as_u64().unwrap_or(0) as usize)
                .sum();
            d
        }
        "OP_ELTWISE" => {
            p("eletype")?;
            input.to_vec()
        }
        "OP_RELU" | "OP_CLIP" | "OP_LRN" | "OP_DROPOUT" | "OP_SOFTMAX" => input.to_vec(),
        other => return Err(format!("unknown operation {other}")),
    };
    if expect != out {
        return Err(format!("output_dim {out:?}, expected {expect:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_network() {
        let cfg = NetConfig::default();
        assert_eq!(network_from_seed(&cfg, 7), network_from_seed(&cfg, 7));
        assert_ne!(network_from_seed(&cfg, 7), network_from_seed(&cfg, 8));
    }

    #[test]
    fn conv_output_size() {
        assert_eq!(window_out(5, 3, 2, 1, 0), Some(2));
        assert_eq!(window_out(1, 3, 1, 1, 1), Some(1));
        assert_eq!(window_out(1, 3, 1, 0, 1), None);
    }
}
