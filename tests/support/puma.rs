//! Shared by the PUMA tests: a small builder of network descriptions, and the PUMA compiler's
//! own `test/` programs rebuilt with it (at small sizes), layer helper by layer helper.
#![allow(dead_code)]

use pimdiff::targets::puma::network::{
    CompileOptions, Input, Matrix, Op, Output, PumaNetwork, Shape,
};

/// A network under construction; value, input and matrix ids are indices.
pub struct Net(pub PumaNetwork);

impl Net {
    pub fn new(model: &str) -> Net {
        Net(PumaNetwork {
            model: model.to_string(),
            options: CompileOptions::default(),
            inputs: Vec::new(),
            matrices: Vec::new(),
            values: Vec::new(),
            outputs: Vec::new(),
        })
    }

    pub fn op(&mut self, op: Op) -> usize {
        self.0.values.push(op);
        self.0.values.len() - 1
    }

    /// A new input vector, and the value reading it.
    pub fn input_vector(&mut self, name: &str, length: u32) -> usize {
        self.0.inputs.push(Input::Vector {
            name: name.to_string(),
            length,
        });
        let input = self.0.inputs.len() - 1;
        self.op(Op::Input { input })
    }

    /// A new input image stream, and the value reading it.
    pub fn input_image(&mut self, name: &str, w: u32, h: u32, c: u32, stride: u32) -> usize {
        self.0.inputs.push(Input::Image {
            name: name.to_string(),
            width: w,
            height: h,
            channels: c,
            stride,
        });
        let input = self.0.inputs.len() - 1;
        self.op(Op::Input { input })
    }

    pub fn dense(&mut self, name: &str, width: u32, height: u32) -> usize {
        self.0.matrices.push(Matrix::Dense {
            name: name.to_string(),
            width,
            height,
        });
        self.0.matrices.len() - 1
    }

    /// A conv matrix with the output size the API asks for, on an image of `w × h`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_matrix(
        &mut self,
        name: &str,
        kw: u32,
        kh: u32,
        cin: u32,
        cout: u32,
        stride: u32,
        w: u32,
        h: u32,
    ) -> usize {
        let out = |n: u32, k: u32| (n + 2 * (k / 2) - k) / stride + 1;
        self.0.matrices.push(Matrix::Conv {
            name: name.to_string(),
            kernel_width: kw,
            kernel_height: kh,
            in_channels: cin,
            out_channels: cout,
            stride,
            out_width: out(w, kw),
            out_height: out(h, kh),
            padding_width: None,
            padding_height: None,
        });
        self.0.matrices.len() - 1
    }

    pub fn mvm(&mut self, matrix: usize, x: usize) -> usize {
        self.op(Op::Mvm { matrix, x })
    }

    pub fn conv(&mut self, matrix: usize, x: usize) -> usize {
        self.op(Op::Conv { matrix, x })
    }

    fn shape(&self, v: usize) -> Shape {
        let mut probe = self.0.clone();
        probe.outputs.clear();
        probe.check().expect("the network so far is valid")[v]
    }

    /// An output named `name` holding value `v`, with `v`'s shape.
    pub fn output(&mut self, name: &str, v: usize) {
        let name = name.to_string();
        let out = match self.shape(v) {
            Shape::Vector(length) => Output::Vector {
                name,
                length,
                value: v,
            },
            Shape::Image(s) => Output::Image {
                name,
                width: s.width,
                height: s.height,
                channels: s.channels,
                value: v,
            },
        };
        self.0.outputs.push(out);
    }

    // The layer helpers of the compiler's test/ folder.

    /// `fully_connected_layer` (test/fully-connected-layer.h): `sig(M x)`.
    pub fn fully_connected_layer(
        &mut self,
        layer: &str,
        in_size: u32,
        out_size: u32,
        x: usize,
    ) -> usize {
        let m = self.dense(&format!("{layer}mat"), in_size, out_size);
        let y = self.mvm(m, x);
        self.op(Op::Sig { x: y })
    }

    /// `conv_layer` (test/conv-layer.h): `sig(M * stream)`.
    #[allow(clippy::too_many_arguments)]
    pub fn conv_layer(
        &mut self,
        layer: &str,
        k: u32,
        w: u32,
        h: u32,
        cin: u32,
        cout: u32,
        stride: u32,
        x: usize,
    ) -> usize {
        let m = self.conv_matrix(&format!("{layer}conv_mat"), k, k, cin, cout, stride, w, h);
        let y = self.conv(m, x);
        self.op(Op::Sig { x: y })
    }

    /// `convmax_layer` (test/conv-layer.h): `maxpool(sig(M * stream), pool, pool)`.
    #[allow(clippy::too_many_arguments)]
    pub fn convmax_layer(
        &mut self,
        layer: &str,
        k: u32,
        w: u32,
        h: u32,
        cin: u32,
        cout: u32,
        pool: u32,
        x: usize,
    ) -> usize {
        let y = self.conv_layer(layer, k, w, h, cin, cout, 1, x);
        self.op(Op::MaxPool {
            hspan: pool,
            wspan: pool,
            x: y,
        })
    }

    /// `lstm_layer` (test/lstm-layer.h): two LSTM cells and an output projection; the
    /// recurrent state comes in as inputs and goes out as outputs.
    pub fn lstm_layer(
        &mut self,
        layer: &str,
        in_size: u32,
        h: u32,
        out_size: u32,
        x: usize,
    ) -> usize {
        let mats = |n: &mut Net, tag: &str, width: u32| -> Vec<usize> {
            (0..4)
                .map(|i| n.dense(&format!("{layer}{tag}_{i}"), width, h))
                .collect()
        };
        let m1 = mats(self, "M1", in_size);
        let m2 = mats(self, "M2", h);
        let m3 = mats(self, "M3", h);
        let m4 = mats(self, "M4", h);
        let m5 = self.dense(&format!("{layer}M5"), h, out_size);
        let h1in = self.input_vector(&format!("{layer}h1in"), h);
        let c1in = self.input_vector(&format!("{layer}c1in"), h);
        let h2in = self.input_vector(&format!("{layer}h2in"), h);
        let c2in = self.input_vector(&format!("{layer}c2in"), h);
        let (h1, c1) = self.lstm_cell(&m1, &m2, x, h1in, c1in);
        self.output(&format!("{layer}h1out"), h1);
        self.output(&format!("{layer}c1out"), c1);
        let (h2, c2) = self.lstm_cell(&m3, &m4, h1, h2in, c2in);
        self.output(&format!("{layer}h2out"), h2);
        self.output(&format!("{layer}c2out"), c2);
        self.mvm(m5, h2)
    }

    fn lstm_cell(
        &mut self,
        wx: &[usize],
        wh: &[usize],
        x: usize,
        hin: usize,
        cin: usize,
    ) -> (usize, usize) {
        let pre: Vec<usize> = (0..4)
            .map(|i| {
                let a = self.mvm(wx[i], x);
                let b = self.mvm(wh[i], hin);
                self.op(Op::Add { a, b })
            })
            .collect();
        let i_gate = self.op(Op::Sig { x: pre[0] });
        let f_gate = self.op(Op::Sig { x: pre[1] });
        let o_gate = self.op(Op::Sig { x: pre[2] });
        let c_int = self.op(Op::Tanh { x: pre[3] });
        let fc = self.op(Op::Mul { a: f_gate, b: cin });
        let ic = self.op(Op::Mul {
            a: i_gate,
            b: c_int,
        });
        let c = self.op(Op::Add { a: fc, b: ic });
        let tc = self.op(Op::Tanh { x: c });
        let h = self.op(Op::Mul { a: o_gate, b: tc });
        (h, c)
    }
}

