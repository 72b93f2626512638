//! Tidy checks: the rules of ARCHITECTURE.md that a reviewer would otherwise have to remember.
//!
//! * The crates are layers: the engine depends on no target, no ISA and not the CLI; every
//!   target crate depends on the engine and on no other target; the machines depend on neither
//!   the engine nor the compiler (read from each member's `Cargo.toml`).
//! * The code map cannot go stale: every source file of the workspace's crates is named in
//!   ARCHITECTURE.md by its path, and every path it names exists.
//! * No function in non-test code is longer than [`MAX_FN_LINES`] lines (read with `syn`, so
//!   strings and comments cannot confuse the count).
//! * Committed sources and documents stand alone: they cite no issue numbers and no documents
//!   outside the repository (a user's clone has neither).
//! * The fuzz crate's committed `fuzz/Cargo.lock` builds the fuzz targets on the dependency
//!   versions the tests run on: every package it shares with the root `Cargo.lock` has a
//!   version the root lock has.
//! * The PIMSim instruction set stays one table: no opcode is spelled in more than
//!   [`MAX_PLACES_PER_OPCODE`] places of non-test code.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The longest function (signature to closing brace) allowed outside tests.
const MAX_FN_LINES: usize = 120;

/// The fuzz crate is its own workspace (`exclude`d from the root one); its targets are code too.
const FUZZ_TARGETS: &str = "fuzz/fuzz_targets";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir` (relative to the repository root) whose name ends with one of `exts`.
fn files_under(dir: &str, exts: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(dir)];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "node_modules", ".git", "snapshots"].contains(&name.as_str()) {
                    stack.push(path);
                }
            } else if exts.iter().any(|x| name.ends_with(x)) {
                let rel = path.strip_prefix(root()).unwrap_or(&path);
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// The folders of the workspace's members (`"."` is the root package), read from the root
/// `Cargo.toml`: a new crate is covered by every check here the moment it joins the workspace.
fn workspace_members() -> Vec<String> {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml is readable");
    let start = manifest
        .find("members = [")
        .expect("the workspace lists its members");
    let list = &manifest[start + "members = [".len()..];
    let list = &list[..list.find(']').expect("the members list ends")];
    list.split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// Every file of code that is not a test: each member's `src/`, `benches/`, `examples/` and
/// `build.rs`, and the fuzz targets.
fn source_files() -> Vec<String> {
    let mut files = Vec::new();
    for member in workspace_members() {
        let at = |p: &str| {
            if member == "." {
                p.to_string()
            } else {
                format!("{member}/{p}")
            }
        };
        for dir in ["src", "benches", "examples"] {
            files.extend(files_under(&at(dir), &[".rs"]));
        }
        if root().join(at("build.rs")).is_file() {
            files.push(at("build.rs"));
        }
    }
    files.extend(files_under(FUZZ_TARGETS, &[".rs"]));
    files.sort();
    files
}

/// Non-test code only (what the function-length and opcode rules govern): the sources without
/// benches and examples.
fn library_files() -> Vec<String> {
    source_files()
        .into_iter()
        .filter(|f| !f.contains("benches/") && !f.contains("examples/"))
        .collect()
}

fn architecture() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md is readable")
}

/// The backticked spans of a markdown text.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn every_source_file_is_on_the_code_map() {
    let map = architecture();
    let named: Vec<&str> = code_spans(&map);
    let missing: Vec<String> = source_files()
        .into_iter()
        .filter(|f| !named.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these files (add a line to the code map, as `path`):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn every_path_on_the_code_map_exists() {
    let map = architecture();
    let exts = [
        ".rs", ".md", ".sh", ".py", ".proto", ".toml", ".yml", ".json",
    ];
    let stale: Vec<&str> = code_spans(&map)
        .into_iter()
        .filter(|s| s.contains('/') && !s.contains(' ') && exts.iter().any(|x| s.ends_with(x)))
        .filter(|s| !root().join(s).exists())
        .collect();
    assert!(
        stale.is_empty(),
        "ARCHITECTURE.md names paths that do not exist:\n  {}",
        stale.join("\n  ")
    );
}

/// Collects the functions of one file longer than [`MAX_FN_LINES`], skipping `#[cfg(test)]`
/// modules and `#[test]` functions.
struct LongFunctions {
    file: String,
    found: Vec<String>,
}

