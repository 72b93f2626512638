//! Random PUMA networks from a case seed: deterministic (ChaCha8: the same seed and config give
//! the same network on every platform), always valid per [`PumaNetwork::check`], biased toward
//! the edges where the compiler's tiling, padding, partitioning and coalescing break.
//!
//! A network starts with one to [`PumaNetConfig::max_inputs`] inputs, each fed at once to a
//! matrix operation (an input vector to a fully connected layer, an input image to a
//! convolution), then grows by up to [`PumaNetConfig::max_blocks`] blocks: fully connected
//! layers (sometimes sharing a matrix), convolutions, max pooling, activations, scaling, joins
//! of two values (a new input, a value from another branch, or a fresh projection of a third
//! value), and new inputs. Every value nothing uses becomes an output, and some intermediate
//! values too. Sizes cluster at the MVMU's edges (1, 127, 128, 129, 255, 256, 257 elements or
//! channels), images at 1×1, at the kernel's size and wider than tall; kernels are odd and
//! square mostly, sometimes even or non-square; strides divide the padded extent exactly, as
//! the API asks.
//!
//! Four reaches were added after the first hunts, each in a share of cases
//! ([`PumaNetConfig`]): convolutions declaring the output size of another padding than
//! `⌊k/2⌋`, strided input streams that are also max-pooled or output, and the compiler's debug
//! printing. They draw from a random stream of their own, so a seed whose network takes none
//! of them gives the network it gave before they existed.
//!
//! # Placement by the partitioner
//!
//! The compiler places every operation next to a matrix operation it is connected to (snapshot
//! `src/partitioner.cpp:231-332`): one pass spreads each matrix operation's placement to
//! operands all of whose users are placed and to users all of whose operands are placed, then
//! one more pass places a still unplaced operation after any placed operand. An operation it
//! reaches by none of these aborts the compile ("Virtual MVMU not assigned"). The API allows
//! such networks (an output computed from inputs alone is the simplest), so they are a finding;
//! but one such crash per network would hide everything after it, so the generator builds them
//! only in a [`PumaNetConfig::unplaceable_share`] of cases. Otherwise every value is
//! *strong* (placed by the first pass: a matrix operation, or an operation on strong values
//! only), *weak* (placed by the second pass after a strong operand, and everything on weak and
//! strong values only) or *free* (computed from inputs alone: used only by matrix operations
//! and by joins with a strong value).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::network::{
    CompileOptions, ImageShape, Input, Matrix, Op, Output, Partition, PumaNetwork, Shape, MVMU_DIM,
};

/// Bounds and biases of the generator.
///
/// The defaults keep one compile of a network well under a second and its programs small
/// (at most [`PumaNetConfig::max_matrix_ops`] MVM operations): the compiler creates one
/// operation per pixel, kernel tap and pair of 128-channel tiles, so images stay small while
/// channel counts cross one and two tile boundaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PumaNetConfig {
    /// Largest input image width and height. Default 6: border, corner and interior pixels all
    /// exist for 3×3 and 5×5 kernels, and a 5×5 kernel is larger than small images.
    pub max_image: u32,
    /// Largest channel count. Default 260: one, two and three 128-channel tiles, each full or
    /// with a one-channel remainder.
    pub max_channels: u32,
    /// Largest vector length (fully connected rows and columns). Default 300: as for channels.
    pub max_vector: u32,
    /// Largest kernel side. Default 5.
    pub max_kernel: u32,
    /// Largest convolution or input-stream stride. Default 3.
    pub max_stride: u32,
    /// Largest number of blocks after the inputs' first layers. Default 6.
    pub max_blocks: u32,
    /// Largest number of inputs. Default 3.
    pub max_inputs: u32,
    /// Estimated MVM operations above which a layer is made smaller or left out. Default
    /// 4000 (a compile of about a tenth of a second).
    pub max_matrix_ops: u64,
    /// Share of activations that are `sig` or `tanh`, whose results the reference cannot
    /// check exactly. Default 0.05.
    pub nonlinear_share: f64,
    /// Share of convolutions with an even or non-square kernel. Default 0.1.
    pub irregular_kernel_share: f64,
    /// Share of input images streamed with a stride above 1. Default 0.1.
    pub strided_stream_share: f64,
    /// Share of networks with an output computed from inputs alone, which the partitioner
    /// cannot place (module docs). Default 0.02.
    pub unplaceable_share: f64,
    /// Share of convolutions that declare the output size of a padding other than `⌊k/2⌋`
    /// (`p` from 0 to `k − 1` per side, the same on both axes mostly, as the snapshot's test
    /// passes one `padding`). Default 0.15.
    pub free_padding_share: f64,
    /// Share of strided input streams that are also max-pooled. Default 0.3.
    pub strided_pool_share: f64,
    /// Share of strided input streams (or their pooled streams) that are also outputs.
    /// Default 0.2.
    pub strided_output_share: f64,
    /// Share of networks compiled with the compiler's debug printing on
    /// ([`CompileOptions::debug`]). Default 0.1.
    pub debug_share: f64,
}

