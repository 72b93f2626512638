//! Per-case overhead of running a third-party compiler, and how fast a hung one dies. A plain
//! `main` (no criterion) that prints the median (and 10th/90th percentile) wall time of one
//! run, in microseconds, of:
//!
//! * `external`: `compilers::external::compile_external` (writes the case, runs `sh -c`,
//!   reads the bundle; here it fails for want of one, which costs the same every run);
//! * `pimcomp`: `pimcomp_hunt::compile::compile` (lays out the compiler's tree, runs it);
//!
//! each with `/bin/true` and with a tiny shell script that writes a line to standard output and
//! one to standard error. Then `deadline`: a compiler that ignores SIGTERM and leaves a
//! grandchild that ignores it too, run under a short timeout through each path; the figure is
//! the time from the deadline until no process of it is left running (read from `/proc`).
//!
//! `cargo bench --bench process` (`--runs N`, default 400; `--hangs N`, default 10).

use std::path::Path;
use std::time::{Duration, Instant};

use pimdiff::compilers::external::compile_external;
use pimdiff::generate::{case_from_seed, GenConfig};
use pimdiff::pimcomp_hunt::compile::{compile, CompilerSetup, Pipeline};

const TIMEOUT: Duration = Duration::from_secs(20);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let runs = value("--runs", 400);
    let hangs = value("--hangs", 10);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = dir.path().join("tiny.sh");
    write_script(&script, "echo out\necho err >&2\n");
    let config = dir.path().join("config.json");
    std::fs::write(&config, "{}").expect("config");
    let case = case_from_seed(&GenConfig::default(), 1);

    println!("| path | program | median µs | p10 µs | p90 µs |");
    println!("|---|---|---:|---:|---:|");
    for (name, program) in [("/bin/true", Path::new("/bin/true")), ("tiny.sh", &script)] {
        let command = program.display().to_string();
        row("external", name, runs, || {
            let _ = compile_external(&case, &command, TIMEOUT);
        });
        let setup = setup(program, &config, TIMEOUT);
        row("pimcomp", name, runs, || {
            compile(&setup, "{}", Pipeline::Batch, 0).expect("compile");
        });
    }

    println!("\n| path | deadline → group dead, median ms | max ms |");
    println!("|---|---:|---:|");
    let hang = dir.path().join("hang.sh");
    let marker = "30.4242";
    write_script(
        &hang,
        &format!("trap '' TERM\nsleep {marker} &\nsleep {marker}\n"),
    );
    let limit = Duration::from_millis(300);
    let command = hang.display().to_string();
    deadline_row("external", hangs, limit, marker, || {
        let _ = compile_external(&case, &command, limit);
    });
    let setup = setup(&hang, &config, limit);
    deadline_row("pimcomp", hangs, limit, marker, || {
        compile(&setup, "{}", Pipeline::Batch, 0).expect("compile");
    });
}

fn setup(bin: &Path, config: &Path, timeout: Duration) -> CompilerSetup {
    CompilerSetup {
        bin: bin.to_path_buf(),
        config: config.to_path_buf(),
        shim: None,
        timeout,
        max_rss_bytes: 4 << 30,
    }
}

fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}")).expect("script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn row(path: &str, program: &str, runs: usize, mut run: impl FnMut()) {
    for _ in 0..runs / 10 {
        run();
    }
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    println!(
        "| {path} | {program} | {:.0} | {:.0} | {:.0} |",
        at(0.5),
        at(0.1),
        at(0.9)
    );
}

/// Runs the hanging compiler `hangs` times; each time, the time from its deadline until no
/// process whose command line names `marker` is left alive (zombies count as dead).
fn deadline_row(path: &str, hangs: usize, limit: Duration, marker: &str, mut run: impl FnMut()) {
    let mut times = Vec::new();
    for _ in 0..hangs {
        let start = Instant::now();
        run();
        let deadline = start + limit;
        let give_up = Instant::now() + Duration::from_secs(5);
        while alive_with(marker) && Instant::now() < give_up {
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(!alive_with(marker), "{path}: the hung compiler survived");
        times.push(
            Instant::now()
                .saturating_duration_since(deadline)
                .as_secs_f64()
                * 1e3,
        );
    }
    times.sort_by(f64::total_cmp);
    println!(
        "| {path} | {:.1} | {:.1} |",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

fn alive_with(marker: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let p = e.path();
        let cmdline = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        !zombie && String::from_utf8_lossy(&cmdline).contains(marker)
    })
}
