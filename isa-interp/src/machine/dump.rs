//! The final-state dump: `gmem.bin` (global memory from address 0 up to the
//! highest byte any instruction touched), `core_<i>.lmem.bin` (each whole local memory),
//! `core_<i>.regs.json` and `stats.json`.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;

use super::Machine;

/// `core_<i>.regs.json`: registers as signed 32-bit integers.
#[derive(Serialize)]
struct Regs<'a> {
    r: &'a [i32; 32],
    ibiw: u32,
    obiw: u32,
    events: &'a [i32; 32],
    pc: u32,
    finished: bool,
}

pub(crate) fn write(m: &Machine<'_>, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut g = BufWriter::new(File::create(dir.join("gmem.bin"))?);
    m.sh.gmem.write_prefix(m.sh.gmem.touched_end, &mut g)?;
    g.flush()?;
    for (i, core) in m.cores.iter().enumerate() {
        std::fs::write(dir.join(format!("core_{i}.lmem.bin")), m.lmem(i as u32))?;
        let regs = Regs {
            r: &core.regs,
            ibiw: core.ibiw.bits(),
            obiw: core.obiw.bits(),
            events: &m.sh.events[i],
            pc: core.pc,
            finished: m.is_finished(i),
        };
        let text = serde_json::to_string_pretty(&regs).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(format!("core_{i}.regs.json")), text + "\n")?;
    }
    let mut stats = m.sh.stats.clone();
    stats.gmem_touched_bytes = m.sh.gmem.touched_end;
    let text = serde_json::to_string_pretty(&stats).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("stats.json"), text + "\n")
}
