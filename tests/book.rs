//! The examples of the README and the Guide cannot go stale: every ```` ```console ```` block is
//! run and its printed output compared with what the page shows.
//!
//! A block is a series of `$ COMMAND` lines, each followed by the output it prints (standard
//! output and standard error together, as a terminal shows them). The blocks of one
//! page share a fresh temporary directory as their working directory, in page order, so a later
//! block reads what an earlier one wrote (`pimdiff hunt … --out demo`, then `ls demo/…`).
//! Commands run through `sh -c`, with the `pimdiff` under test first on `PATH`, so globs and
//! pipes work as in the reader's shell. Output is compared with snapbox's elisions: `...` on a
//! line of its own stands for any lines, `[..]` for the rest of a line's characters (times,
//! throughput); `[CWD]` is the working directory.
//!
//! An HTML comment on the line before a block (invisible in the book) says how to run it:
//!
//! - `<!-- book: exit N -->`: every command of the block must exit `N` (default 0);
//! - `<!-- book: needs VAR -->`: run only where the environment sets `VAR` (`PIMCOMP_NN_BIN`,
//!   `PUMA_DIR`: a build of that compiler; `PIMDIFF_PYTHON`: the Python with NumPy that
//!   `scripts/setup-python.sh` makes, which is `python3` for the page; any other variable
//!   likewise); elsewhere the block is reported as skipped, with the variable;
//! - `<!-- book: not run: REASON -->`: never run (a command that takes minutes, or changes
//!   the machine); the reason is printed.
//!
//! Several are joined by `;` (`<!-- book: needs PIMCOMP_NN_BIN; exit 1 -->`). A command
//! `export VAR=VALUE` sets `VAR` for the rest of the document, unless the environment already
//! sets it (then that build is the one used: CI names its own).
//!
//! A failure names the page and line of the command, with a diff of the expected and the
//! actual output. When the binary's output changes on purpose,
//! `UPDATE_DOCS=1 cargo test -p pimdiff --test book` rewrites every stale block with what the
//! commands print now, keeping each elision that still matches; review the diff and commit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use snapbox::filter::NormalizeToExpected;
use snapbox::{Data, Redactions};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// How a block is run, from the comment before it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Directives {
    exit: i32,
    needs: Vec<String>,
    not_run: Option<String>,
}

/// One `$ COMMAND` with the output the page shows for it.
#[derive(Clone, Debug, PartialEq)]
struct Step {
    /// 1-based line of the command on its page.
    line: usize,
    command: String,
    /// The shown output, one string with a newline after each line (empty: prints nothing).
    expected: String,
    /// The 0-based page lines the output occupies, `first..end` (for rewriting it).
    output_lines: std::ops::Range<usize>,
}

#[derive(Clone, Debug, PartialEq)]
struct Block {
    /// 1-based line of the opening fence.
    line: usize,
    directives: Directives,
    steps: Vec<Step>,
}

/// Reads `<!-- book: … -->` (without the comment markers); an unknown directive is an error,
/// so a typo cannot silently run, or skip, a block.
fn parse_directives(text: &str, page: &str, line: usize) -> Result<Directives, String> {
    let mut d = Directives::default();
    for part in text.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some(n) = part.strip_prefix("exit ") {
            d.exit = n
                .trim()
                .parse()
                .map_err(|_| format!("{page}:{line}: `exit` takes a number: `{part}`"))?;
        } else if let Some(var) = part.strip_prefix("needs ") {
            d.needs.extend(var.split_whitespace().map(str::to_string));
        } else if let Some(reason) = part.strip_prefix("not run:") {
            d.not_run = Some(reason.trim().to_string());
        } else {
            return Err(format!(
                "{page}:{line}: unknown book directive `{part}` (exit N, needs VAR, not run: REASON)"
            ));
        }
    }
    Ok(d)
}

/// The `console` blocks of a page.
fn parse_page(page: &str, text: &str) -> Result<Vec<Block>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let fence = lines[i].trim_start();
        if !fence.starts_with("```") {
            i += 1;
            continue;
        }
        let is_console = fence.trim_start_matches('`').trim() == "console";
        let open = i;
        i += 1;
        let body_start = i;
        while i < lines.len() && !lines[i].trim_start().starts_with("```") {
            i += 1;
        }
        let body_end = i; // the closing fence (or the end of the page)
        i += 1;
        if !is_console {
            continue;
        }
        let directives = match open.checked_sub(1).map(|p| lines[p].trim()) {
            Some(c) if c.starts_with("<!-- book:") && c.ends_with("-->") => {
                parse_directives(&c["<!-- book:".len()..c.len() - "-->".len()], page, open)?
            }
            _ => Directives::default(),
        };
        blocks.push(Block {
            line: open + 1,
            directives,
            steps: parse_steps(&lines, body_start..body_end, page)?,
        });
    }
    Ok(blocks)
}

