//! The first wrong value of a mismatching network: the network compiled again with every
//! value it computes made an output (a *probe*), so that the wrong value computed earliest is
//! seen, not only the outputs downstream of it.
//!
//! A mismatch is signed by this root value's operation ([`super::outcome`]): a strided
//! convolution that reads the wrong pixels is the same bug whether its result is an output or
//! feeds a pooling, and minimization then drops what follows the root. The probe's data is
//! the original's (inputs are drawn first and weights in value order, neither depends on the
//! outputs), so its reference agrees on every shared value. The probe is a different compile
//! (more outputs, another heap layout): when it does not mismatch, the original's first wrong
//! output stands as the root.
//!
//! Values that cannot be outputs are left out: inputs themselves, values computed from inputs
//! alone (the partitioner cannot place them, `docs/puma.md`), and streams with a stride
//! above 1 (an output reads every pixel of the image, which a strided stream does not carry).

use super::network::{Op, Output, PumaNetwork, Shape};

/// Per value, whether a matrix operation computes it or one of its operands (transitively):
/// the values the partitioner can place next to a matrix (`docs/puma.md`).
fn fed_by_matrix(net: &PumaNetwork) -> Vec<bool> {
    let mut fed = vec![false; net.values.len()];
    for (i, op) in net.values.iter().enumerate() {
        fed[i] = matches!(op, Op::Mvm { .. } | Op::Conv { .. })
            || op
                .operands()
                .iter()
                .any(|&o| fed.get(o).copied().unwrap_or(false));
    }
    fed
}

/// Whether an output of `net` is computed from inputs alone (no matrix operation feeds it):
/// the partitioner places operations next to the matrices they are connected to, so it cannot
/// place such an output, and the compile aborts (`docs/puma-findings.md`, "Virtual MVMU not
/// assigned!"). A network property, read by the outcome of a compile that fails
/// ([`super::outcome`]) to tell this cause from others that fail the same way.
pub fn inputs_only_output(net: &PumaNetwork) -> bool {
    let fed = fed_by_matrix(net);
    net.outputs
        .iter()
        .any(|o| !fed.get(o.value()).copied().unwrap_or(true))
}

/// The probe of `net`, or `None` when no value can be added as an output.
pub fn probe_network(net: &PumaNetwork) -> Option<PumaNetwork> {
    let shapes = net.check().ok()?;
    let fed = fed_by_matrix(net);
    let taken: Vec<usize> = net.outputs.iter().map(Output::value).collect();
    let names: Vec<&str> = net
        .inputs
        .iter()
        .map(|i| i.name())
        .chain(net.matrices.iter().map(|m| m.name()))
        .chain(net.outputs.iter().map(|o| o.name()))
        .collect();
    let mut prefix = String::from("probe");
    while names.iter().any(|n| n.starts_with(&prefix)) {
        prefix.push('_');
    }
    let mut probe = net.clone();
    for (i, shape) in shapes.iter().enumerate() {
        if !fed[i] || taken.contains(&i) || matches!(net.values[i], Op::Input { .. }) {
            continue;
        }
        let name = format!("{prefix}{i}");
        let output = match *shape {
            Shape::Vector(length) => Output::Vector {
                name,
                length,
                value: i,
            },
            Shape::Image(s) if s.stride == 1 => Output::Image {
                name,
                width: s.width,
                height: s.height,
                channels: s.channels,
                value: i,
            },
            Shape::Image(_) => continue,
        };
        probe.outputs.push(output);
    }
    (probe.outputs.len() > net.outputs.len() && probe.check().is_ok()).then_some(probe)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{network_from_seed, PumaNetConfig};

    #[test]
    fn an_output_computed_from_inputs_alone_is_told_from_one_a_matrix_feeds() {
        use crate::network::{Input, Matrix};
        let mut net = PumaNetwork {
            model: "net".into(),
            options: Default::default(),
            inputs: vec![Input::Vector {
                name: "x".into(),
                length: 3,
            }],
            matrices: vec![Matrix::Dense {
                name: "m".into(),
                width: 3,
                height: 3,
            }],
            values: vec![
                Op::Input { input: 0 },
                Op::Mvm { matrix: 0, x: 0 },
                Op::Relu { x: 0 },
                Op::Add { a: 1, b: 2 },
            ],
            outputs: vec![Output::Vector {
                name: "y".into(),
                length: 3,
                value: 3,
            }],
        };
        // `relu(x)` alone feeds nothing placeable, but the add joins it with the product.
        assert!(!inputs_only_output(&net));
        net.outputs.push(Output::Vector {
            name: "z".into(),
            length: 3,
            value: 2,
        });
        assert!(inputs_only_output(&net));
    }

    #[test]
    fn probes_add_an_output_for_every_fed_value_and_stay_valid() {
        let cfg = PumaNetConfig::default();
        for seed in 0..40 {
            let net = network_from_seed(&cfg, seed);
            let Some(p) = probe_network(&net) else {
                continue;
            };
            assert!(p.check().is_ok(), "seed {seed}");
            assert_eq!(p.values, net.values);
            assert_eq!(&p.outputs[..net.outputs.len()], &net.outputs[..]);
            for o in &p.outputs[net.outputs.len()..] {
                assert!(o.name().starts_with("probe"));
                assert!(!matches!(net.values[o.value()], Op::Input { .. }));
            }
        }
    }
}
