//! One case: a network, its setting (architecture, precisions) and the seed its data comes
//! from, written as the three files CIM-MLC's driver reads, compiled, and checked.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::data::{network_data, NetData};
use pimdiff_engine::finding::{Kind, Signature};

use crate::check::Check;
use crate::driver::{CaseFiles, Compile, Compiled, Driver, Protocol};
use crate::generate::{NetConfig, Setting};
use crate::network::{Network, ShapeError};
use crate::outcome::{compile_outcome, input_reader_crash, Outcome};
use crate::tree::Tree;

/// A case of the CIM-MLC target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CimCase {
    pub network: Network,
    pub setting: Setting,
    /// The case seed: the data's, and the seed the driver pins Python, NumPy and torch to.
    pub seed: u64,
}

/// What a case's files hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Files {
    pub model: Vec<u8>,
    pub arch_py: String,
    pub case_json: String,
    pub data: NetData,
}

impl CimCase {
    /// The seed the driver pins Python's `random`, NumPy and torch to (NumPy takes 32 bits):
    /// both halves of the case seed folded.
    pub fn python_seed(&self) -> u32 {
        (self.seed ^ (self.seed >> 32)) as u32
    }

    /// `ifmsize` as main.py takes it: the network's input shape.
    pub fn ifmsize(&self) -> &[usize] {
        &self.network.input
    }

    /// The files of the case and its data.
    pub fn files(&self) -> Result<Files, ShapeError> {
        let data = network_data(&self.network, self.seed)?;
        let model = crate::onnx::model_bytes(&self.network, &data)?;
        let case_json = serde_json::json!({
            "ifmsize": self.ifmsize(),
            "input_precision": self.setting.input_precision,
            "weight_precision": self.setting.weight_precision,
            "seed": self.python_seed(),
        });
        Ok(Files {
            model,
            arch_py: self.setting.arch.python(),
            case_json: serde_json::to_string_pretty(&case_json).unwrap_or_default() + "\n",
            data,
        })
    }
}

/// What every case of a hunt shares: the generator's bounds, the tree and its servers.
#[derive(Clone, Debug)]
pub struct CaseContext {
    pub net: NetConfig,
    pub tree: Tree,
    pub driver: Arc<Driver>,
    /// Each compile's deadline.
    pub timeout: Duration,
}

/// Everything one run of a case produced.
#[derive(Clone, Debug)]
pub struct CaseRun {
    /// The case's files (`None` only for a network that is not valid: a bug of pimdiff).
    pub files: Option<Files>,
    pub compile: Option<Compiled>,
    /// Every granularity on the machine, when CIM-MLC wrote flows.
    pub check: Option<Check>,
    /// What the run came to: one outcome, or one per finding it shows.
    pub outcomes: Vec<Outcome>,
}

impl CaseContext {
    /// `tree`'s driver run by `protocol`, each compile under `timeout`.
    pub fn new(net: NetConfig, tree: Tree, timeout: Duration, protocol: Protocol) -> CaseContext {
        let driver = Arc::new(Driver::new(&tree, timeout, protocol));
        CaseContext {
            net,
            tree,
            driver,
            timeout,
        }
    }

    /// Compiles and checks `case`.
    pub fn run_case(&self, case: &CimCase) -> CaseRun {
        let files = match case.files() {
            Ok(f) => f,
            Err(e) => {
                return CaseRun {
                    files: None,
                    compile: None,
                    check: None,
                    outcomes: vec![Outcome::of_kind(
                        Kind::Poisoned,
                        format!("pimdiff built an invalid network: {e}"),
                    )],
                }
            }
        };
        let compile = self.compile(&files);
        let (check, outcomes) = match (&compile.result, compile_outcome(&compile.result)) {
            (Compile::Compiled(out), _) => {
                let check = crate::check::check(&case.network, &files.data, out);
                let outcomes = check.outcomes();
                (Some(check), outcomes)
            }
            (_, Some(o)) => (None, vec![o]),
            (_, None) => (None, Vec::new()),
        };
        CaseRun {
            files: Some(files),
            compile: Some(compile),
            check,
            outcomes,
        }
    }

    /// Signs `run`'s crash (the run of `case`) by the input probe ([`input_reader_crash`])
    /// when the network compiles with its input put behind a weighted operator, and returns
    /// that signature. One more compile: the hunt asks it once per finding, of the minimized
    /// case (the sweep and the minimizer go by the exception's own site), and `repro` of every
    /// crash.
    pub fn probe_input(&self, case: &CimCase, run: &mut CaseRun) -> Option<Signature> {
        let Some(Compiled {
            result: Compile::Exception(e),
            ..
        }) = &run.compile
        else {
            return None;
        };
        if !self.compiles_with_input_behind(case) {
            return None;
        }
        let outcome = input_reader_crash(e);
        let signature = outcome.signature.clone();
        run.outcomes = vec![outcome];
        signature
    }

    /// Whether `case`'s network compiles with its input put behind a weighted operator.
    fn compiles_with_input_behind(&self, case: &CimCase) -> bool {
        let Some(network) = case.network.with_input_behind_an_operator() else {
            return false;
        };
        let probe = CimCase {
            network,
            ..case.clone()
        };
        match probe.files() {
            Ok(files) => matches!(self.compile(&files).result, Compile::Compiled(_)),
            Err(_) => false,
        }
    }

    /// Whether `case` still shows `signature` (the minimizer's predicate).
    pub fn shows(&self, case: &CimCase, signature: &Signature) -> bool {
        self.run_case(case)
            .outcomes
            .iter()
            .any(|o| o.signature.as_ref() == Some(signature))
    }

    /// Compiles `files` (the files of a case).
    pub fn compile(&self, files: &Files) -> Compiled {
        self.driver.compile(&CaseFiles {
            model: &files.model,
            arch_py: &files.arch_py,
            case_json: &files.case_json,
        })
    }
}