/// The steps of a block's body: `$ ` lines (a trailing `\` continues a command on the next
/// line) and the output lines after each.
fn parse_steps(
    lines: &[&str],
    body: std::ops::Range<usize>,
    page: &str,
) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut j = body.start;
    while j < body.end {
        let Some(first) = lines[j].strip_prefix("$ ") else {
            if steps.is_empty() {
                return Err(format!(
                    "{page}:{}: a console block starts with `$ COMMAND`",
                    j + 1
                ));
            }
            j += 1;
            continue;
        };
        let line = j + 1;
        let mut command = first.to_string();
        while command.ends_with('\\') && j + 1 < body.end {
            command.pop();
            j += 1;
            command.push('\n');
            command.push_str(lines[j]);
        }
        j += 1;
        let out_start = j;
        while j < body.end && !lines[j].starts_with("$ ") {
            j += 1;
        }
        let expected: String = lines[out_start..j]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        steps.push(Step {
            line,
            command,
            expected,
            output_lines: out_start..j,
        });
    }
    Ok(steps)
}

/// The documents whose examples are checked: README.md and every chapter of the book's Guide
/// part (`docs/SUMMARY.md` between `# Guide` and the next part), as (path from the root, text).
fn documents() -> Vec<(String, String)> {
    let read = |rel: &str| std::fs::read_to_string(root().join(rel)).unwrap();
    let summary = read("docs/SUMMARY.md");
    let mut docs = vec![("README.md".to_string(), read("README.md"))];
    let mut in_guide = false;
    for line in summary.lines() {
        if let Some(part) = line.strip_prefix("# ") {
            in_guide = part.trim() == "Guide";
            continue;
        }
        if !in_guide {
            continue;
        }
        if let Some(target) = line
            .split_once("](")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(t, _)| t)
        {
            let rel = format!("docs/{target}");
            docs.push((rel.clone(), read(&rel)));
        }
    }
    docs
}

/// What running a page found.
#[derive(Debug, Default)]
struct PageReport {
    failures: Vec<String>,
    skipped: Vec<String>,
    ran: usize,
    /// Output lines to rewrite (`UPDATE_DOCS`): page lines `range` become `text`.
    rewrites: Vec<(std::ops::Range<usize>, String)>,
}

