//! The interpreter: runs one hook of a loaded program over a [`Memory`]
//! (RFC 9669 semantics; where the RFC leaves a case open, Linux's
//! interpreter, kernel/bpf/core.c ___bpf_prog_run(), decides: division by
//! zero gives 0, modulo by zero leaves the dividend, shift counts are
//! masked to the operand width). Calls to helpers and kfuncs go to a
//! [`Calls`] the caller provides; BPF-to-BPF calls get their own 512-byte
//! frame and keep r6–r9 as the calling convention says. The loader has
//! checked the code (verify.rs); the interpreter still bounds every memory
//! access and the number of instructions one hook may execute.

use super::insn::*;
use super::memory::{Fault, Memory};

/// What the program calls out to.
pub trait Calls {
    /// Helper number `id` (bpf_helper_defs.h numbering) with r1–r5.
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Fault>;
    /// The loader's kfunc number `id` with r1–r5.
    fn kfunc(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, Fault>;
}

/// A run that stopped on an error: the instruction and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecError {
    pub pc: usize,
    pub what: String,
}

/// Instructions one hook may execute: the kernel verifier's limit on
/// instructions processed (BPF_COMPLEXITY_LIMIT_INSNS, 1 M) bounds what a
/// verified program can run; more means a loop the loader could not bound.
pub const INSN_BUDGET: u64 = 1_000_000;

/// The saved state of a caller during a BPF-to-BPF call.
#[derive(Clone, Copy, Default)]
struct Frame {
    return_pc: usize,
    callee_saved: [u64; 4],
}

