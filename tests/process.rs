//! `pimdiff::process`: exact outcomes of running programs — exit codes, signals, timeouts that
//! leave no process behind (a grandchild ignoring SIGTERM included), the memory limit, bounded
//! output, spawn errors, pinned address-space layout and environment, the working directory,
//! and `kill_all`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::RwLock;
use std::time::Duration;

use pimdiff::process::{
    kill_all, Clock, Environment, Invocation, Limits, Pinning, ProcessError, Run, Status,
};

/// `kill_all` kills every program of the process: the test of it runs alone (write lock),
/// every other test holds a read lock while it runs programs.
static EXCLUSIVE: RwLock<()> = RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    EXCLUSIVE.read().unwrap_or_else(|p| p.into_inner())
}

fn sh(script: &str, limits: Limits) -> Run {
    Invocation::new("sh", "process-test-")
        .unwrap()
        .args(["-c", script])
        .limits(limits)
        .run()
        .unwrap()
}

fn limits(timeout_s: u64) -> Limits {
    Limits::new(Duration::from_secs(timeout_s))
}

/// Processes whose process group is `pgid` and that are not zombies.
fn running_in_group(pgid: u32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let f: Vec<&str> = rest.split_whitespace().collect();
            f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X"
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit_once(')').map(|(_, r)| r.trim_start());
        !state.is_some_and(|r| r.starts_with('Z') || r.starts_with('X'))
    })
}

#[test]
fn exit_codes_are_exact() {
    let _g = shared();
    let run = sh("echo out; echo err >&2; exit 7", limits(30));
    assert_eq!(run.status, Status::Exited { code: 7 });
    assert_eq!(run.stdout.bytes, b"out\n");
    assert_eq!(run.stderr.bytes, b"err\n");
    assert!(!run.stdout.truncated());
    assert_eq!(sh("true", limits(30)).status, Status::Exited { code: 0 });
}

#[test]
fn a_crash_is_its_signal_with_its_name() {
    let _g = shared();
    let run = sh("echo before; kill -SEGV $$", limits(30));
    assert_eq!(
        run.status,
        Status::Signaled {
            signal: 11,
            name: "SIGSEGV".into()
        }
    );
    assert_eq!(run.status.to_string(), "killed by SIGSEGV (signal 11)");
    assert_eq!(run.stdout.text(), "before\n");
}

/// The compiler ignores SIGTERM and leaves a grandchild that ignores it too and holds the
/// output pipe: at the deadline the whole group dies, and the run returns with none of it
/// running.
#[test]
fn a_timeout_kills_the_whole_group_and_leaves_no_survivor() {
    let _g = shared();
    let script = "trap '' TERM; sleep 30 & echo $!; sh -c 'trap \"\" TERM; sleep 30' & sleep 30";
    let mut l = Limits::new(Duration::from_millis(500));
    l.rss_bytes = Some(1 << 40);
    let run = sh(script, l);
    assert!(
        matches!(run.status, Status::TimedOut { clock: Clock::Wall, wall_ms, .. } if wall_ms >= 500),
        "{:?}",
        run.status
    );
    let grandchild: u32 = run.stdout.text().trim().parse().unwrap();
    assert!(!alive(grandchild), "the grandchild {grandchild} survived");
    assert_eq!(running_in_group(run.pid), Vec::<String>::new());
}

/// Stragglers are killed when the leader exits, too.
#[test]
fn a_normal_exit_takes_its_background_processes_with_it() {
    let _g = shared();
    let run = sh("sleep 30 & echo $!", limits(30));
    assert_eq!(run.status, Status::Exited { code: 0 });
    let background: u32 = run.stdout.text().trim().parse().unwrap();
    // Sent SIGKILL before the run returned, and it held the output pipe, which the run read
    // to its end: it has exited, or is in the last steps of exiting.
    let dead = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        !alive(background)
    });
    assert!(dead, "the background process {background} survived");
}

/// `tail -c` keeps what it reads in memory until its input ends, which is a minute away: the
/// watchdog sees 150 MiB resident over a 64 MiB limit long before the timeout.
#[test]
fn the_memory_limit_kills_the_group_and_says_so() {
    let _g = shared();
    let mut l = limits(120);
    l.rss_bytes = Some(64 << 20);
    l.rss_interval = Duration::from_millis(10);
    let run = sh(
        "{ head -c 150M /dev/zero; sleep 60; } | tail -c 150M; echo never",
        l,
    );
    let Status::MemoryLimit {
        rss_bytes,
        limit_bytes,
    } = run.status
    else {
        panic!("{:?}", run.status);
    };
    assert_eq!(limit_bytes, 64 << 20);
    assert!(rss_bytes > 64 << 20, "{rss_bytes}");
    assert!(run.peak_rss_bytes >= rss_bytes);
    assert_eq!(run.stdout.text(), "");
    assert_eq!(running_in_group(run.pid), Vec::<String>::new());
}

