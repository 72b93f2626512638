//! How failing cases of one hunt merge into findings: by cause, not by symptom.
//!
//! A target gives each bucket of failing cases a [`Cause`] (its first case's, unminimized;
//! see `Target::cause`), in order of first case index. Localized causes merge whatever the
//! outcome kind (a store one element off is one bug whether a run shows it as a wrong output or
//! as a race). A case that several explanations fit (a store one element off and a window one
//! column off compute the same output on a 1×1 kernel) is *ambiguous*: it joins the earliest
//! unambiguous cause that one of its explanations signs, and ambiguity never merges two
//! unambiguous causes — so a compiler with two bugs still yields two findings. After
//! triage, a representative whose minimized case is still explained by its group's cause
//! keeps that cause as its signature. A target without localization gives unlocalized causes:
//! each signature is then its own group.

use crate::finding::{Kind, Signature};

/// A failing run's cause: its signature, whether it is localized (not a symptom), and the
/// other explanations that hold for the same run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// The preferred explanation, or the symptom.
    pub signature: Signature,
    /// Whether [`Cause::signature`] is a localized cause.
    pub localized: bool,
    /// Details of the other explanations that hold: such a run is *ambiguous*, and the hunt
    /// files it under a finding that one of them signs on its own (see
    /// [`Cause::explains_like`]).
    pub also: Vec<String>,
}

impl Cause {
    /// A symptom, not localized and without alternatives.
    pub fn unlocalized(signature: Signature) -> Cause {
        Cause {
            signature,
            localized: false,
            also: Vec::new(),
        }
    }

    /// Whether this run is explained by `other`'s cause (its signature's detail is this run's
    /// detail or one of its alternatives). The outcome kind does not matter: a store one
    /// element off is one bug whether a run shows it as a wrong output or as a race.
    pub fn explains_like(&self, other: &Signature) -> bool {
        self.localized
            && (self.signature.detail == other.detail || self.also.contains(&other.detail))
    }

    /// The key findings are merged on: the detail alone when localized (see
    /// [`Cause::explains_like`]), else the whole signature.
    pub fn merge_key(&self) -> (Option<Kind>, String) {
        let kind = (!self.localized).then_some(self.signature.kind);
        (kind, self.signature.detail.clone())
    }
}

/// Buckets of one root cause: the cause that signs them, the buckets (indices into the
/// causes given to [`group_by_cause`], ascending) and the one whose case is triaged.
pub struct Group {
    pub cause: Cause,
    pub buckets: Vec<usize>,
    pub representative: usize,
}

/// Groups the buckets (in index order) by cause. An ambiguous bucket (several explanations
/// hold, see [`Cause::also`]) joins the earliest unambiguous bucket that one of its
/// explanations signs; failing that, the earliest group it shares an explanation with (an
/// ambiguous group's preferred one is among its own, or its own preferred one among the
/// group's: one systematic bug shows at different scopes in different cases); ambiguity never
/// merges two unambiguous causes. Localized causes merge whatever the outcome kind. Each
/// group is represented by its earliest unambiguous bucket (its earliest when all are
/// ambiguous), so that minimization starts from a case that only its own cause explains.
pub fn group_by_cause(causes: &[Cause]) -> Vec<Group> {
    let unambiguous = |c: &Cause| c.localized && c.also.is_empty();
    let anchors: Vec<&Cause> = causes.iter().filter(|c| unambiguous(c)).collect();
    let mut groups: Vec<Group> = Vec::new();
    for (b, own) in causes.iter().enumerate() {
        let ambiguous = own.localized && !own.also.is_empty();
        let signing = if ambiguous {
            anchors
                .iter()
                .find(|a| own.explains_like(&a.signature))
                .copied()
                .unwrap_or(own)
        } else {
            own
        };
        let key = signing.merge_key();
        let shares = |g: &Group| {
            ambiguous
                && std::ptr::eq(signing, own)
                && !unambiguous(&g.cause)
                && (own.explains_like(&g.cause.signature) || g.cause.explains_like(&own.signature))
        };
        match groups
            .iter_mut()
            .find(|g| g.cause.merge_key() == key || shares(g))
        {
            Some(g) => {
                g.buckets.push(b);
                if !unambiguous(&causes[g.representative]) && unambiguous(own) {
                    g.representative = b;
                }
            }
            None => groups.push(Group {
                cause: signing.clone(),
                buckets: vec![b],
                representative: b,
            }),
        }
    }
    groups
}

