//! Mutations of tensor cases for coverage-guided hunts (`engine::guided`): one parameter of
//! the operator, the batch, the input's size or the architecture perturbed, one tensor
//! refilled, or the operator of one case spliced with the architecture of another.
//!
//! Validity by checking, as in the generator's callers: a mutant is built with [`Case::new`]
//! (spec, tensor shapes, exact result inside int32) and kept inside the generator's bounds
//! ([`GenConfig`]), so a mutated case is a case the generator could have drawn, apart from
//! the combination. Tensors whose shape a mutation changes are drawn again from the mutation's
//! random stream; the others are kept.

use ndarray::{Array1, ArrayD, IxDyn};
use pimdiff_oracle::{Case, CaseSpec, Op};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::generate::GenConfig;

/// A valid variant of `case` (see the module docs), spliced with `other` when given; `None`
/// when the drawn mutation gives no valid case.
pub fn mutate_case(
    cfg: &GenConfig,
    case: &Case,
    other: Option<&Case>,
    rng: &mut ChaCha8Rng,
) -> Option<Case> {
    let cfg = cfg.sanitized();
    let mut spec = case.spec.clone();
    let mut refill = [false; 2];
    let mut arch_moved = true;
    match other {
        Some(o) => spec.arch = o.spec.arch,
        None => match rng.random_range(0..8) {
            0..=3 => {
                perturb_operator(&cfg, &mut spec, rng)?;
                arch_moved = false;
            }
            4 => {
                perturb_input(&cfg, &mut spec, rng);
                arch_moved = false;
            }
            5 | 6 => perturb_arch(&cfg, &mut spec, rng),
            _ => refill[rng.random_range(0..2)] = true,
        },
    }
    if spec == case.spec && refill == [false; 2] {
        return None;
    }
    // A mutant fits its chip as often as the case it comes from: the generator overcommits
    // a share of cases on purpose, and mutants must not add declines beyond it.
    if fits(&case.spec) && !fits(&spec) {
        if arch_moved {
            return None;
        }
        grow_to_fit(&cfg, &mut spec);
    }
    // A refill can draw the values the tensor had (all zero again, say).
    build(case, spec, refill, rng).filter(|m| m != case)
}

/// Crossbars the channel-wise lowering needs without weight skipping: per group, every
/// (input tile, output tile, kernel position); for an MVM, every (input tile, output tile).
fn arrays_needed(spec: &CaseSpec) -> usize {
    let (rows, cols) = (spec.arch.array_rows.max(1), spec.arch.array_cols.max(1));
    match &spec.op {
        Op::Conv2d(c) => {
            let g = c.groups.max(1);
            let (cpg, kpg) = (c.in_channels / g, c.out_channels / g);
            g * cpg.div_ceil(rows) * kpg.div_ceil(cols) * c.kernel[0] * c.kernel[1]
        }
        Op::Mvm(m) => m.in_features.div_ceil(rows) * m.out_features.div_ceil(cols),
    }
}

fn fits(spec: &CaseSpec) -> bool {
    arrays_needed(spec) <= spec.arch.cores * spec.arch.arrays_per_core
}

/// More arrays per core, then more cores, within the generator's bounds, until `spec` fits
/// (or the bounds are reached: then it is declined, as an overcommitted case is).
fn grow_to_fit(cfg: &GenConfig, spec: &mut CaseSpec) {
    let needed = arrays_needed(spec);
    let a = &mut spec.arch;
    a.arrays_per_core = needed.div_ceil(a.cores.max(1)).clamp(
        a.arrays_per_core,
        cfg.max_arrays_per_core.max(a.arrays_per_core),
    );
    if a.cores * a.arrays_per_core < needed {
        a.cores = needed
            .div_ceil(a.arrays_per_core.max(1))
            .clamp(a.cores, cfg.max_cores.max(a.cores));
    }
}

/// The case of `spec`, keeping `case`'s tensors whose shapes still fit (unless `refill`
/// says to draw input or weight again).
fn build(case: &Case, spec: CaseSpec, refill: [bool; 2], rng: &mut ChaCha8Rng) -> Option<Case> {
    let input = if refill[0] || case.input.shape() != spec.input_shape.as_slice() {
        fill(rng, &spec.input_shape)
    } else {
        case.input.clone()
    };
    let weight_shape = spec.weight_shape();
    let weight = if refill[1] || case.weight.shape() != weight_shape.as_slice() {
        fill(rng, &weight_shape)
    } else {
        case.weight.clone()
    };
    let bias = spec.bias_len().map(|len| match &case.bias {
        Some(b) if b.len() == len => b.clone(),
        _ => Array1::from_iter((0..len).map(|_| rng.random_range(-1000..=1000))),
    });
    Case::new(spec, input, weight, bias, None).ok()
}

/// Values in one of the generator's styles: uniform, small, the extremes, or zero.
fn fill(rng: &mut ChaCha8Rng, shape: &[usize]) -> ArrayD<i8> {
    let style = rng.random_range(0..4);
    let len: usize = shape.iter().product();
    let values: Vec<i8> = (0..len)
        .map(|_| match style {
            0 => rng.random::<i8>(),
            1 => rng.random_range(-2..=2),
            2 => {
                if rng.random_bool(0.5) {
                    -128
                } else {
                    127
                }
            }
            _ => 0,
        })
        .collect();
    ArrayD::from_shape_vec(IxDyn(shape), values).unwrap_or_else(|_| ArrayD::zeros(IxDyn(shape)))
}

