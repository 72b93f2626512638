//! The README and the book name only things that exist. Every repository path they name — in a
//! code span, a code block or a link — must exist in the checkout, and every Rust code path
//! (`pimdiff::engine::run_hunt`, `pimdiff_input::read`) must resolve: each segment a module
//! file of the named crate, the rest items declared or re-exported in the module reached.
//! A renamed file or function then fails here instead of leaving a newcomer a dead end.
//!
//! The chapters are the files `docs/SUMMARY.md` links; `ARCHITECTURE.md`, which the book
//! includes, is checked by `tests/tidy.rs`. The README also stays a front door of at most
//! [`README_MAX_LINES`] lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Paths the documents may name although a checkout does not have them: what builds and
/// campaigns write (all in `.gitignore`), and the files a user adds to hunt their own compiler
/// with ClusterFuzzLite (`docs/scale-out.md`).
const GENERATED: [&str; 7] = [
    "docs/book",
    "fuzz/artifacts",
    "fuzz/corpus-nightly",
    "fuzz/target",
    "fuzz/coverage",
    ".clusterfuzzlite/compiler-cmd",
    ".clusterfuzzlite/compiler-setup.sh",
];

/// Extensions of the third-party compilers' and simulators' sources (C++, C, Python, shared
/// libraries). Their trees have a `src/` too, so a missing `src/…` path with one of these is a
/// citation of that source (`src/tensors.cpp:124-202` in the PUMA compiler), not of ours.
const THIRD_PARTY_EXTENSIONS: [&str; 7] = ["cpp", "h", "hpp", "c", "cc", "py", "so"];

/// Characters that start a placeholder or a pattern inside a path: the path is checked up to
/// the component before it (`scripts/pimcomp-patches/*.patch` checks the folder).
const PLACEHOLDER: [char; 10] = ['<', '>', '*', '{', '}', '[', ']', '…', '$', '|'];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's crates by the name code spells them (`pimdiff_isa`), each with its `src/`:
/// the root package and every member the root `Cargo.toml` lists.
fn crates(root: &Path) -> BTreeMap<String, PathBuf> {
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members = workspace_members(&workspace);
    let mut out = BTreeMap::new();
    for member in members {
        let dir = root.join(member);
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let name = manifest
            .lines()
            .skip_while(|l| l.trim() != "[package]")
            .find_map(|l| l.trim().strip_prefix("name = "))
            .map(|n| n.trim_matches('"').replace('-', "_"));
        if let (Some(name), true) = (name, dir.join("src/lib.rs").is_file()) {
            out.insert(name, dir.join("src"));
        }
    }
    out
}

