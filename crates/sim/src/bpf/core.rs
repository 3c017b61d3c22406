//! CO-RE relocations against the simulator's layout (sock_layout.rs), as
//! libbpf performs them against a kernel's BTF (tools/lib/bpf/relo_core.c:
//! bpf_core_parse_spec(), bpf_core_calc_field_relo(),
//! bpf_core_patch_insn()): each relocation names a root type of the
//! object's BTF and an access path ("0:3:1": element 0 of the root, its
//! member 3, that member's member 1); the path is read as names in the
//! object's BTF and followed by name in the layout (anonymous structs and
//! unions of the object's types are transparent, as libbpf matches
//! through them), and the instruction's offset or constant is replaced by
//! the layout's answer.

use super::btf::{Btf, CoreRelo, Kind};
use super::insn::*;
use super::sock_layout::{self, FieldType, TypeLayout};
use super::LoadError;

/// enum bpf_core_relo_kind (include/uapi/linux/bpf.h).
pub const FIELD_BYTE_OFFSET: u32 = 0;
pub const FIELD_BYTE_SIZE: u32 = 1;
pub const FIELD_EXISTS: u32 = 2;
pub const FIELD_SIGNED: u32 = 3;
pub const FIELD_LSHIFT_U64: u32 = 4;
pub const FIELD_RSHIFT_U64: u32 = 5;
pub const TYPE_ID_LOCAL: u32 = 6;
pub const TYPE_ID_TARGET: u32 = 7;
pub const TYPE_EXISTS: u32 = 8;
pub const TYPE_SIZE: u32 = 9;
pub const ENUMVAL_EXISTS: u32 = 10;
pub const ENUMVAL_VALUE: u32 = 11;
pub const TYPE_MATCHES: u32 = 12;

/// What a field access resolved to in the layout.
#[derive(Clone, Debug)]
struct Target {
    /// Dotted path from the root type, for messages.
    path: String,
    byte_offset: u32,
    byte_size: u32,
    bitfield: Option<(u32, u32)>,
    signed: bool,
    writable: bool,
}

/// The name libbpf matches on: the type's name without a `___flavor`
/// suffix (bpf_core_essential_name_len()).
fn essential_name(name: &str) -> &str {
    name.find("___").map_or(name, |i| &name[..i])
}

/// Applies the object's CO-RE relocations to `code`, whose section
/// `section` starts at instruction `base`. `guarded` is true when the
/// object tests for fields (FIELD_EXISTS or TYPE_EXISTS relocations): an
/// access to a field the layout lacks then becomes an instruction that
/// fails only if it runs (libbpf's poisoning, relo_core.c
/// bpf_core_poison_insn()); otherwise it is refused here.
pub fn relocate(
    code: &mut [Insn],
    base: usize,
    relos: &[CoreRelo],
    btf: &Btf,
    guarded: bool,
    poisoned: &mut Vec<(usize, String)>,
) -> Result<(), LoadError> {
    for relo in relos {
        let at = base + relo.insn_off as usize / INSN_BYTES;
        let root = btf.get(btf.skip_mods(relo.type_id)?)?;
        let root_name = essential_name(&root.name).to_string();
        let value: Result<u64, String> = match relo.kind {
            FIELD_BYTE_OFFSET | FIELD_BYTE_SIZE | FIELD_EXISTS | FIELD_SIGNED | FIELD_LSHIFT_U64 | FIELD_RSHIFT_U64 => {
                match resolve_field(btf, relo.type_id, &relo.access) {
                    Ok(t) => {
                        if relo.kind == FIELD_BYTE_OFFSET && code.get(at).is_some_and(|i| matches!(i.class(), CLASS_ST | CLASS_STX)) && !t.writable {
                            return Err(LoadError::new(format!(
                                "the program writes {} (instruction {}), which a BPF congestion control may not write; \
                                 writable: {} (Linux net/ipv4/bpf_tcp_ca.c, bpf_tcp_ca_btf_struct_access)",
                                t.path,
                                at,
                                sock_layout::writable_fields().join(", ")
                            )));
                        }
                        Ok(field_value(relo.kind, &t))
                    }
                    Err(_) if relo.kind == FIELD_EXISTS => Ok(0),
                    Err(why) => Err(why),
                }
            }
            TYPE_EXISTS | TYPE_MATCHES => Ok(u64::from(sock_layout::type_named(&root_name).is_some())),
            TYPE_SIZE => sock_layout::type_named(&root_name)
                .map(|t| u64::from(t.size))
                .ok_or_else(|| format!("type {root_name} is not one the simulator models")),
            TYPE_ID_LOCAL => Ok(u64::from(relo.type_id)),
            TYPE_ID_TARGET => sock_layout::TYPES
                .iter()
                .position(|t| t.name == root_name)
                .map(|i| i as u64 + 1)
                .ok_or_else(|| format!("type {root_name} is not one the simulator models")),
            ENUMVAL_EXISTS => Ok(0),
            ENUMVAL_VALUE => Err(format!("enum {root_name}'s values are not modelled")),
            k => Err(format!("CO-RE relocation kind {k} is unknown")),
        };
        match value {
            Ok(v) => patch(code, at, relo, v)?,
            Err(why) if guarded => {
                poisoned.push((at, why));
                // A call to no helper: the interpreter's helper table has no
                // entry for it (cca.rs reports the poisoned access instead).
                if let Some(insn) = code.get_mut(at) {
                    *insn = Insn { op: CLASS_JMP | JMP_CALL, dst: 0, src: CALL_HELPER, off: 0, imm: POISON_HELPER };
                }
            }
            Err(why) => {
                return Err(LoadError::new(format!(
                    "CO-RE relocation at instruction {at} ({root_name}, access {}): {why}",
                    relo.access
                )))
            }
        }
    }
    Ok(())
}

