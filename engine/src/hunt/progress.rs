//! The hunt's progress bar (indicatif, on stderr): cases, rate, outcomes, buckets of failing
//! cases, and — loudly — timeouts, interpreter panics and the share of declined cases.

use super::sweep::SweepProgress;
use crate::finding::Kind;
use crate::plan::{Limit, Shard};

pub(crate) fn progress_bar(enabled: bool, limit: Limit, shard: Shard) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    if !enabled {
        return ProgressBar::hidden();
    }
    match limit {
        Limit::Cases(n) => {
            let bar = ProgressBar::with_draw_target(
                Some(shard.count_below(n)),
                ProgressDrawTarget::stderr(),
            );
            if let Ok(style) =
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} cases {msg}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar
        }
        Limit::Duration(_) => {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{elapsed_precise} {spinner} {pos} cases {msg}")
            {
                bar.set_style(style);
            }
            bar
        }
    }
}

pub(crate) fn update_bar(bar: &indicatif::ProgressBar, p: &SweepProgress<'_>) {
    if bar.is_hidden() {
        return;
    }
    bar.set_message(message(p));
    bar.set_position(p.cases_run);
}

/// `| 6100/s | pass 980, mismatch 20 | failing buckets 3 | declined 1.2% | TIMEOUTS 1`.
fn message(p: &SweepProgress<'_>) -> String {
    let rate = p.cases_run as f64 / p.elapsed.as_secs_f64().max(1e-9);
    let get = |k: Kind| p.counts.get(&k).copied().unwrap_or(0);
    let counts: Vec<String> = p
        .counts
        .iter()
        .filter(|(k, _)| !matches!(k, Kind::Timeout | Kind::InterpreterPanic))
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let declined = get(Kind::Unsupported) + get(Kind::BogusUnsupported);
    let mut msg = format!(
        "| {rate:.0}/s | {} | failing buckets {} | declined {:.1}%",
        counts.join(", "),
        p.unique_findings,
        100.0 * declined as f64 / p.cases_run.max(1) as f64
    );
    if get(Kind::Timeout) > 0 {
        msg.push_str(&format!(" | TIMEOUTS {}", get(Kind::Timeout)));
    }
    if get(Kind::InterpreterPanic) > 0 {
        msg.push_str(&format!(
            " | INTERPRETER PANICS {}",
            get(Kind::InterpreterPanic)
        ));
    }
    msg
}
