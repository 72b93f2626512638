//! `pimdiff asm` / `pimdiff disasm`: convert between our assembly text and the JSON forms.
//!
//! Both read any program form `formats::load_program` accepts (assembly text, JSON, gzip,
//! directory), so `asm` also normalises JSON and `disasm` also reads text. Exit codes
//! (`pimdiff::cli::exit_codes`): 0 converted, 2 bad input (an `Err` naming the file:
//! unreadable, invalid, or unwritable output).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use pimdiff_isa::formats::{self, asm, json};
use pimdiff_isa::Program;

use super::exit_codes::help;
use super::{exit, EXIT_OK};

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "assembled: the JSON is written")],
    "pimdiff asm program.s -o program.json",
))]
pub struct AsmArgs {
    /// The program to assemble: our assembly text (or any other program form).
    pub file: PathBuf,
    /// Where to write the JSON: a file (gzip-compressed when its name ends in `.gz`), or a
    /// directory in pimsim-nn's form (config.json + core_<i>.json) when the name ends in `/`
    /// or `--dir` is given. Default: standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Write the directory form into OUT (created if missing).
    #[arg(long, requires = "output")]
    pub dir: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = help(
    &[(EXIT_OK, "disassembled: the assembly text is written")],
    "pimdiff disasm bundle/ -o program.s",
))]
pub struct DisasmArgs {
    /// The program: a JSON file (plain or .gz), a program directory, or assembly text.
    pub file: PathBuf,
    /// Where to write the assembly text. Default: standard output.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

pub fn asm_main(args: AsmArgs) -> anyhow::Result<ExitCode> {
    let program = load(&args.file)?;
    match &args.output {
        None => {
            let stdout = io::stdout();
            quiet_broken_pipe(json::write_json(&program, stdout.lock()))
                .context("cannot write to standard output")?;
        }
        Some(out) if args.dir || out.as_os_str().to_string_lossy().ends_with('/') => {
            formats::write_program_dir(&program, out)
                .with_context(|| format!("cannot write program directory {}", out.display()))?;
        }
        Some(out) => write_json_file(&program, out)
            .with_context(|| format!("cannot write {}", out.display()))?,
    }
    Ok(exit(EXIT_OK))
}

pub fn disasm_main(args: DisasmArgs) -> anyhow::Result<ExitCode> {
    let program = load(&args.file)?;
    let text = asm::print(&program);
    match &args.output {
        None => quiet_broken_pipe(io::stdout().lock().write_all(text.as_bytes()))
            .context("cannot write to standard output")?,
        Some(out) => {
            fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?
        }
    }
    Ok(exit(EXIT_OK))
}

/// A reader that stopped early (`pimdiff disasm X | head`) is not an error.
fn quiet_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Load a program; the error already names the file (and core, instruction, field).
fn load(path: &Path) -> anyhow::Result<Program> {
    if !path.exists() {
        bail!("{}: no such file or directory", path.display());
    }
    Ok(formats::load_program(path)?)
}

fn write_json_file(program: &Program, out: &Path) -> io::Result<()> {
    let file = io::BufWriter::new(fs::File::create(out)?);
    if out.extension().is_some_and(|e| e == "gz") {
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        json::write_json(program, &mut gz)?;
        gz.finish()?.flush()
    } else {
        json::write_json(program, file)
    }
}
