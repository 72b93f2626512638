//! `pimdiff compile CASE_DIR -o BUNDLE_DIR [--emit STAGE] [--lowering channel|pixel]
//! [--no-skip-padding] [--no-weight-skipping]`: compile a case with the in-repo compiler
//! (channel-wise, or the pixel-wise baseline) and write the bundle (or, with `--emit`, print
//! one stage's IR instead).
//!
//! It follows the external-compiler protocol it is the reference for (`pimdiff::external`), so
//! `--compiler-cmd 'pimdiff compile {case} -o {out}'` tests it like any other compiler. Exit
//! codes (`pimdiff::cli::exit_codes`): 0 compiled; 1 an internal compiler error; 2 bad input
//! (an unreadable or invalid case, an unwritable bundle); 3 the compiler declines the case
//! (unsupported: the last line of standard error is the reason, with the numbers). This is
//! the only command that returns 3: it is the protocol external compilers implement.
//!
//! `pimdiff compile --serve` is the reference server of the persistent protocol
//! (`pimdiff::compilers::serve`, `docs/serve-protocol.md`): it reads one JSON request per line
//! on standard input and answers each with one JSON line, until the end of its input (exit 0).
//! A request line that is not a request of protocol version 1 (or longer than the limit) ends
//! it with exit 2; a case it cannot read or a bundle it cannot write is an `error` answer (that
//! case's failure, not the server's). `--inject-bug CLASS`, in either mode, compiles with a
//! known miscompilation, so that the two protocols can be compared on a compiler with a bug.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use pimdiff_compiler::{compile, emit, CompileError, CompileOptions, Lowering, Reduction, Stage};

use super::exit_codes::help;
use super::{exit, EXIT_BAD_INPUT, EXIT_FINDING, EXIT_OK, EXIT_UNSUPPORTED};
use crate::compilers::injected::BugClass;
use crate::compilers::serve::{Request, Said, PROTOCOL_VERSION};
use crate::compilers::{CompileFailure, CompilerUnderTest};
use crate::registry::flags::parse_bug;

/// The longest request line `--serve` reads, in bytes (a request names two paths).
const REQUEST_LINE_LIMIT: u64 = 64 << 10;

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[
        (
            EXIT_OK,
            "compiled: the bundle is written (or --emit printed); with --serve: the end of the \
             requests",
        ),
        (EXIT_FINDING, "an internal compiler error"),
        (
            EXIT_UNSUPPORTED,
            "the compiler declines the case; the reason is the last line of stderr (the \
             bundle protocol's \"unsupported\", which external compilers implement)",
        ),
        (
            EXIT_BAD_INPUT,
            "an unreadable case or unwritable bundle; with --serve: a request line that is not a \
             protocol-1 request",
        ),
    ],
    "pimdiff compile my-case -o bundle   # then: pimdiff run bundle/",
))]
pub struct Args {
    /// The case directory (case.json, input.npy, weight.npy, ...).
    #[arg(required_unless_present = "serve")]
    pub case: Option<PathBuf>,
    /// Where to write the bundle (created if missing). Not needed with --emit.
    #[arg(short = 'o', long = "output", required_unless_present_any = ["emit", "serve"])]
    pub output: Option<PathBuf>,
    /// Serve the persistent protocol instead: one JSON request per line on stdin, one JSON
    /// answer per line on stdout (docs/serve-protocol.md), until the end of stdin.
    #[arg(long, conflicts_with_all = ["case", "output", "emit"])]
    pub serve: bool,
    /// Compile with a known miscompilation injected (e.g. `missing-bias`), in either mode.
    #[arg(long, value_name = "CLASS", value_parser = parse_bug, conflicts_with_all = ["emit", "no_skip_padding", "no_weight_skipping", "reduction"])]
    pub inject_bug: Option<BugClass>,
    /// Print this stage's IR instead of writing a bundle: spatial, mapping, pim, asm or
    /// provenance (the program with the compiler function that emitted each instruction).
    #[arg(long, value_parser = parse_stage)]
    pub emit: Option<Stage>,
    /// Multiply padding zeros instead of skipping kernel positions that fall in the padding.
    #[arg(long)]
    pub no_skip_padding: bool,
    /// Keep crossbars whose weights are all zero.
    #[arg(long)]
    pub no_weight_skipping: bool,
    /// channel (the thesis's channel-wise lowering) or pixel (the pixel-wise baseline).
    #[arg(long, default_value = "channel", value_parser = parse_lowering)]
    pub lowering: Lowering,
    /// noc (`send`/`recv`, default) or gmem (`st`, `sync`, `wait`, `ld`): how partial sums
    /// are reduced across cores (channel-wise lowering).
    #[arg(long, default_value = "noc", value_parser = parse_reduction)]
    pub reduction: Reduction,
}

fn parse_reduction(s: &str) -> Result<Reduction, String> {
    s.parse()
}

fn parse_lowering(s: &str) -> Result<Lowering, String> {
    s.parse()
}

fn parse_stage(s: &str) -> Result<Stage, String> {
    s.parse()
}

