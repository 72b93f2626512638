//! `pimdiff asm` / `pimdiff disasm` (not implemented yet).

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct AsmArgs {}

#[derive(clap::Args, Debug)]
pub struct DisasmArgs {}

pub fn asm_main(_args: AsmArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`pimdiff asm` is not implemented yet")
}

pub fn disasm_main(_args: DisasmArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`pimdiff disasm` is not implemented yet")
}
