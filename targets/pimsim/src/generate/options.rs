//! The in-repo compiler's options a tensor case carries: part of the case as a hunt makes,
//! minimizes and saves it.
//!
//! A hunt compiled every case with the options the thesis's compiler runs with, so the code
//! behind `--no-skip-padding` (the padded window in local memory, zeroed gather tiles),
//! `--no-weight-skipping` (all-zero crossbars kept) and an explicit `--reduction` was reached
//! only by hunts that set those flags for every case: a bug there survived every default hunt.
//! Now each case draws its options from its own seed ([`CaseOptions::draw`], a ChaCha8 stream
//! of the case seed apart from the one the case is drawn from, so `--jobs` cannot change them)
//! with the shares of [`GenConfig`]: padding skipping off in some cases, weight skipping off in
//! some, and the reduction the per-case choice picks for the generated case, fixed from then
//! on. The options travel with the case: minimization keeps them, a finding records them in
//! `finding.json` (`details.compile_options`, [`CaseOptions::FINDING_KEY`]), `repro` and
//! `replay` compile with them, and the report's compiler line names them.
//!
//! Explicit flags still win for every case ([`CaseOptions::forced_by`]): `--no-skip-padding`
//! and `--no-weight-skipping` switch an optimization off, `--reduction noc|gmem` fixes the
//! reduction. Only the in-repo compiler has options: an external compiler (the bundle protocol
//! carries no options) and an injected bug compile every case the same way.

use std::borrow::Cow;

use pimdiff_compiler::{CompileOptions, Reduction};
use pimdiff_oracle::Case;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::choices::{Choices, SeedChoices};
use super::config::GenConfig;
use crate::check::RunConfig;
use crate::compilers::CompilerUnderTest;

/// The options of the in-repo compiler one case is compiled with (its lowering is the run's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "OptionsRecord", into = "OptionsRecord")]
pub struct CaseOptions {
    /// [`CompileOptions::skip_padding`].
    pub skip_padding: bool,
    /// [`CompileOptions::weight_skipping`].
    pub weight_skipping: bool,
    /// `noc` or `gmem` once resolved for a case; `per-case` in a record that leaves it open.
    pub reduction: Reduction,
}

impl Default for CaseOptions {
    /// What a case without recorded options is compiled with: both optimizations, the
    /// per-case reduction (what every hunt did before options were drawn per case).
    fn default() -> Self {
        CaseOptions {
            skip_padding: true,
            weight_skipping: true,
            reduction: Reduction::PerCase,
        }
    }
}

impl CaseOptions {
    /// The key of `finding.json`'s `details` that holds a finding's options.
    pub const FINDING_KEY: &'static str = "compile_options";

    /// The options drawn for the case of `seed` under `cfg`: a stream of the seed that the
    /// case's own choices never use. A case whose local memory sits at a bufferization edge
    /// (`memory_edge`) is compiled without padding skipping three times as often: there the
    /// padded window is chunked and gathered, the code that padding skipping hides. The
    /// reduction is left `per-case` ([`Self::resolved`]).
    pub fn draw(cfg: &GenConfig, seed: u64, memory_edge: bool) -> CaseOptions {
        let cfg = cfg.sanitized();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(1);
        let mut c = SeedChoices::from_rng(rng);
        let no_skip_padding = if memory_edge {
            (3.0 * cfg.no_skip_padding_ratio).min(1.0)
        } else {
            cfg.no_skip_padding_ratio
        };
        CaseOptions {
            skip_padding: !c.chance(no_skip_padding),
            weight_skipping: !c.chance(cfg.no_weight_skipping_ratio),
            reduction: Reduction::PerCase,
        }
    }

    /// With a `per-case` reduction replaced by the one it picks for `case`. The pick is the
    /// compiler under test's code, run while a case is generated, outside a hunt's per-case
    /// catch: should it panic, the reduction stays `per-case` and the compile meets the panic
    /// inside the catch (see `generate::thresholds`).
    pub fn resolved(self, case: &Case) -> CaseOptions {
        CaseOptions {
            reduction: pimdiff_engine::hunt::panic::catch(|| self.reduction.for_case(case))
                .unwrap_or(self.reduction),
            ..self
        }
    }

