//! `pimdiff replay` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn main(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`pimdiff replay` is not implemented yet")
}