impl Default for PumaNetConfig {
    fn default() -> PumaNetConfig {
        PumaNetConfig {
            max_image: 6,
            max_channels: 260,
            max_vector: 300,
            max_kernel: 5,
            max_stride: 3,
            max_blocks: 6,
            max_inputs: 3,
            max_matrix_ops: 4000,
            nonlinear_share: 0.05,
            irregular_kernel_share: 0.1,
            strided_stream_share: 0.1,
            unplaceable_share: 0.02,
            free_padding_share: 0.15,
            strided_pool_share: 0.3,
            strided_output_share: 0.2,
            debug_share: 0.1,
        }
    }
}

/// Mixed into the case seed for the stream the newer reaches draw from (module docs).
const REACH_SALT: u64 = 0x5245_4143_4850_554d;

/// The network of one case seed (module docs).
pub fn network_from_seed(cfg: &PumaNetConfig, seed: u64) -> PumaNetwork {
    let mut b = Builder {
        rng: ChaCha8Rng::seed_from_u64(seed),
        reach: ChaCha8Rng::seed_from_u64(seed ^ REACH_SALT),
        cfg: cfg.clone(),
        net: PumaNetwork {
            model: "net".to_string(),
            options: CompileOptions::default(),
            inputs: Vec::new(),
            matrices: Vec::new(),
            values: Vec::new(),
            outputs: Vec::new(),
        },
        shapes: Vec::new(),
        feed: Vec::new(),
        users: Vec::new(),
        cost: 0,
    };
    b.build();
    b.net
}

/// How the partitioner will place a value (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feed {
    Strong,
    Weak,
    Free,
}

impl Feed {
    /// The feed of an element-wise operation's result; `None` when the partitioner might not
    /// place it (a free operand beside a weak one).
    fn join(a: Feed, b: Feed) -> Option<Feed> {
        use Feed::*;
        match (a, b) {
            (Strong, Strong) => Some(Strong),
            (Free, Free) => Some(Free),
            (Weak, Free) | (Free, Weak) => None,
            _ => Some(Weak),
        }
    }
}

struct Builder {
    rng: ChaCha8Rng,
    /// The stream of the reaches added after the first hunts (free padding, strided streams
    /// pooled and output, debug printing): drawing them from their own stream leaves every
    /// network in which none applies as it was for the same seed.
    reach: ChaCha8Rng,
    cfg: PumaNetConfig,
    net: PumaNetwork,
    shapes: Vec<Shape>,
    feed: Vec<Feed>,
    users: Vec<u32>,
    /// Estimated MVM operations so far.
    cost: u64,
}

/// Tiles of `n` elements.
fn tiles(n: u32) -> u64 {
    u64::from(n.div_ceil(MVMU_DIM))
}

