//! `mvmul`: the crossbar matrix-vector multiplication.

use super::super::core::{Exec, Step};
use super::super::crossbar::{self, CoreXbars};
use super::super::fault::{FaultKind, Operand};
use super::super::memory::load;
use super::super::observe::{Lanes, Sink};
use crate::inst::{Reg, Width};

/// `x` = the group's `rows` input elements at `rs1` (ibiw); `y = x · W` exactly; `relu`
/// clamps at 0; `cols` output elements at `rd` (obiw). A weight outside `mbiw` bits or an
/// unknown group is a fault.
pub(super) fn mvmul<O: Sink>(
    x: &mut Exec<'_, O>,
    xb: &mut CoreXbars,
    rd: Reg,
    rs1: Reg,
    mbiw: Width,
    relu: bool,
    group: u32,
) -> Result<Step, FaultKind> {
    let (ib, ob) = (x.core.ibiw, x.core.obiw);
    let arch = x.sh.arch;
    let view = xb.group(group, x.id, &arch, x.sh.fill)?;
    let (lo, hi) = signed_range(mbiw);
    if (view.min as i64) < lo || (view.max as i64) > hi {
        let (row, col, value) = view
            .first_outside(lo as i32, hi as i32)
            .unwrap_or((0, 0, view.max));
        return Err(FaultKind::WeightTooWide {
            group,
            row,
            col,
            value,
            mbiw: mbiw.bits(),
        });
    }
    let src = x.lm(Operand::Rs1, rs1, 0, view.rows as u64 * ib.bytes() as u64)?;
    let dst = x.lm(Operand::Rd, rd, 0, view.cols as u64 * ob.bytes() as u64)?;
    let mut mv = std::mem::take(&mut x.sh.mv);
    mv.x.clear();
    mv.x.extend(
        (0..view.rows as usize)
            .map(|i| load(&x.core.lmem, src.start + i * ib.bytes() as usize, ib) as i32),
    );
    let acc = crossbar::mvmul(&view, &mut mv);
    x.emit_compute(&[&src], &dst, Lanes::All);
    for j in 0..view.cols as usize {
        let y = acc.get(j);
        x.put(
            dst.start + j * ob.bytes() as usize,
            ob,
            if relu { y.max(0) } else { y },
        );
    }
    x.sh.mv = mv;
    Ok(Step::Done)
}

/// `[min, max]` of a signed `w`-bit number.
fn signed_range(w: Width) -> (i64, i64) {
    let b = w.bits();
    (-(1i64 << (b - 1)), (1i64 << (b - 1)) - 1)
}
