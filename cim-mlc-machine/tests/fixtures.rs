//! CIM-MLC's real output (`tests/fixtures/`, README.md there) run with known weights and input
//! at every level it wrote, against an exact reference computed here. Where a level does not
//! agree, the test pins what the machine reports: those are CIM-MLC's bugs, each explained at its
//! source line in `docs/cim-mlc-isa.md`.

use std::path::PathBuf;

use pimdiff_cim_mlc::machine::{Chip, Divergence, InputQueue, MachineOptions, RunOutcome, Writer};
use pimdiff_cim_mlc::{Flows, Layout, Level, NodeWeights, Tensor};

struct Fixture {
    flows: Flows,
    layout: Layout,
}

fn fixture(name: &str) -> Fixture {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    Fixture {
        flows: Flows::load(&dir).expect("flows load"),
        layout: Layout::load(&dir.join("layout.json")).expect("layout loads"),
    }
}

/// Small integers of both signs, no two neighbours alike: `((5i + ⌊i/7⌋ + 3·seed) mod 7) − 3`.
fn fill(n: usize, seed: usize) -> Vec<i64> {
    (0..n)
        .map(|i| ((i * 5 + i / 7 + seed * 3) % 7) as i64 - 3)
        .collect()
}

fn tensor(shape: &[usize], seed: usize) -> Tensor {
    Tensor::new(shape.to_vec(), fill(shape.iter().product(), seed)).unwrap()
}

// ---- the exact reference, in ONNX's order ----

fn conv(x: &Tensor, w: &Tensor, stride: usize, pad: usize, groups: usize) -> Tensor {
    let [n, c, h, wd] = x.shape[..] else { panic!() };
    let [oc, cg, kh, kw] = w.shape[..] else {
        panic!()
    };
    let (oh, ow) = (
        (h + 2 * pad - kh) / stride + 1,
        (wd + 2 * pad - kw) / stride + 1,
    );
    let mut out = vec![0i64; n * oc * oh * ow];
    for b in 0..n {
        for o in 0..oc {
            let g = o / (oc / groups);
            for y in 0..oh {
                for xx in 0..ow {
                    let mut acc = 0;
                    for ci in 0..cg {
                        for i in 0..kh {
                            for j in 0..kw {
                                let (iy, ix) = (
                                    (y * stride + i) as i64 - pad as i64,
                                    (xx * stride + j) as i64 - pad as i64,
                                );
                                if iy < 0 || ix < 0 || iy >= h as i64 || ix >= wd as i64 {
                                    continue;
                                }
                                let cin = g * cg + ci;
                                acc += x.values
                                    [((b * c + cin) * h + iy as usize) * wd + ix as usize]
                                    * w.values[((o * cg + ci) * kh + i) * kw + j];
                            }
                        }
                    }
                    out[((b * oc + o) * oh + y) * ow + xx] = acc;
                }
            }
        }
    }
    Tensor::new(vec![n, oc, oh, ow], out).unwrap()
}

/// `x [M, N] · m [N, K]`.
fn matmul(x: &Tensor, m: &Tensor) -> Vec<i64> {
    let (rows, k) = (m.shape[0], m.shape[1]);
    x.values
        .chunks(rows)
        .flat_map(|r| {
            (0..k).map(move |c| (0..rows).map(|i| r[i] * m.values[i * k + c]).sum::<i64>())
        })
        .collect()
}

fn relu(t: &Tensor) -> Tensor {
    Tensor::new(
        t.shape.clone(),
        t.values.iter().map(|v| (*v).max(0)).collect(),
    )
    .unwrap()
}

fn maxpool2(t: &Tensor) -> Tensor {
    let [n, c, h, w] = t.shape[..] else { panic!() };
    let mut out = Vec::new();
    for plane in t.values.chunks(h * w).take(n * c) {
        for y in 0..h / 2 {
            for x in 0..w / 2 {
                let at = |i: usize, j: usize| plane[(2 * y + i) * w + 2 * x + j];
                out.push(at(0, 0).max(at(0, 1)).max(at(1, 0)).max(at(1, 1)));
            }
        }
    }
    Tensor::new(vec![n, c, h / 2, w / 2], out).unwrap()
}

