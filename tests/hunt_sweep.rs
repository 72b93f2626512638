//! The hunt's scheduling, independent of any compiler: case seeds, shards, durations and the
//! parallel sweep (determinism, shard disjointness and union, hung cases, stopping).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pimdiff::check::{Stage, StageClock};
use pimdiff::engine::{
    case_seed, parse_duration, sweep, Checker, DurationError, Limit, Observation, Shard,
    ShardError, Sweep, SweepConfig, SweepEnd,
};
use pimdiff::finding::{Kind, Signature};

/// A fake checker: every 7th index is a finding whose signature is `k % 3`; every 11th is
/// unsupported (reason by `k % 2`); indices for which `hangs` holds never finish.
fn fake(hangs: fn(u64) -> bool) -> Checker {
    Arc::new(move |k, clock: &StageClock| {
        clock.enter(Stage::Run);
        if hangs(k) {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        let obs = match (k % 7, k % 11) {
            (3, _) => Observation::finding(sig(k % 3)),
            (_, 0) => Observation {
                kind: Kind::Unsupported,
                signatures: Vec::new(),
                decline_reason: Some(format!("reason {}", k % 2)),
            },
            _ => Observation::of_kind(Kind::Pass),
        };
        clock.finish();
        obs
    })
}

/// The signature the fake checker gives finding number `n`.
fn sig(n: u64) -> Signature {
    Signature::new(Kind::Mismatch, n.to_string())
}

fn never(_: u64) -> bool {
    false
}

fn config(limit: Limit, shard: Shard, jobs: usize) -> SweepConfig {
    SweepConfig {
        limit,
        shard,
        jobs,
        deadline: None,
        deadline_with_findings: None,
        max_stuck: 8,
        grace: Duration::from_millis(200),
    }
}

/// Sweeps with the fake checker; a stage running longer than `limit` is stuck.
fn run(cfg: &SweepConfig, stop: &AtomicBool, hangs: fn(u64) -> bool, limit: Duration) -> Sweep {
    sweep(
        cfg,
        stop,
        fake(hangs),
        |c: &StageClock| {
            c.current()
                .filter(|&(_, e)| e > limit)
                .map(|(s, _)| (s, limit))
        },
        |_, _| Observation::finding(Signature::new(Kind::Timeout, "run")),
        |_| {},
    )
}

/// The parts of a sweep that must not depend on timing.
fn stable(s: &Sweep) -> impl PartialEq + std::fmt::Debug {
    (
        s.cases_run,
        s.counts.clone(),
        s.decline_reasons.clone(),
        s.firsts.clone(),
        s.end,
    )
}

#[test]
fn case_seeds_are_distinct_and_depend_on_the_hunt_seed() {
    let seeds: BTreeSet<u64> = (0..10_000).map(|k| case_seed(42, k)).collect();
    assert_eq!(seeds.len(), 10_000);
    assert_ne!(case_seed(1, 0), case_seed(2, 0));
    assert_eq!(case_seed(42, 17), case_seed(42, 17));
}

#[test]
fn shards_parse_and_check() {
    assert_eq!("2/5".parse::<Shard>(), Ok(Shard { index: 2, count: 5 }));
    assert_eq!(
        "5/5".parse::<Shard>(),
        Err(ShardError::IndexTooLarge { index: 5, count: 5 })
    );
    assert_eq!("0/0".parse::<Shard>(), Err(ShardError::ZeroCount));
    assert_eq!(
        "1-2".parse::<Shard>(),
        Err(ShardError::Syntax("1-2".into()))
    );
    assert_eq!(Shard { index: 1, count: 3 }.to_string(), "1/3");
    assert_eq!(Shard { index: 1, count: 3 }.count_below(10), 3); // 1, 4, 7
    assert_eq!(Shard { index: 0, count: 3 }.count_below(10), 4); // 0, 3, 6, 9
    assert_eq!(Shard { index: 5, count: 8 }.count_below(5), 0);
}

#[test]
fn durations_parse() {
    assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
    assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
    assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_duration(""), Err(DurationError::Empty));
    assert_eq!(
        parse_duration("10x"),
        Err(DurationError::Syntax("10x".into()))
    );
    assert_eq!(parse_duration("m"), Err(DurationError::Syntax("m".into())));
    assert_eq!(
        parse_duration("99999999999999999999h"),
        Err(DurationError::Overflow("99999999999999999999h".into()))
    );
}