pub fn main(args: Args) -> anyhow::Result<ExitCode> {
    let options = CompileOptions {
        skip_padding: !args.no_skip_padding,
        weight_skipping: !args.no_weight_skipping,
        lowering: args.lowering,
        reduction: args.reduction,
    };
    let compiler = match args.inject_bug {
        Some(bug) => CompilerUnderTest::Mutated(bug, args.lowering),
        None => CompilerUnderTest::InRepo(options),
    };
    if args.serve {
        return serve(&compiler);
    }
    let Some(case_dir) = &args.case else {
        anyhow::bail!("a CASE directory is required unless --serve is given");
    };
    let case = pimdiff_oracle::io::read_case(case_dir)
        .with_context(|| format!("reading case {}", case_dir.display()))?;
    if let Some(stage) = args.emit {
        return Ok(match emit(&case, &options, stage) {
            Ok(text) => {
                print!("{text}");
                exit(EXIT_OK)
            }
            Err(e) => declined(e),
        });
    }
    let bundle = match args.inject_bug {
        None => match compile(&case, &options) {
            Ok(b) => b,
            Err(e) => return Ok(declined(e)),
        },
        Some(_) => match compiler.compile(&case, std::time::Duration::MAX) {
            Ok(b) => b,
            Err(f) => return Ok(failed(f)),
        },
    };
    let Some(out) = args.output else {
        anyhow::bail!("-o BUNDLE_DIR is required unless --emit is given");
    };
    bundle
        .write_dir(&out)
        .with_context(|| format!("writing bundle {}", out.display()))?;
    let insts: usize = bundle.program.cores.iter().map(Vec::len).sum();
    let arrays: usize = bundle.xbars.cores.values().map(|c| c.groups.len()).sum();
    eprintln!(
        "compiled {} -> {}: {} instructions on {} core(s), {} crossbar arrays",
        case_dir.display(),
        out.display(),
        insts,
        bundle.program.cores.len(),
        arrays
    );
    Ok(exit(EXIT_OK))
}

/// Unsupported: exit 3 with the reason alone on the last line of standard error (the
/// protocol's reason, the same text the harness records for the in-repo compiler). Anything
/// else: exit 1.
fn declined(e: CompileError) -> ExitCode {
    match e {
        CompileError::Unsupported(reason) => {
            eprintln!("pimdiff compile: the case is unsupported:");
            eprintln!("{reason}");
            exit(EXIT_UNSUPPORTED)
        }
        CompileError::Internal(_) => {
            eprintln!("pimdiff compile: {e}");
            exit(EXIT_FINDING)
        }
    }
}

/// A failure of the compiler with an injected bug, as `declined` reports the in-repo
/// compiler's.
fn failed(f: CompileFailure) -> ExitCode {
    match answer_of(Err(f)) {
        Said::Unsupported(reason) => {
            eprintln!("pimdiff compile: the case is unsupported:");
            eprintln!("{reason}");
            exit(EXIT_UNSUPPORTED)
        }
        Said::Error(message) => {
            eprintln!("pimdiff compile: {message}");
            exit(EXIT_FINDING)
        }
        Said::Compiled => exit(EXIT_OK),
    }
}

/// `--serve`: answers request lines until the end of standard input.
fn serve(compiler: &CompilerUnderTest) -> anyhow::Result<ExitCode> {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = std::io::Read::take(&mut input, REQUEST_LINE_LIMIT + 1)
            .read_until(b'\n', &mut line)
            .context("reading a request from standard input")?;
        if read == 0 {
            return Ok(exit(EXIT_OK));
        }
        if line.len() as u64 > REQUEST_LINE_LIMIT {
            eprintln!(
                "pimdiff compile --serve: a request line longer than {REQUEST_LINE_LIMIT} bytes"
            );
            return Ok(exit(EXIT_BAD_INPUT));
        }
        let request: Request = match serde_json::from_slice(&line) {
            Ok(r) => r,
            Err(e) => {
                eprintln!(
                    "pimdiff compile --serve: not a request ({e}): {:?}",
                    String::from_utf8_lossy(&line)
                );
                return Ok(exit(EXIT_BAD_INPUT));
            }
        };
        if request.protocol != PROTOCOL_VERSION {
            eprintln!(
                "pimdiff compile --serve: protocol version {} requested, this server speaks {PROTOCOL_VERSION}",
                request.protocol
            );
            return Ok(exit(EXIT_BAD_INPUT));
        }
        let said = answer(compiler, &request);
        writeln!(output, "{}", said.to_line(request.id))
            .and_then(|()| output.flush())
            .context("writing an answer to standard output")?;
    }
}

/// Compiles one request's case into its bundle directory.
fn answer(compiler: &CompilerUnderTest, request: &Request) -> Said {
    let case = match pimdiff_oracle::io::read_case(&request.case) {
        Ok(c) => c,
        Err(e) => return Said::Error(format!("reading case {}: {e}", request.case.display())),
    };
    let bundle = match compiler.compile(&case, std::time::Duration::MAX) {
        Ok(b) => b,
        Err(f) => return answer_of(Err(f)),
    };
    match bundle.write_dir(&request.out) {
        Ok(()) => Said::Compiled,
        Err(e) => Said::Error(format!("writing bundle {}: {e}", request.out.display())),
    }
}

/// What a compile's result says in the protocol's words.
fn answer_of(result: Result<(), CompileFailure>) -> Said {
    match result {
        Ok(()) => Said::Compiled,
        Err(CompileFailure::Unsupported { reason, .. }) => Said::Unsupported(reason),
        Err(CompileFailure::Failed { message } | CompileFailure::Died { message }) => {
            Said::Error(message)
        }
        Err(CompileFailure::Panicked { message, location }) => Said::Error(match location {
            Some(at) => format!("the compiler panicked at {at}: {message}"),
            None => format!("the compiler panicked: {message}"),
        }),
        Err(CompileFailure::TimedOut {
            limit,
            overrun: Some(o),
        }) => Said::Error(format!("timed out: {}", o.describe(limit))),
        Err(CompileFailure::TimedOut { limit, .. }) => {
            Said::Error(format!("timed out after {:.1} s", limit.as_secs_f64()))
        }
        Err(CompileFailure::Poisoned { reason }) => Said::Error(reason),
    }
}
