use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use pimdiff::cli;

/// Differential tester and fuzzer for compilers that lower conv2d and MVM onto ReRAM
/// crossbar processing-in-memory accelerators (the PIMSim ISA).
#[derive(Parser)]
#[command(name = "pimdiff", version, about, after_help = cli::exit_codes::contract_help())]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a PIMSim program on the functional multi-core interpreter.
    Run(cli::run::Args),
    /// Assemble our assembly text into pimsim-nn JSON.
    Asm(cli::asm::AsmArgs),
    /// Disassemble a pimsim-nn / PIMCOMP-NN program into our assembly text.
    Disasm(cli::asm::DisasmArgs),
    /// Validate a case and compute its reference output.
    Oracle(cli::oracle::Args),
    /// Write a valid random case directory.
    NewCase(cli::new_case::Args),
    /// Compile a case with the in-repo compiler (channel- or pixel-wise) into a bundle.
    Compile(cli::compile::Args),
    /// Check a bundle against the bundle format and, with --case, against its case.
    CheckBundle(cli::check_bundle::Args),
    /// Write model.onnx, op.mlir and check.py into an existing case directory.
    Export(cli::export::Args),
    /// Turn a one-operator ONNX model into a case directory.
    ImportOnnx(cli::import_onnx::Args),
    /// Measure the channel-wise lowering against the pixel-wise one on ResNet-18's layers.
    Lowerings(cli::lowerings::Args),
    /// Recompile and rerun a saved case; compare with the oracle.
    Repro(cli::repro::Args),
    /// Replay every case directory given (a corpus) and summarize.
    Replay(cli::replay::Args),
    /// Generate random cases and hunt for miscompilations.
    Hunt(Box<cli::hunt::Args>),
    /// Turn a cargo-fuzz crash artifact into a minimized case directory.
    FromFuzz(cli::from_fuzz::Args),
    /// Check a PIMCOMP-NN program and its side table bit for bit against a wrap-8 reference.
    Pimcomp(cli::pimcomp::Args),
    /// Compile a network written against the PUMA compiler's puma.h and check it exactly.
    Puma(cli::puma::Args),
    /// Write the shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions(cli::completions::Args),
    /// Write the manual page (pimdiff.1) to stdout, or every page into a directory.
    Man(cli::man::Args),
    /// Merge the outputs of several hunts of one target (shards, nights) into one, each
    /// finding once.
    Merge(cli::merge::Args),
}

fn main() -> ExitCode {
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let (cli, matches) = match parsed {
        Ok(p) => p,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                cli::exit(cli::EXIT_BAD_INPUT)
            } else {
                cli::exit(cli::EXIT_OK)
            };
        }
    };
    let result: anyhow::Result<ExitCode> = match cli.command {
        Command::Run(a) => cli::run::main(a),
        Command::Asm(a) => cli::asm::asm_main(a),
        Command::Disasm(a) => cli::asm::disasm_main(a),
        Command::Oracle(a) => cli::oracle::main(a),
        Command::NewCase(a) => cli::new_case::main(a),
        Command::Compile(a) => cli::compile::main(a),
        Command::CheckBundle(a) => cli::check_bundle::main(a),
        Command::Export(a) => cli::export::main(a),
        Command::ImportOnnx(a) => cli::import_onnx::main(a),
        Command::Lowerings(a) => cli::lowerings::main(a),
        Command::Repro(a) => cli::repro::main(a),
        Command::Replay(a) => cli::replay::main(a),
        Command::Hunt(a) => cli::hunt::main(*a, &given_flags(&matches, "hunt")),
        Command::FromFuzz(a) => cli::from_fuzz::main(a),
        Command::Pimcomp(a) => cli::pimcomp::main(a),
        Command::Puma(a) => cli::puma::main(a),
        Command::Completions(a) => cli::completions::main(a, Cli::command()),
        Command::Man(a) => cli::man::main(a, Cli::command()),
        Command::Merge(a) => cli::merge::main(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", cli::errors::chain(&e));
            cli::exit(cli::EXIT_BAD_INPUT)
        }
    }
}

/// The long names of the flags given on the command line to `subcommand`.
fn given_flags(matches: &clap::ArgMatches, subcommand: &str) -> Vec<String> {
    let Some(sub) = matches.subcommand_matches(subcommand) else {
        return Vec::new();
    };
    let command = Cli::command();
    let Some(def) = command.find_subcommand(subcommand) else {
        return Vec::new();
    };
    def.get_arguments()
        .filter(|a| {
            sub.value_source(a.get_id().as_str()) == Some(clap::parser::ValueSource::CommandLine)
        })
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}
