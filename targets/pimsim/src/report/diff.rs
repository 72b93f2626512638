//! Bounded text diffs for reports.
//!
//! A line diff costs time proportional to the size of its inputs times the number of
//! differences (Myers), so a report that diffs two 60,000-line programs that differ
//! everywhere can spend a minute on it, while the same programs differing in one line take
//! milliseconds. Every diff in a report therefore goes through [`write_bounded_diff`]:
//!
//! - inputs above [`MAX_DIFF_INPUT_LINES`] lines (either side) are not diffed;
//! - nor are inputs of which more than [`MAX_CHANGED_LINES`] lines certainly differ — a count
//!   taken in linear time: a line that occurs more often on one side than on the other must be
//!   in the diff, so the sum of those surpluses is a lower bound of the diff's size;
//! - the diff itself has a deadline ([`DIFF_DEADLINE`]), and at most [`MAX_DIFF_LINES`] lines
//!   of it are shown.
//!
//! In each case the report says what it left out ("diff omitted: N lines ..."). Reports must
//! stay deterministic: the two caps are exact counts, and they keep every diff far below the
//! deadline on any machine. Should the deadline still pass, the diff `similar` returns could
//! depend on the machine's speed, so it is not shown at all and the report says so.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use similar::{Algorithm, TextDiff};

/// Lines of a diff (or of a listing) a report shows before cutting it short.
pub const MAX_DIFF_LINES: usize = 200;
/// Inputs longer than this (in lines, either side) are not diffed.
pub const MAX_DIFF_INPUT_LINES: usize = 1 << 18;
/// Inputs of which more lines than this certainly differ are not diffed.
pub const MAX_CHANGED_LINES: usize = 5_000;
/// The longest a report waits for one diff.
pub const DIFF_DEADLINE: Duration = Duration::from_secs(2);

/// Appends a unified diff of `old` against `new` in a ```diff fence, bounded as the module
/// documentation says; a note replaces what is left out.
pub fn write_bounded_diff(r: &mut String, old: &str, new: &str, old_name: &str, new_name: &str) {
    let (old_lines, new_lines) = (old.lines().count(), new.lines().count());
    let sizes = format!("{old_lines} lines ({old_name}) against {new_lines} lines ({new_name})");
    if old_lines.max(new_lines) > MAX_DIFF_INPUT_LINES {
        let _ = writeln!(
            r,
            "diff omitted: {sizes}, above the {MAX_DIFF_INPUT_LINES}-line limit of a report diff.\n"
        );
        return;
    }
    let changed = changed_lines_at_least(old, new);
    if changed > MAX_CHANGED_LINES {
        let _ = writeln!(
            r,
            "diff omitted: {sizes}; at least {changed} lines differ, above the \
             {MAX_CHANGED_LINES}-line limit of a report diff.\n"
        );
        return;
    }
    let start = Instant::now();
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(start + DIFF_DEADLINE)
        .diff_lines(old, new);
    if start.elapsed() >= DIFF_DEADLINE {
        let _ = writeln!(
            r,
            "diff omitted: {sizes}; the diff took longer than {} s.\n",
            DIFF_DEADLINE.as_secs()
        );
        return;
    }
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header(old_name, new_name)
        .to_string();
    write_fenced(r, "diff", &text, "diff");
}

/// A lower bound of the lines a diff of `old` against `new` removes or adds: for every
/// distinct line, the difference of its counts on the two sides.
pub fn changed_lines_at_least(old: &str, new: &str) -> usize {
    let mut surplus: HashMap<&str, i64> = HashMap::new();
    for line in old.lines() {
        *surplus.entry(line).or_default() += 1;
    }
    for line in new.lines() {
        *surplus.entry(line).or_default() -= 1;
    }
    surplus.values().map(|v| v.unsigned_abs() as usize).sum()
}

/// Appends `text` in a fence of `lang`, cut after [`MAX_DIFF_LINES`] lines with a note saying
/// how many `what` lines were left out.
pub fn write_fenced(r: &mut String, lang: &str, text: &str, what: &str) {
    let mut shown = 0usize;
    let mut total = 0usize;
    let _ = writeln!(r, "```{lang}");
    for line in text.lines() {
        total += 1;
        if shown < MAX_DIFF_LINES {
            let _ = writeln!(r, "{line}");
            shown += 1;
        }
    }
    let _ = writeln!(r, "```");
    if total > shown {
        let _ = writeln!(r, "\n({} more {what} lines not shown)", total - shown);
    }
    let _ = writeln!(r);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: usize, tag: &str) -> String {
        (0..n).map(|i| format!("{tag} {i}\n")).collect()
    }

    #[test]
    fn small_inputs_are_diffed() {
        let mut r = String::new();
        write_bounded_diff(&mut r, "a\nb\nc\n", "a\nB\nc\n", "old", "new");
        assert_eq!(
            r,
            "```diff\n--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n```\n\n"
        );
    }

    #[test]
    fn inputs_above_the_line_cap_are_not_diffed() {
        let big = lines(MAX_DIFF_INPUT_LINES + 1, "x");
        let mut r = String::new();
        write_bounded_diff(&mut r, &big, "x 0\n", "reference", "failing");
        assert_eq!(
            r,
            format!(
                "diff omitted: {} lines (reference) against 1 lines (failing), above the \
                 {MAX_DIFF_INPUT_LINES}-line limit of a report diff.\n\n",
                MAX_DIFF_INPUT_LINES + 1
            )
        );
    }

    #[test]
    fn inputs_that_differ_in_too_many_lines_are_not_diffed() {
        let n = MAX_CHANGED_LINES / 2 + 1;
        let mut r = String::new();
        write_bounded_diff(&mut r, &lines(n, "a"), &lines(n, "b"), "o", "n");
        assert_eq!(
            r,
            format!(
                "diff omitted: {n} lines (o) against {n} lines (n); at least {} lines differ, \
                 above the {MAX_CHANGED_LINES}-line limit of a report diff.\n\n",
                2 * n
            )
        );
    }

    #[test]
    fn large_inputs_with_a_small_difference_are_diffed() {
        let old = lines(100_000, "x");
        let new = old.replace("x 50000\n", "y 50000\n");
        let mut r = String::new();
        write_bounded_diff(&mut r, &old, &new, "o", "n");
        assert_eq!(
            r,
            "```diff\n--- o\n+++ n\n@@ -49999,5 +49999,5 @@\n x 49998\n x 49999\n-x 50000\n\
             +y 50000\n x 50001\n x 50002\n```\n\n"
        );
    }

    #[test]
    fn the_changed_line_count_is_a_multiset_difference() {
        assert_eq!(changed_lines_at_least("a\nb\nb\n", "b\na\nc\n"), 2);
        assert_eq!(changed_lines_at_least("a\nb\n", "b\na\n"), 0);
        assert_eq!(changed_lines_at_least("", "a\n"), 1);
    }

    #[test]
    fn long_diffs_are_cut_with_a_count() {
        // Every line differs: 2 header lines, 1 hunk line, 2 × 300 changed lines.
        let mut r = String::new();
        write_bounded_diff(&mut r, &lines(300, "a"), &lines(300, "b"), "o", "n");
        let fenced = r.lines().filter(|l| !l.is_empty()).count();
        // The fence (2 lines) + the shown lines + the note.
        assert_eq!(fenced, 2 + MAX_DIFF_LINES + 1);
        assert!(r.ends_with(&format!(
            "({} more diff lines not shown)\n\n",
            603 - MAX_DIFF_LINES
        )));
    }
}
