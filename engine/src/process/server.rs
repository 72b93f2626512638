//! A program that stays running and answers requests one line at a time (a persistent
//! compiler, as in AFL's persistent mode): started once like any [`Invocation`] — its own
//! process group, the pinned environment, a fresh temporary working directory — but with
//! standard input piped. Each [`Server::request`] writes one line and waits for one line of
//! answer under the request's deadline and the group's memory limit, capturing (bounded) what
//! the program writes to standard error meanwhile.
//!
//! The answer line is read into a buffer that never grows past the line limit: a program that
//! writes a longer line is killed ([`Answer::TooLong`]), it does not make the harness hold
//! whatever it prints. A server that dies, overruns or answers too much is killed with its
//! whole group and reaped; it must not be used again ([`Server::alive`] says so).

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::capture::{Captured, Tail};
use super::group::{self, Registered};
use super::watch::{self, CpuWatch, DEATH_BOUND, DRAIN_GRACE};
use super::{signal_name, Clock, Invocation, Limits, ProcessError, Status};

/// What one request came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// One line of standard output (without its newline), and the standard error written
    /// while it was awaited.
    Line { line: Vec<u8>, stderr: Captured },
    /// Standard output grew past the line limit without a newline; the server was killed.
    /// `start` holds the first bytes of the line.
    TooLong { start: Vec<u8>, stderr: Captured },
    /// The server ended before answering: it exited, died on a signal, overran the deadline
    /// or the CPU-time limit ([`Status::TimedOut`]) or the memory limit, or was cancelled;
    /// killed and reaped.
    Ended { status: Status, stderr: Captured },
}

/// A running server (see the module docs). Dropping it kills its group and reaps it.
pub struct Server {
    pid: i32,
    pidfd: OwnedFd,
    stdin: Option<File>,
    stdout: Option<File>,
    stderr: Option<File>,
    /// Standard output read but not yet answered (no newline yet).
    pending: Vec<u8>,
    limits: Limits,
    line_limit: usize,
    /// `None` once the server is dead and reaped.
    registered: Option<Registered>,
    _dir: tempfile::TempDir,
}

impl Invocation {
    /// Starts the program as a server: standard input piped, answers of at most `line_limit`
    /// bytes. The invocation's [`Limits::cpu`] is the CPU time each request may use (the
    /// group's, counted from the request) and [`Limits::timeout`] its wall-clock deadline
    /// (the backstop), [`Limits::rss_bytes`] the group's memory limit while a request is in
    /// flight, [`Limits::output_bytes`] the standard error kept per request.
    pub fn serve(self, line_limit: usize) -> Result<Server, ProcessError> {
        let (mut child, program) = self.spawn(Stdio::piped())?;
        let pid = child.id() as i32;
        let registered = Registered::new(pid);
        let watch_error = |source: io::Error| ProcessError::Watch {
            program: program.to_string_lossy().into_owned(),
            pid: pid as u32,
            source,
        };
        let pidfd = watch::pidfd_open(pid).map_err(watch_error)?;
        let nonblocking = |fd: Option<OwnedFd>| -> io::Result<Option<File>> {
            fd.map(|fd| {
                fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
                Ok(File::from(fd))
            })
            .transpose()
        };
        let stdin = nonblocking(child.stdin.take().map(OwnedFd::from)).map_err(watch_error)?;
        let stdout = nonblocking(child.stdout.take().map(OwnedFd::from)).map_err(watch_error)?;
        let stderr = nonblocking(child.stderr.take().map(OwnedFd::from)).map_err(watch_error)?;
        Ok(Server {
            pid,
            pidfd,
            stdin,
            stdout,
            stderr,
            pending: Vec::new(),
            limits: self.limits,
            line_limit,
            registered: Some(registered),
            _dir: self.dir,
        })
    }
}

impl Server {
    /// The leader's pid (also the group's id).
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// Whether the server still runs and may take a request (not ended, not killed). Checked
    /// without waiting, so that a server that died between requests is replaced before the
    /// next request rather than blamed on it.
    pub fn alive(&self) -> bool {
        if self.registered.is_none() {
            return false;
        }
        let mut fds = [PollFd::new(self.pidfd.as_fd(), PollFlags::POLLIN)];
        match poll(&mut fds, PollTimeout::ZERO) {
            Ok(n) => n == 0,
            Err(_) => false,
        }
    }