/// Runs the pages of `text` in a fresh directory with `env` (the variables the test's
/// environment provides for `needs`), as `page` names it in messages.
fn check_page(page: &str, text: &str, env: &BTreeMap<String, String>) -> PageReport {
    let mut report = PageReport::default();
    let blocks = match parse_page(page, text) {
        Ok(b) => b,
        Err(e) => {
            report.failures.push(e);
            return report;
        }
    };
    if blocks.is_empty() {
        return report;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cwd = dir.path().join("work");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_pimdiff"));
    std::os::unix::fs::symlink(&exe, bin.join("pimdiff")).unwrap();
    if let Some(python) = env.get("PIMDIFF_PYTHON") {
        // A wrapper, not a link: a virtual environment's python finds its packages by the
        // path it is started as.
        let wrapper = bin.join("python3");
        std::fs::write(&wrapper, format!("#!/bin/sh\nexec '{python}' \"$@\"\n")).unwrap();
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut vars: BTreeMap<String, String> = env.clone();
    let mut redactions = Redactions::new();
    let cwd_text = cwd.display().to_string();
    redactions
        .insert("[CWD]", cwd_text)
        .expect("a valid redaction");
    for block in &blocks {
        if let Some(reason) = &block.directives.not_run {
            report
                .skipped
                .push(format!("{page}:{}: not run: {reason}", block.line));
            continue;
        }
        if let Some(missing) = block
            .directives
            .needs
            .iter()
            .find(|v| !vars.contains_key(*v))
        {
            report.skipped.push(format!(
                "{page}:{}: skipped: needs {missing} (not set)",
                block.line
            ));
            continue;
        }
        for step in &block.steps {
            report.ran += 1;
            if let Some(var) = exported(&step.command) {
                if env.contains_key(&var) {
                    continue; // the environment's build is the one used
                }
                let value = run(
                    &format!("{}\nprintf '%s' \"${var}\"", step.command),
                    &cwd,
                    &path,
                    &vars,
                );
                vars.insert(var, value.1);
                continue;
            }
            let (status, actual) = run(&step.command, &cwd, &path, &vars);
            let expected = Data::text(step.expected.clone());
            let normalized = NormalizeToExpected::new()
                .redact_with(&redactions)
                .normalize(Data::text(actual.clone()), &expected);
            let normalized = normalized.render().unwrap_or_default();
            let wrong_status = status != Some(block.directives.exit);
            if normalized != step.expected || wrong_status {
                let diff =
                    similar::TextDiff::from_lines(step.expected.as_str(), normalized.as_str());
                report.failures.push(format!(
                    "{page}:{}: `{}` {}\n{}",
                    step.line,
                    step.command,
                    if wrong_status {
                        format!(
                            "exited {status:?}, the page expects {} (output below)",
                            block.directives.exit
                        )
                    } else {
                        "printed other output (the page's → now):".to_string()
                    },
                    if normalized == step.expected {
                        actual
                    } else {
                        diff.unified_diff().context_radius(3).to_string()
                    }
                ));
                if normalized != step.expected {
                    report
                        .rewrites
                        .push((step.output_lines.clone(), normalized));
                }
            }
        }
    }
    report
}

/// `VAR` of a command `export VAR=…`.
fn exported(command: &str) -> Option<String> {
    let rest = command.strip_prefix("export ")?;
    let (var, _) = rest.split_once('=')?;
    var.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then(|| var.to_string())
}

/// Runs `command` through `sh -c` in `cwd`; its exit status and what it printed on standard
/// output and error, interleaved as a terminal shows them.
fn run(
    command: &str,
    cwd: &Path,
    path: &str,
    vars: &BTreeMap<String, String>,
) -> (Option<i32>, String) {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(cwd)
        .envs(vars)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("COLUMNS")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .expect("running sh");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// This test's environment: `needs VAR` is met when it sets `VAR` (to anything but nothing).
fn environment() -> BTreeMap<String, String> {
    std::env::vars().filter(|(_, v)| !v.is_empty()).collect()
}

/// `text` with the output lines of each rewrite replaced.
fn rewritten(text: &str, mut rewrites: Vec<(std::ops::Range<usize>, String)>) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    rewrites.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    for (range, new) in rewrites {
        lines.splice(range, new.lines().map(str::to_string));
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

#[test]
fn the_readme_and_the_guide_print_what_they_show() {
    let env = environment();
    let update = std::env::var_os("UPDATE_DOCS").is_some();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (page, text) in documents() {
        let report = check_page(&page, &text, &env);
        ran += report.ran;
        for s in &report.skipped {
            eprintln!("{s}");
        }
        if update && !report.rewrites.is_empty() {
            std::fs::write(root().join(&page), rewritten(&text, report.rewrites)).unwrap();
            eprintln!("{page}: rewritten with today's output");
            continue;
        }
        failures.extend(report.failures);
    }
    assert!(
        ran >= 10,
        "the README and the Guide show examples: {ran} ran"
    );
    assert!(
        failures.is_empty(),
        "{} example(s) print something else than their page shows:\n\n{}\n\nIf the change is \
         meant, `UPDATE_DOCS=1 cargo test -p pimdiff --test book` rewrites the pages (review \
         the diff).",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The check fails, naming the page and the line of the command, when a page shows output the
/// command no longer prints: here a copy of a real page with one number changed.
#[test]
fn a_changed_output_fails_naming_the_page_and_line() {
    let page = "docs/guide/oracle.md";
    let text = std::fs::read_to_string(root().join(page)).unwrap();
    let blocks = parse_page(page, &text).unwrap();
    let step = blocks
        .iter()
        .filter(|b| b.directives.needs.is_empty() && b.directives.not_run.is_none())
        .flat_map(|b| &b.steps)
        .find(|s| !s.expected.is_empty())
        .expect("the oracle page shows a command's output");
    let line_of_output = step.output_lines.start;
    let mut lines: Vec<&str> = text.lines().collect();
    let shown = lines[line_of_output];
    let edited = format!("{shown} (edited)");
    lines[line_of_output] = &edited;
    let copy = lines.join("\n") + "\n";

    let report = check_page(page, &copy, &environment());
    assert_eq!(report.failures.len(), 1, "{:#?}", report.failures);
    let failure = &report.failures[0];
    let head = format!("{page}:{}: `{}`", step.line, step.command);
    assert!(failure.starts_with(&head), "{failure}");
    assert!(failure.contains(&format!("-{edited}")), "{failure}");
    assert!(failure.contains(&format!("+{shown}")), "{failure}");
    // And the unedited page passes.
    assert_eq!(
        check_page(page, &text, &environment()).failures,
        Vec::<String>::new()
    );
}

#[test]
fn directives_and_steps_are_read_as_documented() {
    let page = "\
text
<!-- book: needs PUMA_DIR; exit 1 -->
```console
$ pimdiff hunt --target puma \\
    --seed 7
**FAILED**:
...
$ ls out
summary.json
```
```sh
$ not a console block
```
";
    let blocks = parse_page("p.md", page).unwrap();
    assert_eq!(
        blocks,
        vec![Block {
            line: 3,
            directives: Directives {
                exit: 1,
                needs: vec!["PUMA_DIR".into()],
                not_run: None
            },
            steps: vec![
                Step {
                    line: 4,
                    command: "pimdiff hunt --target puma \n    --seed 7".into(),
                    expected: "**FAILED**:\n...\n".into(),
                    output_lines: 5..7,
                },
                Step {
                    line: 8,
                    command: "ls out".into(),
                    expected: "summary.json\n".into(),
                    output_lines: 8..9,
                },
            ],
        }]
    );
    assert_eq!(
        parse_page("p.md", "<!-- book: exits 1 -->\n```console\n$ true\n```\n"),
        Err("p.md:1: unknown book directive `exits 1` (exit N, needs VAR, not run: REASON)".into())
    );
    assert_eq!(
        exported("export PIMCOMP_NN_BIN=$(x)"),
        Some("PIMCOMP_NN_BIN".into())
    );
    assert_eq!(exported("pimdiff hunt"), None);
}
