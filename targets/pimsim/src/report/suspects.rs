//! The `## Suspects` section of a report: each suspect, best first, with why, its fix and the
//! assembly around it.

use pimdiff_isa::Inst;

use crate::triage::Suspect;

/// Instructions shown before and after each suspect in a report.
const CONTEXT: usize = 3;

/// The `## Suspects` section of a report: each suspect, best first, with why, its fix and the
/// assembly around it (the suspect marked `>`).
pub fn render(suspects: &[Suspect], cores: &[Vec<Inst>]) -> String {
    use std::fmt::Write as _;
    let mut r = String::new();
    let _ = writeln!(r, "## Suspects\n");
    if suspects.is_empty() {
        let _ = writeln!(
            r,
            "No single edit from the repair catalog makes the output right, and no instruction \
             stands out.\n"
        );
        return r;
    }
    for (i, s) in suspects.iter().enumerate() {
        let fix = s
            .fix
            .as_ref()
            .map_or(String::new(), |f| format!(" Fix: `{f}`."));
        let emitted = s
            .emitted_by
            .as_ref()
            .map_or(String::new(), |e| format!(" Emitted by `{e}`."));
        let _ = writeln!(
            r,
            "{}. core {}, pc {} (`{}`): {}.{fix}{emitted}\n",
            i + 1,
            s.core,
            s.pc,
            s.op,
            s.why
        );
        let Some(insts) = cores.get(s.core as usize) else {
            continue;
        };
        let pc = s.pc as usize;
        let _ = writeln!(r, "```text");
        for (j, inst) in insts
            .iter()
            .enumerate()
            .skip(pc.saturating_sub(CONTEXT))
            .take(2 * CONTEXT + 1)
        {
            let mark = if j == pc { '>' } else { ' ' };
            let _ = writeln!(r, "{mark} {j:5}  {inst}");
        }
        let _ = writeln!(r, "```\n");
    }
    r
}