impl Builder {
    fn build(&mut self) {
        self.net.options = self.options();
        self.net.options.debug = self.reach.random_bool(self.cfg.debug_share.clamp(0.0, 1.0));
        let inputs = self.rng.random_range(1..=self.cfg.max_inputs.max(1));
        for _ in 0..inputs {
            self.fed_input();
        }
        for _ in 0..self.rng.random_range(0..=self.cfg.max_blocks) {
            self.block();
        }
        if self
            .rng
            .random_bool(self.cfg.unplaceable_share.clamp(0.0, 1.0))
        {
            let x = self.input_vector();
            let r = self.push(Op::Relu { x }, Shape::Vector(self.vlen(x)), Feed::Free);
            self.output(r);
        }
        self.outputs();
    }

    fn options(&mut self) -> CompileOptions {
        let partition = match self.rng.random_range(0..4) {
            0 => Partition::ColMajor,
            1 => Partition::Random,
            _ => Partition::RowMajor,
        };
        CompileOptions {
            coalesce: self.rng.random_range(0..4) != 0,
            partition,
            debug: false,
        }
    }

    /// A new input and its first matrix operation (so the network has matrices and the
    /// input's data is placed).
    fn fed_input(&mut self) {
        if self.rng.random_bool(0.45) {
            let x = self.input_image();
            self.strided_uses(x);
            self.conv(x);
        } else {
            let x = self.input_vector();
            self.fc(x);
        }
    }

    fn block(&mut self) {
        match self.rng.random_range(0..20) {
            0..=5 => {
                if let Some(x) = self.pick_vector(true) {
                    self.fc(x);
                }
            }
            6..=9 => match self.pick_image(true) {
                Some(x) => {
                    self.conv(x);
                }
                None => self.fed_input(),
            },
            10..=11 => {
                if let Some(x) = self.pick_image(false) {
                    if self
                        .rng
                        .random_bool(self.cfg.nonlinear_share.clamp(0.0, 1.0))
                    {
                        let f = self.feed[x];
                        self.push(Op::Sig { x }, self.shapes[x], f);
                    } else {
                        self.maxpool(x);
                    }
                }
            }
            12..=13 => {
                if let Some(x) = self.pick_vector(false) {
                    self.activation(x);
                }
            }
            14..=16 => {
                if let Some(x) = self.pick_vector(false) {
                    self.join(x);
                }
            }
            17 => {
                if let Some(x) = self.pick_vector(false) {
                    let factor = [-3, -2, -1, 0, 1, 2, 3][self.rng.random_range(0..7)];
                    let f = self.feed[x];
                    self.push(Op::Scale { factor, x }, self.shapes[x], f);
                }
            }
            _ => self.fed_input(),
        }
    }

    fn push(&mut self, op: Op, shape: Shape, feed: Feed) -> usize {
        for o in op.operands() {
            self.users[o] += 1;
        }
        self.net.values.push(op);
        self.shapes.push(shape);
        self.feed.push(feed);
        self.users.push(0);
        self.net.values.len() - 1
    }

    fn vlen(&self, v: usize) -> u32 {
        match self.shapes[v] {
            Shape::Vector(n) => n,
            Shape::Image(_) => unreachable!("a vector"),
        }
    }

    fn image(&self, v: usize) -> ImageShape {
        match self.shapes[v] {
            Shape::Image(s) => s,
            Shape::Vector(_) => unreachable!("an image"),
        }
    }

