//! The hunt's scheduling, independent of any compiler: case seeds, shards, durations and the
//! parallel sweep (determinism, shard disjointness and union, stopping).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pimdiff::hunt::{
    case_seed, parse_duration, sweep, DurationError, Limit, Observation, Shard, ShardError,
};

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// A fake checker: every 7th index is a finding whose signature is `k % 3`; every 11th is
/// unsupported; the rest pass.
fn fake(k: u64) -> Observation<u64> {
    let (kind, signature) = match (k % 7, k % 11) {
        (3, _) => ("mismatch", Some(k % 3)),
        (_, 0) => ("unsupported", None),
        _ => ("pass", None),
    };
    Observation { kind, signature }
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
    let one = sweep(
        Limit::Cases(1000),
        Shard::ALL,
        &pool(1),
        &stop,
        fake,
        |_| {},
    );
    let two = sweep(
        Limit::Cases(1000),
        Shard::ALL,
        &pool(2),
        &stop,
        fake,
        |_| {},
    );
    assert_eq!(one.cases_run, 1000);
    assert_eq!(
        (one.counts.clone(), one.firsts.clone()),
        (two.counts, two.firsts)
    );
    // k ≡ 3 (mod 7): 3 (sig 0), 10 (sig 1), 17 (sig 2).
    let firsts: Vec<(u64, u64)> = one.firsts.iter().map(|f| (f.index, f.signature)).collect();
    assert_eq!(firsts, vec![(3, 0), (10, 1), (17, 2)]);
    assert_eq!(one.counts["mismatch"], 143);
    assert!(!one.interrupted);
}

#[test]
fn shards_are_disjoint_and_their_union_is_the_whole_run() {
    let stop = AtomicBool::new(false);
    let mut union = Vec::new();
    let mut mismatches = 0;
    for i in 0..3 {
        let seen = Mutex::new(Vec::new());
        let s = sweep(
            Limit::Cases(100),
            Shard::new(i, 3).unwrap(),
            &pool(2),
            &stop,
            |k| {
                seen.lock().unwrap().push(k);
                fake(k)
            },
            |_| {},
        );
        let seen = seen.into_inner().unwrap();
        assert!(seen.iter().all(|k| k % 3 == i));
        assert_eq!(s.cases_run, seen.len() as u64);
        mismatches += s.counts.get("mismatch").copied().unwrap_or(0);
        union.extend(seen);
    }
    union.sort();
    assert_eq!(union, (0..100).collect::<Vec<_>>());
    let whole = sweep(Limit::Cases(100), Shard::ALL, &pool(2), &stop, fake, |_| {});
    assert_eq!(whole.counts["mismatch"], mismatches);
}

#[test]
fn a_stop_request_ends_the_sweep_and_a_deadline_ends_a_timed_one() {
    let stop = AtomicBool::new(false);
    let s = sweep(
        Limit::Cases(1_000_000),
        Shard::ALL,
        &pool(2),
        &stop,
        |k| {
            if k == 500 {
                stop.store(true, Ordering::SeqCst);
            }
            fake(k)
        },
        |_| {},
    );
    assert!(s.interrupted);
    assert!(
        s.cases_run < 1_000,
        "ran {} cases after the stop",
        s.cases_run
    );

    let never = AtomicBool::new(false);
    let timed = sweep(
        Limit::Duration(Duration::from_millis(100)),
        Shard::ALL,
        &pool(2),
        &never,
        |k| {
            std::thread::sleep(Duration::from_micros(200));
            fake(k)
        },
        |_| {},
    );
    assert!(!timed.interrupted);
    assert!(timed.cases_run > 0);
    assert!(timed.elapsed < Duration::from_secs(2));
}