/// The `members` of a workspace manifest's `[workspace]` table (`"."` is the root package).
fn workspace_members(manifest: &str) -> Vec<String> {
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

/// What the checker knows about the checkout.
struct Repo {
    root: PathBuf,
    /// Top-level entries a repository path can start with (`src`, `scripts`, `.ci`, …).
    top: Vec<String>,
    crates: BTreeMap<String, PathBuf>,
}

impl Repo {
    fn open(root: PathBuf) -> Repo {
        let top = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "target" && n != ".git")
            .collect();
        let crates = crates(&root);
        Repo { root, top, crates }
    }

    /// Every problem of one document (`rel` is its path from the repository root).
    fn problems(&self, rel: &str, text: &str) -> Vec<String> {
        let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
        let mut out = Vec::new();
        for span in code_spans(text) {
            for word in span.split_whitespace() {
                if let Some(p) = self.repo_path(word) {
                    if !self.exists(&p) {
                        out.push(format!("{rel}: `{word}`: no {p} in the repository"));
                    }
                }
                for path in code_paths(word) {
                    if let Err(e) = self.resolve(&path) {
                        out.push(format!("{rel}: `{path}`: {e}"));
                    }
                }
            }
        }
        for target in link_targets(text) {
            let target = target.split('#').next().unwrap();
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let joined = normalize(&dir.join(target));
            if !self.exists(&joined) {
                out.push(format!(
                    "{rel}: link to {target}: no {joined} in the repository"
                ));
            }
        }
        out
    }

    /// The repository path a word of code names, cut before any placeholder, or `None` when
    /// it names none (an output directory, a flag, a URL).
    fn repo_path(&self, word: &str) -> Option<String> {
        let word = word
            .trim_start_matches(['(', '"', '\'', '`'])
            .trim_start_matches("./")
            .trim_end_matches([')', '"', '\'', ',', '.', ';', ':', '`']);
        let first = word.split('/').next()?;
        let is_root_file = !word.contains('/') && word.contains('.');
        if !self.top.iter().any(|t| t == first) || (!word.contains('/') && !is_root_file) {
            return None;
        }
        let cut = match word.find(PLACEHOLDER) {
            Some(i) => &word[..word[..i].rfind('/').unwrap_or(0)],
            None => word,
        };
        // `file:12` or `file:12-30` cites lines of the file.
        let cut = match cut.split_once(':') {
            Some((file, lines)) if lines.starts_with(|c: char| c.is_ascii_digit()) => file,
            _ => cut,
        };
        let cut = cut.trim_end_matches('/');
        (!cut.is_empty()).then(|| cut.to_string())
    }

    fn exists(&self, rel: &str) -> bool {
        let third_party = rel.starts_with("src/")
            && Path::new(rel)
                .extension()
                .is_some_and(|e| THIRD_PARTY_EXTENSIONS.iter().any(|t| e == *t));
        GENERATED
            .iter()
            .any(|g| rel == *g || rel.starts_with(&format!("{g}/")))
            || self.root.join(rel).exists()
            || third_party
    }

    /// Resolves `krate::a::b::c`: modules by their files, re-exports of another workspace
    /// crate's module followed (`pub use pimdiff_engine::hunt as engine;`), then an item
    /// declared or re-exported in the module reached, then names inside that item's file.
    fn resolve(&self, path: &str) -> Result<(), String> {
        let segments: Vec<&str> = path.split("::").collect();
        let src = self
            .crates
            .get(segments[0])
            .ok_or_else(|| format!("no crate {} in the workspace", segments[0]))?;
        let mut file = src.join("lib.rs");
        let mut dir = src.clone();
        let mut in_item = false;
        for (i, seg) in segments.iter().enumerate().skip(1) {
            let text = std::fs::read_to_string(&file).unwrap();
            if in_item {
                if !has_word(&text, seg) {
                    return Err(format!(
                        "no {seg} in {}",
                        file.strip_prefix(&self.root).unwrap().display()
                    ));
                }
                continue;
            }
            let (as_file, as_dir) = (dir.join(format!("{seg}.rs")), dir.join(seg).join("mod.rs"));
            if as_file.is_file() || as_dir.is_file() {
                file = if as_file.is_file() { as_file } else { as_dir };
                dir = dir.join(seg);
                continue;
            }
            if let Some(target) = reexported_module(&text, seg) {
                if self.crates.contains_key(target.split("::").next().unwrap()) {
                    let rest: Vec<&str> = segments[i + 1..].to_vec();
                    let whole = std::iter::once(target.as_str())
                        .chain(rest)
                        .collect::<Vec<_>>();
                    return self.resolve(&whole.join("::"));
                }
            }
            if !declares(&text, seg) {
                return Err(format!(
                    "no module or item {seg} in {}",
                    file.strip_prefix(&self.root).unwrap().display()
                ));
            }
            in_item = true;
        }
        Ok(())
    }
}

/// The path a module's `pub use` gives the name `name`: `pub use a::b as name;`,
/// `pub use a::name;` or `pub use a::{…, name, …};` (over any number of lines).
fn reexported_module(text: &str, name: &str) -> Option<String> {
    text.match_indices("pub use ").find_map(|(i, _)| {
        let rest = &text[i + "pub use ".len()..];
        let body: String = rest[..rest.find(';')?]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if let Some((path, alias)) = body.split_once(" as ") {
            return (alias.trim() == name).then(|| path.trim().to_string());
        }
        if let Some((prefix, list)) = body.split_once("::{") {
            let list = list.strip_suffix('}')?;
            return list
                .split(',')
                .any(|n| n.trim() == name)
                .then(|| format!("{prefix}::{name}"));
        }
        (body.rsplit("::").next() == Some(name)).then(|| body.to_string())
    })
}

/// Collapses `a/b/../c` to `a/c` (a link from `docs/guide/` to `../../corpus/README.md`).
fn normalize(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// The code of a Markdown text: inline code spans and the lines of fenced blocks.
fn code_spans(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            out.push(line.to_string());
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(code), Some(_)) = (parts.next(), parts.next()) {
            out.push(code.to_string());
        }
    }
    out
}

/// The targets of Markdown links and images (`[text](target)`) and of mdBook includes.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        if let Some(end) = after.find(')') {
            let target = after[..end].split_whitespace().next().unwrap_or("");
            out.push(target.to_string());
        }
        rest = after;
    }
    let mut rest = text;
    while let Some(i) = rest.find("{{#include ") {
        let after = &rest[i + "{{#include ".len()..];
        let end = after.find("}}").unwrap_or(after.len());
        out.push(after[..end].split(':').next().unwrap().trim().to_string());
        rest = after;
    }
    out
}

/// The Rust paths into a workspace crate in a word: `pimdiff::a::b`, `pimdiff_isa::c`.
fn code_paths(word: &str) -> Vec<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = word[from..].find("pimdiff") {
        let start = from + i;
        from = start + "pimdiff".len();
        if word[..start].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let mut end = start;
        let mut rest = &word[start..];
        let mut segments = 0;
        loop {
            let len = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
            if len == 0 {
                break;
            }
            end += len;
            segments += 1;
            rest = &rest[len..];
            match rest.strip_prefix("::") {
                Some(r) if r.starts_with(is_ident) => {
                    end += 2;
                    rest = r;
                }
                _ => break,
            }
        }
        if segments > 1 {
            out.push(word[start..end].to_string());
        }
        from = end.max(from);
    }
    out
}