// ---- running ----

fn options(queue: InputQueue, exact: bool) -> MachineOptions {
    MachineOptions {
        input_queue: queue,
        exact_crossbar_ranges: exact,
        ..MachineOptions::default()
    }
}

fn values(run: &RunOutcome) -> Vec<Option<i64>> {
    run.finished()
        .unwrap_or_else(|| panic!("the run did not finish: {run}"))
        .outputs[0]
        .values
        .clone()
}

fn all(t: &Tensor) -> Vec<Option<i64>> {
    t.values.iter().map(|v| Some(*v)).collect()
}

#[test]
fn conv1_tiny() {
    let f = fixture("conv1-tiny");
    let (x, w) = (tensor(&[1, 3, 8, 8], 1), tensor(&[8, 3, 3, 3], 2));
    let expect = all(&conv(&x, &w, 1, 1, 1));
    let chip = |o| {
        Chip::builder(&f.layout, &f.flows)
            .input("input", x.clone())
            .weights("conv0", NodeWeights::conv(w.clone(), None))
            .options(o)
            .build()
            .unwrap()
    };
    let strict = chip(MachineOptions::default());
    assert_eq!(values(&strict.run(Level::Core)), expect);
    assert_eq!(values(&strict.run(Level::Crossbar)), expect);
    // WordlineWise.py:282 marks no crossbar busy (`xb_occupation_update(…, x, x, …)`: an empty
    // range), so every window of the layer is loaded at cycle 1, before any activation.
    assert_eq!(
        strict.run(Level::Wordline).fault().unwrap().to_string(),
        "wordline line 6 `load - ['pad-9', [3, 10]] - [0, 0] - None` (node 0 `conv0`): loads \
         crossbar 0 while 2 earlier load(s) (the first at line 2) wait unread: the crossbar \
         cannot hold them"
    );
    let unbounded = chip(options(InputQueue::Unbounded, true));
    assert_eq!(values(&unbounded.run(Level::Wordline)), expect);
}

#[test]
fn gemm_puma_like() {
    let f = fixture("gemm-puma-like");
    let (x, b) = (tensor(&[1, 32], 3), tensor(&[32, 10], 4));
    let expect: Vec<Option<i64>> = matmul(&x, &b).into_iter().map(Some).collect();
    let chip = |o| {
        Chip::builder(&f.layout, &f.flows)
            .input("input", x.clone())
            .weights("gemm0", NodeWeights::gemm(b.clone(), false, None))
            .options(o)
            .build()
            .unwrap()
    };
    let strict = chip(MachineOptions::default());
    assert_eq!(values(&strict.run(Level::Core)), expect);
    assert_eq!(values(&strict.run(Level::Wordline)), expect);
    // CrossbarWise.py:331, :335 name `[dst, dst + xbr·xbc]`: one crossbar more than the weights.
    assert_eq!(
        strict.run(Level::Crossbar).fault().unwrap().to_string(),
        "crossbar line 2 `CIM.read_xb - [0, 1]` (node 0 `gemm0`): names 2 crossbars; the node's \
         weights occupy 1 (xb_num)"
    );
    let lenient = chip(options(InputQueue::Hardware, false));
    assert_eq!(values(&lenient.run(Level::Crossbar)), expect);
}

#[test]
fn gemm_example_reads_past_its_input_at_the_wordline_level() {
    let f = fixture("gemm-example");
    let (x, b) = (tensor(&[1, 32], 3), tensor(&[32, 10], 4));
    let expect: Vec<Option<i64>> = matmul(&x, &b).into_iter().map(Some).collect();
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("gemm0", NodeWeights::gemm(b, false, None))
        .build()
        .unwrap();
    assert_eq!(values(&chip.run(Level::Core)), expect);
    // WordlineWise.py:369-371: slice k of 64 rows loads from `ts + k·64` whatever the 32 inputs.
    assert_eq!(
        chip.run(Level::Wordline).fault().unwrap().to_string(),
        "wordline line 8 `load - 64 - [0, 0] - 32` (node 0 `gemm0`): reads global buffer address \
         64, which nothing wrote"
    );
}

