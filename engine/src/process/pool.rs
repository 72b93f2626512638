//! Persistent compiler servers shared by a hunt's worker threads (AFL's persistent mode): a
//! server is started once and answers request after request, so a hunt pays for a process
//! start — and for a compiler written in Python, an interpreter start and its imports — once
//! per worker rather than once per case.
//!
//! A [`ServerPool`] starts servers from one [`Invocation`] recipe and lends one to a worker per
//! request: the idle server that worker used last when it is there (each server then answers
//! one worker, and the scheduler keeps the pair on one core), else any idle one, else a new
//! one. A server that ends, overruns its request's deadline or breaks the protocol is killed
//! with its group (its [`Server`] says so) and never lent again; one found dead between
//! requests is dropped without blaming a request.
//!
//! Every server gets two directories of its own that its requests name: a case directory the
//! caller fills before the request, and an output directory for what the compiler writes. They
//! are made with the server and emptied after each request (making and removing a temporary
//! directory per request was about a tenth of a served case's time), so every request still
//! finds just its case and an empty output directory. A server can reach them, and one that
//! replaced one of them (or the directory holding them) with a symbolic link would have the
//! harness write into, or empty, whatever the link names: each is checked to be the very
//! directory made (device and inode, links not followed) before a case is written into it and
//! before it is emptied; a slot that fails the check is dropped, which removes the link, never
//! what it names.
//!
//! What a request line and an answer mean is the caller's: the pool moves bytes and
//! directories.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread::ThreadId;

use super::{Answer, Invocation, ProcessError, Server};

/// Where the directories of compile servers (and of compiles that write many small files) are
/// made: `$PIMDIFF_SCRATCH` when set, else `/dev/shm` when it is writable, else the temporary
/// directory. On a disk file system, creating and deleting a dozen small files per case was
/// most of a case's time (ext4's inode allocation: a served hunt of `pimdiff compile --serve`
/// ran 121 cases/s in `/tmp` and 2495 in `/dev/shm` on the same loaded 2-core machine).
pub fn scratch_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("PIMDIFF_SCRATCH") {
            return dir.into();
        }
        let shm = Path::new("/dev/shm");
        let writable = tempfile::Builder::new()
            .prefix("pimdiff-probe-")
            .tempdir_in(shm)
            .is_ok();
        if writable {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    })
    .clone()
}

/// How a [`ServerPool`] starts a server.
pub type Recipe = Box<dyn Fn() -> Result<Invocation, ProcessError> + Send + Sync>;

/// Servers of one recipe, lent to one worker at a time (see the module docs).
pub struct ServerPool {
    recipe: Recipe,
    line_limit: usize,
    scratch: PathBuf,
    idle: Mutex<Vec<Slot>>,
}

/// Why a request got no answer from a server: the harness's failures, never the compiler's
/// (those are [`Answer`]s).
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("cannot create the directories of a compile server in {dir}: {source}")]
    Scratch {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the compile server: {0}")]
    Start(ProcessError),
    #[error("cannot write the case for the compile server: {0}")]
    WriteCase(std::io::Error),
    #[error("cannot talk to the compile server: {0}")]
    Talk(std::io::Error),
}

/// The directories one request of a server names.
#[derive(Clone, Copy, Debug)]
pub struct Dirs<'a> {
    /// Filled by the caller before the request.
    pub case: &'a Path,
    /// Empty before the request; what the server writes.
    pub out: &'a Path,
}

impl ServerPool {
    /// A pool of servers each started from `recipe()`, answering lines of at most
    /// `line_limit` bytes, with their directories made under `scratch`. The invocation's
    /// limits are each request's (deadline, memory of the group, standard error kept).
    pub fn new(recipe: Recipe, line_limit: usize, scratch: PathBuf) -> ServerPool {
        ServerPool {
            recipe,
            line_limit,
            scratch,
            idle: Mutex::new(Vec::new()),
        }
    }

