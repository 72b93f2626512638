//! Explanation by a nearby specification: the wrong output is exactly the oracle's output of
//! the same operation with one attribute changed.
//!
//! A compiler whose window arithmetic is one row off computes a convolution with its padding
//! moved by one; one that forgets the activation computes it without ReLU. Such a bug rewrites
//! many instructions at once (every load of a shifted window), so no single-instruction repair
//! explains all of its cases, and the shapes of its wrong outputs vary with the layout. The
//! *semantics* it computed do not vary: evaluating the oracle on a short catalog of variants
//! of the case and comparing with the machine's output names that cause in the user's terms,
//! for any compiler (no instruction of the program is looked at).
//!
//! A variant explains a failure only when it explains every run of the failing program: the
//! case's own and each probe's (the same program on other inputs, see `values`), so that an
//! output which matches a variant by coincidence (a ReLU that changes nothing on this input)
//! does not sign the finding.

use ndarray::ArrayD;
use pimdiff_oracle::{reference, Case, Op};

use super::values::Probe;

/// One change of the case's specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    /// One row (column) of padding moved from one side to the other: the windows read the
    /// input one row (column) off; output size unchanged. `side` is ONNX's pads index the
    /// padding is taken from (0 top, 1 left, 2 bottom, 3 right).
    PaddingMoved { side: usize },
    /// ReLU applied where the operation has none, or left out where it has one.
    ReluToggled,
    /// The bias left out.
    BiasDropped,
}

impl Variant {
    /// The cause as it appears in signatures: one label per kind of variant, whichever side
    /// (a window one row off is one bug, whether the case's first padding is at the top or on
    /// the left).
    pub(crate) fn label(self) -> &'static str {
        match self {
            Variant::PaddingMoved { .. } => {
                "computes the convolution with its padding moved by one"
            }
            Variant::ReluToggled => "computes the operation with its ReLU toggled",
            Variant::BiasDropped => "computes the operation without its bias",
        }
    }

    /// The change in words, for reports (`padding [1, 1, 1, 1] → [0, 1, 2, 1]`).
    pub(crate) fn describe(self, case: &Case) -> String {
        match (self, apply(self, case)) {
            (Variant::PaddingMoved { .. }, Some(v)) => match (&case.spec.op, &v.spec.op) {
                (Op::Conv2d(a), Op::Conv2d(b)) => {
                    format!("padding {:?} → {:?}", a.padding, b.padding)
                }
                _ => self.label().to_string(),
            },
            (Variant::ReluToggled, _) => match &case.spec.op {
                Op::Conv2d(c) if c.relu => "without ReLU".to_string(),
                Op::Mvm(m) if m.relu => "without ReLU".to_string(),
                _ => "with a ReLU the operation does not have".to_string(),
            },
            (Variant::BiasDropped, _) => "without bias".to_string(),
            (_, None) => self.label().to_string(),
        }
    }
}

/// The catalog, in a fixed order.
const CATALOG: [Variant; 6] = [
    Variant::PaddingMoved { side: 0 },
    Variant::PaddingMoved { side: 1 },
    Variant::PaddingMoved { side: 2 },
    Variant::PaddingMoved { side: 3 },
    Variant::ReluToggled,
    Variant::BiasDropped,
];

/// `case` changed by `variant` (same tensors; `None` where the variant does not apply, e.g.
/// no padding on that side, or no bias).
fn apply(variant: Variant, case: &Case) -> Option<Case> {
    let mut v = case.clone();
    v.expected = None;
    match (variant, &mut v.spec.op) {
        (Variant::PaddingMoved { side }, Op::Conv2d(c)) => {
            let opposite = (side + 2) % 4;
            c.padding[side] = c.padding[side].checked_sub(1)?;
            c.padding[opposite] += 1;
        }
        (Variant::PaddingMoved { .. }, Op::Mvm(_)) => return None,
        (Variant::ReluToggled, Op::Conv2d(c)) => c.relu = !c.relu,
        (Variant::ReluToggled, Op::Mvm(m)) => m.relu = !m.relu,
        (Variant::BiasDropped, Op::Conv2d(c)) if c.bias => {
            c.bias = false;
            v.bias = None;
        }
        (Variant::BiasDropped, Op::Mvm(m)) if m.bias => {
            m.bias = false;
            v.bias = None;
        }
        (Variant::BiasDropped, _) => return None,
    }
    Some(v)
}

/// Whether the machine's `output` of `case` is exactly the oracle's output of `variant`.
fn explains_run(variant: Variant, case: &Case, output: &ArrayD<i32>) -> bool {
    apply(variant, case)
        .and_then(|v| reference(&v).ok())
        .is_some_and(|r| r == *output)
}

