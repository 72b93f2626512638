//! Supervising one spawned program until its end: one thread asleep in `poll` on a pidfd of the
//! leader and on the two output pipes, waking for output, for the leader's exit, at the
//! deadline, at each memory sample and at each CPU-time sample; then the group's kill, the last
//! output, and the reap.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::capture::{Captured, Tail};
use super::group::{self, Registered};
use super::{signal_name, Clock, Limits, Status};

/// How long output is still read after the group is killed. The group's members are dead
/// within milliseconds of SIGKILL; a pipe still open after this is held by a process that left
/// the group (a daemon that called `setsid`), which is not waited for.
pub(super) const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// How long, at most, to wait for the processes of a killed group to die. SIGKILL cannot be
/// caught, so only a process stuck in the kernel (uninterruptible sleep) takes longer.
pub(super) const DEATH_BOUND: Duration = Duration::from_secs(2);

/// Bytes read from one pipe per wake-up, at most.
const READ_BURST: usize = 1 << 20;

/// The shortest wait between two CPU-time samples: the clock ticks in 10 ms, and reading
/// `/proc` more often only costs the harness.
const MIN_CPU_INTERVAL: Duration = Duration::from_millis(10);

/// What [`supervise`] found.
pub(super) struct Watched {
    pub status: Status,
    pub wall: Duration,
    pub cpu: Duration,
    pub peak_rss_bytes: u64,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// Why the watch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Exited,
    /// The wall-clock deadline (the backstop when CPU time is limited).
    Deadline,
    /// The group's CPU time reached the limit.
    Cpu,
    Memory(u64),
}

/// The CPU-time limit of one group (of one request, for a server: `base` is what the group had
/// used before it), sampled from `/proc` no sooner than the group could reach it: with `n`
/// processors a group gains at most `n` seconds of CPU time per second, so the next sample is
/// due when what is left divided by `n` has passed. A program far from its limit is sampled
/// rarely (a 60 s limit: first after 30 s on two processors); one that spins is caught within
/// [`MIN_CPU_INTERVAL`] of its limit.
pub(super) struct CpuWatch {
    limit: Duration,
    base: Duration,
    used: Duration,
    next: Instant,
    processors: u32,
}

impl CpuWatch {
    pub(super) fn new(limit: Duration, base: Duration, start: Instant) -> CpuWatch {
        // SAFETY: sysconf only reads a constant of the system.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let processors = u32::try_from(online).ok().filter(|&n| n > 0).unwrap_or(1);
        let mut w = CpuWatch {
            limit,
            base,
            used: Duration::ZERO,
            next: start,
            processors,
        };
        w.schedule(start);
        w
    }

    fn schedule(&mut self, now: Instant) {
        let left = self.limit.saturating_sub(self.used) / self.processors;
        self.next = now + left.max(MIN_CPU_INTERVAL);
    }

    /// When the next sample is due.
    pub(super) fn next(&self) -> Instant {
        self.next
    }

    /// The CPU time used so far (as of the last sample).
    pub(super) fn used(&self) -> Duration {
        self.used
    }

    /// Samples the group `pgid` now (when a sample is due, or always with `force`); whether
    /// it has reached the limit.
    pub(super) fn over(&mut self, pgid: i32, now: Instant, force: bool) -> bool {
        if !force && now < self.next {
            return false;
        }
        self.used = group::cpu_time(pgid).saturating_sub(self.base);
        self.schedule(now);
        self.used >= self.limit
    }
}

/// Watches `child` (the leader of its own process group, started at `start`) to its end,
/// kills what is left of its group, reads the rest of its output and reaps it. Whatever fails,
/// the group is killed and the leader reaped before returning.
pub(super) fn supervise(mut child: Child, limits: &Limits, start: Instant) -> io::Result<Watched> {
    let pid = child.id() as i32;
    let registered = Registered::new(pid);
    let mut pipes = [
        Pipe::new(child.stdout.take().map(OwnedFd::from), limits.output_bytes),
        Pipe::new(child.stderr.take().map(OwnedFd::from), limits.output_bytes),
    ];
    let mut sampled_peak = 0;
    let mut cpu = limits.cpu.map(|l| CpuWatch::new(l, Duration::ZERO, start));
    let ended = watch_and_kill(
        pid,
        &registered,
        &mut pipes,
        limits,
        start,
        (&mut sampled_peak, cpu.as_mut()),
    );
    let cancelled = registered.cancelled();
    // Unregistered before the reap: once reaped, the pid (and so the group id) may be reused.
    drop(registered);
    let (exit, kernel_peak, leader_cpu) = reap(pid)?;
    let (end, wall) = ended?;
    let [stdout, stderr] = pipes.map(|p| p.tail.finish());
    let cpu = cpu.map_or(Duration::ZERO, |c| c.used()).max(leader_cpu);
    let timed_out = |clock| Status::TimedOut {
        clock,
        cpu_ms: millis(cpu),
        wall_ms: millis(wall),
    };
    let status = match end {
        End::Deadline => timed_out(Clock::Wall),
        End::Cpu => timed_out(Clock::Cpu),
        End::Memory(rss_bytes) => Status::MemoryLimit {
            rss_bytes,
            limit_bytes: limits.rss_bytes.unwrap_or(0),
        },
        End::Exited if cancelled && exit.signal() == Some(libc::SIGKILL) => Status::Cancelled,
        End::Exited => match (exit.code(), exit.signal()) {
            (Some(code), _) => Status::Exited { code },
            (None, Some(signal)) => Status::Signaled {
                signal,
                name: signal_name(signal),
            },
            (None, None) => Status::Exited { code: -1 },
        },
    };
    Ok(Watched {
        status,
        wall,
        cpu,
        peak_rss_bytes: sampled_peak.max(kernel_peak),
        stdout,
        stderr,
    })
}