    /// A placed value of the wanted kind, the most recent one most of the time. Free values
    /// only when `any` (they may feed matrix operations only). Never the pooling of a strided
    /// stream ([`Builder::strided_uses`]): a convolution of a strided stream takes its stride,
    /// which only an input's sides are made to suit (see `input_image`).
    fn pick(&mut self, image: bool, any: bool) -> Option<usize> {
        let candidates: Vec<usize> = (0..self.shapes.len())
            .filter(|&v| matches!(self.shapes[v], Shape::Image(_)) == image)
            .filter(|&v| any || self.feed[v] != Feed::Free)
            .filter(|&v| {
                let strided = matches!(self.shapes[v], Shape::Image(s) if s.stride > 1);
                !strided || matches!(self.net.values[v], Op::Input { .. })
            })
            .collect();
        let last = *candidates.last()?;
        Some(if self.rng.random_bool(0.6) {
            last
        } else {
            candidates[self.rng.random_range(0..candidates.len())]
        })
    }

    fn pick_vector(&mut self, any: bool) -> Option<usize> {
        self.pick(false, any)
    }

    fn pick_image(&mut self, any: bool) -> Option<usize> {
        self.pick(true, any)
    }

    /// A size at the MVMU's edges most of the time, up to `max`.
    fn size(&mut self, max: u32) -> u32 {
        let max = max.max(1);
        let edges = [1, 2, 3, 127, 128, 129, 255, 256, 257];
        match self.rng.random_range(0..10) {
            0..=2 => self.rng.random_range(1..=max.min(16)),
            3..=6 => {
                let fitting: Vec<u32> = edges.iter().copied().filter(|&e| e <= max).collect();
                fitting[self.rng.random_range(0..fitting.len())]
            }
            _ => self.rng.random_range(1..=max),
        }
    }

    fn input_vector(&mut self) -> usize {
        let length = self.size(self.cfg.max_vector);
        let name = format!("in{}", self.net.inputs.len());
        self.net.inputs.push(Input::Vector { name, length });
        let input = self.net.inputs.len() - 1;
        self.push(Op::Input { input }, Shape::Vector(length), Feed::Free)
    }

    fn input_image(&mut self) -> usize {
        let side = |b: &mut Builder| match b.rng.random_range(0..6) {
            0 => 1,
            1 => b.cfg.max_image.max(1),
            _ => b.rng.random_range(1..=b.cfg.max_image.max(1)),
        };
        let stride = if self.cfg.max_stride >= 2
            && self
                .rng
                .random_bool(self.cfg.strided_stream_share.clamp(0.0, 1.0))
        {
            self.rng.random_range(2..=self.cfg.max_stride)
        } else {
            1
        };
        // A strided stream's sides are 1 more than a multiple of its stride, so that every odd
        // kernel's convolution can take the stream's stride (see `conv`).
        let side = |b: &mut Builder| {
            let n = side(b);
            n - (n - 1) % stride
        };
        let height = side(self);
        let width = if self.rng.random_bool(0.7) {
            height
        } else {
            side(self)
        };
        let channels = match self.rng.random_range(0..3) {
            0 => [1, 3][self.rng.random_range(0..2)],
            _ => self.size(self.cfg.max_channels),
        };
        let shape = ImageShape {
            width,
            height,
            channels,
            stride,
        };
        let name = format!("img{}", self.net.inputs.len());
        self.net.inputs.push(Input::Image {
            name,
            width,
            height,
            channels,
            stride,
        });
        let input = self.net.inputs.len() - 1;
        self.push(Op::Input { input }, Shape::Image(shape), Feed::Free)
    }