#[test]
fn peak_memory_includes_the_children_waited_for() {
    let _g = shared();
    let run = sh("head -c 40M /dev/zero | tail -c 40M | wc -c", limits(60));
    assert_eq!(run.status, Status::Exited { code: 0 });
    assert_eq!(run.stdout.text().trim(), "41943040");
    assert!(run.peak_rss_bytes >= 40 << 20, "{}", run.peak_rss_bytes);
}

/// A megabyte on each stream at once (far past a pipe's buffer) cannot block the program, and
/// only the last bytes of each are kept.
#[test]
fn output_is_bounded_and_read_concurrently() {
    let _g = shared();
    let mut l = limits(60);
    l.output_bytes = 4096;
    let run = sh(
        "head -c 1000000 /dev/zero | tr '\\0' a >&2 & head -c 1000000 /dev/zero | tr '\\0' b; \
         wait; echo END; echo END >&2",
        l,
    );
    assert_eq!(run.status, Status::Exited { code: 0 });
    for (captured, fill) in [(&run.stdout, b'b'), (&run.stderr, b'a')] {
        assert_eq!(captured.total, 1_000_004);
        assert!(captured.truncated());
        assert_eq!(captured.bytes.len(), 4096);
        assert!(captured.bytes.ends_with(b"END\n"));
        assert!(captured.bytes[..4092].iter().all(|&b| b == fill));
    }
}

/// CPU-time limits: a program that sleeps past its CPU limit by the wall clock but uses no
/// CPU finishes; one that spins is stopped by its CPU time, long before the wall-clock
/// backstop, and the status records both times.
#[test]
fn cpu_time_limits_stop_a_spinning_program_and_not_a_sleeping_one() {
    let _g = shared();
    let l = Limits::cpu_time(Duration::from_millis(500));
    assert_eq!(l.timeout, Duration::from_secs(5));
    let run = sh("sleep 1.5", l);
    assert_eq!(run.status, Status::Exited { code: 0 });
    assert!(run.wall >= Duration::from_millis(1500));
    assert!(run.cpu < Duration::from_millis(500), "{:?}", run.cpu);
    let run = sh("while :; do :; done", l);
    let Status::TimedOut {
        clock,
        cpu_ms,
        wall_ms,
    } = run.status
    else {
        panic!("{:?}", run.status)
    };
    assert_eq!(clock, Clock::Cpu);
    assert!(cpu_ms >= 500, "{cpu_ms}");
    assert!(wall_ms >= cpu_ms && wall_ms < 5000, "{wall_ms}");
    assert!(run.status.to_string().contains("of CPU time"));
    assert_eq!(running_in_group(run.pid), Vec::<String>::new());
}

/// A program that blocks without using CPU ends at the wall-clock backstop (ten times its CPU
/// limit), as a timeout by the wall clock.
#[test]
fn a_blocked_program_ends_at_the_backstop() {
    let _g = shared();
    let run = sh("sleep 30", Limits::cpu_time(Duration::from_millis(100)));
    match run.status {
        Status::TimedOut {
            clock: Clock::Wall,
            cpu_ms,
            wall_ms,
        } => {
            assert!((1000..5000).contains(&wall_ms), "{wall_ms}");
            assert!(cpu_ms < 100, "{cpu_ms}");
        }
        other => panic!("{other:?}"),
    }
}

/// The group's CPU time counts its members' children once they are reaped: two subshells that
/// each spin for one second of CPU time (`ulimit -t 1` ends each) reach a limit of 1.5 s,
/// though neither alone does and the first is gone when the second runs.
#[test]
fn cpu_time_counts_children_that_ran_and_were_reaped() {
    let _g = shared();
    let spin = "(ulimit -t 1; while :; do :; done)";
    let run = sh(
        &format!("{spin}; {spin}; sleep 30"),
        Limits::cpu_time(Duration::from_millis(1500)),
    );
    assert!(
        matches!(run.status, Status::TimedOut { clock: Clock::Cpu, cpu_ms, .. } if cpu_ms >= 1500),
        "{:?}",
        run.status
    );
}

