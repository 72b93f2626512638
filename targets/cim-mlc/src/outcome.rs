//! A case's outcome on the shared kinds, with a signature that stays the same for one root
//! cause: what the engine deduplicates, groups and minimizes by.
//!
//! | what happened | kind | signature |
//! |---|---|---|
//! | an exception in CIM-MLC | `crash` | exception type, the innermost CIM-MLC frame's file and function, the message with its numbers abstracted |
//! | an exception that goes away with the network's input behind a convolution | `crash` | the CIM-MLC pass that failed and `fails on an operator reading the network's input` |
//! | the driver process died | `crash` | how it ended |
//! | still compiling at the deadline | `hang` | `hang: compile` |
//! | CIM-MLC declines the network | `unsupported` | — (counted per reason) |
//! | a flow reads what nothing wrote, or outside a buffer | `fault` | fault kind, meta-operator and the CIM-MLC function that made it; or the CIM-MLC state it obeyed (`crate::blame`) |
//! | a flow computes a wrong value | `mismatch` | the granularities that are wrong, the operator of the first wrong node, the meta-operator that wrote it |
//! | the tooling could not judge | `poisoned` | — (counted, never a finding) |
//!
//! Line numbers and node indices stay out of signatures (a fix or a smaller network moves
//! them); they are in the detail and the report.

use pimdiff_engine::finding::{abstract_message, Kind, Signature};

use crate::driver::{Compile, PyException};

/// What a case came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub kind: Kind,
    pub signature: Option<Signature>,
    /// One line for people, with the specifics (lines, nodes, values).
    pub detail: String,
    /// A decline's reason (numbers abstracted), for the per-reason counts.
    pub decline: Option<String>,
}

impl Outcome {
    pub fn of_kind(kind: Kind, detail: String) -> Outcome {
        Outcome {
            kind,
            signature: None,
            detail,
            decline: None,
        }
    }

    pub fn finding(kind: Kind, signature: String, detail: String) -> Outcome {
        Outcome {
            kind,
            signature: Some(Signature::new(kind, signature)),
            detail,
            decline: None,
        }
    }
}

/// The signature text of an exception: type, innermost CIM-MLC function, abstracted message.
pub fn exception_signature(e: &PyException) -> String {
    let at = e
        .site()
        .map(|f| format!(" in {}:{}", f.file, f.function))
        .unwrap_or_default();
    let first_line = e.message.lines().next().unwrap_or("");
    let message: String = abstract_message(first_line).chars().take(120).collect();
    format!("{}{at}: {message}", e.kind)
}

/// The outcome of an exception that goes away when the network's input is first put behind a
/// weighted operator (`Network::with_input_behind_an_operator`): the crash is about an
/// operator reading the network's input, one cause whatever handler trips over it (CIM-MLC
/// raises a different exception in each: an empty source list indexed, a source address that
/// is `None`), so it is signed by the CIM-MLC pass that failed (the innermost frame's
/// directory: `codegen`, `optimization`) and not by the frame. The frame stays in the detail,
/// in `finding.json` and in the report.
pub fn input_reader_crash(e: &PyException) -> Outcome {
    let pass = e
        .site()
        .map(|f| match f.file.split_once('/') {
            Some((dir, _)) => dir.to_string(),
            None => f.file.clone(),
        })
        .unwrap_or_else(|| "CIM-MLC".to_string());
    Outcome::finding(
        Kind::Crash,
        format!("{pass} fails on an operator reading the network's input"),
        format!(
            "{}; the same network with its input behind a 1×1 convolution compiles",
            exception_detail(e)
        ),
    )
}

/// `TypeError: message at codegen/X.py:12 (function)`: an exception for people.
fn exception_detail(e: &PyException) -> String {
    let site = e
        .site()
        .map(|f| format!(" at {}:{} ({})", f.file, f.line, f.function))
        .unwrap_or_default();
    format!(
        "{}: {}{site}",
        e.kind,
        e.message.lines().next().unwrap_or("")
    )
}

