//! Atomic directories and files: built under a hidden temporary sibling, synced, renamed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{io_err, CorpusError, TEMP_PREFIX};

/// A directory being built under a temporary sibling of its final path, renamed into place by
/// [`AtomicDir::commit`]. Dropped without a commit (an error on the way, a panic), it removes
/// its temporary directory; killed outright, it leaves a hidden [`TEMP_PREFIX`] directory
/// that readers ignore and [`clean_temp_dirs`] removes.
#[derive(Debug)]
pub struct AtomicDir {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl AtomicDir {
    /// Creates the temporary sibling of `dest` (`dest` must not exist; its parent is created).
    pub fn create(dest: &Path) -> Result<AtomicDir, CorpusError> {
        if dest.exists() {
            return Err(CorpusError::Exists {
                path: dest.to_path_buf(),
            });
        }
        let parent = parent_of(dest);
        fs::create_dir_all(&parent).map_err(io_err(&parent))?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = parent.join(temp_name(&name));
        fs::create_dir(&tmp).map_err(io_err(&tmp))?;
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

    /// Syncs every file and directory written, renames the directory into place and syncs
    /// the parent, so that after a crash the destination is either complete or absent.
    pub fn commit(mut self) -> Result<PathBuf, CorpusError> {
        sync_tree(&self.tmp)?;
        if self.dest.exists() {
            return Err(CorpusError::Exists {
                path: self.dest.clone(),
            });
        }
        fs::rename(&self.tmp, &self.dest).map_err(io_err(&self.dest))?;
        self.committed = true;
        sync_dir(&parent_of(&self.dest))?;
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

/// Writes one file atomically: a temporary sibling, synced, renamed over `dest`.
pub fn write_file_atomic(dest: &Path, bytes: &[u8]) -> Result<(), CorpusError> {
    let parent = parent_of(dest);
    fs::create_dir_all(&parent).map_err(io_err(&parent))?;
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(temp_name(&name));
    let result = (|| {
        fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
        fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(&tmp))?;
        fs::rename(&tmp, dest).map_err(io_err(dest))?;
        sync_dir(&parent)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Removes a directory so that no reader ever sees it half-removed: it is first renamed to a
/// hidden temporary sibling (atomic), then deleted. Killed in between, it leaves only a hidden
/// leftover that [`clean_temp_dirs`] removes. A missing directory is not an error.
pub fn remove_dir_atomic(dir: &Path) -> Result<(), CorpusError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let hidden = parent_of(dir).join(temp_name(&name));
    match fs::rename(dir, &hidden) {
        Ok(()) => fs::remove_dir_all(&hidden).map_err(io_err(&hidden)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CorpusError::Io {
            path: dir.to_path_buf(),
            source: e,
        }),
    }
}

/// Renames the directory `from` to `to` (which must not exist) in one step.
pub fn rename_dir(from: &Path, to: &Path) -> Result<(), CorpusError> {
    if to.exists() {
        return Err(CorpusError::Exists {
            path: to.to_path_buf(),
        });
    }
    fs::rename(from, to).map_err(io_err(to))?;
    sync_dir(&parent_of(to))
}

/// Removes the leftovers of interrupted writes ([`TEMP_PREFIX`] entries) directly under
/// `dir`; returns how many were removed. A missing `dir` has none.
pub fn clean_temp_dirs(dir: &Path) -> Result<usize, CorpusError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(CorpusError::Io {
                path: dir.to_path_buf(),
                source: e,
            })
        }
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry.map_err(io_err(dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // `..pimdiff-tmp-*`: the case writer's own temporary sibling of one of ours.
        if !name.starts_with(TEMP_PREFIX)
            && !name
                .strip_prefix('.')
                .is_some_and(|n| n.starts_with(TEMP_PREFIX))
        {
            continue;
        }
        let path = entry.path();
        let is_dir = entry.file_type().map_err(io_err(&path))?.is_dir();
        if is_dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        }
        .map_err(io_err(&path))?;
        removed += 1;
    }
    Ok(removed)
}

/// Unique temporary name: prefix, the final name, process id and a per-process counter.
fn temp_name(final_name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{TEMP_PREFIX}{final_name}-{}-{n}", std::process::id())
}

fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn sync_tree(dir: &Path) -> Result<(), CorpusError> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        let path = entry.path();
        if entry.file_type().map_err(io_err(&path))?.is_dir() {
            sync_tree(&path)?;
        } else {
            fs::File::open(&path)
                .and_then(|f| f.sync_all())
                .map_err(io_err(&path))?;
        }
    }
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), CorpusError> {
    // Directories can be opened and fsynced on Unix; elsewhere this is best effort.
    match fs::File::open(dir).and_then(|f| f.sync_all()) {
        Ok(()) => Ok(()),
        Err(e) if cfg!(unix) => Err(CorpusError::Io {
            path: dir.to_path_buf(),
            source: e,
        }),
        Err(_) => Ok(()),
    }
}