    /// These options where `forced` (a run's own, from the command line) does not decide: an
    /// optimization it switches off stays off, a reduction other than `per-case` replaces
    /// this one.
    pub fn forced_by(self, forced: &CompileOptions) -> CaseOptions {
        CaseOptions {
            skip_padding: self.skip_padding && forced.skip_padding,
            weight_skipping: self.weight_skipping && forced.weight_skipping,
            reduction: match forced.reduction {
                Reduction::PerCase => self.reduction,
                fixed => fixed,
            },
        }
    }

    /// `options` with these in place of its optimizations and reduction (its lowering kept).
    pub fn compile_options(&self, options: &CompileOptions) -> CompileOptions {
        CompileOptions {
            skip_padding: self.skip_padding,
            weight_skipping: self.weight_skipping,
            reduction: self.reduction,
            ..*options
        }
    }

    /// The options of the in-repo compiler that every version of `run` compiles with, when
    /// every version is the plain in-repo compiler (one lowering or both): the run whose
    /// options cases may vary. `None` for an external compiler or an injected bug.
    pub fn variable_in(run: &RunConfig) -> Option<CompileOptions> {
        let versions = std::iter::once(&run.compiler).chain(run.second.as_ref());
        let mut first = None;
        for version in versions {
            match version {
                CompilerUnderTest::InRepo(o) => {
                    first.get_or_insert(*o);
                }
                _ => return None,
            }
        }
        first
    }

    /// `run` with every in-repo version compiling with these options ([`Self::forced_by`] the
    /// version's own first); other compilers are left as they are.
    pub fn apply(&self, run: &RunConfig) -> RunConfig {
        let with = |c: &CompilerUnderTest| match c {
            CompilerUnderTest::InRepo(o) => {
                CompilerUnderTest::InRepo(self.forced_by(o).compile_options(o))
            }
            other => other.clone(),
        };
        RunConfig {
            compiler: with(&run.compiler),
            second: run.second.as_ref().map(with),
            ..run.clone()
        }
    }

    /// `run` for a case carrying `options` (`None`: the run's own options).
    pub fn run_for<'a>(options: Option<&CaseOptions>, run: &'a RunConfig) -> Cow<'a, RunConfig> {
        match options {
            Some(o) => Cow::Owned(o.apply(run)),
            None => Cow::Borrowed(run),
        }
    }

    /// The record of `finding.json`'s `details` (`{"compile_options": {...}}`).
    pub fn to_details(&self) -> serde_json::Value {
        serde_json::json!({ Self::FINDING_KEY: self })
    }

    /// The options recorded in a `finding.json`'s `details`: `Ok(None)` when there are none
    /// (a finding saved before options were recorded, or of another compiler), an error
    /// naming the field when they do not parse.
    pub fn from_details(details: &serde_json::Value) -> Result<Option<CaseOptions>, String> {
        match details.get(Self::FINDING_KEY) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| format!("field `details.{}`: {e}", Self::FINDING_KEY)),
        }
    }
}

/// How [`CaseOptions`] are written: every field optional, a missing one meaning the default
/// (what a hunt used before the options were drawn per case).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsRecord {
    #[serde(default = "yes")]
    skip_padding: bool,
    #[serde(default = "yes")]
    weight_skipping: bool,
    #[serde(default = "per_case")]
    reduction: String,
}

fn yes() -> bool {
    true
}

fn per_case() -> String {
    Reduction::PerCase.name().to_string()
}

impl TryFrom<OptionsRecord> for CaseOptions {
    type Error = String;
    fn try_from(r: OptionsRecord) -> Result<CaseOptions, String> {
        Ok(CaseOptions {
            skip_padding: r.skip_padding,
            weight_skipping: r.weight_skipping,
            reduction: r.reduction.parse()?,
        })
    }
}