    /// One request: a server is borrowed (see the module docs), `fill` writes the case into
    /// its empty case directory, `line` makes the request line from the two directories, and
    /// `read` takes the answer with the directories still holding what the request left. The
    /// server goes back to the pool only when it is still alive and its directories could be
    /// emptied.
    pub fn request<R>(
        &self,
        fill: impl FnOnce(&Path) -> std::io::Result<()>,
        line: impl FnOnce(Dirs<'_>) -> Vec<u8>,
        read: impl FnOnce(Answer, Dirs<'_>) -> R,
    ) -> Result<R, PoolError> {
        let mut slot = match self.checkout() {
            Some(slot) => slot,
            None => self.start()?,
        };
        if !slot.scratch.intact() {
            return Err(PoolError::WriteCase(std::io::Error::other(
                "the compile server replaced its directories",
            )));
        }
        fill(&slot.scratch.case).map_err(PoolError::WriteCase)?;
        let dirs = Dirs {
            case: &slot.scratch.case,
            out: &slot.scratch.out,
        };
        let request = line(dirs);
        let answer = slot.server.request(&request).map_err(PoolError::Talk)?;
        let result = read(answer, dirs);
        if slot.server.alive() && slot.scratch.empty().is_ok() {
            self.lock().push(slot);
        }
        Ok(result)
    }

    /// Kills every idle server (a hunt's end; the ones lent out end when their request does).
    pub fn shutdown(&self) {
        let idle = std::mem::take(&mut *self.lock());
        drop(idle);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle live server, the one this thread used last when it is there; dead ones and ones
    /// whose directories were replaced are dropped on the way.
    fn checkout(&self) -> Option<Slot> {
        let me = std::thread::current().id();
        let mut idle = self.lock();
        loop {
            let i = idle
                .iter()
                .position(|s| s.last_user == me)
                .or(if idle.is_empty() { None } else { Some(0) })?;
            let mut slot = idle.swap_remove(i);
            if slot.server.alive() && slot.scratch.intact() {
                slot.last_user = me;
                return Some(slot);
            }
        }
    }

    fn start(&self) -> Result<Slot, PoolError> {
        let scratch = Scratch::new(&self.scratch, "out").map_err(|source| PoolError::Scratch {
            dir: self.scratch.clone(),
            source,
        })?;
        let server = (self.recipe)()
            .and_then(|i| i.serve(self.line_limit))
            .map_err(PoolError::Start)?;
        Ok(Slot {
            server,
            scratch,
            last_user: std::thread::current().id(),
        })
    }
}

impl std::fmt::Debug for ServerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPool")
            .field("line_limit", &self.line_limit)
            .field("scratch", &self.scratch)
            .field("idle", &self.lock().len())
            .finish()
    }
}

/// A server, its two directories, and the worker thread that used it last.
struct Slot {
    server: Server,
    scratch: Scratch,
    last_user: ThreadId,
}

/// The case and output directories of one server, made with it and emptied after each request,
/// so that every request sees a case directory holding just its case and an empty output
/// directory. Why not a fresh temporary directory per request: making and removing it was
/// about a tenth of a served case's time (`docs/serve-protocol.md#measured`). Dropped with its
/// server: removed.
///
/// A server can reach these directories, and one that replaced one of them (or the directory
/// holding them) with a symbolic link would have the harness empty or write into whatever the
/// link names. So each of the three is checked to be the very directory made here (device and
/// inode, not following links) before a case is written into it and before it is emptied
/// ([`Scratch::intact`], [`Scratch::empty`]); a server whose directories fail the check is
/// dropped, which removes a link, never what it names.
pub struct Scratch {
    dir: tempfile::TempDir,
    case: PathBuf,
    out: PathBuf,
    /// Device and inode of `dir`, `case` and `out` as made.
    made: [(u64, u64); 3],
}

impl Scratch {
    /// Makes a directory in `base` holding `case/` and `out_name/` (empty).
    pub fn new(base: &Path, out_name: &str) -> std::io::Result<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix("pimdiff-serve-")
            .tempdir_in(base)?;
        let case = dir.path().join("case");
        let out = dir.path().join(out_name);
        std::fs::create_dir(&case)?;
        std::fs::create_dir(&out)?;
        let made = [identity(dir.path())?, identity(&case)?, identity(&out)?];
        Ok(Scratch {
            dir,
            case,
            out,
            made,
        })
    }