    /// Sends `request` (one line; a newline is added) and waits for one line of answer.
    /// Errors are the harness's failures (a `poll` that fails); the server's are [`Answer`]s.
    pub fn request(&mut self, request: &[u8]) -> io::Result<Answer> {
        if self.registered.is_none() {
            return Ok(Answer::Ended {
                status: Status::Cancelled,
                stderr: Captured::default(),
            });
        }
        let start = Instant::now();
        let far = Duration::from_secs(100 * 365 * 24 * 3600);
        let deadline = start + self.limits.timeout.min(far);
        // The request's CPU time is what the group uses from now on.
        let mut cpu = self
            .limits
            .cpu
            .map(|l| CpuWatch::new(l, group::cpu_time(self.pid), start));
        let mut tail = Tail::new(self.limits.output_bytes);
        // Standard error written between requests belongs to no request.
        read_available(&mut self.stderr, &mut Tail::new(0), usize::MAX)?;
        let mut line = Vec::with_capacity(request.len() + 1);
        line.extend_from_slice(request);
        line.push(b'\n');
        let mut written = 0;
        let interval = self.limits.rss_interval.max(Duration::from_millis(1));
        let mut next_sample = self.limits.rss_bytes.map(|_| start + interval);
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let mut answer: Vec<u8> = self.pending.drain(..=end).collect();
                answer.pop();
                return Ok(Answer::Line {
                    line: answer,
                    stderr: tail.finish(),
                });
            }
            if self.pending.len() > self.line_limit {
                let start = self.pending[..self.line_limit].to_vec();
                let (_, stderr) = self.end(true, tail)?;
                return Ok(Answer::TooLong { start, stderr });
            }
            let now = Instant::now();
            let over_cpu = cpu.as_mut().is_some_and(|c| c.over(self.pid, now, false));
            if over_cpu || now >= deadline {
                if let Some(c) = cpu.as_mut().filter(|_| !over_cpu) {
                    c.over(self.pid, now, true);
                }
                let status = Status::TimedOut {
                    clock: if over_cpu { Clock::Cpu } else { Clock::Wall },
                    cpu_ms: watch::millis(cpu.as_ref().map_or(Duration::ZERO, CpuWatch::used)),
                    wall_ms: watch::millis(now - start),
                };
                return self.ended(status, tail);
            }
            if let (Some(at), Some(limit)) = (next_sample, self.limits.rss_bytes) {
                if now >= at {
                    let rss = group::resident_bytes(self.pid);
                    if rss > limit {
                        let status = Status::MemoryLimit {
                            rss_bytes: rss,
                            limit_bytes: limit,
                        };
                        return self.ended(status, tail);
                    }
                    next_sample = Some(now + interval);
                }
            }
            if written < line.len() {
                written += self.write_some(&line[written..])?;
            }
            let mut wake = next_sample.map_or(deadline, |s| s.min(deadline));
            if let Some(c) = &cpu {
                wake = wake.min(c.next());
            }
            let ready = self.poll_once(written < line.len(), wake)?;
            if ready.stdout {
                let room = self.line_limit + 1 - self.pending.len().min(self.line_limit);
                read_into(&mut self.stdout, &mut self.pending, room, Stop::AtNewline)?;
            }
            if ready.stderr {
                read_available(&mut self.stderr, &mut tail, usize::MAX)?;
            }
            if ready.exited {
                // Whatever it printed before it died is read first: a last answer counts.
                read_into(
                    &mut self.stdout,
                    &mut self.pending,
                    self.line_limit + 1,
                    Stop::AtEnd,
                )?;
                if self.pending.contains(&b'\n') {
                    continue;
                }
                let (status, stderr) = self.end(false, tail)?;
                return Ok(Answer::Ended { status, stderr });
            }
        }
    }

    /// Kills the server for `status` (the deadline, the memory limit) and reports it.
    fn ended(&mut self, status: Status, tail: Tail) -> io::Result<Answer> {
        let (_, stderr) = self.end(true, tail)?;
        Ok(Answer::Ended { status, stderr })
    }

    /// Writes what the pipe takes now; a server that closed its standard input takes nothing
    /// more (its end shows on the pidfd).
    fn write_some(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let Some(stdin) = &mut self.stdin else {
            return Ok(0);
        };
        match stdin.write(bytes) {
            Ok(n) => Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.stdin = None;
                Ok(0)
            }
            Err(e) => Err(e),
        }
    }

    /// One `poll` on the pidfd, the output pipes and (while a request is being written) the
    /// input pipe, until `wake` at the latest.
    fn poll_once(&self, writing: bool, wake: Instant) -> io::Result<Ready> {
        let mut fds: Vec<PollFd<'_>> = vec![PollFd::new(self.pidfd.as_fd(), PollFlags::POLLIN)];
        let mut slots = vec![Slot::Exited];
        let pipes = [
            (self.stdout.as_ref(), PollFlags::POLLIN, Slot::Stdout),
            (self.stderr.as_ref(), PollFlags::POLLIN, Slot::Stderr),
            (
                self.stdin.as_ref().filter(|_| writing),
                PollFlags::POLLOUT,
                Slot::Stdin,
            ),
        ];
        for (file, flags, slot) in pipes {
            if let Some(f) = file {
                fds.push(PollFd::new(f.as_fd(), flags));
                slots.push(slot);
            }
        }
        let mut ready = Ready::default();
        match poll(&mut fds, watch::timeout_until(wake)) {
            Ok(_) => {}
            Err(Errno::EINTR) => return Ok(ready),
            Err(e) => return Err(e.into()),
        }
        for (slot, fd) in slots.iter().zip(&fds) {
            if fd.revents().is_some_and(|r| !r.is_empty()) {
                match slot {
                    Slot::Exited => ready.exited = true,
                    Slot::Stdout => ready.stdout = true,
                    Slot::Stderr => ready.stderr = true,
                    Slot::Stdin => {}
                }
            }
        }
        Ok(ready)
    }

    /// Kills what is left of the group (all of it when `kill_leader`, else the leader has
    /// exited), reads the last standard error, reaps the leader; its status and the tail.
    fn end(&mut self, kill_leader: bool, mut tail: Tail) -> io::Result<(Status, Captured)> {
        let Some(registered) = self.registered.take() else {
            return Ok((Status::Cancelled, tail.finish()));
        };
        group::kill(self.pid);
        if kill_leader || registered.cancelled() {
            watch::wait_readable(&[self.pidfd.as_fd()], Instant::now() + DEATH_BOUND)?;
            watch::wait_group_dead(self.pid)?;
        }
        let until = Instant::now() + DRAIN_GRACE;
        while self.stderr.is_some() && Instant::now() < until {
            let fds: Vec<BorrowedFd<'_>> = self.stderr.iter().map(|f| f.as_fd()).collect();
            watch::wait_readable(&fds, until)?;
            read_available(&mut self.stderr, &mut tail, usize::MAX)?;
        }
        let cancelled = registered.cancelled();
        // Unregistered before the reap: once reaped, the pid may be reused.
        drop(registered);
        self.stdin = None;
        let (exit, _, _) = watch::reap(self.pid)?;
        let status = match (exit.code(), exit.signal()) {
            _ if cancelled => Status::Cancelled,
            (Some(code), _) => Status::Exited { code },
            (None, Some(signal)) => Status::Signaled {
                signal,
                name: signal_name(signal),
            },
            (None, None) => Status::Exited { code: -1 },
        };
        Ok((status, tail.finish()))
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("pid", &self.pid)
            .field("alive", &self.registered.is_some())
            .finish()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(registered) = self.registered.take() {
            drop(registered); // kills the group
            let _ = watch::reap(self.pid);
        }
    }
}

