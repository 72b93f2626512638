//! Pinning a program's nondeterminism: its environment, its address-space layout, and
//! LD_PRELOAD shims (PIMCOMP-NN's pins `time()`). A [`Pinning`] is both the request and the
//! record: a run carries the one it ran under, so a finding can say how it ran.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::personality::{self, Persona};
use serde::{Deserialize, Serialize};

use super::ProcessError;

/// What a program is run under.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pinning {
    pub environment: Environment,
    /// Address-space layout randomization off (`personality(ADDR_NO_RANDOMIZE)`): a compiler
    /// that orders anything by pointer (the PUMA compiler does) then runs the same way twice.
    pub aslr_disabled: bool,
    /// Shared objects put in `LD_PRELOAD`, in order (replacing any `LD_PRELOAD` of the
    /// environment). Each must exist: the dynamic loader only warns about a missing one, and
    /// the program would run unpinned.
    pub preload: Vec<PathBuf>,
}

/// A program's environment variables.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Environment {
    /// The harness's own environment, with `set` added (or overriding).
    Inherited { set: BTreeMap<String, String> },
    /// Exactly `vars`: nothing of the harness's environment.
    Exactly { vars: BTreeMap<String, String> },
}

impl Default for Environment {
    fn default() -> Environment {
        Environment::Inherited {
            set: BTreeMap::new(),
        }
    }
}

impl Environment {
    /// The harness's environment plus `vars`.
    pub fn inherited_with<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment::Inherited {
            set: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// A fixed environment that does not depend on who runs the harness: the harness's `PATH`
    /// (so that the program's own helpers are found), `LC_ALL=C`, `LANG=C`, `TZ=UTC` and
    /// `SOURCE_DATE_EPOCH=0` (which reproducible-build-aware tools stamp instead of the time).
    pub fn fixed() -> Environment {
        let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
        Environment::Exactly {
            vars: [
                ("PATH", path.as_str()),
                ("LC_ALL", "C"),
                ("LANG", "C"),
                ("TZ", "UTC"),
                ("SOURCE_DATE_EPOCH", "0"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    }

    /// The `PATH` the program sees when the environment changes it.
    fn changed_path(&self) -> Option<&str> {
        match self {
            Environment::Inherited { set } => set.get("PATH").map(String::as_str),
            Environment::Exactly { vars } => {
                Some(vars.get("PATH").map(String::as_str).unwrap_or(""))
            }
        }
    }
}

impl Pinning {
    /// Sets the environment (and `LD_PRELOAD`) on `cmd`.
    pub(super) fn apply(&self, cmd: &mut Command) -> Result<(), ProcessError> {
        match &self.environment {
            Environment::Inherited { set } => {
                cmd.envs(set);
            }
            Environment::Exactly { vars } => {
                cmd.env_clear().envs(vars);
            }
        }
        if !self.preload.is_empty() {
            if let Some(missing) = self.preload.iter().find(|p| !p.is_file()) {
                return Err(ProcessError::MissingPreload(missing.clone()));
            }
            let joined = std::env::join_paths(&self.preload)
                .map_err(|_| ProcessError::MissingPreload(self.preload[0].clone()))?;
            cmd.env("LD_PRELOAD", joined);
        }
        Ok(())
    }

    /// The program as it is to be spawned: when the environment changes `PATH` and the program
    /// is a bare name, it is looked up here, in the new `PATH`, as `execvp` in the child would.
    /// (Left to std, a changed `PATH` makes it fork instead of using posix_spawn, and a fork
    /// costs time in proportion to the harness's resident memory.)
    pub(super) fn resolve(&self, program: &OsStr) -> Result<PathBuf, ProcessError> {
        let as_path = Path::new(program);
        let bare = !program.as_encoded_bytes().contains(&b'/');
        match self.environment.changed_path() {
            Some(path) if bare => std::env::split_paths(path)
                .map(|dir| dir.join(as_path))
                .find(|candidate| is_executable(candidate))
                .ok_or_else(|| ProcessError::Spawn {
                    program: program.to_string_lossy().into_owned(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!("not found in PATH={path}"),
                    ),
                }),
            _ => Ok(as_path.to_path_buf()),
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Address-space randomization off for the calling thread until dropped.
///
/// The personality is a property of the thread; a child inherits its spawning thread's, and
/// `ADDR_NO_RANDOMIZE` survives `execve` (this is how `setarch -R` works). Setting it around
/// the spawn has the effect of setting it in a `pre_exec` hook, without the hook: a hook makes
/// std fork instead of using posix_spawn, and a fork's cost grows with the harness's resident
/// memory. The harness thread itself is not affected, because the flag only matters when an
/// address space is laid out, at `execve`.
pub(super) struct AslrOff {
    previous: Persona,
}

impl AslrOff {
    pub(super) fn set() -> Result<AslrOff, ProcessError> {
        let unavailable = |e: nix::Error| ProcessError::AslrUnavailable(e.into());
        let previous = personality::get().map_err(unavailable)?;
        personality::set(previous | Persona::ADDR_NO_RANDOMIZE).map_err(unavailable)?;
        Ok(AslrOff { previous })
    }
}

impl Drop for AslrOff {
    fn drop(&mut self) {
        let _ = personality::set(self.previous);
    }
}
