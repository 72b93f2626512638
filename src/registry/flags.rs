//! Value parsers of the flags every command shares: durations, ratios, counts, schedules,
//! opcodes and injected bug classes. One spelling of each, so that `--duration 10m` and
//! `--compiler-timeout 10m` cannot come to mean different things.

use std::time::Duration;

use pimdiff_isa::machine::Schedule;
use pimdiff_target_pimsim::compilers::injected::BugClass;

/// A duration such as `500ms`, `30s`, `10m`, `1h`.
pub fn parse_duration_arg(s: &str) -> Result<Duration, String> {
    pimdiff_engine::plan::parse_duration(s).map_err(|e| e.to_string())
}

/// A duration that is not zero.
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration_arg(s)? {
        d if d.is_zero() => Err("must be longer than zero".into()),
        d => Ok(d),
    }
}

/// A count of at least one.
pub fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("{s:?} is not a positive integer")),
    }
}

/// A share, between 0 and 1.
pub fn ratio(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a number between 0 and 1")),
    }
}

/// `fixed`, `random:SEED` or `pct:SEED:DEPTH`.
pub fn parse_schedule(s: &str) -> Result<Schedule, String> {
    s.parse()
}

/// A bug class name (`BugClass::name`).
pub fn parse_bug(s: &str) -> Result<BugClass, String> {
    BugClass::from_name(s).ok_or_else(|| {
        format!(
            "unknown bug class {s:?} (known: {})",
            BugClass::known_names()
        )
    })
}

/// An opcode mnemonic (`mvmul`, `vvadd`, ...).
pub fn parse_opcode(s: &str) -> Result<pimdiff_isa::Opcode, String> {
    pimdiff_isa::Opcode::from_mnemonic(s).ok_or_else(|| format!("{s:?} is not an opcode mnemonic"))
}
