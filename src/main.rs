use std::process::ExitCode;

use clap::{Parser, Subcommand};
use pimdiff::cli;

/// Differential tester and fuzzer for compilers that lower conv2d and MVM onto ReRAM
/// crossbar processing-in-memory accelerators (the PIMSim ISA).
#[derive(Parser)]
#[command(name = "pimdiff", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { cli::exit(cli::EXIT_BAD_INPUT) } else { cli::exit(cli::EXIT_OK) };
        }
    };
    let result: anyhow::Result<ExitCode> = match cli.command {};
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            cli::exit(cli::EXIT_BAD_INPUT)
        }
    }
}
