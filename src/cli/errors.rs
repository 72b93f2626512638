//! How the CLI prints an error: its chain of causes, each said once.
//!
//! `anyhow`'s `{:#}` joins every cause's message with `": "`. Two habits of error types make
//! that repeat itself: a type whose message already ends with its source's message *and*
//! returns that source from `source()` (then the source is printed twice), and layers that
//! each prefix the same path (`cannot read the case X: X: X: No such file or directory`).
//! [`chain`] prints the same chain without the repetition: each layer contributes only what
//! its source did not already say, and a `": "`-separated part that was already said (the same
//! text, or the tail of an earlier part, as a path is of `reading X`) is left out.

/// The error and its causes, outermost first, joined by `": "`, each thing said once.
pub fn chain(error: &anyhow::Error) -> String {
    let layers: Vec<String> = error.chain().map(ToString::to_string).collect();
    let mut said: Vec<String> = Vec::new();
    for (i, layer) in layers.iter().enumerate() {
        let own = match layers.get(i + 1) {
            Some(source) => own_part(layer, source),
            None => layer.as_str(),
        };
        for part in own.split(": ").map(str::trim).filter(|p| !p.is_empty()) {
            if !said.iter().any(|s| repeats(s, part)) {
                said.push(part.to_string());
            }
        }
    }
    said.join(": ")
}

/// What `layer` says beyond `source` when its message ends with the source's message.
fn own_part<'a>(layer: &'a str, source: &str) -> &'a str {
    match layer.strip_suffix(source) {
        Some(rest) if !source.is_empty() => rest.trim_end().trim_end_matches(':'),
        _ => layer,
    }
}

/// Whether `part` repeats `earlier`: the same text, or its last words (`X` of `reading X`).
fn repeats(earlier: &str, part: &str) -> bool {
    earlier == part
        || earlier
            .strip_suffix(part)
            .is_some_and(|head| head.ends_with(' '))
}

#[cfg(test)]
mod tests {
    use super::chain;
    use std::io;

    /// The anti-pattern: own message includes the source's, and `source()` returns it too.
    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct WithPath {
        path: String,
        source: io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("{path}: {source}")]
    struct Outer {
        path: String,
        source: WithPath,
    }

    fn not_found() -> io::Error {
        io::Error::new(
            io::ErrorKind::NotFound,
            "No such file or directory (os error 2)",
        )
    }

    #[test]
    fn a_source_repeated_in_its_parent_message_is_said_once() {
        let e = anyhow::Error::new(WithPath {
            path: "/nonexistent".into(),
            source: not_found(),
        })
        .context("invalid case /nonexistent");
        assert_eq!(
            chain(&e),
            "invalid case /nonexistent: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn a_path_every_layer_prefixes_is_said_once() {
        let inner = WithPath {
            path: "/nonexistent".into(),
            source: not_found(),
        };
        let e = anyhow::Error::new(Outer {
            path: "/nonexistent".into(),
            source: inner,
        })
        .context("cannot read the case /nonexistent");
        assert_eq!(
            chain(&e),
            "cannot read the case /nonexistent: No such file or directory (os error 2)"
        );
    }

    #[test]
    fn distinct_causes_are_all_kept_in_order() {
        let e = anyhow::Error::new(not_found())
            .context("case.json: field `op.kind`")
            .context("cannot import model.onnx");
        assert_eq!(
            chain(&e),
            "cannot import model.onnx: case.json: field `op.kind`: No such file or directory \
             (os error 2)"
        );
        let plain = anyhow::anyhow!("bad flag --x");
        assert_eq!(chain(&plain), "bad flag --x");
    }

    #[test]
    fn only_whole_trailing_words_count_as_said() {
        // "12" is not the tail of "core 2" at a word boundary, so it stays.
        let e = anyhow::anyhow!("12").context("core 2");
        assert_eq!(chain(&e), "core 2: 12");
    }
}
