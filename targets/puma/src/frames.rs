//! The stack frames of a compiler crash, symbolized, and the reports of the sanitizers.
//!
//! A plain-tree crash leaves `PIMDIFF-FRAME <object> +0x<offset>` lines on stderr (the shim,
//! `scripts/pimcomp-shim.c`); the offsets inside `libpuma.so` are resolved with `addr2line`
//! (function and `file:line`). A sanitizer-tree run leaves a report: AddressSanitizer's
//! `==PID==ERROR: AddressSanitizer: <what> on ...` or UndefinedBehaviorSanitizer's
//! `FILE:LINE:COL: runtime error: <what>`, each followed by its symbolized frames
//! (`#N 0xADDR in FUNCTION FILE:LINE`). A frame is the compiler's *own* when it lies in the
//! compiler's library (plain) or in one of its source files (sanitizer): frames of libc,
//! libstdc++ and the driver are kept for the report but never sign a finding.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use pimdiff_engine::finding::abstract_message;

/// The compiler's library inside a tree.
pub const LIBRARY: &str = "src/libpuma.so";

/// One frame of a backtrace, innermost first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The function's name without its parameters (`Partitioner::getVMVMU`), or
    /// `object+0xoffset` where it is unknown.
    pub function: String,
    /// `file:line` (file name only), `??` when unknown.
    pub location: String,
    /// Whether the frame is inside the compiler (not libc, libstdc++ or the driver).
    pub own: bool,
}

impl Frame {
    /// `function (file:line)`, for people and for `finding.json`'s `frames`.
    pub fn text(&self) -> String {
        format!("{} ({})", self.function, self.location)
    }
}

/// A sanitizer's report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SanitizerReport {
    /// `AddressSanitizer` or `UndefinedBehaviorSanitizer`.
    pub sanitizer: String,
    /// The error class, abstracted: `heap-use-after-free`, `SEGV`, `member access within null
    /// pointer of type 'struct ProducerOperation'`.
    pub what: String,
    /// The report's first line as printed.
    pub message: String,
    /// The frames of the report's first stack.
    pub frames: Vec<Frame>,
}

/// The file names of the compiler's sources in a tree (`src/*.cpp`, `src/*.h`): a
/// sanitizer frame in one of them is the compiler's own.
pub fn own_files(tree: &Path) -> BTreeSet<String> {
    let Ok(entries) = std::fs::read_dir(tree.join("src")) else {
        return BTreeSet::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cpp") || n.ends_with(".h"))
        .collect()
}

/// The shim's frames of a plain-tree crash in `tree`, symbolized (frames of libpuma.so with
/// addr2line, each with the frames inlined into it, innermost first; the others as
/// `object+0xoffset`). A frame is the compiler's own when its file is one of the compiler's
/// sources (not a libstdc++ header inlined into the library). Without addr2line, frames keep
/// their offsets.
pub fn shim_frames(tree: &Path, stderr: &str) -> Vec<Frame> {
    let own = own_files(tree);
    let raw: Vec<(String, String)> = stderr
        .lines()
        .filter_map(shim_frame)
        .map(|(obj, off, _)| (obj.to_string(), off.to_string()))
        .filter(|(obj, _)| !obj.ends_with("libpimdiff-shim.so"))
        .collect();
    let library = tree.join(LIBRARY);
    let is_library = |obj: &str| Path::new(obj).file_name() == library.file_name();
    let offsets: Vec<&str> = raw
        .iter()
        .filter(|(obj, _)| is_library(obj))
        .map(|(_, off)| off.as_str())
        .collect();
    let mut symbolized = symbolize(&library, &offsets).into_iter();
    let mut frames = Vec::new();
    for (obj, off) in &raw {
        let base = Path::new(obj)
            .file_name()
            .map_or(obj.clone(), |n| n.to_string_lossy().into_owned());
        let inlined = if is_library(obj) {
            symbolized.next().filter(|f| !f.is_empty())
        } else {
            None
        };
        match inlined {
            Some(chain) => frames.extend(chain.into_iter().map(|(function, location)| {
                let file = location.split(':').next().unwrap_or("");
                Frame {
                    own: own.contains(file),
                    function,
                    location,
                }
            })),
            None => frames.push(Frame {
                function: format!("{base}+{off}"),
                location: "??".into(),
                own: false,
            }),
        }
    }
    frames
}

/// One `PIMDIFF-FRAME <object> +0x<offset>[ exact]` line of the shim: the object, the offset
/// and whether it is the interrupted instruction's own address (`exact`) rather than a return
/// address. Either way the offset is the one to symbolize: the shim has already moved return
/// addresses back into their call (so nothing is subtracted here), and lines of an older shim,
/// without the mark, read the same.
pub fn shim_frame(line: &str) -> Option<(&str, &str, bool)> {
    let (object, rest) = line.strip_prefix("PIMDIFF-FRAME ")?.rsplit_once(" +")?;
    let mut words = rest.split_whitespace();
    let offset = words.next().filter(|o| o.starts_with("0x"))?;
    Some((object, offset, words.next() == Some("exact")))
}

/// Per offset, the chain of `(function, file:line)` of the code there, innermost inlined
/// function first, via `addr2line -a -f -i -C -e OBJECT` (the address line starts each
/// group; parameters dropped from names, directories from files).
fn symbolize(object: &Path, offsets: &[&str]) -> Vec<Vec<(String, String)>> {
    if offsets.is_empty() {
        return Vec::new();
    }
    let out = Command::new("addr2line")
        .args(["-a", "-f", "-i", "-C", "-e"])
        .arg(object)
        .args(offsets)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else {
        return Vec::new();
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut groups: Vec<Vec<(String, String)>> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            groups.push(Vec::new());
            continue;
        }
        let location = lines.next().unwrap_or("??");
        if let Some(g) = groups.last_mut() {
            g.push((function_name(line), short_location(location)));
        }
    }
    groups
}