impl From<CaseOptions> for OptionsRecord {
    fn from(o: CaseOptions) -> OptionsRecord {
        OptionsRecord {
            skip_padding: o.skip_padding,
            weight_skipping: o.weight_skipping,
            reduction: o.reduction.name().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_field_is_the_default_and_an_unknown_one_is_refused() {
        let o: CaseOptions = serde_json::from_str(r#"{"weight_skipping": false}"#).unwrap();
        assert_eq!(
            o,
            CaseOptions {
                weight_skipping: false,
                ..CaseOptions::default()
            }
        );
        let e = serde_json::from_str::<CaseOptions>(r#"{"reduction": "bus"}"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown reduction \"bus\" (expected noc, gmem or per-case)"
        );
        let e = serde_json::from_str::<CaseOptions>(r#"{"skip": true}"#).unwrap_err();
        assert!(e.to_string().starts_with("unknown field `skip`"), "{e}");
    }

    #[test]
    fn options_round_trip_through_details() {
        let o = CaseOptions {
            skip_padding: false,
            weight_skipping: true,
            reduction: Reduction::Gmem,
        };
        let d = o.to_details();
        assert_eq!(
            d,
            serde_json::json!({"compile_options": {"skip_padding": false, "weight_skipping": true, "reduction": "gmem"}})
        );
        assert_eq!(CaseOptions::from_details(&d), Ok(Some(o)));
        assert_eq!(
            CaseOptions::from_details(&serde_json::Value::Null),
            Ok(None)
        );
        assert_eq!(
            CaseOptions::from_details(&serde_json::json!({"compile_options": 3})),
            Err("field `details.compile_options`: invalid type: integer `3`, expected struct OptionsRecord".into())
        );
    }

    #[test]
    fn flags_force_every_case() {
        let drawn = CaseOptions {
            skip_padding: true,
            weight_skipping: false,
            reduction: Reduction::Noc,
        };
        let defaults = CompileOptions {
            reduction: Reduction::PerCase,
            ..CompileOptions::default()
        };
        assert_eq!(drawn.forced_by(&defaults), drawn);
        let forced = CompileOptions {
            skip_padding: false,
            reduction: Reduction::Gmem,
            ..CompileOptions::default()
        };
        assert_eq!(
            drawn.forced_by(&forced),
            CaseOptions {
                skip_padding: false,
                weight_skipping: false,
                reduction: Reduction::Gmem,
            }
        );
    }

    #[test]
    fn options_vary_only_for_the_plain_in_repo_compiler() {
        use crate::check::n_version::LoweringChoice;
        let run = RunConfig::default();
        assert_eq!(
            CaseOptions::variable_in(&run),
            Some(CompileOptions::default())
        );
        // As hunts, `repro` and `replay` configure it: the reduction left to each case.
        let per_case = RunConfig::with_compiler(CompilerUnderTest::InRepo(CompileOptions {
            reduction: Reduction::PerCase,
            ..CompileOptions::default()
        }));
        let both = per_case.with_lowering(LoweringChoice::Both, None);
        assert!(CaseOptions::variable_in(&both).is_some());
        let injected = RunConfig::with_compiler(CompilerUnderTest::Mutated(
            crate::compilers::injected::BugClass::MissingBias,
            pimdiff_compiler::Lowering::Channel,
        ));
        assert_eq!(CaseOptions::variable_in(&injected), None);
        let external = RunConfig::with_compiler(CompilerUnderTest::External {
            command: "true".into(),
        });
        assert_eq!(CaseOptions::variable_in(&external), None);
        let off = CaseOptions {
            skip_padding: false,
            weight_skipping: false,
            reduction: Reduction::Gmem,
        };
        let applied = off.apply(&both);
        for v in [&applied.compiler, applied.second.as_ref().unwrap()] {
            let CompilerUnderTest::InRepo(o) = v else {
                panic!("{v:?}")
            };
            assert_eq!(
                (o.skip_padding, o.weight_skipping, o.reduction),
                (false, false, Reduction::Gmem)
            );
        }
        assert_eq!(
            applied.version(1).lowering(),
            Some(pimdiff_compiler::Lowering::Pixel)
        );
        // A run whose own reduction is fixed (the default configuration's `noc`) keeps it.
        let CompilerUnderTest::InRepo(o) = off.apply(&run).compiler else {
            panic!("in-repo")
        };
        assert_eq!(o.reduction, Reduction::Noc);
    }
}