/// `now` moved to an edge or a neighbour, within `1..=max`.
fn near(rng: &mut ChaCha8Rng, now: usize, max: usize) -> usize {
    let v = match rng.random_range(0..5) {
        0 => 1,
        1 => max,
        2 => now.saturating_sub(1),
        3 => now + 1,
        _ => rng.random_range(1..=max.max(1)),
    };
    v.clamp(1, max.max(1))
}

/// One operator parameter perturbed (the input's channel count follows a conv's `C`, an
/// MVM's features).
fn perturb_operator(cfg: &GenConfig, spec: &mut CaseSpec, rng: &mut ChaCha8Rng) -> Option<()> {
    match &mut spec.op {
        Op::Conv2d(c) => match rng.random_range(0..10) {
            0 => {
                c.in_channels = near(rng, c.in_channels, cfg.max_channels);
                spec.input_shape[1] = c.in_channels;
                c.groups = 1;
            }
            1 => {
                c.out_channels = near(rng, c.out_channels, cfg.max_channels);
                c.groups = 1;
            }
            2 => c.kernel[rng.random_range(0..2)] = near(rng, c.kernel[0], cfg.max_kernel),
            3 => c.stride[rng.random_range(0..2)] = near(rng, c.stride[0], 3),
            4 => c.padding[rng.random_range(0..4)] = rng.random_range(0..=cfg.max_kernel),
            5 => c.dilation[rng.random_range(0..2)] = rng.random_range(1..=2),
            6 => {
                // Depthwise, or one of the divisors of both channel counts, or plain.
                let g = match rng.random_range(0..3) {
                    0 => c.in_channels,
                    1 => 1,
                    _ => (1..=c.in_channels)
                        .rev()
                        .find(|&g| {
                            c.in_channels.is_multiple_of(g) && c.out_channels.is_multiple_of(g)
                        })
                        .unwrap_or(1),
                };
                if g == c.in_channels && !c.out_channels.is_multiple_of(g) {
                    c.out_channels = g;
                }
                c.groups = g;
            }
            7 => c.bias = !c.bias,
            8 => c.relu = !c.relu,
            _ => c.padding = [0; 4],
        },
        Op::Mvm(m) => match rng.random_range(0..4) {
            0 => {
                m.in_features = near(rng, m.in_features, cfg.max_channels);
                spec.input_shape[1] = m.in_features;
            }
            1 => m.out_features = near(rng, m.out_features, cfg.max_channels),
            2 => m.bias = !m.bias,
            _ => m.relu = !m.relu,
        },
    }
    Some(())
}

/// The batch, or a conv's input height or width.
fn perturb_input(cfg: &GenConfig, spec: &mut CaseSpec, rng: &mut ChaCha8Rng) {
    let conv = matches!(spec.op, Op::Conv2d(_));
    match (conv, rng.random_range(0..3)) {
        (true, 1) => spec.input_shape[2] = near(rng, spec.input_shape[2], cfg.max_spatial),
        (true, 2) => spec.input_shape[3] = near(rng, spec.input_shape[3], cfg.max_spatial),
        _ => spec.input_shape[0] = near(rng, spec.input_shape[0], cfg.max_batch),
    }
}

/// One architecture parameter: cores, arrays per core, array rows or columns, local memory.
fn perturb_arch(cfg: &GenConfig, spec: &mut CaseSpec, rng: &mut ChaCha8Rng) {
    let a = &mut spec.arch;
    match rng.random_range(0..5) {
        0 => a.cores = near(rng, a.cores, cfg.max_cores),
        1 => a.arrays_per_core = near(rng, a.arrays_per_core, cfg.max_arrays_per_core),
        2 => a.array_rows = near(rng, a.array_rows, cfg.max_array_dim),
        3 => a.array_cols = near(rng, a.array_cols, cfg.max_array_dim),
        _ => {
            a.local_memory_bytes = if rng.random_bool(0.5) {
                cfg.max_local_memory_bytes
            } else {
                rng.random_range(64..=cfg.max_local_memory_bytes.max(64))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::generate::case_from_seed;

    #[test]
    fn mutants_are_valid_cases_that_differ() {
        let cfg = GenConfig::default();
        let mut made = 0;
        for seed in 0..300u64 {
            let case = case_from_seed(&cfg, seed);
            let other = case_from_seed(&cfg, seed + 10_000);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let with = (seed % 4 == 0).then_some(&other);
            if let Some(m) = mutate_case(&cfg, &case, with, &mut rng) {
                assert!(m.check_shapes().is_ok());
                assert_ne!(m, case, "seed {seed}");
                made += 1;
            }
        }
        // Most draws give a valid mutant (the engine retries the others).
        assert!(made >= 180, "only {made} of 300 draws gave a mutant");
    }

    #[test]
    fn a_mutant_of_one_stream_is_the_same() {
        let cfg = GenConfig::default();
        let case = case_from_seed(&cfg, 5);
        let a = mutate_case(&cfg, &case, None, &mut ChaCha8Rng::seed_from_u64(9));
        let b = mutate_case(&cfg, &case, None, &mut ChaCha8Rng::seed_from_u64(9));
        assert_eq!(a, b);
    }
}