/// The cause of a group once its representative is triaged: the group's cause when the
/// minimized case is still explained by it (possibly among other explanations, as small cases
/// often are), with the kind the minimized case shows; else what triage found; the group's
/// cause when triage did not finish.
pub fn final_cause(group: &Cause, triaged: Option<&Cause>) -> Cause {
    let Some(found) = triaged else {
        return group.clone();
    };
    if group.localized && found.explains_like(&group.signature) {
        return Cause {
            signature: Signature::new(found.signature.kind, group.signature.detail.clone()),
            localized: true,
            also: Vec::new(),
        };
    }
    Cause {
        also: Vec::new(),
        ..found.clone()
    }
}

/// The key findings merge on (see [`Cause::merge_key`]).
pub fn merge_key(signature: &Signature, localized: bool) -> (Option<Kind>, String) {
    Cause {
        signature: signature.clone(),
        localized,
        also: Vec::new(),
    }
    .merge_key()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(kind: &str, detail: &str, localized: bool, also: &[&str]) -> Cause {
        Cause {
            signature: Signature::new(kind.parse().unwrap(), detail),
            localized,
            also: also.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn summary(groups: &[Group]) -> Vec<(String, Vec<usize>, usize)> {
        groups
            .iter()
            .map(|g| {
                (
                    g.cause.signature.to_string(),
                    g.buckets.clone(),
                    g.representative,
                )
            })
            .collect()
    }

    #[test]
    fn localized_causes_merge_across_outcome_kinds_and_shapes_do_not() {
        let causes = [
            cause("mismatch", "st offset", true, &[]),
            cause("race", "st offset", true, &[]),
            cause("mismatch", "channels all, batch all", false, &[]),
            cause("race", "channels all, batch all", false, &[]),
        ];
        assert_eq!(
            summary(&group_by_cause(&causes)),
            [
                ("mismatch: st offset".to_string(), vec![0, 1], 0),
                ("mismatch: channels all, batch all".to_string(), vec![2], 2),
                ("race: channels all, batch all".to_string(), vec![3], 3),
            ]
        );
    }

    #[test]
    fn an_ambiguous_case_joins_the_first_cause_it_shares_and_is_not_the_representative() {
        let causes = [
            cause("mismatch", "padding moved", true, &["st offset"]),
            cause("mismatch", "padding moved", true, &[]),
            cause("mismatch", "st offset", true, &[]),
        ];
        // Bucket 0 could be either; the earliest unambiguous cause it shares is bucket 1's.
        // Two unambiguous causes stay two findings.
        assert_eq!(
            summary(&group_by_cause(&causes)),
            [
                ("mismatch: padding moved".to_string(), vec![0, 1], 1),
                ("mismatch: st offset".to_string(), vec![2], 2),
            ]
        );
    }

    /// One bug repaired at the opcode in one case and only at the kind in another: neither
    /// case is unambiguous, and they share the kind's name, so they are one finding; a third
    /// ambiguous case that shares nothing stays apart.
    #[test]
    fn ambiguous_cases_that_share_an_explanation_are_one_group() {
        let causes = [
            cause("mismatch", "alu r1-1", true, &["alu-add r1-1"]),
            cause(
                "mismatch",
                "alu-add r1-1",
                true,
                &["alu-add[r1:xbar-out] r1-1"],
            ),
            cause("mismatch", "copy vec+1", true, &["copy d1-1"]),
        ];
        assert_eq!(
            summary(&group_by_cause(&causes)),
            [
                ("mismatch: alu r1-1".to_string(), vec![0, 1], 0),
                ("mismatch: copy vec+1".to_string(), vec![2], 2),
            ]
        );
    }

    #[test]
    fn an_ambiguous_case_alone_keeps_its_preferred_cause() {
        let causes = [cause("mismatch", "padding moved", true, &["st offset"])];
        assert_eq!(
            summary(&group_by_cause(&causes)),
            [("mismatch: padding moved".to_string(), vec![0], 0)]
        );
    }

    #[test]
    fn a_minimized_case_keeps_its_groups_cause_while_that_still_explains_it() {
        let group = cause("mismatch", "padding moved", true, &[]);
        let found = cause("race", "st offset", true, &["padding moved"]);
        assert_eq!(
            final_cause(&group, Some(&found)).signature.to_string(),
            "race: padding moved"
        );
        let found = cause("mismatch", "st offset", true, &[]);
        assert_eq!(
            final_cause(&group, Some(&found)).signature.to_string(),
            "mismatch: st offset"
        );
        assert_eq!(final_cause(&group, None), group);
    }
}
