//! The process groups of running programs: the registry of live ones ([`kill_all`]), killing
//! one, and reading its members (resident memory, CPU time, who is still alive) from `/proc`.
//!
//! A group is registered from just after its leader is spawned until just before the leader is
//! reaped. While the leader is unreaped its pid cannot be reused, so its group id names this
//! group and no other: every `killpg` here is sent under that guarantee.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// A live group: the scope it was started in and the flag a kill sets before killing it.
type Live = BTreeMap<i32, (u64, Arc<AtomicBool>)>;

/// Live groups (see [`Live`]).
static LIVE: Mutex<Live> = Mutex::new(BTreeMap::new());

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

thread_local! {
    /// The scope the programs this thread starts belong to (0: none).
    static SCOPE: Cell<u64> = const { Cell::new(0) };
}

/// The last scope handed out.
static LAST_SCOPE: AtomicU64 = AtomicU64::new(0);

/// A scope of programs: those one hunt starts, so that the hunt's end kills its own and not
/// those of another hunt running in the same process (a library user's, or a parallel test).
/// Entered on the current thread; dropping it restores the thread's scope before.
pub struct Scope {
    id: u64,
    outer: u64,
}

impl Scope {
    /// A fresh scope, entered on this thread.
    pub fn enter() -> Scope {
        let id = LAST_SCOPE.fetch_add(1, Ordering::SeqCst) + 1;
        let outer = scope();
        set_scope(id);
        Scope { id, outer }
    }

    /// Its id, for [`set_scope`] on other threads and [`kill_scope`].
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        set_scope(self.outer);
    }
}

/// The scope of the programs this thread starts (0: none). A thread that starts work on
/// another thread passes it on with [`set_scope`].
pub fn scope() -> u64 {
    SCOPE.with(Cell::get)
}

/// Makes the programs this thread starts from now on belong to `scope`.
pub fn set_scope(scope: u64) {
    SCOPE.with(|s| s.set(scope));
}

/// Kills the whole group of every running program started in `scope` (SIGKILL) and returns
/// how many groups there were; their runs end as [`super::Status::Cancelled`]. What
/// [`kill_all`] does for the whole process, for one hunt.
pub fn kill_scope(scope: u64) -> usize {
    let groups = live();
    let mut n = 0;
    for (&pgid, (s, cancelled)) in groups.iter() {
        if *s == scope {
            cancelled.store(true, Ordering::SeqCst);
            kill(pgid);
            n += 1;
        }
    }
    n
}

/// Kills every running program's whole process group (SIGKILL) and returns how many groups
/// there were. Their runs end as [`super::Status::Cancelled`]. A hunt calls this when it ends
/// with threads still stuck in compilers, and on the Ctrl-C that exits at once: the programs
/// run in groups of their own, which neither the harness's exit nor the terminal's SIGINT
/// reaches. It kills what runs now: a program spawned after it (or while it runs) is not
/// killed, so callers stop starting programs first.
pub fn kill_all() -> usize {
    let groups = live();
    for (&pgid, (_, cancelled)) in groups.iter() {
        cancelled.store(true, Ordering::SeqCst);
        kill(pgid);
    }
    groups.len()
}

/// A registered live group. Dropping it kills the group (whatever is left of it) and removes it
/// from the registry, so that an early return or a panic leaves nothing running.
pub(super) struct Registered {
    pgid: i32,
    cancelled: Arc<AtomicBool>,
}

impl Registered {
    pub(super) fn new(pgid: i32) -> Registered {
        let cancelled = Arc::new(AtomicBool::new(false));
        live().insert(pgid, (scope(), Arc::clone(&cancelled)));
        Registered { pgid, cancelled }
    }

    /// Whether [`kill_all`] killed this group.
    pub(super) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut groups = live();
        kill(self.pgid);
        groups.remove(&self.pgid);
    }
}

/// Sends SIGKILL to the group `pgid` (a group that is already gone is not an error).
pub(super) fn kill(pgid: i32) {
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
}

/// One process of a group, from `/proc/PID/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Member {
    pub pid: i32,
    pub resident_bytes: u64,
    /// CPU time in clock ticks: its own (user + system) and that of the children it waited for
    /// (`cutime` + `cstime`), so that a member that ran and exited still counts once reaped.
    pub cpu_ticks: u64,
    /// Dead and not yet reaped: uses no memory, runs nothing.
    pub zombie: bool,
}