/// A duration in whole milliseconds (saturating).
pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Watches the group until its end and kills what is left of it; how it ended and when.
/// `samples` are the memory peak and the CPU-time watch, updated as the group is sampled.
fn watch_and_kill(
    pid: i32,
    registered: &Registered,
    pipes: &mut [Pipe; 2],
    limits: &Limits,
    start: Instant,
    samples: (&mut u64, Option<&mut CpuWatch>),
) -> io::Result<(End, Duration)> {
    let pidfd = pidfd_open(pid)?;
    let (sampled_peak, mut cpu) = samples;
    let end = wait_for_end(&pidfd, pid, pipes, limits, start, sampled_peak, &mut cpu)?;
    let wall = start.elapsed();
    if end == End::Deadline {
        // What the group used by the backstop, recorded before the kill.
        if let Some(c) = cpu {
            c.over(pid, Instant::now(), true);
        }
    }
    // The leader is done; so is everything else in its group.
    group::kill(pid);
    if end != End::Exited || registered.cancelled() {
        wait_readable(&[pidfd.as_fd()], Instant::now() + DEATH_BOUND)?;
        wait_group_dead(pid)?;
    }
    drain(pipes, Instant::now() + DRAIN_GRACE)?;
    Ok((end, wall))
}

/// Sleeps until the leader exits, the deadline passes, the group's CPU time reaches its limit
/// or its memory is over the limit, capturing output meanwhile.
fn wait_for_end(
    pidfd: &OwnedFd,
    pgid: i32,
    pipes: &mut [Pipe; 2],
    limits: &Limits,
    start: Instant,
    peak: &mut u64,
    cpu: &mut Option<&mut CpuWatch>,
) -> io::Result<End> {
    let far = Duration::from_secs(100 * 365 * 24 * 3600);
    let deadline = start + limits.timeout.min(far);
    let interval = limits.rss_interval.max(Duration::from_millis(1));
    let mut next_sample = limits.rss_bytes.map(|_| start + interval);
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(End::Deadline);
        }
        if let Some(c) = cpu.as_deref_mut() {
            if c.over(pgid, now, false) {
                return Ok(End::Cpu);
            }
        }
        if let (Some(at), Some(limit)) = (next_sample, limits.rss_bytes) {
            if now >= at {
                let rss = group::resident_bytes(pgid);
                *peak = (*peak).max(rss);
                if rss > limit {
                    return Ok(End::Memory(rss));
                }
                next_sample = Some(now + interval);
            }
        }
        let mut wake = next_sample.map_or(deadline, |s| s.min(deadline));
        if let Some(c) = cpu.as_deref() {
            wake = wake.min(c.next());
        }
        let ready = poll_once(Some(pidfd.as_fd()), pipes, wake)?;
        read_ready(pipes, ready)?;
        if ready[0] {
            return Ok(End::Exited);
        }
    }
}

/// One `poll` on the pidfd (when given) and the open pipes, until `wake` at the latest.
/// Returns which are ready: `[pidfd, stdout, stderr]`.
fn poll_once(
    pidfd: Option<BorrowedFd<'_>>,
    pipes: &[Pipe; 2],
    wake: Instant,
) -> io::Result<[bool; 3]> {
    let mut slots: Vec<usize> = Vec::with_capacity(3);
    let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(3);
    if let Some(fd) = pidfd {
        slots.push(0);
        fds.push(PollFd::new(fd, PollFlags::POLLIN));
    }
    for (i, pipe) in pipes.iter().enumerate() {
        if let Some(file) = &pipe.file {
            slots.push(i + 1);
            fds.push(PollFd::new(file.as_fd(), PollFlags::POLLIN));
        }
    }
    let mut ready = [false; 3];
    match poll(&mut fds, timeout_until(wake)) {
        Ok(_) => {}
        Err(Errno::EINTR) => return Ok(ready),
        Err(e) => return Err(e.into()),
    }
    for (slot, fd) in slots.iter().zip(&fds) {
        ready[*slot] = fd.revents().is_some_and(|r| !r.is_empty());
    }
    Ok(ready)
}

