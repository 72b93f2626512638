//! Where each line of a flow came from: the CIM-MLC source line whose `print` began it, as the
//! driver records it (`origins.json`, `driver/README.md`).
//!
//! Why: the machine finds a fault or a first wrong value at a meta-operator of a flow, but the
//! defect is in the code generator line that printed it. Naming that line points a finding
//! into CIM-MLC's source, and is the cause findings merge on: one emitting line is one place
//! to fix, whatever network or outcome kind shows it (`Target::cause`).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::arch::Level;

/// The origins of every flow of one compile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origins {
    by_level: BTreeMap<Level, Table>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
struct Table {
    /// Distinct sites, `file:line (function)`, relative to CIM-MLC's `src/`.
    sites: Vec<String>,
    /// Per flow line (0-based): an index into `sites`, or -1 (not printed from CIM-MLC).
    lines: Vec<i64>,
}

#[derive(Deserialize)]
struct Doc {
    format: u32,
    flows: BTreeMap<String, Table>,
}

impl Origins {
    /// Parses `origins.json`; `None` for text that is not one (a tree whose driver predates
    /// origins writes none: findings then go without their emitting line).
    pub fn parse(text: &str) -> Option<Origins> {
        let doc: Doc = serde_json::from_str(text).ok()?;
        if doc.format != 1 {
            return None;
        }
        let mut by_level = BTreeMap::new();
        for level in Level::ALL {
            if let Some(t) = doc.flows.get(level.file()) {
                by_level.insert(level, t.clone());
            }
        }
        Some(Origins { by_level })
    }

    /// The site that printed line `line` (1-based) of `level`'s flow.
    pub fn site(&self, level: Level, line: usize) -> Option<&str> {
        let t = self.by_level.get(&level)?;
        let i = *t.lines.get(line.checked_sub(1)?)?;
        t.sites.get(usize::try_from(i).ok()?).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_site_that_printed_it() {
        let text = r#"{"format":1,"flows":{"corewise_codegen_output.txt":
            {"sites":["codegen/CoreWise.py:96 (process_conv_node)","main.py:72 (main)"],
             "lines":[1,0,0,-1]}}}"#;
        let o = Origins::parse(text).unwrap();
        assert_eq!(o.site(Level::Core, 1), Some("main.py:72 (main)"));
        assert_eq!(
            o.site(Level::Core, 3),
            Some("codegen/CoreWise.py:96 (process_conv_node)")
        );
        assert_eq!(o.site(Level::Core, 4), None);
        assert_eq!(o.site(Level::Core, 0), None);
        assert_eq!(o.site(Level::Core, 9), None);
        assert_eq!(o.site(Level::Crossbar, 1), None);
        assert_eq!(Origins::parse("{}"), None);
        assert_eq!(Origins::parse(r#"{"format":2,"flows":{}}"#), None);
    }
}
