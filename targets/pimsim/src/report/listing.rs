//! Assembly excerpts: the instructions around one instruction of a program, that instruction
//! marked — how a report shows a suspect in its context.

use std::fmt::Write as _;

use pimdiff_isa::Program;

/// Instructions shown on each side of a marked one.
pub const CONTEXT: usize = 3;

/// Core `core`'s instructions `pc − radius ..= pc + radius` in our assembly syntax, one per
/// line as `  <pc>  <instruction>`, the instruction at `pc` marked with `>`. A core or pc the
/// program does not have gives one line saying so (a suspect may come from another build).
pub fn assembly_around(program: &Program, core: usize, pc: usize, radius: usize) -> String {
    let Some(insts) = program.cores.get(core) else {
        return format!(
            "(the program has no core {core}; it has {})\n",
            program.cores.len()
        );
    };
    if pc >= insts.len() {
        return format!(
            "(core {core} has no instruction {pc}; it has {})\n",
            insts.len()
        );
    }
    let first = pc.saturating_sub(radius);
    let last = pc.saturating_add(radius).min(insts.len() - 1);
    let width = last.to_string().len();
    let mut out = String::new();
    for (i, inst) in insts.iter().enumerate().take(last + 1).skip(first) {
        let mark = if i == pc { '>' } else { ' ' };
        let _ = writeln!(out, "{mark} {i:>width$}  {inst}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimdiff_isa::formats::asm;

    fn program() -> Program {
        let text = ".cores 2\n.groups export\n\ncore 0:\n".to_string()
            + &(0..12)
                .map(|i| format!("    sldi r1, imm={i}\n"))
                .collect::<String>()
            + "\ncore 1:\n    nop\n";
        asm::parse(&text).unwrap()
    }

    #[test]
    fn marks_the_instruction_between_three_on_each_side() {
        assert_eq!(
            assembly_around(&program(), 0, 7, CONTEXT),
            "   4  sldi r1, imm=4\n   5  sldi r1, imm=5\n   6  sldi r1, imm=6\n\
             >  7  sldi r1, imm=7\n   8  sldi r1, imm=8\n   9  sldi r1, imm=9\n\
             \x20 10  sldi r1, imm=10\n"
        );
    }

    #[test]
    fn stops_at_the_ends_of_the_core() {
        assert_eq!(
            assembly_around(&program(), 0, 1, CONTEXT),
            "  0  sldi r1, imm=0\n> 1  sldi r1, imm=1\n  2  sldi r1, imm=2\n  \
             3  sldi r1, imm=3\n  4  sldi r1, imm=4\n"
        );
        assert_eq!(assembly_around(&program(), 1, 0, CONTEXT), "> 0  nop\n");
    }

    #[test]
    fn a_core_or_pc_the_program_lacks_is_said_so() {
        assert_eq!(
            assembly_around(&program(), 5, 0, CONTEXT),
            "(the program has no core 5; it has 2)\n"
        );
        assert_eq!(
            assembly_around(&program(), 1, 3, CONTEXT),
            "(core 1 has no instruction 3; it has 1)\n"
        );
        assert_eq!(
            assembly_around(&program(), 0, usize::MAX, CONTEXT),
            "(core 0 has no instruction 18446744073709551615; it has 12)\n"
        );
    }
}