/// test/simple.cpp: `out = M in`, 5 × 5.
pub fn simple() -> PumaNetwork {
    let mut n = Net::new("simple");
    let x = n.input_vector("in", 5);
    let m = n.dense("constant_", 5, 5);
    let y = n.mvm(m, x);
    n.output("out_", y);
    n.0
}

/// test/fully-connected-layer.cpp at 130 → 129 (from 1024 → 1024).
pub fn fully_connected() -> PumaNetwork {
    let mut n = Net::new("fully_connected_layer");
    let x = n.input_vector("in", 130);
    let y = n.fully_connected_layer("", 130, 129, x);
    n.output("out", y);
    n.0
}

/// test/mlp_l4.cpp (mlp_l5.cpp has one more layer) at a tenth of its sizes.
pub fn mlp(layers: &[u32]) -> PumaNetwork {
    let mut n = Net::new(&format!("mlp_l{}", layers.len() - 1));
    let mut x = n.input_vector("in", layers[0]);
    for (i, pair) in layers.windows(2).enumerate() {
        x = n.fully_connected_layer(&format!("layer{}", i + 1), pair[0], pair[1], x);
    }
    n.output("out", x);
    n.0
}

/// test/lstm-layer.cpp at 129 (from 1024).
pub fn lstm() -> PumaNetwork {
    let mut n = Net::new("lstm_layer");
    let x = n.input_vector("in", 129);
    let y = n.lstm_layer("", 129, 129, 129, x);
    n.output("out", y);
    n.0
}

/// test/nmt_l3.cpp and nmt_l5.cpp: `layers` LSTM layers and a fully connected one, at 8.
pub fn nmt(layers: usize) -> PumaNetwork {
    let mut n = Net::new(&format!("nmt_{layers}"));
    let mut x = n.input_vector("in", 8);
    for i in 1..=layers {
        x = n.lstm_layer(&format!("layer{i}"), 8, 8, 8, x);
    }
    let y = n.fully_connected_layer(&format!("layer{}", layers + 1), 8, 40, x);
    n.output("out", y);
    n.0
}