#[test]
fn conv_relu_pool_tiny() {
    let f = fixture("conv-relu-pool-tiny");
    let (x, w) = (tensor(&[1, 4, 8, 8], 5), tensor(&[8, 4, 3, 3], 6));
    let expect = all(&maxpool2(&relu(&conv(&x, &w, 1, 1, 1))));
    let chip = |o| {
        Chip::builder(&f.layout, &f.flows)
            .input("input", x.clone())
            .weights("conv0", NodeWeights::conv(w.clone(), None))
            .options(o)
            .build()
            .unwrap()
    };
    let strict = chip(MachineOptions::default());
    assert_eq!(values(&strict.run(Level::Core)), expect);
    assert_eq!(values(&strict.run(Level::Crossbar)), expect);
    assert_eq!(strict.run(Level::Wordline).kind(), "fault");
    assert_eq!(
        values(&chip(options(InputQueue::Unbounded, true)).run(Level::Wordline)),
        expect
    );
}

#[test]
fn two_convs_example_pipelines_the_second_convolution() {
    let f = fixture("two-convs-example");
    let (x, w0, w1) = (
        tensor(&[1, 3, 8, 8], 7),
        tensor(&[8, 3, 3, 3], 8),
        tensor(&[4, 8, 3, 3], 9),
    );
    let expect = all(&conv(&relu(&conv(&x, &w0, 1, 1, 1)), &w1, 1, 1, 1));
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("conv0", NodeWeights::conv(w0, None))
        .weights("conv1", NodeWeights::conv(w1, None))
        .options(options(InputQueue::Unbounded, true))
        .build()
        .unwrap();
    assert_eq!(values(&chip.run(Level::Core)), expect);
    assert_eq!(values(&chip.run(Level::Crossbar)), expect);
    // conv1's windows of padding only are scheduled at cycle 2, long before the others: only
    // their addresses say which pixel each of the rest is for.
    assert_eq!(values(&chip.run(Level::Wordline)), expect);
}

#[test]
fn add_branches_wide() {
    let f = fixture("add-branches-wide");
    let (x, wa, wb) = (
        tensor(&[1, 3, 8, 8], 10),
        tensor(&[4, 3, 3, 3], 11),
        tensor(&[4, 3, 3, 3], 12),
    );
    let (a, b) = (conv(&x, &wa, 1, 1, 1), conv(&x, &wb, 1, 1, 1));
    let sum: Vec<i64> = a.values.iter().zip(&b.values).map(|(p, q)| p + q).collect();
    let expect: Vec<Option<i64>> = sum.iter().map(|v| Some(*v)).collect();
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("conv_a", NodeWeights::conv(wa, None))
        .weights("conv_b", NodeWeights::conv(wb, None))
        .options(options(InputQueue::Unbounded, true))
        .build()
        .unwrap();
    assert_eq!(values(&chip.run(Level::Core)), expect);
    assert_eq!(values(&chip.run(Level::Crossbar)), expect);
    // WordlineWise.py:516 takes the destination as `memoryaddr[1]`, the second operand's
    // address (640: conv_b's result), where the crossbar level takes `memoryaddr[-1]` (896).
    let run = chip.run(Level::Wordline);
    assert_eq!(values(&run), vec![None; 256]);
    let at_640 = run.finished().unwrap().buffer.snapshot(640, 256);
    let hwc = Tensor::new(vec![1, 4, 8, 8], sum).unwrap().buffer_order();
    assert_eq!(at_640, hwc.into_iter().map(Some).collect::<Vec<_>>());
}

