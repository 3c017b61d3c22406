//! Load-time checks of a program's code, the part of the kernel's
//! verifier (kernel/bpf/verifier.c) that the interpreter relies on: every
//! instruction is one RFC 9669 defines, registers exist and r10 is never
//! written, jumps stay inside their function and land on an instruction
//! (not in the middle of an `lddw`), calls name a function start, a
//! provided helper or a kfunc, and no function runs off its end. What the
//! kernel's verifier proves beyond this (bounds of every pointer,
//! termination) the interpreter checks as the program runs (memory.rs,
//! vm.rs): a program that passes here can still fail at run time, with
//! the instruction and the address named.

use super::helpers;
use super::insn::*;
use super::object::{Function, Program};
use super::LoadError;

/// Checks `program`'s code.
pub fn check(program: &Program) -> Result<(), LoadError> {
    for f in &program.functions {
        check_function(program, f)?;
    }
    Ok(())
}

fn check_function(p: &Program, f: &Function) -> Result<(), LoadError> {
    let code = &p.code;
    let bad = |pc: usize, why: String| LoadError::new(format!("{} instruction {} (opcode {:#04x}): {why}", f.name, pc - f.start, code[pc].op));
    if f.end > code.len() || f.start >= f.end {
        return Err(LoadError::new(format!("function {} lies outside the code", f.name)));
    }
    // Second halves of lddw: not instructions, not jump targets.
    let mut wide_tail = vec![false; f.end - f.start];
    let mut pc = f.start;
    while pc < f.end {
        if code[pc].is_lddw() {
            if pc + 1 >= f.end {
                return Err(bad(pc, "lddw without its second half".into()));
            }
            wide_tail[pc + 1 - f.start] = true;
            pc += 2;
        } else {
            pc += 1;
        }
    }
    let lands = |target: i64| target >= f.start as i64 && target < f.end as i64 && !wide_tail[(target as usize) - f.start];
    let mut pc = f.start;
    let mut last_ends = false;
    while pc < f.end {
        let insn = code[pc];
        if insn.dst as usize >= REGISTERS || insn.src as usize >= REGISTERS && insn.class() != CLASS_JMP {
            return Err(bad(pc, format!("register r{} or r{} does not exist", insn.dst, insn.src)));
        }
        let writes_dst = matches!(insn.class(), CLASS_ALU | CLASS_ALU64 | CLASS_LDX | CLASS_LD);
        if writes_dst && insn.dst == 10 {
            return Err(bad(pc, "r10, the frame pointer, is read-only".into()));
        }
        let op = insn.op & 0xf0;
        last_ends = false;
        match insn.class() {
            CLASS_LD => {
                if !insn.is_lddw() || insn.src != 0 {
                    return Err(bad(pc, "only lddw of a constant or a relocated address is allowed".into()));
                }
                pc += 2;
                continue;
            }
            CLASS_LDX => {
                if !matches!(insn.op & 0xe0, MODE_MEM | MODE_MEMSX) {
                    return Err(bad(pc, "not a load".into()));
                }
            }
            CLASS_ST | CLASS_STX => {
                let mode = insn.op & 0xe0;
                let atomic_ok = insn.class() == CLASS_STX && mode == MODE_ATOMIC && matches!(insn.access_bytes(), 4 | 8);
                if mode != MODE_MEM && !atomic_ok {
                    return Err(bad(pc, "not a store".into()));
                }
            }
            CLASS_ALU | CLASS_ALU64 => {
                if op > ALU_END {
                    return Err(bad(pc, "not an ALU operation".into()));
                }
                if insn.op & SRC_X == 0 && matches!(op, ALU_DIV | ALU_MOD) && insn.imm == 0 {
                    return Err(bad(pc, "division by zero".into()));
                }
            }
            CLASS_JMP | CLASS_JMP32 => match op {
                JMP_CALL => match insn.src {
                    CALL_LOCAL => {
                        let target = pc as i64 + 1 + insn.imm as i64;
                        if !p.functions.iter().any(|g| g.start as i64 == target) {
                            return Err(bad(pc, format!("calls instruction {target}, which starts no function")));
                        }
                    }
                    CALL_KFUNC => {
                        if helpers::KFUNCS.get(insn.imm as usize).is_none() {
                            return Err(bad(pc, format!("kfunc {} does not exist", insn.imm)));
                        }
                    }
                    _ => {
                        let known = helpers::HELPERS.iter().any(|(id, _)| *id == insn.imm);
                        if !known && insn.imm != super::core::POISON_HELPER {
                            return Err(bad(
                                pc,
                                format!(
                                    "calls helper {}, which the simulator does not provide; it provides {}",
                                    insn.imm,
                                    helpers::HELPERS.iter().map(|(_, n)| *n).collect::<Vec<_>>().join(", ")
                                ),
                            ));
                        }
                    }
                },
                JMP_EXIT => last_ends = true,
                _ if op > JMP_JSLE => return Err(bad(pc, "not a jump".into())),
                _ => {
                    let delta = if op == JMP_JA && insn.class() == CLASS_JMP32 { insn.imm as i64 } else { insn.off as i64 };
                    if !lands(pc as i64 + 1 + delta) {
                        return Err(bad(pc, format!("jumps to {}, outside the function or into an lddw", pc as i64 + 1 + delta)));
                    }
                    last_ends = op == JMP_JA;
                }
            },
            _ => return Err(bad(pc, "unknown instruction class".into())),
        }
        pc += 1;
    }
    if !last_ends {
        return Err(LoadError::new(format!("{}: the last instruction neither exits nor jumps (it would run off the end)", f.name)));
    }
    Ok(())
}