#[test]
fn a_sweep_does_not_depend_on_thread_count() {
    let stop = AtomicBool::new(false);
    let limit = Duration::from_secs(60);
    let one = run(
        &config(Limit::Cases(1000), Shard::ALL, 1),
        &stop,
        never,
        limit,
    );
    for jobs in [2, 4] {
        let many = run(
            &config(Limit::Cases(1000), Shard::ALL, jobs),
            &stop,
            never,
            limit,
        );
        assert_eq!(stable(&one), stable(&many), "{jobs} jobs");
    }
    assert_eq!(one.cases_run, 1000);
    // k ≡ 3 (mod 7): 3 (sig 0), 10 (sig 1), 17 (sig 2).
    let firsts: Vec<(u64, Signature)> = one
        .firsts
        .iter()
        .map(|f| (f.index, f.signature.clone()))
        .collect();
    assert_eq!(firsts, vec![(3, sig(0)), (10, sig(1)), (17, sig(2))]);
    assert_eq!(one.counts[&Kind::Mismatch], 143);
    // k ≡ 0 (mod 11) and not ≡ 3 (mod 7): 91 − 13 cases, split by parity.
    assert_eq!(
        one.decline_reasons.values().sum::<u64>(),
        one.counts[&Kind::Unsupported]
    );
    assert_eq!(one.end, SweepEnd::Completed);
    assert_eq!((one.abandoned, one.unfinished.clone()), (0, vec![]));
}

#[test]
fn shards_are_disjoint_and_their_union_is_the_whole_run() {
    let stop = AtomicBool::new(false);
    let limit = Duration::from_secs(60);
    let mut mismatches = 0;
    let mut cases = 0;
    for i in 0..3 {
        let s = run(
            &config(Limit::Cases(100), Shard::new(i, 3).unwrap(), 2),
            &stop,
            never,
            limit,
        );
        assert!(s.firsts.iter().all(|f| f.index % 3 == i));
        mismatches += s.counts.get(&Kind::Mismatch).copied().unwrap_or(0);
        cases += s.cases_run;
    }
    assert_eq!(cases, 100);
    let whole = run(
        &config(Limit::Cases(100), Shard::ALL, 2),
        &stop,
        never,
        limit,
    );
    assert_eq!(whole.counts[&Kind::Mismatch], mismatches);
}

#[test]
fn hung_cases_are_timeouts_and_the_sweep_goes_on_without_their_threads() {
    let stop = AtomicBool::new(false);
    let limit = Duration::from_millis(150);
    let hangs: fn(u64) -> bool = |k| k == 5 || k == 50;
    let one = run(
        &config(Limit::Cases(100), Shard::ALL, 1),
        &stop,
        hangs,
        limit,
    );
    let three = run(
        &config(Limit::Cases(100), Shard::ALL, 3),
        &stop,
        hangs,
        limit,
    );
    assert_eq!(stable(&one), stable(&three));
    assert_eq!(one.end, SweepEnd::Completed);
    assert_eq!(one.cases_run, 100);
    assert_eq!(one.counts[&Kind::Timeout], 2);
    assert_eq!(one.abandoned, 2);
    let timeout = one
        .firsts
        .iter()
        .find(|f| f.signature.kind == Kind::Timeout)
        .unwrap();
    assert_eq!((timeout.index, timeout.occurrences), (5, 2));
}

#[test]
fn too_many_hung_cases_end_the_sweep_at_the_same_case_for_any_thread_count() {
    let stop = AtomicBool::new(false);
    let limit = Duration::from_millis(100);
    let hangs: fn(u64) -> bool = |k| k % 10 == 3;
    let mut cfg = config(Limit::Cases(200), Shard::ALL, 1);
    cfg.max_stuck = 3;
    let one = run(&cfg, &stop, hangs, limit);
    cfg.jobs = 4;
    let four = run(&cfg, &stop, hangs, limit);
    assert_eq!(stable(&one), stable(&four));
    assert_eq!(one.end, SweepEnd::TooManyStuck);
    // Up to and including the third hanging index, 23.
    assert_eq!(one.cases_run, 24);
    assert_eq!(one.counts[&Kind::Timeout], 3);
}

#[test]
fn a_stop_ends_the_sweep_even_with_cases_that_never_finish() {
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = Arc::clone(&stop);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        s2.store(true, Ordering::SeqCst);
    });
    let started = Instant::now();
    let s = run(
        &config(Limit::Cases(1000), Shard::ALL, 2),
        &stop,
        |k| k >= 20,
        Duration::from_secs(600),
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(s.end, SweepEnd::Interrupted);
    assert_eq!(s.cases_run, 20);
    assert_eq!(s.unfinished, vec![20, 21]);
    assert_eq!(s.counts.get(&Kind::Timeout), None);
}

#[test]
fn a_stop_request_ends_the_sweep_and_a_deadline_ends_a_timed_one() {
    let stop = AtomicBool::new(true);
    let s = run(
        &config(Limit::Cases(1_000_000), Shard::ALL, 2),
        &stop,
        never,
        Duration::from_secs(60),
    );
    assert_eq!(s.end, SweepEnd::Interrupted);
    assert_eq!(s.cases_run, 0);

    let never_stop = AtomicBool::new(false);
    let mut timed = config(Limit::Duration(Duration::from_secs(3600)), Shard::ALL, 2);
    timed.deadline = Some(Instant::now() + Duration::from_millis(100));
    let started = Instant::now();
    let t = run(&timed, &never_stop, never, Duration::from_secs(60));
    assert_eq!(t.end, SweepEnd::Deadline);
    assert!(t.cases_run > 0);
    assert!(started.elapsed() < Duration::from_secs(20));
}