/// The helper number a poisoned instruction calls (libbpf's 0xbad2310).
pub const POISON_HELPER: i32 = 0xbad2310;

/// The relocation's value for a resolved field (bpf_core_calc_field_relo).
fn field_value(kind: u32, t: &Target) -> u64 {
    let (bit, width) = t.bitfield.unwrap_or((0, t.byte_size * 8));
    match kind {
        FIELD_BYTE_OFFSET => u64::from(t.byte_offset),
        FIELD_BYTE_SIZE => u64::from(t.byte_size),
        FIELD_EXISTS => 1,
        FIELD_SIGNED => u64::from(t.signed),
        // Little-endian: after a byte_size load, shift the field's top bit
        // to bit 63, then back down to bit 0.
        FIELD_LSHIFT_U64 => u64::from(64 - (bit + width)),
        _ => u64::from(64 - width),
    }
}

/// Follows the access path `access` from root type `root_id` in the
/// object's BTF, by member names, through the layout.
fn resolve_field(btf: &Btf, root_id: u32, access: &str) -> Result<Target, String> {
    let idx: Vec<u32> = access
        .split(':')
        .map(|s| s.parse::<u32>().map_err(|_| format!("access string {access:?} is not numbers")))
        .collect::<Result<_, _>>()?;
    let err = |e: LoadError| e.to_string();
    let mut local = btf.skip_mods(root_id).map_err(err)?;
    let root = btf.get(local).map_err(err)?;
    let root_name = essential_name(&root.name);
    let mut target: &TypeLayout =
        sock_layout::type_named(root_name).ok_or_else(|| format!("type {root_name} is not one the simulator models"))?;
    if idx.first().copied().unwrap_or(0) != 0 {
        return Err(format!("{root_name}: an access into an array of {root_name} (index {})", idx[0]));
    }
    let mut path = root_name.to_string();
    let mut offset = 0u32;
    let mut last = None;
    let mut i = 1;
    while i < idx.len() {
        let t = btf.get(local).map_err(err)?;
        match t.kind {
            Kind::Struct | Kind::Union => {
                let m = t.members.get(idx[i] as usize).ok_or_else(|| format!("{path}: member {} out of range", idx[i]))?;
                local = btf.skip_mods(m.type_id).map_err(err)?;
                i += 1;
                if m.name.is_empty() {
                    // An anonymous struct or union: the layout is flat there.
                    continue;
                }
                path = format!("{path}.{}", m.name);
                let field = target
                    .field(&m.name)
                    .ok_or_else(|| format!("{path} is a field the simulator does not model"))?;
                offset += field.offset;
                last = Some(*field);
                match field.ty {
                    FieldType::Struct(inner) => target = sock_layout::type_named(inner).expect("layout names its types"),
                    FieldType::Array { elem, elem_size, count } => {
                        // An element access follows, or the whole array is named.
                        if i < idx.len() {
                            let elem_at = idx[i];
                            if elem_at >= count {
                                return Err(format!("{path}[{elem_at}] is past the end ({count} elements)"));
                            }
                            path = format!("{path}[{elem_at}]");
                            offset += elem_at * elem_size;
                            let elem_local = btf.get(local).map_err(err)?.array.map(|a| a.0).unwrap_or(0);
                            local = btf.skip_mods(elem_local).map_err(err)?;
                            i += 1;
                            last = Some(sock_layout::Field { name: "", offset: 0, size: elem_size, bitfield: None, ty: *elem, writable: field.writable });
                            if let FieldType::Struct(inner) = elem {
                                target = sock_layout::type_named(inner).expect("layout names its types");
                            }
                        }
                    }
                    FieldType::Int { .. } => {}
                }
            }
            _ => return Err(format!("{path}: access index {} into a {:?}", idx[i], t.kind)),
        }
    }
    let field = last.ok_or_else(|| format!("{path}: no field named"))?;
    Ok(Target {
        path,
        byte_offset: offset,
        byte_size: field.size,
        bitfield: field.bitfield,
        signed: matches!(field.ty, FieldType::Int { signed: true }),
        writable: field.writable,
    })
}

/// Writes `value` into the relocated instruction (bpf_core_patch_insn()).
fn patch(code: &mut [Insn], at: usize, relo: &CoreRelo, value: u64) -> Result<(), LoadError> {
    let insn = code
        .get_mut(at)
        .ok_or_else(|| LoadError::new(format!("CO-RE relocation at instruction {at}: past the end of the code")))?;
    match insn.class() {
        CLASS_ALU | CLASS_ALU64 if insn.op & SRC_X == 0 => insn.imm = value as i32,
        CLASS_LDX | CLASS_ST | CLASS_STX => {
            insn.off = i16::try_from(value).map_err(|_| LoadError::new(format!("CO-RE offset {value} does not fit an instruction")))?;
        }
        CLASS_LD if insn.is_lddw() => {
            insn.imm = value as u32 as i32;
            if let Some(next) = code.get_mut(at + 1) {
                next.imm = (value >> 32) as u32 as i32;
            }
        }
        _ => {
            return Err(LoadError::new(format!(
                "CO-RE relocation kind {} at instruction {at} on opcode {:#04x}, which takes none",
                relo.kind, insn.op
            )))
        }
    }
    Ok(())
}