#[test]
fn flatten_gemm_example() {
    let f = fixture("flatten-gemm-example");
    let (x, w, wg, bg) = (
        tensor(&[1, 3, 4, 4], 13),
        tensor(&[4, 3, 3, 3], 14),
        tensor(&[5, 64], 15),
        tensor(&[5], 16),
    );
    let c = conv(&x, &w, 1, 1, 1);
    let flat = Tensor::new(vec![1, 64], c.values).unwrap();
    let mut m = vec![0; 64 * 5];
    for o in 0..5 {
        for i in 0..64 {
            m[i * 5 + o] = wg.values[o * 64 + i];
        }
    }
    // The Gemm's bias is handed over and, as CIM-MLC reads it nowhere, never added.
    let expect: Vec<Option<i64>> = matmul(&flat, &Tensor::new(vec![64, 5], m).unwrap())
        .into_iter()
        .map(Some)
        .collect();
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("conv0", NodeWeights::conv(w, None))
        .weights("gemm0", NodeWeights::gemm(wg, true, Some(bg)))
        .build()
        .unwrap();
    assert_eq!(values(&chip.run(Level::Core)), expect);
    // The Flatten is in layout.json's transform table at a cycle no printed category has
    // (CrossbarWise.py:789-797): the Gemm loads what nothing wrote.
    assert_eq!(
        chip.run(Level::Crossbar).fault().unwrap().to_string(),
        "crossbar line 49 `load - 112 - [4, 5] - 64` (node 2 `gemm0`): reads global buffer \
         address 112, which nothing wrote"
    );
}

#[test]
fn depthwise_tiny() {
    let f = fixture("depthwise-tiny");
    let (x, w) = (tensor(&[1, 4, 8, 8], 17), tensor(&[4, 1, 3, 3], 18));
    let expect = all(&conv(&x, &w, 1, 1, 4));
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("dw0", NodeWeights::conv(w, None))
        .options(options(InputQueue::Unbounded, true))
        .build()
        .unwrap();
    // A dense [k·k·C_in, C_out] mapping that ignores `group` computes the grouped convolution
    // when it holds the dense-equivalent kernel.
    assert_eq!(values(&chip.run(Level::Core)), expect);
    assert_eq!(values(&chip.run(Level::Crossbar)), expect);
    // WordlineRemap.py:33 counts weight blocks of the initializer's own [C_out, k·k] matrix
    // (`weight_block` [1, 1]) while the windows are k·k·C_in = 36 rows: rows 16-35 of every
    // window meet no block, and no pixel is ever complete.
    assert_eq!(values(&chip.run(Level::Wordline)), vec![None; 256]);
}

