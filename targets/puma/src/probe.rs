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

/// The probe of `net`, or `None` when no value can be added as an output.
pub fn probe_network(net: &PumaNetwork) -> Option<PumaNetwork> {
    let shapes = net.check().ok()?;
    let mut fed = vec![false; net.values.len()];
    for (i, op) in net.values.iter().enumerate() {
        fed[i] =
            matches!(op, Op::Mvm { .. } | Op::Conv { .. }) || op.operands().iter().any(|&o| fed[o]);
    }
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
