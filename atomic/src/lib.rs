//! Nothing is half-written: the one way pimdiff writes a file or a directory that someone
//! else may read (a case, a finding, a report, a summary).
//!
//! Everything is built under a hidden temporary sibling whose name starts with
//! [`TEMP_PREFIX`], every file and directory is fsynced, and the result is renamed into place
//! in one step (then the parent is fsynced, so the rename survives a crash). A reader sees the
//! old state or the new one, never a mix. A process killed in the middle leaves only a hidden
//! temporary entry, which readers skip (its name starts with a dot) and [`clean_temp`]
//! removes on the next run. An existing destination is never deleted first: a directory is
//! only renamed over an empty one, and [`AtomicDir::commit_replacing`] moves the old one
//! aside before removing it.
//!
//! Every crate of the workspace that writes uses this one (the oracle's case writer, the
//! harness's findings, corpus entries, reports, exports, summaries); it depends on nothing.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Name prefix of an entry under construction. Starts with a dot so that readers, which skip
/// hidden entries, never see a half-written one.
pub const TEMP_PREFIX: &str = ".pimdiff-tmp-";

/// What went wrong, with the path it went wrong on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system error on `path`.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// The destination exists (and, for a directory, is not empty): never overwritten.
    #[error("{}: already exists; refusing to overwrite it", path.display())]
    Exists { path: PathBuf },
}

impl Error {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. } | Error::Exists { path } => path,
        }
    }
}

/// For callers whose own error type carries an `io::Error` beside the path they already know.
impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        match e {
            Error::Io { source, .. } => source,
            Error::Exists { path } => io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{}: already exists", path.display()),
            ),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A directory being built under a temporary sibling of its final path, renamed into place by
/// [`AtomicDir::commit`]. Dropped without a commit (an error on the way, a panic), it removes
/// its temporary directory; killed outright, it leaves a hidden [`TEMP_PREFIX`] directory.
#[derive(Debug)]
pub struct AtomicDir {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl AtomicDir {
    /// Creates the temporary sibling of `dest`, which must not exist or be an empty directory
    /// (missing parents are created).
    pub fn create(dest: &Path) -> Result<AtomicDir, Error> {
        if !absent_or_empty(dest)? {
            return Err(Error::Exists {
                path: dest.to_path_buf(),
            });
        }
        AtomicDir::create_anyway(dest)
    }

    /// Creates the temporary sibling of `dest` whether or not `dest` exists (for
    /// [`AtomicDir::commit_replacing`]).
    pub fn create_anyway(dest: &Path) -> Result<AtomicDir, Error> {
        let parent = parent_of(dest);
        fs::create_dir_all(&parent).map_err(io_err(&parent))?;
        let tmp = loop {
            let candidate = temp_sibling(dest);
            match fs::create_dir(&candidate) {
                Ok(()) => break candidate,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io_err(&candidate)(e)),
            }
        };
        Ok(AtomicDir {
            tmp,
            dest: dest.to_path_buf(),
            committed: false,
        })
    }

    /// Where to write the contents.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The final path.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Syncs every file and directory written, renames the directory into place and syncs the
    /// parent. Refuses (and removes its work) when the destination became non-empty meanwhile:
    /// rename(2) replaces an empty directory and refuses a full one, so another writer's
    /// result is never overwritten.
    pub fn commit(mut self) -> Result<PathBuf, Error> {
        sync_tree(&self.tmp)?;
        if let Err(e) = fs::rename(&self.tmp, &self.dest) {
            return Err(if absent_or_empty(&self.dest).unwrap_or(false) {
                io_err(&self.dest)(e)
            } else {
                Error::Exists {
                    path: self.dest.clone(),
                }
            });
        }
        self.committed = true;
        sync_dir(&parent_of(&self.dest))?;
        Ok(self.dest.clone())
    }

