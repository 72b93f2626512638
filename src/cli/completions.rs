//! `pimdiff completions bash|zsh|fish|elvish|powershell`: the shell's completion script for
//! every subcommand and flag, generated from the CLI definition itself (clap_complete), so it
//! cannot drift from the binary. Install, e.g.:
//!
//! ```sh
//! pimdiff completions bash > ~/.local/share/bash-completion/completions/pimdiff
//! pimdiff completions zsh > "${fpath[1]}/_pimdiff"
//! pimdiff completions fish > ~/.config/fish/completions/pimdiff.fish
//! ```

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap_complete::Shell;

use super::exit_codes::help;
use super::{exit, EXIT_OK};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "the script is written")],
    "pimdiff completions bash > ~/.local/share/bash-completion/completions/pimdiff",
))]
pub struct Args {
    /// The shell to write the completion script for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Writes the completion script of `cli` (the binary's whole command) to standard output.
pub fn main(args: Args, mut cli: clap::Command) -> anyhow::Result<ExitCode> {
    let name = cli.get_name().to_string();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cli, name, &mut script);
    std::io::stdout()
        .write_all(&script)
        .context("writing the completion script")?;
    Ok(exit(EXIT_OK))
}