/// `#[test]`, or `#[cfg(test)]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
    })
}

impl LongFunctions {
    fn check(&mut self, name: &str, span: proc_macro2::Span) {
        let lines = span.end().line.saturating_sub(span.start().line) + 1;
        if lines > MAX_FN_LINES {
            self.found.push(format!(
                "{}:{} `{name}` is {lines} lines",
                self.file,
                span.start().line
            ));
        }
    }
}

impl<'ast> Visit<'ast> for LongFunctions {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident.to_string(), f.span());
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident.to_string(), f.span());
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
}

#[test]
fn no_function_in_non_test_code_is_longer_than_120_lines() {
    let mut long = Vec::new();
    for file in library_files() {
        let text = fs::read_to_string(root().join(&file)).expect("source is readable");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        let mut v = LongFunctions {
            file: file.clone(),
            found: Vec::new(),
        };
        v.visit_file(&ast);
        long.extend(v.found);
    }
    assert!(
        long.is_empty(),
        "split these into named steps:\n  {}",
        long.join("\n  ")
    );
}

/// Files a user reads or builds: sources, benches, tests, scripts and documents.
fn committed_text_files() -> Vec<String> {
    let exts = [".rs", ".md", ".sh", ".py", ".toml", ".yml"];
    let mut dirs: Vec<String> = workspace_members()
        .into_iter()
        .filter(|m| m != ".")
        .collect();
    dirs.extend(
        [
            "src", "fuzz", "tests", "benches", "scripts", "docs", "corpus", "python", ".ci",
            ".github",
        ]
        .map(String::from),
    );
    let mut files: Vec<String> = dirs.iter().flat_map(|d| files_under(d, &exts)).collect();
    files.extend(
        ["README.md", "ARCHITECTURE.md", "Cargo.toml"]
            .iter()
            .map(|s| s.to_string()),
    );
    files
}

#[test]
fn sources_and_documents_cite_nothing_outside_the_repository() {
    // Spelled in pieces so that this file does not match itself.
    let docs = ["shared", "/docs"].concat();
    let seeds = ["shared", "/seeds"].concat();
    let mut found = Vec::new();
    for file in committed_text_files() {
        let Ok(text) = fs::read_to_string(root().join(&file)) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let cites_issue = lower
                .match_indices("issue ")
                .any(|(i, _)| lower[i + 6..].starts_with(|c: char| c.is_ascii_digit() || c == '#'));
            if cites_issue || line.contains(&docs) || line.contains(&seeds) {
                found.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cite the repository's own docs/ instead:\n  {}",
        found.join("\n  ")
    );
}

/// Most places (lines) of non-test code that may spell one PIMSim opcode: its row of the
/// instruction table (`isa-interp/src/inst.rs`), its semantics in the interpreter, and one more
/// (the declaration of its sub-op variant, for the opcodes that share an `Inst` shape).
/// Everything else reads what it needs from the table (categories, mnemonics, operand kinds)
/// or from the ISA crate's methods.
const MAX_PLACES_PER_OPCODE: usize = 3;

/// The file that holds the instruction table.
const TABLE: &str = "isa-interp/src/inst.rs";

/// One row of the instruction table: the opcode's variant, the sub-op path that selects it
/// when it shares its `Inst` shape with others (`("MemOp", "Lmv")`), and the row's line.
#[derive(Debug)]
struct Row {
    opcode: String,
    sub_op: Option<(String, String)>,
    line: usize,
}

/// The rows of `for_each_inst!`, read with the grammar its doc gives:
/// `Opcode "mnemonic" [aliases] Category Variant [op: SubOp::Variant] { operands };`.
fn instruction_table() -> Vec<Row> {
    let text = fs::read_to_string(root().join(TABLE)).expect("inst.rs is readable");
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{TABLE}: {e}"));
    let table = ast
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Macro(m) if m.ident.as_ref().is_some_and(|i| i == "for_each_inst") => {
                Some(m.mac.tokens.clone())
            }
            _ => None,
        })
        .expect("inst.rs defines for_each_inst!");
    // `($m:ident) => { $m! { rows } };`: the rows are the brace group after the `!`.
    let rows = innermost_invocation(table).expect("for_each_inst! invokes $m! { rows }");
    let mut out = Vec::new();
    let mut row: Vec<TokenTree> = Vec::new();
    for token in rows {
        if matches!(&token, TokenTree::Punct(p) if p.as_char() == ';') {
            out.push(table_row(&row));
            row.clear();
        } else {
            row.push(token);
        }
    }
    out
}