/// Runs `code` from `entry` with r1 = `r1` and the stack region at
/// `stack_base` (MAX_CALL_FRAMES × STACK_BYTES bytes), until the entry
/// function exits; returns r0.
pub fn run(
    code: &[Insn],
    entry: usize,
    r1: u64,
    stack_base: u64,
    mem: &mut Memory,
    calls: &mut dyn Calls,
) -> Result<u64, ExecError> {
    let mut reg = [0u64; REGISTERS];
    reg[1] = r1;
    let frame_top = |depth: usize| stack_base + ((MAX_CALL_FRAMES - depth) * STACK_BYTES) as u64;
    reg[10] = frame_top(0);
    let mut frames = [Frame::default(); MAX_CALL_FRAMES];
    let mut depth = 0usize;
    let mut pc = entry;
    let mut budget = INSN_BUDGET;
    let fail = |pc: usize, what: String| ExecError { pc, what };
    loop {
        let Some(&insn) = code.get(pc) else {
            return Err(fail(pc, "ran past the end of the code".into()));
        };
        if budget == 0 {
            return Err(fail(pc, format!("more than {INSN_BUDGET} instructions in one call (an unbounded loop?)")));
        }
        budget -= 1;
        let d = insn.dst as usize;
        let s = insn.src as usize;
        let imm = insn.imm as i64 as u64;
        pc += 1;
        // The instructions compiled congestion controls are made of, one
        // arm each (a jump table on the opcode); everything else, and the
        // variants an `off` selects (movsx, sdiv), goes the general way
        // below.
        macro_rules! jump_if {
            ($cond:expr) => {{
                if $cond {
                    pc = (pc as i64 + insn.off as i64) as usize;
                }
                continue;
            }};
        }
        macro_rules! load {
            ($len:expr) => {{
                let addr = reg[s].wrapping_add(insn.off as i64 as u64);
                reg[d] = mem.load(addr, $len).map_err(|f| fail(pc - 1, f.what))?;
                continue;
            }};
        }
        macro_rules! store {
            ($len:expr, $v:expr) => {{
                let addr = reg[d].wrapping_add(insn.off as i64 as u64);
                mem.store(addr, $len, $v).map_err(|f| fail(pc - 1, f.what))?;
                continue;
            }};
        }
        let (a32, x32, k32) = (reg[d] as u32, reg[s] as u32, insn.imm as u32);
        match insn.op {
            0x07 => { reg[d] = reg[d].wrapping_add(imm); continue; }
            0x0f => { reg[d] = reg[d].wrapping_add(reg[s]); continue; }
            0x17 => { reg[d] = reg[d].wrapping_sub(imm); continue; }
            0x1f => { reg[d] = reg[d].wrapping_sub(reg[s]); continue; }
            0x27 => { reg[d] = reg[d].wrapping_mul(imm); continue; }
            0x2f => { reg[d] = reg[d].wrapping_mul(reg[s]); continue; }
            0x47 => { reg[d] |= imm; continue; }
            0x4f => { reg[d] |= reg[s]; continue; }
            0x57 => { reg[d] &= imm; continue; }
            0x5f => { reg[d] &= reg[s]; continue; }
            0x67 => { reg[d] <<= imm & 63; continue; }
            0x6f => { reg[d] <<= reg[s] & 63; continue; }
            0x77 => { reg[d] >>= imm & 63; continue; }
            0x7f => { reg[d] >>= reg[s] & 63; continue; }
            0xa7 => { reg[d] ^= imm; continue; }
            0xaf => { reg[d] ^= reg[s]; continue; }
            0xb7 => { reg[d] = imm; continue; }
            0xbf if insn.off == 0 => { reg[d] = reg[s]; continue; }
            0xc7 => { reg[d] = ((reg[d] as i64) >> (imm & 63)) as u64; continue; }
            0xcf => { reg[d] = ((reg[d] as i64) >> (reg[s] & 63)) as u64; continue; }
            0x04 => { reg[d] = a32.wrapping_add(k32) as u64; continue; }
            0x0c => { reg[d] = a32.wrapping_add(x32) as u64; continue; }
            0x14 => { reg[d] = a32.wrapping_sub(k32) as u64; continue; }
            0x1c => { reg[d] = a32.wrapping_sub(x32) as u64; continue; }
            0x24 => { reg[d] = a32.wrapping_mul(k32) as u64; continue; }
            0x2c => { reg[d] = a32.wrapping_mul(x32) as u64; continue; }
            0x44 => { reg[d] = (a32 | k32) as u64; continue; }
            0x4c => { reg[d] = (a32 | x32) as u64; continue; }
            0x54 => { reg[d] = (a32 & k32) as u64; continue; }
            0x5c => { reg[d] = (a32 & x32) as u64; continue; }
            0x64 => { reg[d] = (a32 << (k32 & 31)) as u64; continue; }
            0x6c => { reg[d] = (a32 << (x32 & 31)) as u64; continue; }
            0x74 => { reg[d] = (a32 >> (k32 & 31)) as u64; continue; }
            0x7c => { reg[d] = (a32 >> (x32 & 31)) as u64; continue; }
            0xa4 => { reg[d] = (a32 ^ k32) as u64; continue; }
            0xac => { reg[d] = (a32 ^ x32) as u64; continue; }
            0xb4 => { reg[d] = k32 as u64; continue; }
            0xbc if insn.off == 0 => { reg[d] = x32 as u64; continue; }
            0x61 => load!(4),
            0x69 => load!(2),
            0x71 => load!(1),
            0x79 => load!(8),
            0x62 => store!(4, imm),
            0x6a => store!(2, imm),
            0x72 => store!(1, imm),
            0x7a => store!(8, imm),
            0x63 => store!(4, reg[s]),
            0x6b => store!(2, reg[s]),
            0x73 => store!(1, reg[s]),
            0x7b => store!(8, reg[s]),
            0x05 => jump_if!(true),
            0x15 => jump_if!(reg[d] == imm),
            0x1d => jump_if!(reg[d] == reg[s]),
            0x25 => jump_if!(reg[d] > imm),
            0x2d => jump_if!(reg[d] > reg[s]),
            0x35 => jump_if!(reg[d] >= imm),
            0x3d => jump_if!(reg[d] >= reg[s]),
            0x45 => jump_if!(reg[d] & imm != 0),
            0x4d => jump_if!(reg[d] & reg[s] != 0),
            0x55 => jump_if!(reg[d] != imm),
            0x5d => jump_if!(reg[d] != reg[s]),
            0x65 => jump_if!((reg[d] as i64) > imm as i64),
            0x6d => jump_if!((reg[d] as i64) > reg[s] as i64),
            0x75 => jump_if!((reg[d] as i64) >= imm as i64),
            0x7d => jump_if!((reg[d] as i64) >= reg[s] as i64),
            0xa5 => jump_if!(reg[d] < imm),
            0xad => jump_if!(reg[d] < reg[s]),
            0xb5 => jump_if!(reg[d] <= imm),
            0xbd => jump_if!(reg[d] <= reg[s]),
            0xc5 => jump_if!((reg[d] as i64) < imm as i64),
            0xcd => jump_if!((reg[d] as i64) < reg[s] as i64),
            0xd5 => jump_if!((reg[d] as i64) <= imm as i64),
            0xdd => jump_if!((reg[d] as i64) <= reg[s] as i64),
            0x16 => jump_if!(a32 == k32),
            0x1e => jump_if!(a32 == x32),
            0x26 => jump_if!(a32 > k32),
            0x2e => jump_if!(a32 > x32),
            0x36 => jump_if!(a32 >= k32),
            0x3e => jump_if!(a32 >= x32),
            0x56 => jump_if!(a32 != k32),
            0x5e => jump_if!(a32 != x32),
            0xa6 => jump_if!(a32 < k32),
            0xae => jump_if!(a32 < x32),
            0xb6 => jump_if!(a32 <= k32),
            0xbe => jump_if!(a32 <= x32),
            0x66 => jump_if!((a32 as i32) > k32 as i32),
            0x6e => jump_if!((a32 as i32) > x32 as i32),
            0xc6 => jump_if!((a32 as i32) < k32 as i32),
            0xce => jump_if!((a32 as i32) < x32 as i32),
            _ => {}
        }
        match insn.class() {
            CLASS_ALU64 => {
                let src = if insn.op & SRC_X != 0 { reg[s] } else { imm };
                reg[d] = alu64(insn, reg[d], src).map_err(|w| fail(pc - 1, w))?;
            }
            CLASS_ALU => {
                let src = if insn.op & SRC_X != 0 { reg[s] } else { imm };
                reg[d] = alu32(insn, reg[d], src).map_err(|w| fail(pc - 1, w))?;
            }
            CLASS_LDX => {
                let addr = reg[s].wrapping_add(insn.off as i64 as u64);
                let len = insn.access_bytes();
                let v = mem.load(addr, len).map_err(|f| fail(pc - 1, f.what))?;
                reg[d] = if insn.op & 0xe0 == MODE_MEMSX { sign_extend(v, len) } else { v };
            }
            CLASS_ST | CLASS_STX => {
                let addr = reg[d].wrapping_add(insn.off as i64 as u64);
                let len = insn.access_bytes();
                if insn.op & 0xe0 == MODE_ATOMIC {
                    reg[s] = atomic(insn, addr, len, reg[s], &mut reg[0], mem).map_err(|w| fail(pc - 1, w))?;
                    continue;
                }
                let v = if insn.class() == CLASS_ST { imm } else { reg[s] };
                mem.store(addr, len, v).map_err(|f| fail(pc - 1, f.what))?;
            }
            CLASS_LD => {
                // lddw: the only LD the loader accepts (verify.rs).
                let hi = code.get(pc).map_or(0, |n| n.imm as u32 as u64);
                reg[d] = (insn.imm as u32 as u64) | (hi << 32);
                pc += 1;
            }
            CLASS_JMP | CLASS_JMP32 => {
                let code_op = insn.op & 0xf0;
                match code_op {
                    JMP_CALL => {
                        let args = [reg[1], reg[2], reg[3], reg[4], reg[5]];
                        match insn.src {
                            CALL_LOCAL => {
                                if depth + 1 >= MAX_CALL_FRAMES {
                                    return Err(fail(pc - 1, format!("calls nested deeper than {MAX_CALL_FRAMES}")));
                                }
                                frames[depth] = Frame { return_pc: pc, callee_saved: [reg[6], reg[7], reg[8], reg[9]] };
                                depth += 1;
                                reg[10] = frame_top(depth);
                                pc = (pc as i64 + insn.imm as i64) as usize;
                                continue;
                            }
                            CALL_KFUNC => reg[0] = calls.kfunc(insn.imm, args, mem).map_err(|f| fail(pc - 1, f.what))?,
                            _ => reg[0] = calls.helper(insn.imm, args, mem).map_err(|f| fail(pc - 1, f.what))?,
                        }
                        // r1–r5 are clobbered by a call (the calling convention).
                        reg[1..6].fill(0);
                        continue;
                    }
                    JMP_EXIT => {
                        if depth == 0 {
                            return Ok(reg[0]);
                        }
                        depth -= 1;
                        let f = frames[depth];
                        pc = f.return_pc;
                        reg[6..10].copy_from_slice(&f.callee_saved);
                        reg[10] = frame_top(depth);
                        continue;
                    }
                    JMP_JA => {
                        // JMP32 | JA is `gotol` with a 32-bit offset (ISA v4).
                        let delta = if insn.class() == CLASS_JMP32 { insn.imm as i64 } else { insn.off as i64 };
                        pc = (pc as i64 + delta) as usize;
                        continue;
                    }
                    _ => {}
                }
                let src = if insn.op & SRC_X != 0 { reg[s] } else { imm };
                let taken = if insn.class() == CLASS_JMP {
                    condition(code_op, reg[d], src, reg[d] as i64, src as i64)
                } else {
                    let (a, b) = (reg[d] as u32, src as u32);
                    condition(code_op, a as u64, b as u64, a as i32 as i64, b as i32 as i64)
                };
                if taken {
                    pc = (pc as i64 + insn.off as i64) as usize;
                }
            }
            _ => return Err(fail(pc - 1, format!("opcode {:#04x} is not an instruction", insn.op))),
        }
    }
}