    /// A fully connected layer on `x`, sometimes sharing an earlier matrix of the same width;
    /// an input goes through `relu` or a scaling first now and then (a free operation the
    /// partitioner places by its one matrix user).
    fn fc(&mut self, x: usize) -> usize {
        let x = if self.feed[x] == Feed::Free && self.rng.random_bool(0.15) {
            let op = if self.rng.random_bool(0.5) {
                Op::Relu { x }
            } else {
                Op::Scale { factor: 2, x }
            };
            self.push(op, self.shapes[x], Feed::Free)
        } else {
            x
        };
        let width = self.vlen(x);
        let shared: Vec<usize> = (0..self.net.matrices.len())
            .filter(
                |&m| matches!(self.net.matrices[m], Matrix::Dense { width: w, .. } if w == width),
            )
            .collect();
        let matrix = if !shared.is_empty() && self.rng.random_bool(0.15) {
            shared[self.rng.random_range(0..shared.len())]
        } else {
            let mut height = self.size(self.cfg.max_vector);
            if self.cost + tiles(width) * tiles(height) > self.cfg.max_matrix_ops {
                height = height.min(MVMU_DIM);
            }
            self.net.matrices.push(Matrix::Dense {
                name: format!("w{}", self.net.matrices.len()),
                width,
                height,
            });
            self.net.matrices.len() - 1
        };
        let Matrix::Dense { height, .. } = self.net.matrices[matrix] else {
            unreachable!("a dense matrix")
        };
        self.cost += tiles(width) * tiles(height);
        self.push(Op::Mvm { matrix, x }, Shape::Vector(height), Feed::Strong)
    }

    /// A strided input stream pooled, output, or both, now and then: the API allows both
    /// (`maxpool` takes any stream, `include/puma.h:266`; an output compares width, height and
    /// channels, not the stride, `src/tensors.cpp:307-312`). The compiler indexes a strided
    /// stream over the whole image in both (`src/operations.cpp:37-39`, `:245-247`), so these
    /// networks are where that shows. Such values are computed from inputs alone: an output
    /// of one is also an output the partitioner cannot place (module docs).
    fn strided_uses(&mut self, x: usize) {
        if self.image(x).stride < 2 {
            return;
        }
        let output = self.cfg.strided_output_share.clamp(0.0, 1.0);
        let shown = if self
            .reach
            .random_bool(self.cfg.strided_pool_share.clamp(0.0, 1.0))
        {
            let s = self.image(x);
            let hspan = self.reach.random_range(1..=3);
            let wspan = if self.reach.random_bool(0.7) {
                hspan
            } else {
                self.reach.random_range(1..=3)
            };
            let shape = ImageShape {
                width: s.width.div_ceil(wspan),
                height: s.height.div_ceil(hspan),
                ..s
            };
            self.push(
                Op::MaxPool { hspan, wspan, x },
                Shape::Image(shape),
                Feed::Free,
            )
        } else {
            x
        };
        if self.reach.random_bool(output) {
            self.output(shown);
        }
    }

    /// A padding `(width, height)` other than `⌊k/2⌋` for a convolution of `s` with kernel
    /// `(kw, kh)`, in a share of convolutions: from 0 to `k − 1` per side, at least enough for
    /// the kernel to fit the padded image, and (for a strided stream, whose convolution takes
    /// the stream's stride) one whose span the stride divides. `None`: the compiler's own.
    fn free_padding(&mut self, s: ImageShape, kw: u32, kh: u32) -> Option<(u32, u32)> {
        if !self
            .reach
            .random_bool(self.cfg.free_padding_share.clamp(0.0, 1.0))
        {
            return None;
        }
        let fits = |n: u32, k: u32, p: u32| {
            n + 2 * p >= k && (s.stride == 1 || (n + 2 * p - k).is_multiple_of(s.stride))
        };
        let side = |b: &mut Builder, n: u32, k: u32, same: Option<u32>| {
            let choices: Vec<u32> = (0..k.max(1)).filter(|&p| fits(n, k, p)).collect();
            match same.filter(|p| choices.contains(p)) {
                Some(p) if b.reach.random_bool(0.7) => Some(p),
                _ if choices.is_empty() => None,
                _ => Some(choices[b.reach.random_range(0..choices.len())]),
            }
        };
        let pw = side(self, s.width, kw, None)?;
        let ph = side(self, s.height, kh, Some(pw))?;
        ((pw, ph) != (kw / 2, kh / 2)).then_some((pw, ph))
    }