/// The processes whose process group is `pgid` (one pass over `/proc`; processes that end
/// during the pass are skipped).
pub(super) fn members(pgid: i32) -> Vec<Member> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (group, member) = parse_stat(pid, &stat)?;
            (group == pgid).then_some(member)
        })
        .collect()
}

/// The resident memory of the group's live processes, summed.
pub(super) fn resident_bytes(pgid: i32) -> u64 {
    members(pgid)
        .iter()
        .filter(|m| !m.zombie)
        .map(|m| m.resident_bytes)
        .sum()
}

/// The CPU time the group has used: the sum over its members, zombies included, of their own
/// user and system time and their reaped children's ([`Member::cpu_ticks`]). A member that
/// exited and was reaped by another member counts in its reaper's; one reaped outside the
/// group (an orphan adopted by init) no longer counts, which only a program that forks and
/// abandons its workers meets. Clock-tick resolution (10 ms on Linux).
pub(super) fn cpu_time(pgid: i32) -> Duration {
    let ticks: u64 = members(pgid).iter().map(|m| m.cpu_ticks).sum();
    ticks_to_duration(ticks)
}

/// `ticks` clock ticks (`_SC_CLK_TCK` per second) as a duration.
pub(super) fn ticks_to_duration(ticks: u64) -> Duration {
    static HZ: OnceLock<u64> = OnceLock::new();
    let hz = *HZ.get_or_init(|| {
        // SAFETY: sysconf only reads a constant of the system.
        let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(100)
    });
    Duration::from_nanos(ticks.saturating_mul(1_000_000_000) / hz)
}

/// `(process group, member)` from the text of `/proc/PID/stat`. The command name (field 2) is
/// in parentheses and may hold spaces and parentheses, so fields are counted from the last `)`:
/// state, ppid, pgrp, … utime, stime, cutime, cstime the 12th to 15th after it, rss (in
/// pages) the 22nd.
pub(super) fn parse_stat(pid: i32, stat: &str) -> Option<(i32, Member)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let state = fields.first()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let mut cpu_ticks = 0u64;
    for i in 11..15 {
        // cutime and cstime are signed in the kernel's format; never negative in practice.
        let t: i64 = fields.get(i)?.parse().ok()?;
        cpu_ticks = cpu_ticks.saturating_add(u64::try_from(t).unwrap_or(0));
    }
    let rss_pages: u64 = fields.get(21)?.parse().ok()?;
    Some((
        pgrp,
        Member {
            pid,
            resident_bytes: rss_pages.saturating_mul(page_size()),
            cpu_ticks,
            zombie: *state == "Z" || *state == "X",
        },
    ))
}

fn page_size() -> u64 {
    static SIZE: OnceLock<u64> = OnceLock::new();
    *SIZE.get_or_init(|| {
        // SAFETY: sysconf only reads a constant of the system.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        u64::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_past_odd_command_names() {
        let line = "4242 (a) b (c) S 1 4240 4240 0 -1 4194560 120 0 0 0 1 2 0 0 20 0 1 0 \
                    500 10485760 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0";
        let (pgrp, m) = parse_stat(4242, line).unwrap();
        assert_eq!(pgrp, 4240);
        assert_eq!(
            m,
            Member {
                pid: 4242,
                resident_bytes: 300 * page_size(),
                cpu_ticks: 1 + 2,
                zombie: false
            }
        );
        // utime 7, stime 5, cutime 30, cstime 2: all four count.
        let worked = line.replace(" 0 1 2 0 0 20 ", " 0 7 5 30 2 20 ");
        assert_eq!(parse_stat(4242, &worked).unwrap().1.cpu_ticks, 44);
        let zombie = line.replace(") S 1", ") Z 1");
        assert!(parse_stat(4242, &zombie).unwrap().1.zombie);
        assert_eq!(parse_stat(1, "1 (x) S 1"), None);
        assert_eq!(parse_stat(1, "no parenthesis"), None);
    }

    #[test]
    fn ticks_are_clock_ticks() {
        // SAFETY: sysconf only reads a constant of the system.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        assert_eq!(ticks_to_duration(hz * 3), Duration::from_secs(3));
        assert_eq!(ticks_to_duration(0), Duration::ZERO);
    }

    #[test]
    fn this_process_is_a_member_of_its_own_group() {
        let me = std::process::id() as i32;
        let group = nix::unistd::getpgrp().as_raw();
        let found = members(group);
        let mine = found.iter().find(|m| m.pid == me).unwrap();
        assert!(!mine.zombie);
        assert!(mine.resident_bytes > 0);
    }
}
