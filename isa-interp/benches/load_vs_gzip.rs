//! Load time of PIMCOMP-NN programs against `gzip -dc` on the same file, in the same run.
//!
//! `cargo bench -p pimdiff-isa --bench load_vs_gzip [-- NAME-FILTER...]` times, for each
//! program, `gzip -dc FILE > /dev/null` (a child process) and `formats::load_program(FILE)`
//! (reading, inflating and parsing the file into a `Program`), alternately, `PIMDIFF_LOAD_REPS`
//! times each (default 5; the order is swapped every repetition), and prints the median wall
//! and CPU time of both and the ratio of the wall medians (ours / gzip's; below 1 is faster
//! than gzip). Without a filter it runs the three largest programs (`resnet18-element`,
//! `googlenet-element`, `mobilenetv2-element`); each filter selects the programs whose file
//! name contains it. The folder is `PIMDIFF_PIMCOMP_DIR`. A program that fails to load, or a
//! `gzip` that fails, makes the benchmark exit non-zero; without `gzip` on the PATH it is
//! skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use pimdiff_isa::formats;

const DEFAULT: [&str; 3] = [
    "resnet18-element",
    "googlenet-element",
    "mobilenetv2-element",
];
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
    if Command::new("gzip").arg("--version").output().is_err() {
        println!("skipped: no gzip on the PATH");
        return ExitCode::SUCCESS;
    }
    let reps: usize = std::env::var("PIMDIFF_LOAD_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(5);
    let mut filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if filters.is_empty() {
        filters = DEFAULT.iter().map(|f| format!("{f}.json.gz")).collect();
    }
    println!(
        "{:<28} {:>5} {:>10} {:>9} {:>10} {:>9} {:>10} {:>7}",
        "program", "reps", "gzip s", "gzip CPU", "load s", "load CPU", "ratio", "CPU rat"
    );
    let mut ok = true;
    for model in MODELS {
        for pipeline in PIPELINES {
            let name = format!("{model}-{pipeline}.json.gz");
            if filters.iter().any(|f| name.contains(f.as_str())) {
                ok &= compare(&dir.join(&name), &name, reps);
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Time both `reps` times and print one line; false when either failed.
fn compare(path: &Path, name: &str, reps: usize) -> bool {
    let (mut gzip, mut ours) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        for turn in 0..2 {
            // gzip first on even repetitions, ours first on odd ones.
            if (turn == 0) == (rep % 2 == 0) {
                match time_gzip(path) {
                    Ok(t) => gzip.push(t),
                    Err(e) => {
                        println!("{name:<28} gzip FAILED: {e}");
                        return false;
                    }
                }
            } else {
                match time_load(path) {
                    Ok(t) => ours.push(t),
                    Err(e) => {
                        println!("{name:<28} FAILED: {e}");
                        return false;
                    }
                }
            }
        }
    }
    let (gzip_wall, gzip_cpu) = medians(&gzip);
    let (load_wall, load_cpu) = medians(&ours);
    println!(
        "{name:<28} {reps:>5} {gzip_wall:>10.3} {gzip_cpu:>9.2} {load_wall:>10.3} {load_cpu:>9.2} \
         {:>9.2}x {:>6.2}x",
        load_wall / gzip_wall,
        load_cpu / gzip_cpu.max(0.01)
    );
    true
}

/// Wall and CPU seconds of `gzip -dc FILE > /dev/null`.
fn time_gzip(path: &Path) -> Result<(f64, f64), String> {
    let (t, cpu) = (Instant::now(), children_cpu_seconds());
    let status = Command::new("gzip")
        .arg("-dc")
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    if !status.success() {
        return Err(format!("gzip exited with {status}"));
    }
    Ok((secs, children_cpu_seconds() - cpu))
}

/// Wall and CPU seconds of `formats::load_program(FILE)` (the program is dropped afterwards,
/// untimed).
fn time_load(path: &Path) -> Result<(f64, f64), String> {
    let (t, cpu) = (Instant::now(), self_cpu_seconds());
    let program = formats::load_program(path).map_err(|e| e.to_string())?;
    let times = (t.elapsed().as_secs_f64(), self_cpu_seconds() - cpu);
    drop(program);
    Ok(times)
}

/// The medians of the wall and of the CPU times.
fn medians(times: &[(f64, f64)]) -> (f64, f64) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    };
    (
        median(times.iter().map(|t| t.0).collect()),
        median(times.iter().map(|t| t.1).collect()),
    )
}

/// Fields 14 and 15 (`utime`, `stime`: this process's threads) of `/proc/self/stat`.
fn self_cpu_seconds() -> f64 {
    stat_seconds(11)
}

/// Fields 16 and 17 (`cutime`, `cstime`: waited-for children) of `/proc/self/stat`.
fn children_cpu_seconds() -> f64 {
    stat_seconds(13)
}

/// The sum of two consecutive clock-tick fields of `/proc/self/stat`, counted from the first
/// field after the command name, in seconds (ticks of 1/100 s); 0 where that file does not
/// exist.
fn stat_seconds(first: usize) -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The command name is in parentheses and may hold spaces.
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
    (ticks(first) + ticks(first + 1)) / 100.0
}