    /// The case directory.
    pub fn case(&self) -> &Path {
        &self.case
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Whether the three directories are still the ones made.
    pub fn intact(&self) -> bool {
        [self.dir.path(), &self.case, &self.out]
            .iter()
            .zip(&self.made)
            .all(|(path, made)| identity(path).is_ok_and(|id| id == *made))
    }

    /// Removes whatever a request left in the two directories; an error when they are not the
    /// ones made ([`Scratch::intact`]).
    pub fn empty(&self) -> std::io::Result<()> {
        if !self.intact() {
            return Err(std::io::Error::other(
                "the compile server replaced its directories",
            ));
        }
        empty_dir(&self.case)?;
        empty_dir(&self.out)
    }
}

/// Device and inode of the directory at `path` itself (a link is not followed: it is an error).
fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other("not a directory"));
    }
    Ok((meta.dev(), meta.ino()))
}

/// Removes everything inside `dir`, keeping `dir`; entries are never followed (a link is
/// removed as a file, a directory with `remove_dir_all`, which removes links, not what they
/// name).
fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Limits;
    use super::*;
    use std::time::Duration;

    /// A server that echoes each request line with the number of files in its case directory
    /// and writes one file into its output directory.
    fn echo_pool() -> ServerPool {
        let script = r#"while read -r line; do
  set -- $line
  n=$(ls "$1" | wc -l)
  echo hi > "$2/made"
  echo "$n $line"
done"#;
        let recipe: Recipe = Box::new(move || {
            Ok(Invocation::new("sh", "pool-test-")?
                .args(["-c", script])
                .limits(Limits::new(Duration::from_secs(10))))
        });
        ServerPool::new(recipe, 4096, std::env::temp_dir())
    }

    fn ask(pool: &ServerPool, files: usize) -> (String, bool) {
        pool.request(
            |case| {
                for i in 0..files {
                    std::fs::write(case.join(format!("f{i}")), b"x")?;
                }
                Ok(())
            },
            |d| format!("{} {}", d.case.display(), d.out.display()).into_bytes(),
            |answer, d| match answer {
                Answer::Line { line, .. } => (
                    String::from_utf8_lossy(&line)
                        .split(' ')
                        .next()
                        .unwrap()
                        .to_string(),
                    d.out.join("made").is_file(),
                ),
                other => panic!("{other:?}"),
            },
        )
        .unwrap()
    }

    #[test]
    fn a_server_is_reused_and_each_request_finds_only_its_case() {
        let pool = echo_pool();
        assert_eq!(ask(&pool, 3), ("3".to_string(), true));
        assert_eq!(pool.lock().len(), 1);
        // The same server, its directories emptied in between.
        assert_eq!(ask(&pool, 1), ("1".to_string(), true));
        assert_eq!(pool.lock().len(), 1);
        pool.shutdown();
        assert_eq!(pool.lock().len(), 0);
    }

    #[test]
    fn a_server_that_replaced_its_directory_is_dropped_not_followed() {
        let pool = echo_pool();
        ask(&pool, 1);
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("keep"), b"k").unwrap();
        {
            let idle = pool.lock();
            let out = &idle[0].scratch.out;
            std::fs::remove_dir(out).unwrap();
            std::os::unix::fs::symlink(victim.path(), out).unwrap();
        }
        // The next request starts a new server; the linked directory is not emptied.
        assert_eq!(ask(&pool, 2), ("2".to_string(), true));
        assert!(victim.path().join("keep").is_file());
    }
}