/// The outcome of a compile that did not produce flows (`None` for one that did).
pub fn compile_outcome(compile: &Compile) -> Option<Outcome> {
    Some(match compile {
        Compile::Compiled(_) => return None,
        Compile::Exception(e) => {
            Outcome::finding(Kind::Crash, exception_signature(e), exception_detail(e))
        }
        Compile::Died { status, stderr } => {
            let last = stderr
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("");
            Outcome::finding(
                Kind::Crash,
                format!("the driver died ({})", abstract_message(status)),
                format!("the driver process ended before answering ({status}): {last}"),
            )
        }
        Compile::Hang { limit, overrun } => Outcome::finding(
            Kind::Hang,
            "compile".to_string(),
            match overrun {
                Some(o) => format!("CIM-MLC was killed at its limit: {}", o.describe(*limit)),
                None => format!("CIM-MLC was still compiling after {limit:?}"),
            },
        ),
        Compile::Unsupported(reason) => Outcome {
            kind: Kind::Unsupported,
            signature: None,
            detail: format!("CIM-MLC's driver declines the network: {reason}"),
            decline: Some(abstract_message(reason)),
        },
        Compile::Poisoned(why) => Outcome::of_kind(Kind::Poisoned, why.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::Frame;

    #[test]
    fn an_exception_is_signed_by_type_site_and_abstracted_message() {
        let e = PyException {
            kind: "IndexError".into(),
            module: None,
            message: "index 0 is out of bounds for axis 3 with size 0".into(),
            frames: vec![
                Frame {
                    file: "main.py".into(),
                    line: 77,
                    function: "main".into(),
                },
                Frame {
                    file: "codegen/WordlineWise.py".into(),
                    line: 271,
                    function: "process_conv_node_wlm".into(),
                },
            ],
            raised_in: None,
        };
        let o = compile_outcome(&Compile::Exception(e)).unwrap();
        assert_eq!(o.kind, Kind::Crash);
        assert_eq!(
            o.signature.unwrap().to_string(),
            "crash: IndexError in codegen/WordlineWise.py:process_conv_node_wlm: index N is out of bounds for axis N with size N"
        );
        assert!(o
            .detail
            .ends_with("at codegen/WordlineWise.py:271 (process_conv_node_wlm)"));
        let hang = compile_outcome(&Compile::Hang {
            limit: std::time::Duration::from_secs(30),
            overrun: None,
        })
        .unwrap();
        assert_eq!(hang.signature.unwrap().to_string(), "hang: compile");
    }

    #[test]
    fn a_crash_about_the_networks_input_is_signed_by_the_pass_not_the_handler() {
        let raised = |kind: &str, file: &str, function: &str, message: &str| PyException {
            kind: kind.into(),
            module: None,
            message: message.into(),
            frames: vec![Frame {
                file: file.into(),
                line: 130,
                function: function.into(),
            }],
            raised_in: None,
        };
        let alu = input_reader_crash(&raised(
            "IndexError",
            "codegen/Addr.py",
            "handle_alu_op",
            "list index out of range",
        ));
        let pool = input_reader_crash(&raised(
            "TypeError",
            "codegen/CoreWise.py",
            "process_pooling_node_cm",
            "cannot unpack non-iterable NoneType object",
        ));
        let segment = input_reader_crash(&raised(
            "TypeError",
            "optimization/CorePipe.py",
            "update_dup",
            "unsupported operand",
        ));
        assert_eq!(
            alu.signature.as_ref().unwrap().to_string(),
            "crash: codegen fails on an operator reading the network's input"
        );
        assert_eq!(alu.signature, pool.signature);
        assert_eq!(
            segment.signature.unwrap().to_string(),
            "crash: optimization fails on an operator reading the network's input"
        );
        assert_eq!(
            pool.detail,
            "TypeError: cannot unpack non-iterable NoneType object at codegen/CoreWise.py:130 \
             (process_pooling_node_cm); the same network with its input behind a 1×1 \
             convolution compiles"
        );
    }
}