/// test/wlm_LSTM2048.cpp at 16: an LSTM layer and a fully connected one.
pub fn wlm_lstm2048() -> PumaNetwork {
    let mut n = Net::new("LSTM2048");
    let x = n.input_vector("in", 16);
    let out1 = n.lstm_layer("layer1", 16, 16, 16, x);
    let out2 = n.fully_connected_layer("layer2", 16, 4, out1);
    n.output("out", out2);
    n.0
}

/// test/wlm_bigLSTM.cpp at 16: two LSTM layers, the second on the first's result, each
/// with a fully connected head.
pub fn wlm_big_lstm() -> PumaNetwork {
    let mut n = Net::new("bigLSTM");
    let x = n.input_vector("in", 16);
    let out1 = n.lstm_layer("layer1", 16, 16, 16, x);
    let out2 = n.fully_connected_layer("layer2", 16, 4, out1);
    n.output("outA", out2);
    let out3 = n.lstm_layer("layer3", 16, 16, 16, out1);
    let out4 = n.fully_connected_layer("layer4", 16, 4, out3);
    n.output("outB", out4);
    n.0
}

/// test/conv-layer.cpp with its default sizes (9 × 9, 128 → 256 channels would be slow to
/// check) scaled to 5 × 5, 4 → 3 channels, kernel 3, padding 1, and `stride`.
pub fn conv_layer(stride: u32) -> PumaNetwork {
    let mut n = Net::new(&format!("conv{stride}_layer"));
    let x = n.input_image("in_stream", 5, 5, 4, stride);
    let y = n.conv_layer("", 3, 5, 5, 4, 3, stride, x);
    n.output("out_stream", y);
    n.0
}

/// test/convmax-layer.cpp (written for an older API) at 6 × 6, 3 → 5 channels, 2 × 2 pooling.
pub fn convmax_layer() -> PumaNetwork {
    let mut n = Net::new("convmax_layer");
    let x = n.input_image("in_stream", 6, 6, 3, 1);
    let y = n.convmax_layer("", 3, 6, 6, 3, 5, 2, x);
    n.output("out_stream", y);
    n.0
}

/// test/depthwise.cpp: one input vector per channel and output pixel, one 1-row matrix per
/// channel, no outputs; 2 channels, a 3 × 3 kernel and 2 × 2 output pixels.
pub fn depthwise() -> PumaNetwork {
    let mut n = Net::new("depthwise");
    let (channels, taps, pixels) = (2, 9, 4);
    let inputs: Vec<Vec<usize>> = (0..channels)
        .map(|c| {
            (0..pixels)
                .map(|i| n.input_vector(&format!("c{c}_{i}"), taps))
                .collect()
        })
        .collect();
    for (c, column) in inputs.iter().enumerate() {
        let k = n.dense(&format!("k{c}"), taps, 1);
        for &x in column {
            n.mvm(k, x);
        }
    }
    n.0
}

/// test/vgg16.cpp and vgg19.cpp (written for an older API): conv and convmax layers on a
/// stream, and fully connected layers on inputs of their own; 4 × 4 × 3 and 8 channels.
pub fn vgg(convs_per_block: usize) -> PumaNetwork {
    let mut n = Net::new(&format!("vgg_{convs_per_block}"));
    let mut x = n.input_image("in_stream", 4, 4, 3, 1);
    let (mut side, mut c) = (4, 3);
    for block in 0..2 {
        for i in 0..convs_per_block {
            let layer = format!("layer{}", block * 4 + i + 1);
            x = if i + 1 == convs_per_block {
                n.convmax_layer(&layer, 3, side, side, c, 8, 2, x)
            } else {
                n.conv_layer(&layer, 3, side, side, c, 8, 1, x)
            };
            c = 8;
        }
        side /= 2;
    }
    n.output("out_stream", x);
    for (i, (a, b)) in [(32, 16), (16, 10)].into_iter().enumerate() {
        let fx = n.input_vector(&format!("in{i}"), a);
        let y = n.fully_connected_layer(&format!("layer{}", 14 + i), a, b, fx);
        n.output(&format!("out{i}"), y);
    }
    n.0
}

/// Every example above, by the name of its test/ program.
pub fn examples() -> Vec<(&'static str, PumaNetwork)> {
    vec![
        ("simple", simple()),
        ("fully-connected-layer", fully_connected()),
        ("mlp_l4", mlp(&[102, 102, 204, 102, 10])),
        ("mlp_l5", mlp(&[102, 102, 204, 204, 102, 10])),
        ("lstm-layer", lstm()),
        ("nmt_l3", nmt(6)),
        ("nmt_l5", nmt(10)),
        ("wlm_LSTM2048", wlm_lstm2048()),
        ("wlm_bigLSTM", wlm_big_lstm()),
        ("conv-layer", conv_layer(1)),
        ("conv-layer (stride 2)", conv_layer(2)),
        ("convmax-layer", convmax_layer()),
        ("depthwise", depthwise()),
        ("vgg16", vgg(2)),
        ("vgg19", vgg(3)),
    ]
}