/// The body of the brace group that follows a `!` (at any depth).
fn innermost_invocation(stream: TokenStream) -> Option<TokenStream> {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = token {
            let after_bang =
                i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '!');
            if after_bang && g.delimiter() == proc_macro2::Delimiter::Brace {
                return Some(g.stream());
            }
            if let Some(inner) = innermost_invocation(g.stream()) {
                return Some(inner);
            }
        }
    }
    None
}

/// One row's opcode and sub-op path.
fn table_row(row: &[TokenTree]) -> Row {
    let Some(TokenTree::Ident(opcode)) = row.first() else {
        panic!("a table row starts with its opcode: {row:?}");
    };
    let sub_op = row.iter().find_map(|t| match t {
        TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Bracket => {
            let inner: Vec<TokenTree> = g.stream().into_iter().collect();
            match inner.as_slice() {
                [TokenTree::Ident(op), TokenTree::Punct(_), TokenTree::Ident(ty), TokenTree::Punct(_), TokenTree::Punct(_), TokenTree::Ident(v)]
                    if op == "op" =>
                {
                    Some((ty.to_string(), v.to_string()))
                }
                _ => None,
            }
        }
        _ => None,
    });
    Row {
        opcode: opcode.to_string(),
        sub_op,
        line: opcode.span().start().line,
    }
}

/// The line ranges of a file's `#[cfg(test)]` modules and `#[test]` functions.
#[derive(Default)]
struct TestItems(Vec<(usize, usize)>);

impl<'ast> Visit<'ast> for TestItems {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test(&m.attrs) {
            self.0.push((m.span().start().line, m.span().end().line));
        } else {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test(&f.attrs) {
            self.0.push((f.span().start().line, f.span().end().line));
        }
    }
}

/// `(row index, line)` of every place `stream` names an opcode of `rows` outside the line
/// ranges `tests`: `Opcode::X`, or X's sub-op path (`MemOp::Lmv`), except as the `op:` field of
/// one instruction being built or matched (`Inst::Mem { op: MemOp::St, .. }` names one
/// instruction, as `Inst::Send { .. }` does; neither is a list of opcodes).
fn opcode_names(
    stream: TokenStream,
    rows: &[Row],
    tests: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    let mut out = Vec::new();
    let ident = |i: usize| match tokens.get(i) {
        Some(TokenTree::Ident(x)) => Some(x.to_string()),
        _ => None,
    };
    let punct = |i: usize, spacing: Spacing| matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == spacing);
    for (i, token) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = token {
            out.extend(opcode_names(g.stream(), rows, tests));
            continue;
        }
        let (Some(ty), Some(variant)) = (ident(i), ident(i + 3)) else {
            continue;
        };
        if !(punct(i + 1, Spacing::Joint) && punct(i + 2, Spacing::Alone)) {
            continue;
        }
        let line = token.span().start().line;
        if tests.iter().any(|&(a, b)| (a..=b).contains(&line)) {
            continue;
        }
        let op_field =
            i >= 2 && ident(i - 2).as_deref() == Some("op") && punct(i - 1, Spacing::Alone);
        for (k, row) in rows.iter().enumerate() {
            let opcode = ty == "Opcode" && variant == row.opcode;
            let sub_op = !op_field
                && row
                    .sub_op
                    .as_ref()
                    .is_some_and(|(t, v)| *t == ty && *v == variant);
            if opcode || sub_op {
                out.push((k, line));
            }
        }
    }
    out
}