    /// Like [`commit`](Self::commit), but an existing destination is replaced: it is renamed
    /// aside first (never deleted before the new one is in place), the new one renamed in, and
    /// only then the old one removed. An interruption can leave the destination missing
    /// between the two renames, with the old one beside it as a hidden entry, never a
    /// half-written directory.
    pub fn commit_replacing(mut self) -> Result<PathBuf, Error> {
        if absent_or_empty(&self.dest)? {
            return self.commit();
        }
        sync_tree(&self.tmp)?;
        let aside = temp_sibling(&self.dest);
        fs::rename(&self.dest, &aside).map_err(io_err(&self.dest))?;
        if let Err(e) = fs::rename(&self.tmp, &self.dest) {
            let _ = fs::rename(&aside, &self.dest);
            return Err(io_err(&self.dest)(e));
        }
        self.committed = true;
        sync_dir(&parent_of(&self.dest))?;
        fs::remove_dir_all(&aside).map_err(io_err(&aside))?;
        Ok(self.dest.clone())
    }
}

impl Drop for AtomicDir {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Writes one file atomically: `fill` writes a temporary sibling, which is synced and renamed
/// over `dest` (an existing file is replaced in one step). The directory must exist: a writer
/// that silently created a mistyped directory tree would hide the mistake.
pub fn write_file_with(
    dest: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), Error> {
    let parent = parent_of(dest);
    let tmp = temp_sibling(dest);
    let result = (|| {
        let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
        fill(&mut f)
            .and_then(|()| f.flush())
            .and_then(|()| f.sync_all())
            .map_err(io_err(&tmp))?;
        fs::rename(&tmp, dest).map_err(io_err(dest))?;
        sync_dir(&parent)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Writes `bytes` to `dest` atomically (see [`write_file_with`]).
pub fn write_file(dest: &Path, bytes: &[u8]) -> Result<(), Error> {
    write_file_with(dest, |f| f.write_all(bytes))
}

/// Writes `bytes` as a new file inside a directory under construction (synced by the
/// directory's commit): for the files of an [`AtomicDir`].
/// Missing parent directories are created, but only after a write finds them missing: a
/// directory's files are written one after another into one existing parent, and asking for
/// it every time was two system calls per file.
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    match fs::write(path, bytes) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(io_err(parent))?;
            }
            fs::write(path, bytes).map_err(io_err(path))
        }
        result => result.map_err(io_err(path)),
    }
}

/// Removes a directory so that no reader ever sees it half-removed: it is first renamed to a
/// hidden temporary sibling (atomic), then deleted. A missing directory is not an error.
pub fn remove_dir(dir: &Path) -> Result<(), Error> {
    let hidden = temp_sibling(dir);
    match fs::rename(dir, &hidden) {
        Ok(()) => fs::remove_dir_all(&hidden).map_err(io_err(&hidden)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(dir)(e)),
    }
}

/// Renames the directory `from` to `to` in one step; `to` must not exist or be empty.
pub fn rename_dir(from: &Path, to: &Path) -> Result<(), Error> {
    if !absent_or_empty(to)? {
        return Err(Error::Exists {
            path: to.to_path_buf(),
        });
    }
    fs::rename(from, to).map_err(io_err(to))?;
    sync_dir(&parent_of(to))
}

/// Removes the leftovers of interrupted writes ([`TEMP_PREFIX`] entries) directly under
/// `dir`; returns how many were removed. A missing `dir` has none.
pub fn clean_temp(dir: &Path) -> Result<usize, Error> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        if !entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            continue;
        }
        let path = entry.path();
        if entry.file_type().map_err(io_err(&path))?.is_dir() {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        }
        .map_err(io_err(&path))?;
        removed += 1;
    }
    Ok(removed)
}

/// Whether nothing is at `path`, or an empty directory.
pub fn absent_or_empty(path: &Path) -> Result<bool, Error> {
    match fs::read_dir(path) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
        // A file, or a directory we may not read: not ours to replace.
        Err(_) if path.exists() => Ok(false),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// A fresh hidden sibling name of `path`: prefix, final name, process id, per-process counter.
fn temp_sibling(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    parent_of(path).join(format!("{TEMP_PREFIX}{name}-{}-{n}", std::process::id()))
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn sync_tree(dir: &Path) -> Result<(), Error> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let path = entry.path();
        if entry.file_type().map_err(io_err(&path))?.is_dir() {
            sync_tree(&path)?;
        } else {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io_err(&path))?;
        }
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    // Directories can be opened and fsynced on Unix; elsewhere this is best effort.
    match File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) if cfg!(unix) => Err(io_err(dir)(e)),
        Err(_) => Ok(()),
    }
}