/// A program that writes as fast as it can is still stopped at its deadline, and its output
/// is the bound's worth.
#[test]
fn a_chatty_program_still_times_out() {
    let _g = shared();
    let mut l = Limits::new(Duration::from_millis(300));
    l.output_bytes = 1000;
    let run = sh("exec yes", l);
    assert!(matches!(run.status, Status::TimedOut { .. }));
    assert_eq!(run.stdout.bytes, b"y\n".repeat(500));
    assert!(run.stdout.total > 1000);
    assert_eq!(running_in_group(run.pid), Vec::<String>::new());
}

#[test]
fn a_missing_program_is_a_spawn_error() {
    let _g = shared();
    let err = Invocation::new("/nonexistent/compiler", "process-test-")
        .unwrap()
        .run()
        .unwrap_err();
    let ProcessError::Spawn { program, source } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(program, "/nonexistent/compiler");
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    // A bare name looked up in a pinned PATH that lacks it.
    let err = Invocation::new("no-such-compiler-anywhere", "process-test-")
        .unwrap()
        .pinning(Pinning {
            environment: Environment::fixed(),
            ..Pinning::default()
        })
        .run()
        .unwrap_err();
    assert!(
        matches!(&err, ProcessError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    let err = Invocation::new("true", "process-test-")
        .unwrap()
        .pinning(Pinning {
            preload: vec!["/nonexistent/shim.so".into()],
            ..Pinning::default()
        })
        .run()
        .unwrap_err();
    assert!(
        matches!(&err, ProcessError::MissingPreload(p) if p == Path::new("/nonexistent/shim.so")),
        "{err:?}"
    );
}

fn cat(file: &str, aslr_disabled: bool) -> Run {
    Invocation::new("cat", "process-test-")
        .unwrap()
        .arg(file)
        .pinning(Pinning {
            aslr_disabled,
            ..Pinning::default()
        })
        .limits(limits(30))
        .run()
        .unwrap()
}

/// With ASLR off the child's personality has ADDR_NO_RANDOMIZE (0x0040000) and two runs lay
/// out memory identically; the harness's own thread keeps its personality.
#[test]
fn aslr_can_be_disabled_and_is_recorded() {
    let _g = shared();
    let before = std::fs::read_to_string("/proc/thread-self/personality").unwrap();
    let off = cat("/proc/self/personality", true);
    assert_eq!(off.stdout.text(), "00040000\n");
    assert!(off.pinning.aslr_disabled);
    let on = cat("/proc/self/personality", false);
    assert_eq!(on.stdout.text(), "00000000\n");
    assert_eq!(
        std::fs::read_to_string("/proc/thread-self/personality").unwrap(),
        before
    );
    let maps = [cat("/proc/self/maps", true), cat("/proc/self/maps", true)];
    assert_eq!(maps[0].stdout.text(), maps[1].stdout.text());
    assert!(!maps[0].stdout.text().is_empty());
}

#[test]
fn the_environment_can_be_pinned_exactly() {
    let _g = shared();
    let vars: BTreeMap<String, String> = [("FOO", "bar"), ("PATH", "/usr/bin:/bin")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let pinning = Pinning {
        environment: Environment::Exactly { vars },
        ..Pinning::default()
    };
    let run = Invocation::new("env", "process-test-")
        .unwrap()
        .pinning(pinning.clone())
        .run()
        .unwrap();
    assert_eq!(run.stdout.text(), "FOO=bar\nPATH=/usr/bin:/bin\n");
    assert_eq!(run.pinning, pinning);

    let run = Invocation::new("env", "process-test-")
        .unwrap()
        .pinning(Pinning {
            environment: Environment::fixed(),
            preload: vec!["/dev/null".into()],
            ..Pinning::default()
        })
        .run();
    // /dev/null is not a file: a preload must be one.
    assert!(matches!(run, Err(ProcessError::MissingPreload(_))));

    let run = Invocation::new("sh", "process-test-")
        .unwrap()
        .args(["-c", "echo $LC_ALL $LANG $TZ $SOURCE_DATE_EPOCH"])
        .pinning(Pinning {
            environment: Environment::fixed(),
            ..Pinning::default()
        })
        .run()
        .unwrap();
    assert_eq!(run.stdout.text(), "C C UTC 0\n");

    let run = Invocation::new("sh", "process-test-")
        .unwrap()
        .args(["-c", "echo $PATH $PIN"])
        .pinning(Pinning {
            environment: Environment::inherited_with([("PIN", "42")]),
            ..Pinning::default()
        })
        .run()
        .unwrap();
    let path = std::env::var("PATH").unwrap();
    assert_eq!(run.stdout.text(), format!("{path} 42\n"));
}

/// The program runs in its fresh directory (or a path inside it), which is removed with the
/// run unless kept.
#[test]
fn each_run_has_a_fresh_working_directory() {
    let _g = shared();
    let inv = Invocation::new("sh", "process-test-").unwrap();
    let dir = inv.dir().to_path_buf();
    std::fs::create_dir(dir.join("work")).unwrap();
    std::fs::write(dir.join("input.txt"), "hello\n").unwrap();
    let run = inv
        .args(["-c", "pwd; cat ../input.txt; echo made > ../output.txt"])
        .current_dir("work")
        .run()
        .unwrap();
    assert_eq!(
        run.stdout.text(),
        format!("{}\nhello\n", dir.join("work").display())
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("output.txt")).unwrap(),
        "made\n"
    );
    let other = Invocation::new("true", "process-test-").unwrap();
    assert_ne!(other.dir(), dir);
    drop(run);
    assert!(!dir.exists());

    let run = sh("echo kept > file", limits(30));
    let kept = run.dir.keep();
    assert_eq!(
        std::fs::read_to_string(kept.join("file")).unwrap(),
        "kept\n"
    );
    std::fs::remove_dir_all(kept).unwrap();

    let here = std::env::current_dir().unwrap();
    let run = Invocation::new("pwd", "process-test-")
        .unwrap()
        .in_harness_dir()
        .run()
        .unwrap();
    assert_eq!(run.stdout.text(), format!("{}\n", here.display()));
}

/// `kill_all` ends every running program, each run as `Cancelled`, with nothing left running.
#[test]
fn kill_all_cancels_every_running_program() {
    let _g = EXCLUSIVE.write().unwrap_or_else(|p| p.into_inner());
    let marker = tempfile::tempdir().unwrap();
    let runs: Vec<_> = (0..2)
        .map(|i| {
            let flag = marker.path().join(format!("started-{i}"));
            std::thread::spawn(move || {
                sh(
                    &format!("trap '' TERM; sleep 30 & touch {}; wait", flag.display()),
                    limits(60),
                )
            })
        })
        .collect();
    while (0..2).any(|i| !marker.path().join(format!("started-{i}")).exists()) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(kill_all(), 2);
    for handle in runs {
        let run = handle.join().unwrap();
        assert_eq!(run.status, Status::Cancelled);
        assert_eq!(running_in_group(run.pid), Vec::<String>::new());
    }
    assert_eq!(kill_all(), 0);
}

/// `kill_scope` ends the programs started in one scope (one hunt's) and leaves the others
/// running: two hunts in one process do not kill each other's compilers.
#[test]
fn kill_scope_cancels_only_its_own_programs() {
    let _g = EXCLUSIVE.write().unwrap_or_else(|p| p.into_inner());
    let marker = tempfile::tempdir().unwrap();
    let scopes = std::sync::Mutex::new(BTreeMap::new());
    let runs: Vec<(usize, Run)> = std::thread::scope(|t| {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let flag = marker.path().join(format!("started-{i}"));
                let scopes = &scopes;
                t.spawn(move || {
                    let scope = pimdiff::process::Scope::enter();
                    scopes.lock().unwrap().insert(i, scope.id());
                    // The second program ends by itself, after the first is killed.
                    let script = match i {
                        0 => format!("trap '' TERM; sleep 30 & touch {}; wait", flag.display()),
                        _ => format!("touch {}; sleep 1", flag.display()),
                    };
                    (i, sh(&script, limits(60)))
                })
            })
            .collect();
        while (0..2).any(|i| !marker.path().join(format!("started-{i}")).exists()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        let first = scopes.lock().unwrap()[&0];
        assert_eq!(pimdiff::process::kill_scope(first), 1);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (i, run) in runs {
        let expected = match i {
            0 => Status::Cancelled,
            _ => Status::Exited { code: 0 },
        };
        assert_eq!(run.status, expected);
        assert_eq!(running_in_group(run.pid), Vec::<String>::new());
    }
    assert_eq!(pimdiff::process::scope(), 0);
}