/// Every place a source text names an opcode: `(row index, line)`.
fn opcode_names_in(file: &str, text: &str, rows: &[Row]) -> Vec<(usize, usize)> {
    let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut tests = TestItems::default();
    tests.visit_file(&ast);
    let stream: TokenStream = text.parse().unwrap_or_else(|e| panic!("{file}: {e:?}"));
    opcode_names(stream, rows, &tests.0)
}

#[test]
fn the_instruction_table_is_read_row_by_row() {
    let rows = instruction_table();
    let names: Vec<String> = pimdiff_isa::Opcode::ALL
        .iter()
        .map(|o| format!("{o:?}"))
        .collect();
    assert_eq!(
        rows.iter().map(|r| r.opcode.clone()).collect::<Vec<_>>(),
        names
    );
    let lmv = rows.iter().find(|r| r.opcode == "Lmv").unwrap();
    assert_eq!(lmv.sub_op, Some(("MemOp".into(), "Lmv".into())));
    let sadd = rows.iter().find(|r| r.opcode == "Sadd").unwrap();
    assert_eq!(sadd.sub_op, Some(("ScalarOp".into(), "Add".into())));
    assert!(rows
        .iter()
        .find(|r| r.opcode == "Send")
        .unwrap()
        .sub_op
        .is_none());
}

#[test]
fn opcode_names_count_lists_not_single_instructions() {
    let rows = instruction_table();
    let text = "fn f(i: Inst) -> u8 {\n\
                    if matches!(i, Inst::Mem { op: MemOp::St, .. } | Inst::Send { .. }) { return 0; }\n\
                    match i.opcode() { Opcode::Lmv => 1, _ => match op { MemOp::Ld => 2, _ => 3 } }\n\
                }\n\
                #[cfg(test)]\n\
                mod tests { const A: Opcode = Opcode::Nop; }\n";
    let found: Vec<(String, usize)> = opcode_names_in("example.rs", text, &rows)
        .into_iter()
        .map(|(k, line)| (rows[k].opcode.clone(), line))
        .collect();
    assert_eq!(found, [("Lmv".to_string(), 3), ("Ld".to_string(), 3)]);
}

/// The line of each variant of the table's sub-op enums (`MemOp::Lmv` is declared once, in
/// `enum MemOp`): `(enum, variant) -> line`.
fn sub_op_declarations() -> BTreeMap<(String, String), usize> {
    let text = fs::read_to_string(root().join(TABLE)).expect("inst.rs is readable");
    let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{TABLE}: {e}"));
    let mut out = BTreeMap::new();
    for item in &ast.items {
        if let syn::Item::Enum(e) = item {
            for v in &e.variants {
                out.insert(
                    (e.ident.to_string(), v.ident.to_string()),
                    v.ident.span().start().line,
                );
            }
        }
    }
    out
}

#[test]
fn no_opcode_is_named_in_more_than_three_places() {
    let rows = instruction_table();
    let declared = sub_op_declarations();
    // Per opcode, the places (file and line) that spell it outside tests: its row, the
    // declaration of its sub-op variant (when its row selects one), and every line that names
    // `Opcode::X` or its sub-op path as a list of opcodes (a match arm, a comparison).
    let mut places: Vec<BTreeMap<String, usize>> = rows
        .iter()
        .map(|row| {
            let mut p = BTreeMap::from([(format!("{TABLE}:{}", row.line), row.line)]);
            if let Some(line) = row.sub_op.as_ref().and_then(|s| declared.get(s)) {
                p.insert(format!("{TABLE}:{line}"), *line);
            }
            p
        })
        .collect();
    for file in library_files() {
        let text = fs::read_to_string(root().join(&file)).expect("source is readable");
        for (k, line) in opcode_names_in(&file, &text, &rows) {
            places[k].insert(format!("{file}:{line}"), line);
        }
    }
    let over: Vec<String> = rows
        .iter()
        .zip(&places)
        .filter(|(_, p)| p.len() > MAX_PLACES_PER_OPCODE)
        .map(|(row, p)| {
            let at: Vec<&str> = p.keys().map(String::as_str).collect();
            format!("{} in {} places: {}", row.opcode, p.len(), at.join(", "))
        })
        .collect();
    assert!(
        over.is_empty(),
        "read the instruction table (Opcode::category, MEMORY_BOUND, mnemonics, operand kinds) \
         instead of naming opcodes:\n  {}",
        over.join("\n  ")
    );
}