/// A conditional jump's test (RFC 9669 §4.3), on unsigned and signed views.
#[inline]
fn condition(op: u8, a: u64, b: u64, sa: i64, sb: i64) -> bool {
    match op {
        JMP_JEQ => a == b,
        JMP_JGT => a > b,
        JMP_JGE => a >= b,
        JMP_JSET => a & b != 0,
        JMP_JNE => a != b,
        JMP_JSGT => sa > sb,
        JMP_JSGE => sa >= sb,
        JMP_JLT => a < b,
        JMP_JLE => a <= b,
        JMP_JSLT => sa < sb,
        JMP_JSLE => sa <= sb,
        _ => false,
    }
}

fn sign_extend(v: u64, bytes: usize) -> u64 {
    match bytes {
        1 => v as u8 as i8 as i64 as u64,
        2 => v as u16 as i16 as i64 as u64,
        4 => v as u32 as i32 as i64 as u64,
        _ => v,
    }
}

/// 64-bit ALU (RFC 9669 §4.1); `off` 1 selects signed division and
/// modulo, `off` 8/16/32 a sign-extending move (ISA v4).
#[inline]
fn alu64(insn: Insn, dst: u64, src: u64) -> Result<u64, String> {
    Ok(match insn.op & 0xf0 {
        ALU_ADD => dst.wrapping_add(src),
        ALU_SUB => dst.wrapping_sub(src),
        ALU_MUL => dst.wrapping_mul(src),
        ALU_DIV if insn.off == 1 => {
            if src == 0 { 0 } else { (dst as i64).wrapping_div(src as i64) as u64 }
        }
        ALU_DIV => dst.checked_div(src).unwrap_or(0),
        ALU_MOD if insn.off == 1 => {
            if src == 0 { dst } else { (dst as i64).wrapping_rem(src as i64) as u64 }
        }
        ALU_MOD => if src == 0 { dst } else { dst % src },
        ALU_OR => dst | src,
        ALU_AND => dst & src,
        ALU_XOR => dst ^ src,
        ALU_LSH => dst << (src & 63),
        ALU_RSH => dst >> (src & 63),
        ALU_ARSH => ((dst as i64) >> (src & 63)) as u64,
        ALU_NEG => (dst as i64).wrapping_neg() as u64,
        ALU_MOV => match insn.off {
            8 | 16 | 32 => sign_extend(src, insn.off as usize / 8),
            _ => src,
        },
        // ALU64 | END is an unconditional byte swap (ISA v4 bswap).
        ALU_END => swap(dst, insn.imm),
        _ => return Err(format!("opcode {:#04x} is not a 64-bit ALU operation", insn.op)),
    })
}