/// `text` with every hexadecimal number (`0x7fffffffc540`) left out: addresses differ
/// between runs.
fn without_hex(text: &str) -> String {
    text.split(' ')
        .filter(|w| !w.starts_with("0x"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A name without its template arguments (`f<int>::g<A<B>>` → `f::g`; `operator<` and
/// `operator<<` kept).
fn without_templates(name: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if depth == 0 && (rest.starts_with("operator<<") || rest.starts_with("operator<")) {
            let op = if rest.starts_with("operator<<") {
                "operator<<"
            } else {
                "operator<"
            };
            out.push_str(op);
            rest = &rest[op.len()..];
            continue;
        }
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// A function's name without its parameter list (`f(int, char)` → `f`; `operator()` kept).
fn function_name(full: &str) -> String {
    let full = full.trim();
    let cut = match full.find("operator()") {
        Some(i) => full[i + "operator()".len()..]
            .find('(')
            .map(|j| i + "operator()".len() + j),
        None => full.find('('),
    };
    cut.map_or(full, |i| &full[..i]).trim().to_string()
}

/// `dir/file.cpp:256:107 (discriminator 2)` → `file.cpp:256`.
fn short_location(loc: &str) -> String {
    let loc = loc.split(" (").next().unwrap_or(loc).trim();
    let file_line = Path::new(loc)
        .file_name()
        .map_or(loc.to_string(), |n| n.to_string_lossy().into_owned());
    let mut parts = file_line.splitn(3, ':');
    match (parts.next(), parts.next()) {
        (Some(file), Some(line)) if line.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{file}:{line}")
        }
        _ => file_line,
    }
}

/// One `#N 0xADDR in FUNCTION LOCATION` line of a sanitizer's stack.
fn parse_sanitizer_frame(line: &str, own_files: &BTreeSet<String>) -> Option<Frame> {
    let rest = line.trim_start().strip_prefix('#')?;
    let (_, rest) = rest.split_once(' ')?;
    let rest = rest.trim_start();
    let rest = match rest.split_once(" in ") {
        Some((addr, r)) if addr.starts_with("0x") => r,
        _ => return None,
    };
    // `FUNCTION (/lib/object+0x...)` when unsymbolized, else `FUNCTION FILE:LINE[:COL]`.
    let (function, location) = if rest.ends_with(')') && rest.contains(" (") {
        let (f, l) = rest.rsplit_once(" (")?;
        let object = l.trim_end_matches(')');
        let name = Path::new(object)
            .file_name()
            .map_or(object.to_string(), |n| n.to_string_lossy().into_owned());
        (f.to_string(), name)
    } else {
        let (f, l) = rest.rsplit_once(' ').unwrap_or((rest, "??"));
        (f.to_string(), short_location(l))
    };
    let file = location.split(':').next().unwrap_or("");
    Some(Frame {
        function: function_name(&function),
        own: own_files.contains(file),
        location,
    })
}

/// The first sanitizer report on `stderr`, if any, with its first stack's frames.
pub fn sanitizer_report(stderr: &str, own_files: &BTreeSet<String>) -> Option<SanitizerReport> {
    let lines: Vec<&str> = stderr.lines().collect();
    let (start, sanitizer, what) = lines.iter().enumerate().find_map(|(i, l)| {
        if let Some((_, rest)) = l.split_once("ERROR: AddressSanitizer: ") {
            let what = rest
                .split(" on ")
                .next()
                .unwrap_or(rest)
                .split(" (")
                .next()
                .unwrap_or(rest);
            return Some((i, "AddressSanitizer", abstract_message(what)));
        }
        if let Some((_, rest)) = l.split_once(": runtime error: ") {
            let what: String = abstract_message(&without_hex(rest))
                .chars()
                .take(80)
                .collect();
            return Some((i, "UndefinedBehaviorSanitizer", what));
        }
        None
    })?;
    let mut frames = Vec::new();
    for line in &lines[start + 1..] {
        match parse_sanitizer_frame(line, own_files) {
            Some(f) => frames.push(f),
            None if frames.is_empty() => continue,
            None => break,
        }
    }
    Some(SanitizerReport {
        sanitizer: sanitizer.to_string(),
        what,
        message: lines[start].trim().to_string(),
        frames,
    })
}

/// The first few of the compiler's own frames, by function name without template arguments
/// (what signs a crash: a neighbouring line of the same function is the same bug). Frames in
/// the compiler's headers are its one-line accessors inlined into the caller
/// (`Operation::getModel` dereferencing a bad pointer that `maxpool` holds): they are left out
/// when a frame in a source file follows, so that the function that holds the bad pointer
/// signs the crash. For the same reason the crash site's run of the operation graph's
/// bookkeeping (constructors, `add…`, `set…`, `get…` methods: `ModelImpl::addOperation`
/// inserting, for `ALUVectorOperation`'s constructor, an operand `maxpool` read from an
/// unwritten slot) is left out when a frame of another kind follows: they dereference what
/// their caller hands them, so one bad pointer would otherwise sign as many findings as it
/// has first users. Recursion is folded: a function repeated at once counts once.
pub fn top_own_functions(frames: &[Frame], count: usize) -> Vec<String> {
    let in_source =
        |f: &&Frame| f.own && !f.location.split(':').next().unwrap_or("").ends_with(".h");
    let pick: Vec<&Frame> = if frames.iter().any(|f| in_source(&f)) {
        frames.iter().filter(in_source).collect()
    } else {
        frames.iter().filter(|f| f.own).collect()
    };
    let names: Vec<String> = pick
        .iter()
        .map(|f| without_templates(&f.function))
        .collect();
    let site = names.iter().take_while(|n| is_bookkeeping(n)).count();
    let names = if site < names.len() {
        &names[site..]
    } else {
        &names[..]
    };
    let mut out: Vec<String> = Vec::new();
    for name in names.iter().cloned() {
        if out.last() != Some(&name) {
            out.push(name);
        }
        if out.len() == count {
            break;
        }
    }
    out
}

/// Whether `name` (without templates) is a constructor or a graph accessor (`addX`, `setX`,
/// `getX`), see [`top_own_functions`].
fn is_bookkeeping(name: &str) -> bool {
    let mut parts = name.rsplit("::");
    let method = parts.next().unwrap_or("");
    if parts.next() == Some(method) {
        return true;
    }
    ["add", "set", "get"].iter().any(|prefix| {
        method
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
    })
}

/// `assert` messages: `prog: FILE:LINE: FUNCTION: Assertion `COND' failed.` → (file,
/// function, condition).
pub fn assertion(stderr: &str) -> Option<(String, String, String)> {
    let line = stderr.lines().find(|l| l.contains(": Assertion `"))?;
    let (head, cond) = line.split_once(": Assertion `")?;
    let cond = cond.trim_end().trim_end_matches('.');
    let cond = cond.strip_suffix("' failed").unwrap_or(cond);
    // head: `puma-driver: partitioner.cpp:95: unsigned int Partitioner::getVMVMU(Operation*)`
    let mut parts = head.splitn(3, ": ");
    let _program = parts.next();
    let file = parts.next().unwrap_or("");
    let function = parts.next().unwrap_or("");
    let file = file.split(':').next().unwrap_or(file);
    let file = Path::new(file)
        .file_name()
        .map_or(file.to_string(), |n| n.to_string_lossy().into_owned());
    // The function's signature: drop the return type and the parameters.
    let name = function_name(function);
    let name = name.rsplit(' ').next().unwrap_or(&name).to_string();
    Some((file, name, cond.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> BTreeSet<String> {
        ["operations.cpp", "regalloc.cpp"]
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn ubsan_reports_give_the_error_and_own_frames() {
        let stderr = "puma-driver: building net\n\
operations.cpp:256:107: runtime error: member access within null pointer of type 'struct ProducerOperation'\n\
    #0 0x7ffff6e177cd in maxpool(ImagePixelStream, unsigned int, unsigned int) /tmp/puma-build.frLiNa/sanitize/src/operations.cpp:256\n\
    #1 0x5555556bad50 in runLet /work/scripts/puma-driver/puma-driver.cpp:466\n\
    #6 0x5555556807e0 in _start (/work/sanitize/bin/puma-driver+0x12c7e0)\n\
\n";
        let r = sanitizer_report(stderr, &own()).unwrap();
        assert_eq!(r.sanitizer, "UndefinedBehaviorSanitizer");
        assert_eq!(
            r.what,
            "member access within null pointer of type 'struct ProducerOperation'"
        );
        assert_eq!(
            r.frames,
            vec![
                Frame {
                    function: "maxpool".into(),
                    location: "operations.cpp:256".into(),
                    own: true
                },
                Frame {
                    function: "runLet".into(),
                    location: "puma-driver.cpp:466".into(),
                    own: false
                },
                Frame {
                    function: "_start".into(),
                    location: "puma-driver+0x12c7e0".into(),
                    own: false
                },
            ]
        );
        assert_eq!(top_own_functions(&r.frames, 3), vec!["maxpool".to_string()]);
    }

    #[test]
    fn asan_reports_take_the_first_stack_only() {
        let stderr = "==4242==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020 at pc 0x1 bp 0x2 sp 0x3\n\
READ of size 8 at 0x6020 thread T0\n\
    #0 0x7f in std::_Rb_tree_increment(std::_Rb_tree_node_base*) ../../../../src/libstdc++-v3/src/c++98/tree.cc:65\n\
    #1 0x7f in RegisterAllocator::allocateRegisters() /tmp/b/sanitize/src/regalloc.cpp:453\n\
\n\
freed by thread T0 here:\n\
    #0 0x7f in operator delete(void*) (/lib/libasan.so.8+0xdb2e8)\n";
        let r = sanitizer_report(stderr, &own()).unwrap();
        assert_eq!(
            (r.sanitizer.as_str(), r.what.as_str()),
            ("AddressSanitizer", "heap-use-after-free")
        );
        assert_eq!(r.frames.len(), 2);
        assert_eq!(r.frames[0].function, "std::_Rb_tree_increment");
        assert_eq!(
            top_own_functions(&r.frames, 3),
            vec!["RegisterAllocator::allocateRegisters".to_string()]
        );
        assert!(sanitizer_report("all good\n", &own()).is_none());
    }

    /// One uninitialized operand of `maxpool`, dereferenced by whichever of its users comes
    /// first: the same signature, `maxpool`, wherever the crash lands.
    #[test]
    fn the_crash_sites_bookkeeping_leaves_the_caller_to_sign() {
        let frame = |function: &str, location: &str| Frame {
            function: function.into(),
            location: location.into(),
            own: true,
        };
        let driver = Frame {
            function: "puma-driver+0xa965".into(),
            location: "??".into(),
            own: false,
        };
        let stacks = [
            vec![frame("maxpool", "operations.cpp:256"), driver.clone()],
            vec![
                frame("VectorImpl::setTile", "tensors.cpp:386"),
                frame("maxpool", "operations.cpp:259"),
                driver.clone(),
            ],
            vec![
                frame("ModelImpl::addOperation", "model.cpp:162"),
                frame("Operation::Operation", "operations.cpp:415"),
                frame(
                    "ALUVectorOperation::ALUVectorOperation",
                    "operations.cpp:476",
                ),
                frame("maxpool", "operations.cpp:256"),
                driver.clone(),
            ],
        ];
        for frames in &stacks {
            assert_eq!(top_own_functions(frames, 3), vec!["maxpool".to_string()]);
        }
        // Bookkeeping alone still signs; other functions keep their place.
        let only = [frame("ModelImpl::addOperation", "model.cpp:162")];
        assert_eq!(
            top_own_functions(&only, 3),
            vec!["ModelImpl::addOperation".to_string()]
        );
        let spill = [
            frame(
                "RegisterAllocator::allocateRegistersWithSpilling",
                "regalloc.cpp:440",
            ),
            frame(
                "RegisterAllocator::allocateDataRegisters",
                "regalloc.cpp:405",
            ),
            frame("RegisterAllocator::registerAllocation", "regalloc.cpp:231"),
            frame("RegisterAllocator::RegisterAllocator", "regalloc.cpp:129"),
        ];
        assert_eq!(top_own_functions(&spill, 3).len(), 3);
        assert!(is_bookkeeping("Operation::Operation"));
        assert!(!is_bookkeeping("OutputImagePixelStream::operator="));
        assert!(!is_bookkeeping("Partitioner::settle"));
    }

    #[test]
    fn shim_lines_with_and_without_the_exact_mark() {
        assert_eq!(
            shim_frame("PIMDIFF-FRAME /t/src/libpuma.so +0x1a2b exact"),
            Some(("/t/src/libpuma.so", "0x1a2b", true))
        );
        assert_eq!(
            shim_frame("PIMDIFF-FRAME /a b/x +y/libc.so.6 +0x27249"),
            Some(("/a b/x +y/libc.so.6", "0x27249", false))
        );
        assert_eq!(shim_frame("PIMDIFF-FRAME /x +junk"), None);
        assert_eq!(shim_frame("other /x +0x1"), None);
    }

    #[test]
    fn assertions_name_file_function_and_condition() {
        let stderr = "puma-driver: partitioner.cpp:95: unsigned int Partitioner::getVMVMU(Operation*): Assertion `isVMVMUAssigned(op) && \"Virtual MVMU not assigned!\"' failed.\n";
        assert_eq!(
            assertion(stderr),
            Some((
                "partitioner.cpp".into(),
                "Partitioner::getVMVMU".into(),
                "isVMVMUAssigned(op) && \"Virtual MVMU not assigned!\"".into()
            ))
        );
        assert_eq!(
            function_name("ns::f<int>::operator()(int) const"),
            "ns::f<int>::operator()"
        );
        assert_eq!(
            without_templates("std::set<A<B>>::insert<C>"),
            "std::set::insert"
        );
        assert_eq!(without_templates("X::operator<<"), "X::operator<<");
        assert_eq!(
            short_location("/a/b/x.cpp:12 (discriminator 3)"),
            "x.cpp:12"
        );
    }
}