/// Whether `name` occurs as a whole word in `text`.
fn has_word(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(is_ident)
            && !text[i + name.len()..].chars().next().is_some_and(is_ident)
    })
}

/// Whether a module's source declares `name` (fn, type, const, module, macro) or re-exports it.
fn declares(text: &str, name: &str) -> bool {
    const KINDS: [&str; 9] = [
        "fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "macro_rules! ",
    ];
    let mut in_use = false;
    text.lines().any(|line| {
        let line = line.trim();
        if line.starts_with("pub use") || line.starts_with("pub(crate) use") {
            in_use = !line.ends_with(';');
            return has_word(line, name);
        }
        if in_use {
            in_use = !line.ends_with(';');
            return has_word(line, name);
        }
        KINDS.iter().any(|k| {
            line.match_indices(k).any(|(i, _)| {
                let after = &line[i + k.len()..];
                after.starts_with(name)
                    && !after[name.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
    })
}

/// README.md and every chapter `docs/SUMMARY.md` links, as (path from the root, text).
fn documents(root: &Path) -> Vec<(String, String)> {
    let read = |rel: &str| {
        std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    };
    let summary = read("docs/SUMMARY.md");
    let mut docs = vec![("README.md".to_string(), read("README.md"))];
    docs.push(("docs/SUMMARY.md".to_string(), summary.clone()));
    for chapter in link_targets(&summary) {
        let rel = format!("docs/{chapter}");
        let text = read(&rel);
        docs.push((rel, text));
    }
    docs
}

#[test]
fn the_readme_and_the_book_name_only_paths_that_exist() {
    let repo = Repo::open(root());
    let docs = documents(&repo.root);
    assert!(docs.len() > 20, "the book has its chapters: {}", docs.len());
    let problems: Vec<String> = docs
        .iter()
        .flat_map(|(rel, text)| repo.problems(rel, text))
        .collect();
    assert!(
        problems.is_empty(),
        "the documents name what does not exist:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_made_up_path_or_code_path_is_reported() {
    let repo = Repo::open(root());
    let text = "Read `engine/src/hunt/no_such_file.rs` and [the guide](guide/missing.md); call \
                `pimdiff::engine::no_such_fn`, `pimdiff::no_such_module::x` and \
                `pimdiff_nowhere::a`.\n\n```sh\nscripts/no-such-script.sh --flag\n```\n";
    assert_eq!(
        repo.problems("docs/x.md", text),
        vec![
            "docs/x.md: `engine/src/hunt/no_such_file.rs`: no engine/src/hunt/no_such_file.rs in the \
             repository",
            "docs/x.md: `pimdiff::engine::no_such_fn`: no module or item no_such_fn in \
             engine/src/hunt/mod.rs",
            "docs/x.md: `pimdiff::no_such_module::x`: no module or item no_such_module in \
             src/lib.rs",
            "docs/x.md: `pimdiff_nowhere::a`: no crate pimdiff_nowhere in the workspace",
            "docs/x.md: `scripts/no-such-script.sh`: no scripts/no-such-script.sh in the \
             repository",
            "docs/x.md: link to guide/missing.md: no docs/guide/missing.md in the repository",
        ]
    );
}

#[test]
fn real_paths_placeholders_and_outputs_pass() {
    let repo = Repo::open(root());
    let text = "`engine/src/hunt/mod.rs`, `scripts/pimcomp-patches/*.patch`, \
                `fuzz/artifacts/conv_lowering/crash-<sha1>`, `hunt-out/findings/`, `--out DIR`, \
                `engine/src/hunt/mod.rs:74-80`, `src/tensors.cpp:124-202` (the PUMA compiler's), \
                `pimdiff::engine::run_hunt`, `pimdiff::engine::Target`, \
                `pimdiff::cli::exit_codes::CONTRACT`, `pimdiff_input::read`, \
                [the ISA](isa.md#machine), [home](https://example.org), \
                {{#include ../ARCHITECTURE.md}}\n";
    assert_eq!(repo.problems("docs/x.md", text), Vec::<String>::new());
}

#[test]
fn code_paths_are_cut_out_of_words() {
    assert_eq!(
        code_paths("(`pimdiff_isa::machine::observe`)."),
        vec!["pimdiff_isa::machine::observe"]
    );
    assert_eq!(code_paths("pimdiff::a::B::c,"), vec!["pimdiff::a::B::c"]);
    assert_eq!(code_paths("pimdiff"), Vec::<String>::new());
    assert_eq!(code_paths("libpimdiff::x"), Vec::<String>::new());
}

/// The README is a front door; the manual is the book.
const README_MAX_LINES: usize = 150;

#[test]
fn the_readme_is_a_front_door_of_at_most_150_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move the detail into a chapter \
         of the book (docs/SUMMARY.md)"
    );
}