/// 32-bit ALU: operands are the low halves, the result is zero-extended.
#[inline]
fn alu32(insn: Insn, dst: u64, src: u64) -> Result<u64, String> {
    let (a, b) = (dst as u32, src as u32);
    let r = match insn.op & 0xf0 {
        ALU_ADD => a.wrapping_add(b),
        ALU_SUB => a.wrapping_sub(b),
        ALU_MUL => a.wrapping_mul(b),
        ALU_DIV if insn.off == 1 => {
            if b == 0 { 0 } else { (a as i32).wrapping_div(b as i32) as u32 }
        }
        ALU_DIV => a.checked_div(b).unwrap_or(0),
        ALU_MOD if insn.off == 1 => {
            if b == 0 { a } else { (a as i32).wrapping_rem(b as i32) as u32 }
        }
        ALU_MOD => if b == 0 { a } else { a % b },
        ALU_OR => a | b,
        ALU_AND => a & b,
        ALU_XOR => a ^ b,
        ALU_LSH => a << (b & 31),
        ALU_RSH => a >> (b & 31),
        ALU_ARSH => ((a as i32) >> (b & 31)) as u32,
        ALU_NEG => (a as i32).wrapping_neg() as u32,
        ALU_MOV => match insn.off {
            8 => b as u8 as i8 as i32 as u32,
            16 => b as u16 as i16 as i32 as u32,
            _ => b,
        },
        ALU_END => {
            // BPF_TO_LE on a little-endian machine truncates; BPF_TO_BE swaps.
            return Ok(if insn.op & SRC_X != 0 { swap(dst, insn.imm) } else { truncate(dst, insn.imm) });
        }
        _ => return Err(format!("opcode {:#04x} is not a 32-bit ALU operation", insn.op)),
    };
    Ok(r as u64)
}