/// The first variant of the catalog that explains the failing program's `output` on `case`
/// and its output on every probe that ran to an output (see the module docs).
pub(crate) fn explain(case: &Case, output: &ArrayD<i32>, probes: &[Probe]) -> Option<Variant> {
    CATALOG.into_iter().find(|&variant| {
        explains_run(variant, case, output)
            && probes.iter().all(|p| match &p.buggy {
                Some((_, out)) => explains_run(variant, &p.case, out),
                None => true,
            })
    })
}

/// The first variant of the catalog under which a refuted capacity claim holds: the compiler
/// sized the variant, not the case (a window one row off also miscounts what the windows
/// need). `refuted_for` says whether the claim is refuted for a case (see `check::refute`);
/// it must be refuted for `case` itself.
pub(crate) fn explain_claim(case: &Case, refuted_for: impl Fn(&Case) -> bool) -> Option<Variant> {
    if !refuted_for(case) {
        return None;
    }
    CATALOG
        .into_iter()
        .find(|&variant| apply(variant, case).is_some_and(|v| !refuted_for(&v)))
}

/// Whether some variant with `variant`'s label explains the failure (the minimization guard:
/// a smaller case may move its padding on another side).
pub(crate) fn explained_alike(
    variant: Variant,
    case: &Case,
    output: &ArrayD<i32>,
    probes: &[Probe],
) -> bool {
    explain(case, output, probes).is_some_and(|v| v.label() == variant.label())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimdiff_oracle::{CaseArch, CaseSpec, Conv2d};

    fn conv(padding: [usize; 4], relu: bool, bias: bool) -> Case {
        let op = Conv2d {
            in_channels: 1,
            out_channels: 1,
            kernel: [2, 2],
            stride: [1, 1],
            padding,
            dilation: [1, 1],
            groups: 1,
            bias,
            relu,
        };
        let spec = CaseSpec {
            op: Op::Conv2d(op),
            input_shape: vec![1, 1, 3, 3],
            arch: CaseArch {
                cores: 1,
                arrays_per_core: 4,
                array_rows: 16,
                array_cols: 16,
                local_memory_bytes: 1 << 16,
            },
        };
        let input =
            ArrayD::from_shape_vec(vec![1, 1, 3, 3], vec![1, -2, 3, -4, 5, -6, 7, -8, 9]).unwrap();
        let weight = ArrayD::from_shape_vec(vec![1, 1, 2, 2], vec![1, 2, 3, 4]).unwrap();
        let bias = bias.then(|| ndarray::arr1(&[-5]));
        Case::new(spec, input, weight, bias, None).unwrap()
    }

    #[test]
    fn a_shifted_window_is_explained_as_moved_padding_on_its_side() {
        let case = conv([1, 0, 0, 0], false, false);
        let moved = apply(Variant::PaddingMoved { side: 0 }, &case).unwrap();
        let out = reference(&moved).unwrap();
        assert_ne!(out, reference(&case).unwrap());
        assert_eq!(
            explain(&case, &out, &[]),
            Some(Variant::PaddingMoved { side: 0 })
        );
        assert_eq!(
            Variant::PaddingMoved { side: 0 }.describe(&case),
            "padding [1, 0, 0, 0] → [0, 0, 1, 0]"
        );
    }

    #[test]
    fn a_missing_relu_and_a_missing_bias_are_explained() {
        let case = conv([0, 0, 0, 0], true, true);
        let no_relu = reference(&apply(Variant::ReluToggled, &case).unwrap()).unwrap();
        assert_eq!(explain(&case, &no_relu, &[]), Some(Variant::ReluToggled));
        let no_bias = reference(&apply(Variant::BiasDropped, &case).unwrap()).unwrap();
        assert_eq!(explain(&case, &no_bias, &[]), Some(Variant::BiasDropped));
    }

    #[test]
    fn an_output_no_variant_computes_is_not_explained() {
        let case = conv([1, 1, 1, 1], true, true);
        let mut out = reference(&case).unwrap();
        out.iter_mut().for_each(|v| *v += 1);
        assert_eq!(explain(&case, &out, &[]), None);
    }

    #[test]
    fn a_claim_that_holds_for_moved_padding_is_explained_by_it() {
        // A stand-in for `claims::refute`: the claim holds only with the top padding at 0.
        let case = conv([1, 0, 0, 0], false, false);
        let holds_for = |c: &Case| matches!(&c.spec.op, Op::Conv2d(op) if op.padding[0] == 0);
        assert_eq!(
            explain_claim(&case, |c| !holds_for(c)),
            Some(Variant::PaddingMoved { side: 0 })
        );
        // A claim refuted for every variant (it contradicts itself) is not explained; one that
        // holds for the case itself is not refuted at all.
        assert_eq!(explain_claim(&case, |_| true), None);
        assert_eq!(explain_claim(&case, |_| false), None);
    }

    #[test]
    fn variants_that_do_not_apply_are_skipped() {
        let case = conv([0, 0, 0, 0], false, false);
        assert!(apply(Variant::PaddingMoved { side: 2 }, &case).is_none());
        assert!(apply(Variant::BiasDropped, &case).is_none());
    }
}