    /// A kernel `(width, height)`: odd and square mostly.
    fn kernel(&mut self) -> (u32, u32) {
        let max = self.cfg.max_kernel.max(1);
        if self
            .rng
            .random_bool(self.cfg.irregular_kernel_share.clamp(0.0, 1.0))
        {
            let a = self.rng.random_range(1..=max);
            let b = self.rng.random_range(1..=max);
            return (a, b);
        }
        let odd: Vec<u32> = (1..=max).filter(|k| k % 2 == 1).collect();
        let k = odd[self.rng.random_range(0..odd.len())];
        (k, k)
    }

    /// A convolution on `x`, made smaller when over the budget (down to a 1×1 kernel and one
    /// output channel); an input image is max-pooled first now and then (a free operation the
    /// partitioner places by its one matrix user).
    ///
    /// A strided stream (only inputs are) gets an odd square kernel and the stream's stride:
    /// the use of strided streams the snapshot's test makes (`test/conv-layer.cpp`). A
    /// convolution of another stride makes the compiler index the stream's pixels out of
    /// bounds, as pooling and outputting it do ([`Builder::strided_uses`] makes those); see
    /// `docs/puma.md`. A share of convolutions declares the output size of another padding
    /// ([`Builder::free_padding`]).
    fn conv(&mut self, x: usize) -> usize {
        let strided = self.image(x).stride > 1;
        let x = if !strided && self.feed[x] == Feed::Free && self.rng.random_bool(0.15) {
            self.maxpool(x)
        } else {
            x
        };
        let s = self.image(x);
        let span = |n: u32, k: u32| n + 2 * (k / 2) - k;
        // Stride 1 gives the most output pixels: the estimate is an upper bound.
        let estimate = |kw: u32, kh: u32, cout: u32| {
            u64::from(span(s.width, kw) + 1)
                * u64::from(span(s.height, kh) + 1)
                * u64::from(kw * kh)
                * tiles(s.channels)
                * tiles(cout)
        };
        let (mut kw, mut kh) = self.kernel();
        if strided {
            let odd = kw - (1 - kw % 2);
            (kw, kh) = (odd, odd);
        }
        let mut out_channels = self.size(self.cfg.max_channels);
        if self.cost + estimate(kw, kh, out_channels) > self.cfg.max_matrix_ops {
            out_channels = out_channels.min(MVMU_DIM);
        }
        if self.cost + estimate(kw, kh, out_channels) > self.cfg.max_matrix_ops {
            (kw, kh) = (1, 1);
        }
        if self.cost + estimate(kw, kh, out_channels) > self.cfg.max_matrix_ops {
            out_channels = 1;
        }
        let padding = self.free_padding(s, kw, kh);
        let (pw, ph) = padding.unwrap_or((kw / 2, kh / 2));
        // Free padding can make a few more output pixels than the estimate, never fewer.
        self.cost += estimate(kw, kh, out_channels);
        // Strides that divide both padded extents exactly (the API's rule); the stream's own
        // stride first, as the snapshot's test uses it.
        let (sw, sh) = (s.width + 2 * pw - kw, s.height + 2 * ph - kh);
        let mut strides: Vec<u32> = (1..=self.cfg.max_stride.max(1))
            .filter(|&st| sw % st == 0 && sh % st == 0)
            .collect();
        let stride = if strided || (strides.contains(&s.stride) && self.rng.random_bool(0.7)) {
            s.stride
        } else {
            strides.retain(|&st| st == 1 || self.rng.random_bool(0.5));
            strides[self.rng.random_range(0..strides.len())]
        };
        let (out_width, out_height) = (sw / stride + 1, sh / stride + 1);
        self.net.matrices.push(Matrix::Conv {
            name: format!("k{}", self.net.matrices.len()),
            kernel_width: kw,
            kernel_height: kh,
            in_channels: s.channels,
            out_channels,
            stride,
            out_width,
            out_height,
            padding_width: padding.map(|p| p.0),
            padding_height: padding.map(|p| p.1),
        });
        let matrix = self.net.matrices.len() - 1;
        let shape = ImageShape {
            width: out_width,
            height: out_height,
            channels: out_channels,
            stride: 1,
        };
        self.push(Op::Conv { matrix, x }, Shape::Image(shape), Feed::Strong)
    }