#[derive(Clone, Copy)]
enum Slot {
    Exited,
    Stdout,
    Stderr,
    Stdin,
}

#[derive(Default)]
struct Ready {
    exited: bool,
    stdout: bool,
    stderr: bool,
}

/// When [`read_into`] stops reading, short of `room` and of the pipe's end.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// After a read that brought a newline: an answer is complete, and reading on until the
    /// pipe is empty would cost a system call per request to learn only that.
    AtNewline,
    /// When the pipe is empty.
    AtEnd,
}

/// Reads what a non-blocking pipe holds now, at most `room` bytes, appending to `into`; closes
/// the pipe at its end.
fn read_into(
    pipe: &mut Option<File>,
    into: &mut Vec<u8>,
    room: usize,
    stop: Stop,
) -> io::Result<()> {
    let Some(file) = pipe else {
        return Ok(());
    };
    let mut buf = [0u8; 16 << 10];
    let mut left = room;
    while left > 0 {
        let want = left.min(buf.len());
        match file.read(&mut buf[..want]) {
            Ok(0) => {
                *pipe = None;
                return Ok(());
            }
            Ok(n) => {
                into.extend_from_slice(&buf[..n]);
                left -= n;
                if stop == Stop::AtNewline && buf[..n].contains(&b'\n') {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads what a non-blocking pipe holds now (at most `limit` bytes) into a bounded tail.
fn read_available(pipe: &mut Option<File>, tail: &mut Tail, limit: usize) -> io::Result<()> {
    let Some(file) = pipe else {
        return Ok(());
    };
    let mut buf = [0u8; 16 << 10];
    let mut read = 0usize;
    while read < limit.min(1 << 20) {
        match file.read(&mut buf) {
            Ok(0) => {
                *pipe = None;
                return Ok(());
            }
            Ok(n) => {
                tail.push(&buf[..n]);
                read += n;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
