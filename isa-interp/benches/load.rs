//! Load time of the ten PIMCOMP-NN programs (the folder `PIMDIFF_PIMCOMP_DIR` names).
//!
//! `cargo bench -p pimdiff-isa --bench load [-- NAME-FILTER]` prints, per program: cores,
//! instructions, decompressed JSON size, and the time of `formats::load_program` (gzip
//! detection, decompression and the parallel parse), wall and CPU. `PIMDIFF_PIMCOMP_DIR`
//! overrides the folder. `PIMDIFF_LOAD_SPLIT=1` also times the decompression alone, the parse
//! alone, the streaming `read_json` over a gzip reader, and our assembly text's `print` and
//! `parse` of the same program, and `write_json` of it into memory (what a compile server
//! spends on each program it writes).
//! A program that fails to load is reported and makes the benchmark exit non-zero.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use pimdiff_isa::formats::{self, gunzip, json};

const MODELS: [&str; 5] = [
    "alexnet",
    "googlenet",
    "mobilenetv2",
    "resnet18",
    "squeezenet",
];
const PIPELINES: [&str; 2] = ["batch", "element"];

fn main() -> ExitCode {
    let dir = match std::env::var_os("PIMDIFF_PIMCOMP_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/external/pimcomp"),
    };
    if !dir.is_dir() {
        println!("skipped: {} absent", dir.display());
        return ExitCode::SUCCESS;
    }
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let split = std::env::var_os("PIMDIFF_LOAD_SPLIT").is_some();
    println!(
        "{:<26} {:>6} {:>10} {:>9} {:>9} {:>9} {:>11}{}",
        "program",
        "cores",
        "insts",
        "JSON MB",
        "load s",
        "CPU s",
        "Minst/s",
        if split {
            "   gunzip s (CPU)  parse s (CPU)  stream s print s  asm s write s"
        } else {
            ""
        }
    );
    let mut failed = false;
    let (mut total_insts, mut total_secs) = (0usize, 0f64);
    for model in MODELS {
        for pipeline in PIPELINES {
            let name = format!("{model}-{pipeline}.json.gz");
            if filter.as_deref().is_some_and(|f| !name.contains(f)) {
                continue;
            }
            let path: PathBuf = dir.join(&name);
            let (t, cpu) = (Instant::now(), cpu_seconds());
            let program = match formats::load_program(&path) {
                Ok(p) => p,
                Err(e) => {
                    println!("{name:<26} FAILED: {e}");
                    failed = true;
                    continue;
                }
            };
            let secs = t.elapsed().as_secs_f64();
            let cpu = cpu_seconds() - cpu;
            let insts: usize = program.cores.iter().map(Vec::len).sum();
            total_insts += insts;
            total_secs += secs;
            let raw = std::fs::read(&path).expect("read");
            let json_mb = u32::from_le_bytes(raw[raw.len() - 4..].try_into().unwrap()) as f64 / 1e6;
            print!(
                "{name:<26} {:>6} {:>10} {:>9.1} {:>9.3} {:>9.2} {:>11.2}",
                program.cores.len(),
                insts,
                json_mb,
                secs,
                cpu,
                insts as f64 / secs / 1e6
            );
            if split {
                let (t, c) = (Instant::now(), cpu_seconds());
                let text = gunzip(&raw).expect("gunzip");
                let (gunzip_s, gunzip_cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
                let (t, c) = (Instant::now(), cpu_seconds());
                let p2 = json::read_json_slice(&text).expect("parse");
                let (parse_s, parse_cpu) = (t.elapsed().as_secs_f64(), cpu_seconds() - c);
                drop(text);
                let t = Instant::now();
                let p3 =
                    json::read_json(flate2::read::MultiGzDecoder::new(&raw[..])).expect("stream");
                let stream_s = t.elapsed().as_secs_f64();
                let t = Instant::now();
                let text = pimdiff_isa::formats::asm::print(&program);
                let print_s = t.elapsed().as_secs_f64();
                let t = Instant::now();
                let p4 = pimdiff_isa::formats::asm::parse(&text).expect("asm parse");
                let asm_s = t.elapsed().as_secs_f64();
                let t = Instant::now();
                let mut written = Vec::with_capacity(1 << 20);
                json::write_json(&program, &mut written).expect("write");
                let write_s = t.elapsed().as_secs_f64();
                assert!(p2 == program && p3 == program && p4 == program);
                print!(
                    "   {gunzip_s:>8.3} ({gunzip_cpu:.2})  {parse_s:>7.3} ({parse_cpu:.2}) {stream_s:>9.3} \
                     {print_s:>7.3} {asm_s:>7.3} {write_s:>7.3}"
                );
            }
            println!();
        }
    }
    println!("total: {total_insts} instructions in {total_secs:.2} s");
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// CPU time of this process (user + system, all threads) in seconds, from `/proc/self/stat`
/// (clock ticks of 1/100 s); 0 where that file does not exist. On a shared machine the wall
/// time depends on the other load, the CPU time much less.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the command name (which is in parentheses and may hold spaces).
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}
