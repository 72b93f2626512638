//! The files of a tensor finding: a case directory (`case.json`, the `.npy` tensors with
//! `expected.npy`, so the case checks itself), `bundle/` (the failing program, crossbars and
//! io manifest), `report.md` and the attachments (pictures, exports). `finding.json` is the
//! finding writer's (`pimdiff_engine::finding::write_finding`).

use std::path::Path;

use pimdiff_isa::bundle::Bundle;
use pimdiff_oracle::Case;

use crate::corpus::{Attachment, BUNDLE_DIR, REPORT_MD};
use pimdiff_engine::finding::write_new;

/// Writes a tensor finding's files into `dir`, a directory under construction.
pub fn write_files(
    dir: &Path,
    case: &Case,
    bundle: Option<&Bundle>,
    report: &str,
    attachments: &[Attachment],
) -> Result<(), pimdiff_atomic::Error> {
    let other = |path: &Path, e: &dyn std::fmt::Display| pimdiff_atomic::Error::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    };
    pimdiff_oracle::io::write_case_files(case, dir).map_err(|e| other(dir, &e))?;
    if let Some(bundle) = bundle {
        let b = dir.join(BUNDLE_DIR);
        bundle.write_dir(&b).map_err(|e| other(&b, &e))?;
    }
    write_new(&dir.join(REPORT_MD), report.as_bytes())?;
    for a in attachments {
        write_new(&dir.join(a.name), &a.bytes)?;
    }
    Ok(())
}