/// `(name, version)` of every package of a `Cargo.lock`.
fn locked_packages(path: &str) -> std::collections::BTreeSet<(String, String)> {
    let text = fs::read_to_string(root().join(path)).unwrap();
    let field = |line: &str, key: &str| {
        line.strip_prefix(key)
            .map(|v| v.trim_matches('"').to_string())
    };
    let mut out = std::collections::BTreeSet::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = field(line, "name = ") {
            let version = lines.next().and_then(|l| field(l, "version = "));
            out.insert((name, version.expect("a version after each name")));
        }
    }
    out
}

#[test]
fn the_fuzz_lock_file_has_the_roots_versions() {
    let root_lock = locked_packages("Cargo.lock");
    let fuzz_lock = locked_packages("fuzz/Cargo.lock");
    let root_names: std::collections::BTreeSet<&String> =
        root_lock.iter().map(|(n, _)| n).collect();
    let drifted: Vec<_> = fuzz_lock
        .iter()
        .filter(|p| root_names.contains(&p.0) && !root_lock.contains(*p))
        .collect();
    assert!(
        drifted.is_empty(),
        "fuzz/Cargo.lock has versions the root Cargo.lock does not: {drifted:?}; regenerate it \
         from the root's: cp Cargo.lock fuzz/ && (cd fuzz && cargo +nightly fuzz build)"
    );
    assert!(fuzz_lock.iter().any(|(n, _)| n == "libfuzzer-sys"));
}

/// The workspace crates a member depends on (`[dependencies]` and
/// `[target.….dependencies]`, not dev- or build-dependencies), by package name.
fn workspace_dependencies(member: &str) -> (String, Vec<String>) {
    let manifest = fs::read_to_string(root().join(member).join("Cargo.toml"))
        .unwrap_or_else(|e| panic!("{member}/Cargo.toml: {e}"));
    let mut name = String::new();
    let mut deps = Vec::new();
    let mut section = String::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        if section == "[package]" {
            if let Some(n) = line.strip_prefix("name = ") {
                name = n.trim_matches('"').to_string();
            }
        }
        let runtime = section == "[dependencies]"
            || (section.starts_with("[target.") && section.ends_with(".dependencies]"));
        if runtime && line.starts_with("pimdiff") {
            let dep = line.split(['=', '.', ' ']).next().unwrap_or_default();
            deps.push(dep.to_string());
        }
    }
    (name, deps)
}

#[test]
fn the_crates_are_layers_whose_arrows_point_down() {
    let crates: BTreeMap<String, Vec<String>> = workspace_members()
        .iter()
        .map(|m| workspace_dependencies(m))
        .collect();
    let deps = |krate: &str| {
        crates
            .get(krate)
            .unwrap_or_else(|| panic!("no crate {krate}"))
    };
    let targets: Vec<&String> = crates
        .keys()
        .filter(|k| k.starts_with("pimdiff-target-"))
        .collect();
    assert!(targets.len() >= 3, "the target crates: {targets:?}");
    let mut wrong = Vec::new();
    for d in deps("pimdiff-engine") {
        if !["pimdiff-atomic", "pimdiff-input"].contains(&d.as_str()) {
            wrong.push(format!(
                "pimdiff-engine depends on {d}: the engine knows no compiler"
            ));
        }
    }
    for t in &targets {
        let d = deps(t);
        if !d.iter().any(|d| d == "pimdiff-engine") {
            wrong.push(format!("{t} does not depend on pimdiff-engine"));
        }
        for other in d
            .iter()
            .filter(|d| d.starts_with("pimdiff-target-") || *d == "pimdiff")
        {
            wrong.push(format!(
                "{t} depends on {other}: a target stands on the engine alone"
            ));
        }
    }
    for machine in ["pimdiff-isa", "pimdiff-puma", "pimdiff-cim-mlc"] {
        for d in deps(machine) {
            if d != "pimdiff-input" {
                wrong.push(format!(
                    "{machine} depends on {d}: a machine knows only its ISA"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
