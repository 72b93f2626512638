//! `pimdiff man [--out DIR]`: the manual page, generated from the CLI definition itself
//! (clap_mangen), so it cannot drift from the binary. Without `--out`, `pimdiff.1` goes to
//! standard output (`pimdiff man | man -l -`); with it, `DIR` gets `pimdiff.1` and one page per
//! subcommand, `pimdiff-<subcommand>.1` (e.g. for `/usr/local/share/man/man1`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::exit_codes::help;
use super::{exit, EXIT_OK};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "the pages are written")],
    "pimdiff man --out man/   # then: man -l man/pimdiff-hunt.1",
))]
pub struct Args {
    /// Write pimdiff.1 and pimdiff-<subcommand>.1 into DIR (created if missing) instead of
    /// pimdiff.1 to standard output.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Writes the manual page(s) of `cli` (the binary's whole command).
pub fn main(args: Args, mut cli: clap::Command) -> anyhow::Result<ExitCode> {
    // Built as `generate_to` builds it (with clap's `help` subcommand), so that the page on
    // standard output is the `pimdiff.1` of `--out`.
    cli.build();
    let Some(dir) = args.out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cli)
            .render(&mut page)
            .context("rendering the manual page")?;
        std::io::stdout()
            .write_all(&page)
            .context("writing the manual page")?;
        return Ok(exit(EXIT_OK));
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(cli, &dir)
        .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
    println!("wrote the manual pages into {}", dir.display());
    Ok(exit(EXIT_OK))
}
