//! The eBPF instruction set as the simulator's interpreter reads it
//! (Documentation/bpf/standardization/instruction-set.rst, RFC 9669): the
//! 8-byte instruction, its opcode fields, and the constants the loader and
//! the interpreter share. One definition of each encoding.

/// One decoded instruction: `opcode:8 dst:4 src:4 off:16 imm:32`, little
/// endian (RFC 9669 §3). A wide `lddw` takes two of these; the second
/// carries the upper 32 bits of the constant in `imm`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Insn {
    pub op: u8,
    pub dst: u8,
    pub src: u8,
    pub off: i16,
    pub imm: i32,
}

/// Size of one instruction slot in bytes.
pub const INSN_BYTES: usize = 8;

impl Insn {
    /// Decodes the slot at `bytes[0..8]`.
    pub fn decode(bytes: &[u8]) -> Insn {
        Insn {
            op: bytes[0],
            dst: bytes[1] & 0x0f,
            src: bytes[1] >> 4,
            off: i16::from_le_bytes([bytes[2], bytes[3]]),
            imm: i32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        }
    }

    /// Decodes a whole code section.
    pub fn decode_all(bytes: &[u8]) -> Vec<Insn> {
        bytes.chunks_exact(INSN_BYTES).map(Insn::decode).collect()
    }

    /// The instruction class (low 3 bits).
    #[inline]
    pub fn class(&self) -> u8 {
        self.op & 0x07
    }

    /// Whether this is the first slot of a 16-byte `lddw`.
    #[inline]
    pub fn is_lddw(&self) -> bool {
        self.op == LD_DW_IMM
    }

    /// Whether this loads from or stores to memory (LDX, ST, STX).
    pub fn is_memory_access(&self) -> bool {
        matches!(self.class(), CLASS_LDX | CLASS_ST | CLASS_STX)
    }

    /// Bytes moved by a memory instruction (the size field).
    pub fn access_bytes(&self) -> usize {
        match self.op & 0x18 {
            SIZE_W => 4,
            SIZE_H => 2,
            SIZE_B => 1,
            _ => 8,
        }
    }
}

// Classes (RFC 9669 §3.3).
pub const CLASS_LD: u8 = 0x00;
pub const CLASS_LDX: u8 = 0x01;
pub const CLASS_ST: u8 = 0x02;
pub const CLASS_STX: u8 = 0x03;
pub const CLASS_ALU: u8 = 0x04;
pub const CLASS_JMP: u8 = 0x05;
pub const CLASS_JMP32: u8 = 0x06;
pub const CLASS_ALU64: u8 = 0x07;

// Size and mode fields of load and store instructions (§5).
pub const SIZE_W: u8 = 0x00;
pub const SIZE_H: u8 = 0x08;
pub const SIZE_B: u8 = 0x10;
pub const SIZE_DW: u8 = 0x18;
pub const MODE_IMM: u8 = 0x00;
pub const MODE_MEM: u8 = 0x60;
pub const MODE_MEMSX: u8 = 0x80;
pub const MODE_ATOMIC: u8 = 0xc0;

/// `lddw dst, imm64` (BPF_LD | BPF_IMM | BPF_DW).
pub const LD_DW_IMM: u8 = CLASS_LD | MODE_IMM | SIZE_DW;

/// Source bit of ALU and jump instructions: register (X) or immediate (K).
pub const SRC_X: u8 = 0x08;

// ALU operations (§4.1), the opcode's upper 4 bits.
pub const ALU_ADD: u8 = 0x00;
pub const ALU_SUB: u8 = 0x10;
pub const ALU_MUL: u8 = 0x20;
pub const ALU_DIV: u8 = 0x30;
pub const ALU_OR: u8 = 0x40;
pub const ALU_AND: u8 = 0x50;
pub const ALU_LSH: u8 = 0x60;
pub const ALU_RSH: u8 = 0x70;
pub const ALU_NEG: u8 = 0x80;
pub const ALU_MOD: u8 = 0x90;
pub const ALU_XOR: u8 = 0xa0;
pub const ALU_MOV: u8 = 0xb0;
pub const ALU_ARSH: u8 = 0xc0;
pub const ALU_END: u8 = 0xd0;

// Jump operations (§4.3).
pub const JMP_JA: u8 = 0x00;
pub const JMP_JEQ: u8 = 0x10;
pub const JMP_JGT: u8 = 0x20;
pub const JMP_JGE: u8 = 0x30;
pub const JMP_JSET: u8 = 0x40;
pub const JMP_JNE: u8 = 0x50;
pub const JMP_JSGT: u8 = 0x60;
pub const JMP_JSGE: u8 = 0x70;
pub const JMP_CALL: u8 = 0x80;
pub const JMP_EXIT: u8 = 0x90;
pub const JMP_JLT: u8 = 0xa0;
pub const JMP_JLE: u8 = 0xb0;
pub const JMP_JSLT: u8 = 0xc0;
pub const JMP_JSLE: u8 = 0xd0;

/// `call` of a helper by number (src 0), of a function in the same program
/// (BPF_PSEUDO_CALL, src 1, imm = relative target), or of a kernel function
/// (BPF_PSEUDO_KFUNC_CALL, src 2; here imm is the simulator's kfunc number
/// the loader assigned).
pub const CALL_HELPER: u8 = 0;
pub const CALL_LOCAL: u8 = 1;
pub const CALL_KFUNC: u8 = 2;

// Atomic operations (§5.3), in imm.
pub const ATOMIC_FETCH: i32 = 0x01;
pub const ATOMIC_XCHG: i32 = 0xe0 | ATOMIC_FETCH;
pub const ATOMIC_CMPXCHG: i32 = 0xf0 | ATOMIC_FETCH;

/// Registers r0–r10; r10 is the read-only frame pointer.
pub const REGISTERS: usize = 11;
/// Bytes of stack per call frame (MAX_BPF_STACK, include/linux/filter.h).
pub const STACK_BYTES: usize = 512;
/// Nested BPF-to-BPF calls (MAX_CALL_FRAMES, include/linux/bpf_verifier.h).
pub const MAX_CALL_FRAMES: usize = 8;