#[test]
fn the_localizer_names_the_first_node_that_differs_and_its_writer() {
    // conv, Relu, MaxPool all agree at the core level: each checked after its last line, Relu's
    // result before the pooling overwrites it in place.
    let f = fixture("conv-relu-pool-tiny");
    let (x, w) = (tensor(&[1, 4, 8, 8], 5), tensor(&[8, 4, 3, 3], 6));
    let (c, r) = (conv(&x, &w, 1, 1, 1), relu(&conv(&x, &w, 1, 1, 1)));
    let p = maxpool2(&r);
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("conv0", NodeWeights::conv(w, None))
        .build()
        .unwrap();
    for level in [Level::Core, Level::Crossbar] {
        let mut loc = chip
            .localizer(level, &[("conv0", &c), ("relu0", &r), ("pool0", &p)])
            .unwrap();
        assert!(chip.run_observed(level, &mut loc).finished().is_some());
        assert_eq!(
            (loc.agreed.as_slice(), &loc.divergence),
            (&[0, 1, 2][..], &None),
            "{level}"
        );
    }

    // With the Gemm's bias in the reference: the Gemm differs, written by its one line.
    let f = fixture("flatten-gemm-example");
    let (x, w, wg, bg) = (
        tensor(&[1, 3, 4, 4], 13),
        tensor(&[4, 3, 3, 3], 14),
        tensor(&[5, 64], 15),
        tensor(&[5], 16),
    );
    let c = conv(&x, &w, 1, 1, 1);
    let flat = Tensor::new(vec![1, 64], c.values.clone()).unwrap();
    let y: Vec<i64> = (0..5)
        .map(|o| {
            (0..64)
                .map(|i| flat.values[i] * wg.values[o * 64 + i])
                .sum::<i64>()
                + bg.values[o]
        })
        .collect();
    let y = Tensor::new(vec![1, 5], y).unwrap();
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("conv0", NodeWeights::conv(w, None))
        .weights("gemm0", NodeWeights::gemm(wg, true, Some(bg.clone())))
        .build()
        .unwrap();
    let mut loc = chip
        .localizer(
            Level::Core,
            &[("conv0", &c), ("flatten0", &flat), ("gemm0", &y)],
        )
        .unwrap();
    let _ = chip.run_observed(Level::Core, &mut loc);
    assert_eq!(loc.agreed, vec![0, 1]);
    let wrong = bg.values.iter().filter(|b| **b != 0).count();
    assert_eq!(
        loc.divergence,
        Some(Divergence {
            node: 2,
            after_line: 7,
            index: 0,
            addr: 176,
            got: Some(y.values[0] - bg.values[0]),
            want: y.values[0],
            writer: Some(Writer::Line(7)),
            wrong,
        })
    );
    assert_ne!(bg.values[0], 0, "the first element differs");
    assert_eq!(
        chip.localizer(Level::Core, &[("nope", &y)])
            .unwrap_err()
            .to_string(),
        "`nope` is not a node of layout.json"
    );

    // The wordline level's Add writes nothing where its result should be.
    let f = fixture("add-branches-wide");
    let (x, wa, wb) = (
        tensor(&[1, 3, 8, 8], 10),
        tensor(&[4, 3, 3, 3], 11),
        tensor(&[4, 3, 3, 3], 12),
    );
    let (a, b) = (conv(&x, &wa, 1, 1, 1), conv(&x, &wb, 1, 1, 1));
    let sum = Tensor::new(
        a.shape.clone(),
        a.values.iter().zip(&b.values).map(|(p, q)| p + q).collect(),
    )
    .unwrap();
    let chip = Chip::builder(&f.layout, &f.flows)
        .input("input", x)
        .weights("conv_a", NodeWeights::conv(wa, None))
        .weights("conv_b", NodeWeights::conv(wb, None))
        .options(options(InputQueue::Unbounded, true))
        .build()
        .unwrap();
    let mut loc = chip
        .localizer(
            Level::Wordline,
            &[("conv_a", &a), ("conv_b", &b), ("add0", &sum)],
        )
        .unwrap();
    let _ = chip.run_observed(Level::Wordline, &mut loc);
    let d = loc.divergence.unwrap();
    assert_eq!(
        (loc.agreed, d.node, d.addr, d.got, d.writer, d.wrong),
        (vec![0, 1], 2, 896, None, None, 256)
    );
}

#[test]
fn every_fixture_prints_back_from_its_schedules_and_attributes_each_line() {
    for name in [
        "conv1-tiny",
        "gemm-puma-like",
        "conv-relu-pool-tiny",
        "add-branches-wide",
        "two-convs-example",
        "depthwise-tiny",
    ] {
        let f = fixture(name);
        let weights: Vec<(String, NodeWeights)> = f
            .layout
            .nodes
            .iter()
            .filter(|n| n.is_weighted())
            .map(|n| {
                let ifm = n.ints("ifmsize").unwrap();
                let ofm = n.ints("ofmsize").unwrap();
                let w = if n.op_type == "Conv" {
                    let k = n.ints("kernel_shape").unwrap()[0] as usize;
                    let group = n.int("group").unwrap_or(1) as usize;
                    NodeWeights::conv(
                        tensor(&[ofm[1] as usize, ifm[1] as usize / group, k, k], 0),
                        None,
                    )
                } else {
                    NodeWeights::matmul(tensor(
                        &[*ifm.last().unwrap() as usize, *ofm.last().unwrap() as usize],
                        0,
                    ))
                };
                (n.name.clone(), w)
            })
            .collect();
        let input = &f.layout.inputs[0];
        let shape: Vec<usize> = input.shape.iter().map(|d| d.unwrap() as usize).collect();
        let mut b = Chip::builder(&f.layout, &f.flows).input(&input.name, tensor(&shape, 1));
        for (n, w) in weights {
            b = b.weights(&n, w);
        }
        let chip = b.build().unwrap_or_else(|e| panic!("{name}: {e}"));
        for level in [Level::Crossbar, Level::Wordline] {
            let flow = f.flows.get(level).unwrap();
            for (i, line) in flow.lines.iter().enumerate() {
                assert_eq!(
                    chip.origin(level, i).is_some(),
                    line.op().is_some(),
                    "{name} {level} line {}",
                    line.number
                );
            }
        }
    }
}