fn swap(v: u64, bits: i32) -> u64 {
    match bits {
        16 => (v as u16).swap_bytes() as u64,
        32 => (v as u32).swap_bytes() as u64,
        _ => v.swap_bytes(),
    }
}

fn truncate(v: u64, bits: i32) -> u64 {
    match bits {
        16 => v as u16 as u64,
        32 => v as u32 as u64,
        _ => v,
    }
}

/// An atomic read-modify-write (RFC 9669 §5.3); returns the new value of
/// the source register (the old memory value when FETCH is set).
fn atomic(insn: Insn, addr: u64, len: usize, src: u64, r0: &mut u64, mem: &mut Memory) -> Result<u64, String> {
    let old = mem.load(addr, len).map_err(|f| f.what)?;
    let op = insn.imm;
    let (new, returned) = match op {
        ATOMIC_XCHG => (src, old),
        ATOMIC_CMPXCHG => {
            let expected = if len == 4 { *r0 as u32 as u64 } else { *r0 };
            *r0 = old;
            return if old == expected {
                mem.store(addr, len, src).map_err(|f| f.what).map(|_| src)
            } else {
                Ok(src)
            };
        }
        _ => {
            let v = match (op & !ATOMIC_FETCH) as u8 {
                ALU_ADD => old.wrapping_add(src),
                ALU_OR => old | src,
                ALU_AND => old & src,
                ALU_XOR => old ^ src,
                _ => return Err(format!("atomic operation {op:#x} is not one RFC 9669 defines")),
            };
            (v, if op & ATOMIC_FETCH != 0 { old } else { src })
        }
    };
    mem.store(addr, len, new).map_err(|f| f.what)?;
    Ok(if len == 4 && op & ATOMIC_FETCH != 0 { returned as u32 as u64 } else { returned })
}