/// The time until `wake` in whole milliseconds, rounded up (so that a wake-up is never early).
pub(super) fn timeout_until(wake: Instant) -> PollTimeout {
    let left = wake.saturating_duration_since(Instant::now());
    let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
}

fn read_ready(pipes: &mut [Pipe; 2], ready: [bool; 3]) -> io::Result<()> {
    for (pipe, ready) in pipes.iter_mut().zip(&ready[1..]) {
        if *ready {
            pipe.read_available()?;
        }
    }
    Ok(())
}

/// Reads both pipes to their end, or until `until`.
fn drain(pipes: &mut [Pipe; 2], until: Instant) -> io::Result<()> {
    while pipes.iter().any(|p| p.file.is_some()) && Instant::now() < until {
        let ready = poll_once(None, pipes, until)?;
        read_ready(pipes, ready)?;
    }
    Ok(())
}

/// Waits until every process of the killed group `pgid` is dead, each on a pidfd of its own
/// (so without polling), for at most [`DEATH_BOUND`].
pub(super) fn wait_group_dead(pgid: i32) -> io::Result<()> {
    let until = Instant::now() + DEATH_BOUND;
    loop {
        let alive: Vec<OwnedFd> = group::members(pgid)
            .into_iter()
            .filter(|m| !m.zombie)
            // A process that is gone before its pidfd is opened needs no waiting for.
            .filter_map(|m| pidfd_open(m.pid).ok())
            .collect();
        if alive.is_empty() || Instant::now() >= until {
            return Ok(());
        }
        let fds: Vec<BorrowedFd<'_>> = alive.iter().map(|fd| fd.as_fd()).collect();
        wait_readable(&fds, until)?;
    }
}

/// Waits until every fd of `fds` is readable, or until `until`.
pub(super) fn wait_readable(fds: &[BorrowedFd<'_>], until: Instant) -> io::Result<()> {
    let mut waiting: Vec<BorrowedFd<'_>> = fds.to_vec();
    while !waiting.is_empty() && Instant::now() < until {
        let mut polled: Vec<PollFd<'_>> = waiting
            .iter()
            .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
            .collect();
        match poll(&mut polled, timeout_until(until)) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(e.into()),
        }
        let done: Vec<bool> = polled
            .iter()
            .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
            .collect();
        let mut done = done.into_iter();
        waiting.retain(|_| !done.next().unwrap_or(false));
    }
    Ok(())
}

/// A pidfd of process `pid`: readable once it has exited.
pub(super) fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new file descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a file descriptor just opened for us and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Reaps the leader (blocking: it is dead or killed by now); its exit status, the kernel's
/// peak resident memory of it and of the descendants it waited for, in bytes, and their CPU
/// time (user + system).
pub(super) fn reap(pid: i32) -> io::Result<(ExitStatus, u64, Duration)> {
    let mut status = 0;
    // SAFETY: rusage is plain data, valid when zeroed.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 writes only to the two out-parameters, which live across the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            let peak = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
            let time = |t: libc::timeval| {
                Duration::new(
                    u64::try_from(t.tv_sec).unwrap_or(0),
                    u32::try_from(t.tv_usec).unwrap_or(0).saturating_mul(1000),
                )
            };
            let cpu = time(usage.ru_utime) + time(usage.ru_stime);
            return Ok((ExitStatus::from_raw(status), peak, cpu));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// One output pipe, read without blocking.
struct Pipe {
    /// `None` once it reached its end (or had none).
    file: Option<File>,
    tail: Tail,
}

impl Pipe {
    fn new(fd: Option<OwnedFd>, limit: usize) -> Pipe {
        let file = fd.and_then(|fd| {
            fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).ok()?;
            Some(File::from(fd))
        });
        Pipe {
            file,
            tail: Tail::new(limit),
        }
    }

    /// Reads what is there now, up to [`READ_BURST`] bytes (a program that writes as fast as
    /// it is read must not keep the watch from its deadline); closes the pipe at its end.
    fn read_available(&mut self) -> io::Result<()> {
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        let mut buf = [0u8; 16 << 10];
        for _ in 0..READ_BURST / buf.len() {
            match file.read(&mut buf) {
                Ok(0) => {
                    self.file = None;
                    return Ok(());
                }
                Ok(n) => self.tail.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
