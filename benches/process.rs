//! Per-case overhead of running a third-party compiler, and how fast a hung one dies. A plain
//! `main` (no criterion) that prints the median (and 10th/90th percentile) wall time of one
//! run, in microseconds, of:
//!
//! * `external`: `compilers::external::compile_external` (writes the case, runs `sh -c`,
//!   reads the bundle; here it fails for want of one, which costs the same every run);
//! * `pimcomp`: `pimcomp_hunt::compile::compile` (lays out the compiler's tree, runs it);
//!
//! * `process`: `process::Invocation::run` alone (what both paths above run through), plain,
//!   with the memory watchdog sampling, with ASLR off, with the fixed environment;
//! * `std spawn`: std's `Command` spawn and wait, as posix_spawn and with a `pre_exec` hook
//!   (which makes std fork): run with `--ballast MIB` to see a fork's cost grow with the
//!   harness's resident memory, the reason `process` has no hook;
//!
//! each with `/bin/true` and with a tiny shell script that writes a line to standard output and
//! one to standard error. Then `deadline`: a compiler that ignores SIGTERM, spins (so that the
//! CPU-time limit of `external` and `pimcomp` ends it, as the wall clock ends `process`) and
//! leaves a grandchild that ignores SIGTERM too, run under a short limit through each path; the
//! figure is the time from the deadline until no process of it is left running (read from
//! `/proc`). On a loaded machine the spinning compiler reaches its CPU limit later than the
//! wall clock says, which the first two rows then include.
//!
//! `cargo bench --bench process` (`--runs N`, default 400; `--hangs N`, default 10;
//! `--ballast MIB`, default 0: memory the bench holds resident while it runs).

use std::path::Path;
use std::time::{Duration, Instant};

use pimdiff::compilers::external::compile_external;
use pimdiff::process::{Environment, Invocation, Limits, Pinning, Status};
use pimdiff::targets::pimcomp_nn::compile::{compile, CompilerSetup, Pipeline, ZeroedMemory};
use pimdiff::targets::tensor::generate::{case_from_seed, GenConfig};

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
    let ballast = ballast(value("--ballast", 0));
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
        let variants: [(&str, Limits, Pinning); 4] = [
            ("process", Limits::new(TIMEOUT), Pinning::default()),
            (
                "process, RSS watched (1 ms)",
                Limits {
                    rss_bytes: Some(4 << 30),
                    rss_interval: Duration::from_millis(1),
                    ..Limits::new(TIMEOUT)
                },
                Pinning::default(),
            ),
            (
                "process, ASLR off",
                Limits::new(TIMEOUT),
                Pinning {
                    aslr_disabled: true,
                    ..Pinning::default()
                },
            ),
            (
                "process, fixed environment",
                Limits::new(TIMEOUT),
                Pinning {
                    environment: Environment::fixed(),
                    ..Pinning::default()
                },
            ),
        ];
        for (path, limits, pinning) in variants {
            row(path, name, runs, || {
                let run = Invocation::new(program, "bench-")
                    .expect("invocation")
                    .limits(limits)
                    .pinning(pinning.clone())
                    .run()
                    .expect("run");
                assert_eq!(run.status, Status::Exited { code: 0 });
            });
        }
        row("(temporary directory made and removed)", name, runs, || {
            drop(tempfile::Builder::new().prefix("bench-").tempdir());
        });
        row("std spawn (posix_spawn)", name, runs, || {
            std_spawn(program, false);
        });
        row("std spawn (pre_exec hook: fork)", name, runs, || {
            std_spawn(program, true);
        });
    }

    println!("\n| path | deadline → run returned, median ms | max ms | deadline → none left (bench's scan), median ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    let hang = dir.path().join("hang.sh");
    let marker = "30.4242";
    let stamp = dir.path().join("started");
    write_script(
        &hang,
        &format!(
            "date +%s%N > {}\ntrap '' TERM\nsleep {marker} &\nwhile :; do :; done\n",
            stamp.display()
        ),
    );
    let limit = Duration::from_millis(300);
    let command = hang.display().to_string();
    deadline_row("external", hangs, limit, marker, &stamp, || {
        let _ = compile_external(&case, &command, limit);
    });
    let setup = setup(&hang, &config, limit);
    deadline_row("pimcomp", hangs, limit, marker, &stamp, || {
        compile(&setup, "{}", Pipeline::Batch, 0).expect("compile");
    });
    deadline_row("process", hangs, limit, marker, &stamp, || {
        let run = Invocation::new(&hang, "bench-")
            .expect("invocation")
            .limits(Limits::new(limit))
            .run()
            .expect("run");
        assert!(matches!(run.status, Status::TimedOut { .. }));
    });
    std::hint::black_box(ballast);
}

/// `mib` MiB written to, so that they are resident.
fn ballast(mib: usize) -> Vec<u8> {
    let mut v = vec![0u8; mib << 20];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    if mib > 0 {
        println!("(holding {mib} MiB resident)\n");
    }
    v
}

/// std's spawn and wait, output piped, in a process group; `hook`: with an empty `pre_exec`.
fn std_spawn(program: &Path, hook: bool) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(program);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    if hook {
        // SAFETY: the hook does nothing.
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
    }
    cmd.output().expect("spawn");
}

fn setup(bin: &Path, config: &Path, timeout: Duration) -> CompilerSetup {
    CompilerSetup {
        bin: bin.to_path_buf(),
        config: config.to_path_buf(),
        shim: None,
        timeout,
        max_rss_bytes: 4 << 30,
        coverage: None,
        zeroed_memory: ZeroedMemory::Small,
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

/// Runs the hanging compiler `hangs` times; each time, the time from its deadline (the moment
/// its script started, which it writes to `stamp` first thing, plus `limit`: so the time the
/// path takes to prepare the run does not count) until the run returned, and until no process
/// whose command line names `marker` is left alive (zombies count as dead) as this bench sees
/// it in `/proc` (one scan of which costs about a millisecond, included).
fn deadline_row(
    path: &str,
    hangs: usize,
    limit: Duration,
    marker: &str,
    stamp: &Path,
    mut run: impl FnMut(),
) {
    let mut returned = Vec::new();
    let mut dead = Vec::new();
    for _ in 0..hangs {
        let _ = std::fs::remove_file(stamp);
        run();
        let started: u128 = std::fs::read_to_string(stamp)
            .expect("the hung compiler wrote when it started")
            .trim()
            .parse()
            .expect("nanoseconds");
        let deadline = started + limit.as_nanos();
        returned.push(ms_since(deadline));
        let give_up = Instant::now() + Duration::from_secs(5);
        while alive_with(marker) && Instant::now() < give_up {
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(!alive_with(marker), "{path}: the hung compiler survived");
        dead.push(ms_since(deadline));
    }
    returned.sort_by(f64::total_cmp);
    dead.sort_by(f64::total_cmp);
    let (n, last) = (hangs / 2, hangs - 1);
    println!(
        "| {path} | {:.1} | {:.1} | {:.1} | {:.1} |",
        returned[n], returned[last], dead[n], dead[last]
    );
}

/// Milliseconds from `t` (nanoseconds since the Unix epoch) until now; negative when before.
fn ms_since(t: u128) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_nanos();
    (now as f64 - t as f64) / 1e6
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
