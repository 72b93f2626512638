//! How an external compiler was asked for, recorded in every finding it makes, so that `repro`
//! and `replay` compile a saved case with the same compiler, not silently with another.
//!
//! A finding's `finding.json` keeps it in `details.external_compiler` ([`EXTERNAL_KEY`]):
//!
//! ```json
//! "details": { "external_compiler": {
//!   "protocol": "serve",
//!   "command": "exec python3 python/examples/tiny_compiler.py --serve",
//!   "workdir": "/home/me/pimdiff",
//!   "env": { "TINY_BUG": "store-off-by-one" },
//!   "timeout_ms": 60000 } }
//! ```
//!
//! The command runs in `workdir` (the directory the hunt ran in, so a relative path in the
//! command means what it meant), with `env` added to pimdiff's own environment
//! (`--compiler-env NAME=VALUE`). Findings saved before this record existed name their
//! compiler only in words (`compiler`: `external: CMD`, `external (serve protocol): CMD`);
//! [`ExternalCompiler::from_words`] reads those, without a directory or environment.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::external::shell_quote;
use super::CompilerUnderTest;

/// The key of `finding.json`'s `details` that holds the record.
pub const EXTERNAL_KEY: &str = "external_compiler";

/// How an external compiler is run: once per case, or served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// Once per case (`--compiler-protocol process`, the default).
    Process,
    /// Started once per job, one request per case (`--compiler-protocol serve`).
    Serve,
}

/// An external compiler as the command line asked for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalCompiler {
    pub protocol: Protocol,
    /// The command as given to `--compiler-cmd`.
    pub command: String,
    /// The directory it runs in (`None`: pimdiff's own working directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workdir: Option<PathBuf>,
    /// Variables added to its environment (`--compiler-env`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// `--compiler-timeout` in milliseconds (`None`: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl ExternalCompiler {
    /// The shell line pimdiff runs: the command, after `cd DIR &&` and one `export NAME=VALUE;`
    /// per variable (each value single-quoted). What runs is what the report names.
    pub fn shell_line(&self) -> String {
        let mut line = String::new();
        if let Some(dir) = &self.workdir {
            line.push_str(&format!("cd {} && ", shell_quote(&dir.to_string_lossy())));
        }
        for (name, value) in &self.env {
            line.push_str(&format!("export {name}={}; ", shell_quote(value)));
        }
        line.push_str(&self.command);
        line
    }

    /// The compiler under test that runs it.
    pub fn compiler(&self) -> CompilerUnderTest {
        let command = self.shell_line();
        match self.protocol {
            Protocol::Process => CompilerUnderTest::External { command },
            Protocol::Serve => CompilerUnderTest::Served { command },
        }
    }

    /// The recorded timeout, when one was.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis)
    }

    /// The record in `finding.json`'s `details` (`None` when there is none), or an error naming
    /// the field.
    pub fn from_details(details: &serde_json::Value) -> Result<Option<ExternalCompiler>, String> {
        match details.get(EXTERNAL_KEY) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|e| format!("field `details.{EXTERNAL_KEY}`: {e}")),
        }
    }

    /// `details` with this record added under [`EXTERNAL_KEY`] (other keys kept).
    pub fn into_details(&self, details: serde_json::Value) -> serde_json::Value {
        let mut map = match details {
            serde_json::Value::Object(m) => m,
            _ => serde_json::Map::new(),
        };
        map.insert(
            EXTERNAL_KEY.to_string(),
            serde_json::to_value(self).unwrap_or_default(),
        );
        serde_json::Value::Object(map)
    }

    /// The compiler a finding saved before the record existed names in words
    /// (`CompilerUnderTest::describe`): `external: CMD` or `external (serve protocol): CMD`.
    pub fn from_words(words: &str) -> Option<ExternalCompiler> {
        let (protocol, command) = if let Some(c) = words.strip_prefix("external: ") {
            (Protocol::Process, c)
        } else if let Some(c) = words.strip_prefix("external (serve protocol): ") {
            (Protocol::Serve, c)
        } else {
            return None;
        };
        Some(ExternalCompiler {
            protocol,
            command: command.to_string(),
            workdir: None,
            env: BTreeMap::new(),
            timeout_ms: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_line_goes_to_the_directory_and_exports_each_variable_quoted() {
        let c = ExternalCompiler {
            protocol: Protocol::Serve,
            command: "exec python3 cc.py --serve".into(),
            workdir: Some("/tmp/my dir".into()),
            env: [("BUG".to_string(), "it's on".to_string())].into(),
            timeout_ms: Some(5000),
        };
        assert_eq!(
            c.shell_line(),
            r"cd '/tmp/my dir' && export BUG='it'\''s on'; exec python3 cc.py --serve"
        );
        let details = c.into_details(serde_json::json!({"other": 1}));
        assert_eq!(details["other"], 1);
        assert_eq!(
            ExternalCompiler::from_details(&details),
            Ok(Some(c.clone()))
        );
        assert_eq!(c.timeout(), Some(Duration::from_secs(5)));
        let bad = serde_json::json!({ EXTERNAL_KEY: {"protocol": "pipe", "command": "x"} });
        assert!(ExternalCompiler::from_details(&bad)
            .unwrap_err()
            .starts_with("field `details.external_compiler`: unknown variant `pipe`"));
    }

    #[test]
    fn old_findings_name_their_compiler_in_words() {
        let c = ExternalCompiler::from_words("external (serve protocol): mycc --serve").unwrap();
        assert_eq!(
            (c.protocol, c.command.as_str()),
            (Protocol::Serve, "mycc --serve")
        );
        let c = ExternalCompiler::from_words("external: mycc {case} {out}").unwrap();
        assert_eq!(c.protocol, Protocol::Process);
        assert_eq!(
            ExternalCompiler::from_words("in-repo pimdiff-compiler 0.1.0"),
            None
        );
    }
}
