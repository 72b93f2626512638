//! Architectures in CIM-MLC's own configuration format (`configs/README.md`): the `ArchTem`
//! dict of `configs/example_config.py`, written as the `arch.py` a case carries, and drawn at
//! random within what the README describes.
//!
//! What CIM-MLC reads of it (the driver's LAYOUT.md has every line): `API` picks the
//! granularities (main.py:75, :87); `CoreNum` and `XBNum` the cores and crossbars per core
//! (configs/architecture.py:58, :66); `XBSize`, `Precision` and the model's precisions the
//! crossbars a layer needs (optimization/CoreMapping.py:19-21); `XBbus` the duplication budget
//! (:10, :27); `GBBuf` the global buffer's size, which addresses wrap at (codegen/Addr.py:15)
//! and its read size (codegen/CoreWise.py:14); `MaxRC` the rows activated at once
//! (optimization/WordlineRemap.py). The rest (`CoreALU`, `CoreBus`, `LCBuf`, `XBALU`, the
//! NoCs, the device type) are carried but do not shape the flows.

use serde::{Deserialize, Serialize};

/// The granularity an architecture exposes (`API`): which flows CIM-MLC writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Api {
    /// The core-level flow only.
    Core,
    /// Core- and crossbar-level flows.
    Crossbar,
    /// All three, down to wordlines.
    Wordline,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Core => "Core",
            Api::Crossbar => "Crossbar",
            Api::Wordline => "Wordline",
        }
    }

    /// The granularities this level writes, coarsest first.
    pub fn levels(self) -> &'static [Level] {
        match self {
            Api::Core => &[Level::Core],
            Api::Crossbar => &[Level::Core, Level::Crossbar],
            Api::Wordline => &[Level::Core, Level::Crossbar, Level::Wordline],
        }
    }
}

/// One granularity of meta-operator flow, with the file CIM-MLC writes it to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    Core,
    Crossbar,
    Wordline,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::Core, Level::Crossbar, Level::Wordline];

    /// The flow file CIM-MLC writes (main.py:70, :84, :92).
    pub fn file(self) -> &'static str {
        match self {
            Level::Core => "corewise_codegen_output.txt",
            Level::Crossbar => "crossbarwise_codegen_output.txt",
            Level::Wordline => "rcwise_codegen_output.txt",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::Core => "core",
            Level::Crossbar => "crossbar",
            Level::Wordline => "wordline",
        }
    }
}

/// An architecture (`ArchTem`), with CIM-MLC's key for each field in its doc.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Arch {
    /// `API`.
    pub api: Api,
    /// `CoreNum`: cores in a row and a column.
    pub cores: [usize; 2],
    /// `GBBuf`: the global buffer's size (elements) and read size.
    pub global_buffer: [usize; 2],
    /// `CoreALU`.
    pub core_alu: usize,
    /// `CoreBus`.
    pub core_bus: usize,
    /// `XBNum`: crossbars of a core in a row and a column.
    pub crossbars: [usize; 2],
    /// `LCBuf`: a core's local buffer, size and read size.
    pub local_buffer: [usize; 2],
    /// `XBALU`.
    pub crossbar_alu: usize,
    /// `XBbus`.
    pub crossbar_bus: usize,
    /// `XBSize`: a crossbar's rows and columns.
    pub crossbar_size: [usize; 2],
    /// `MaxRC`: rows activated at once.
    pub max_rows: usize,
    /// `Type`.
    pub device: String,
    /// `Precision`: bits per cell.
    pub cell_bits: usize,
}

impl Arch {
    /// `configs/example_config.py`'s architecture with another API level.
    pub fn example(api: Api) -> Arch {
        Arch {
            api,
            cores: [4, 4],
            global_buffer: [786_432, 32],
            core_alu: 1024,
            core_bus: 48,
            crossbars: [4, 4],
            local_buffer: [1024, 32],
            crossbar_alu: 1024,
            crossbar_bus: 1024,
            crossbar_size: [128, 128],
            max_rows: 64,
            device: "F".to_string(),
            cell_bits: 1,
        }
    }

    pub fn core_count(&self) -> usize {
        self.cores[0] * self.cores[1]
    }

    pub fn crossbars_per_core(&self) -> usize {
        self.crossbars[0] * self.crossbars[1]
    }

    /// The text of `arch.py`: a module defining `ArchTem` exactly as
    /// `configs/example_config.py` does.
    pub fn python(&self) -> String {
        let pair = |p: [usize; 2]| format!("[{}, {}]", p[0], p[1]);
        format!(
            "# An architecture for CIM-MLC, written by pimdiff (configs/README.md has the keys).\n\
             ArchTem = {{\n\
             \x20   'API': '{api}',\n\
             \x20   \"CoreNum\"       : {cores},\n\
             \x20   \"CoreNoc\"       : \"mesh\",\n\
             \x20   \"CoreNocCost\"   : None,\n\
             \x20   \"GBBuf\"         : {gb},\n\
             \x20   \"CoreALU\"       : {core_alu},\n\
             \x20   \"CoreBus\"       : {core_bus},\n\
             \x20   \"XBNum\"     : {xbs},\n\
             \x20   \"XBNoc\"     : \"mesh\",\n\
             \x20   \"XBNocCost\" : None,\n\
             \x20   \"LCBuf\"     : {lc},\n\
             \x20   \"XBALU\"     : {xb_alu},\n\
             \x20   'XBbus'     : {xb_bus},\n\
             \x20   \"XBSize\"    : {size},\n\
             \x20   \"MaxRC\"     : {max_rc},\n\
             \x20   \"Type\"      : \"{device}\",\n\
             \x20   \"Precision\" : {bits},\n\
             }}\n",
            api = self.api.name(),
            cores = pair(self.cores),
            gb = pair(self.global_buffer),
            core_alu = self.core_alu,
            core_bus = self.core_bus,
            xbs = pair(self.crossbars),
            lc = pair(self.local_buffer),
            xb_alu = self.crossbar_alu,
            xb_bus = self.crossbar_bus,
            size = pair(self.crossbar_size),
            max_rc = self.max_rows,
            device = self.device,
            bits = self.cell_bits,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_py_spells_example_configs_keys() {
        let text = Arch::example(Api::Crossbar).python();
        for key in [
            "'API': 'Crossbar'",
            "\"CoreNum\"       : [4, 4]",
            "\"GBBuf\"         : [786432, 32]",
            "'XBbus'     : 1024",
            "\"XBSize\"    : [128, 128]",
            "\"MaxRC\"     : 64",
            "\"Precision\" : 1",
        ] {
            assert!(text.contains(key), "{key} in\n{text}");
        }
        assert_eq!(Api::Wordline.levels().len(), 3);
        assert_eq!(Level::Crossbar.file(), "crossbarwise_codegen_output.txt");
    }
}
