//! PIMCOMP-NN as a coverage-guided target (`engine::guided`): the feedback of a compiled
//! network, its mutations ([`super::mutate`]) and its corpus entry (`network.json`).
//!
//! **Feedback.** Until a coverage build of PIMCOMP-NN reports the branches a compile took,
//! the edges are a *stand-in*: features of the network as the compiler's frontend and
//! partitioner see it (each layer's kind with its parameters in buckets, each provider →
//! consumer pair of kinds, the input's shape), and of what the compiles showed (per pipeline:
//! the outcome kind, the finding signature, the abstracted message, the crash frames inside
//! PIMCOMP-NN). A real per-case edge map plugs in by filling [`CaseResult`]'s run with it and
//! returning those ids from [`GuidedTarget::feedback`] instead (or beside: the ids only need
//! to be stable within a hunt).

use std::path::Path;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::case::CaseResult;
use super::mutate::mutate_network;
use super::network::{NetOp, Network, Shape};
use super::{NetCase, PimcompTarget};
use pimdiff_engine::finding::abstract_message;
use pimdiff_engine::hunt::{CorpusError, Edges, GuidedTarget, Target};

/// A corpus entry's network file.
pub const NETWORK_JSON: &str = "network.json";

/// What `network.json` holds: the network and the case seed its check and pinned `time()`
/// come from.
#[derive(Serialize, Deserialize)]
struct EntryFile {
    seed: u64,
    network: Network,
}

/// The largest number a loaded network may carry in any parameter, and its most nodes:
/// far above anything generated, low enough that no shape computation overflows.
const LOADED_MAX_PARAM: usize = 4096;
const LOADED_MAX_NODES: usize = 256;

impl GuidedTarget for PimcompTarget {
    fn feedback_source(&self) -> String {
        match self.cases.setup.coverage {
            Some(_) => "PIMCOMP-NN's edges (the --coverage build's edge map)".into(),
            None => "stand-in: network and outcome features (not PIMCOMP-NN's branch coverage; \
                     hunt with --coverage and a coverage build for its edges)"
                .into(),
        }
    }

    /// The compiler's own edges when the hunt measures them (`--coverage`); otherwise the
    /// stand-in features of the network and its outcomes.
    fn feedback(&self, case: &NetCase, run: &CaseResult) -> Option<Edges> {
        if self.cases.setup.coverage.is_some() {
            return self.edges(run);
        }
        let mut features = network_features(&case.network);
        for o in run.outcomes.iter().map(|(o, _)| o).chain(&run.cross) {
            let p = o.pipeline.name();
            features.push(format!("{p} outcome {:?}", o.kind));
            for s in o.signatures() {
                features.push(format!("{p} signature {s}"));
            }
            features.push(format!("{p} detail {}", abstract_message(&o.detail)));
            for f in o.frames.iter().filter(|f| f.own).take(3) {
                features.push(format!("{p} frame {}", f.function));
            }
        }
        Some(Edges::from_features(features))
    }

    fn mutate(
        &self,
        case: &NetCase,
        other: Option<&NetCase>,
        rng: &mut ChaCha8Rng,
    ) -> Option<NetCase> {
        let network = mutate_network(
            &self.cases.net,
            &case.network,
            other.map(|o| &o.network),
            rng,
        )?;
        Some(NetCase {
            network,
            seed: rand::Rng::random(rng),
        })
    }

    fn write_case(&self, case: &NetCase, dir: &Path) -> Result<(), pimdiff_atomic::Error> {
        let entry = EntryFile {
            seed: case.seed,
            network: case.network.clone(),
        };
        let text = serde_json::to_string_pretty(&entry).unwrap_or_default() + "\n";
        pimdiff_atomic::write_file(&dir.join(NETWORK_JSON), text.as_bytes())
    }

    fn read_case(&self, dir: &Path) -> Result<NetCase, CorpusError> {
        let path = dir.join(NETWORK_JSON);
        let bytes = pimdiff_input::read(&path, pimdiff_input::limits::MAX_CASE_JSON_BYTES)
            .map_err(|e| CorpusError::new(&path, e.to_string()))?;
        let entry: EntryFile = serde_json::from_slice(&bytes)
            .map_err(|e| CorpusError::new(&path, format!("not a corpus network: {e}")))?;
        check_loaded(&entry.network).map_err(|m| CorpusError::new(&path, m))?;
        Ok(NetCase {
            network: entry.network,
            seed: entry.seed,
        })
    }
}