    fn maxpool(&mut self, x: usize) -> usize {
        let s = self.image(x);
        let span = |b: &mut Builder, n: u32| match b.rng.random_range(0..5) {
            0 => n.max(1) + 1,
            _ => b.rng.random_range(1..=3),
        };
        let hspan = span(self, s.height);
        let wspan = if self.rng.random_bool(0.7) {
            hspan
        } else {
            span(self, s.width)
        };
        let shape = ImageShape {
            width: s.width.div_ceil(wspan),
            height: s.height.div_ceil(hspan),
            ..s
        };
        let f = self.feed[x];
        self.push(Op::MaxPool { hspan, wspan, x }, Shape::Image(shape), f)
    }

    fn activation(&mut self, x: usize) -> usize {
        let f = self.feed[x];
        let op = if self
            .rng
            .random_bool(self.cfg.nonlinear_share.clamp(0.0, 1.0))
        {
            if self.rng.random_bool(0.5) {
                Op::Sig { x }
            } else {
                Op::Tanh { x }
            }
        } else {
            Op::Relu { x }
        };
        self.push(op, self.shapes[x], f)
    }

    /// An element-wise join of placed `a` with: a new input, another value of the same length,
    /// or a new projection of another value to `a`'s length.
    fn join(&mut self, a: usize) -> usize {
        let n = self.vlen(a);
        let same: Vec<usize> = (0..self.shapes.len())
            .filter(|&v| v != a && self.shapes[v] == Shape::Vector(n))
            .filter(|&v| Feed::join(self.feed[a], self.feed[v]).is_some())
            .collect();
        let b = match self.rng.random_range(0..3) {
            0 if self.feed[a] == Feed::Strong => self.input_vector_of(n),
            1 if !same.is_empty() => same[self.rng.random_range(0..same.len())],
            _ => {
                let source = self.pick_vector(true).unwrap_or(a);
                self.projection(source, n)
            }
        };
        let (a, b) = if self.rng.random_bool(0.5) {
            (a, b)
        } else {
            (b, a)
        };
        let feed = Feed::join(self.feed[a], self.feed[b]).expect("joinable by construction");
        let op = match self.rng.random_range(0..3) {
            0 => Op::Add { a, b },
            1 => Op::Sub { a, b },
            _ => Op::Mul { a, b },
        };
        self.push(op, Shape::Vector(n), feed)
    }

    fn input_vector_of(&mut self, length: u32) -> usize {
        let name = format!("in{}", self.net.inputs.len());
        self.net.inputs.push(Input::Vector { name, length });
        let input = self.net.inputs.len() - 1;
        self.push(Op::Input { input }, Shape::Vector(length), Feed::Free)
    }

    /// `x` through a new matrix of height `n`.
    fn projection(&mut self, x: usize, n: u32) -> usize {
        let width = self.vlen(x);
        self.net.matrices.push(Matrix::Dense {
            name: format!("w{}", self.net.matrices.len()),
            width,
            height: n,
        });
        self.cost += tiles(width) * tiles(n);
        let matrix = self.net.matrices.len() - 1;
        self.push(Op::Mvm { matrix, x }, Shape::Vector(n), Feed::Strong)
    }

    fn output(&mut self, v: usize) {
        let name = format!("out{}", self.net.outputs.len());
        let output = match self.shapes[v] {
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
        self.users[v] += 1;
        self.net.outputs.push(output);
    }

    /// Every placed value nothing uses, and some used ones.
    fn outputs(&mut self) {
        for v in 0..self.shapes.len() {
            let placed = self.feed[v] != Feed::Free;
            if placed && (self.users[v] == 0 || self.rng.random_bool(0.1)) {
                self.output(v);
            }
        }
    }
}