/// Refuses a loaded network that is not well formed, or whose numbers are large enough to
/// overflow a shape computation or to stall a compile.
fn check_loaded(net: &Network) -> Result<(), String> {
    if !(2..=LOADED_MAX_NODES).contains(&net.nodes.len()) {
        return Err(format!(
            "{} nodes (a corpus network has 2 to {LOADED_MAX_NODES})",
            net.nodes.len()
        ));
    }
    for (i, n) in net.nodes.iter().enumerate() {
        let numbers: Vec<usize> = match &n.op {
            NetOp::Input {
                channels,
                height,
                width,
            } => vec![*channels, *height, *width],
            NetOp::Conv(c) => [
                &[c.out_channels, c.group][..],
                &c.kernel,
                &c.stride,
                &c.pads,
            ]
            .concat(),
            NetOp::Pool(p) => [&p.kernel[..], &p.stride, &p.pads].concat(),
            NetOp::Fc { out, .. } => vec![*out],
            _ => Vec::new(),
        };
        if numbers.iter().any(|&v| v > LOADED_MAX_PARAM) || n.inputs.iter().any(|&p| p >= i) {
            return Err(format!(
                "node {i} ({}): a parameter above {LOADED_MAX_PARAM} or a provider that is not an earlier node",
                n.name
            ));
        }
    }
    net.shapes()
        .map(|_| ())
        .map_err(|e| format!("not a well-formed network: {e}"))
}

/// `v` in power-of-two buckets (0, 1, 2, 3–4, 5–8, …), with the tile edges 127/128/129 apart.
fn bucket(v: usize) -> String {
    match v {
        127..=129 => format!("={v}"),
        _ => format!("b{}", usize::BITS - v.saturating_sub(1).leading_zeros()),
    }
}

/// The stand-in's network features (see the module docs).
pub fn network_features(net: &Network) -> Vec<String> {
    let shapes = net.shapes().unwrap_or_default();
    let kind = |i: usize| net.nodes[i].op.operation();
    let mut out = Vec::new();
    for (i, n) in net.nodes.iter().enumerate() {
        let input = n.inputs.first().and_then(|&p| shapes.get(p).copied());
        out.push(layer_feature(&n.op, input));
        for &p in &n.inputs {
            out.push(format!("{} -> {}", kind(p), kind(i)));
        }
        if n.inputs.len() > 1 {
            out.push(format!("{} fan-in {}", kind(i), n.inputs.len()));
        }
    }
    out.push(format!("nodes {}", bucket(net.nodes.len())));
    out
}

fn layer_feature(op: &NetOp, input: Option<Shape>) -> String {
    let shape = match input {
        Some(Shape::Spatial { c, h, w }) => format!("c{} h{} w{}", bucket(c), bucket(h), bucket(w)),
        Some(Shape::Flat(f)) => format!("f{}", bucket(f)),
        None => String::new(),
    };
    let detail = match op {
        NetOp::Input {
            channels,
            height,
            width,
        } => format!(
            "c{} h{} w{}",
            bucket(*channels),
            bucket(*height),
            bucket(*width)
        ),
        NetOp::Conv(c) => format!(
            "k{}x{} s{}x{} pad{} g{} cout{} bias{} relu{}",
            c.kernel[0],
            c.kernel[1],
            c.stride[0],
            c.stride[1],
            match c.pads {
                [0, 0, 0, 0] => "0",
                [a, b, d, e] if a == b && b == d && d == e => "sym",
                _ => "asym",
            },
            match c.group {
                1 => "1".to_string(),
                g if g == c.out_channels => "dw".to_string(),
                g => bucket(g),
            },
            bucket(c.out_channels),
            c.bias,
            c.relu
        ),
        NetOp::Pool(p) => format!(
            "max{} global{} k{}x{} s{} pad{}",
            p.max,
            p.global,
            p.kernel[0],
            p.kernel[1],
            p.stride[0],
            p.pads.iter().any(|&x| x > 0)
        ),
        NetOp::Fc { out, bias, relu } => format!("out{} bias{bias} relu{relu}", bucket(*out)),
        NetOp::Clip { min, max } => format!("{min}..{max}"),
        _ => String::new(),
    };
    format!("{} {detail} | {shape}", op.operation())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::{network_from_seed, NetConfig};

    #[test]
    fn buckets() {
        let got: Vec<String> = [0, 1, 2, 3, 4, 5, 8, 9, 127, 128, 129, 130]
            .into_iter()
            .map(bucket)
            .collect();
        assert_eq!(
            got,
            ["b0", "b0", "b1", "b2", "b2", "b3", "b3", "b4", "=127", "=128", "=129", "b8"]
        );
    }

    #[test]
    fn loaded_networks_are_checked() {
        let net = network_from_seed(&NetConfig::default(), 4);
        assert_eq!(check_loaded(&net), Ok(()));
        let mut big = net.clone();
        if let NetOp::Input { channels, .. } = &mut big.nodes[0].op {
            *channels = usize::MAX;
        }
        assert_eq!(
            check_loaded(&big),
            Err(format!(
                "node 0 ({}): a parameter above 4096 or a provider that is not an earlier node",
                net.nodes[0].name
            ))
        );
        let one = Network {
            nodes: net.nodes[..1].to_vec(),
        };
        assert_eq!(
            check_loaded(&one),
            Err("1 nodes (a corpus network has 2 to 256)".to_string())
        );
    }
}
