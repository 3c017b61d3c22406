//! The BTF an object carries (Documentation/bpf/btf.rst): the type table
//! the loader reads to name what the object's code touches, for CO-RE
//! relocations (core.rs), the struct_ops map (which program implements
//! which hook) and the global data's variables.

use super::LoadError;

/// BTF_KIND_* (include/uapi/linux/btf.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Void,
    Int,
    Ptr,
    Array,
    Struct,
    Union,
    Enum,
    Fwd,
    Typedef,
    Volatile,
    Const,
    Restrict,
    Func,
    FuncProto,
    Var,
    Datasec,
    Float,
    DeclTag,
    TypeTag,
    Enum64,
}

/// A struct or union member: `bit_offset` from the start of the
/// aggregate, `bitfield_bits` 0 unless it is a bitfield.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub type_id: u32,
    pub bit_offset: u32,
    pub bitfield_bits: u32,
}

/// A variable's place in a data section.
#[derive(Clone, Debug)]
pub struct SecVar {
    pub type_id: u32,
    pub offset: u32,
    pub size: u32,
}

/// One BTF type.
#[derive(Clone, Debug)]
pub struct Type {
    pub kind: Kind,
    pub name: String,
    /// Size in bytes (int, struct, union, enum, datasec, float) or the
    /// referenced type (ptr, typedef, modifiers, func, var).
    pub size_or_type: u32,
    pub members: Vec<Member>,
    pub sec_vars: Vec<SecVar>,
    /// Array element type and count.
    pub array: Option<(u32, u32)>,
    /// Int: bits and signedness.
    pub int_bits: u32,
    pub int_signed: bool,
    /// Enum values.
    pub enum_values: Vec<(String, i64)>,
}

/// The type table; id 0 is void.
#[derive(Clone, Debug, Default)]
pub struct Btf {
    pub types: Vec<Type>,
    strings: Vec<u8>,
}

/// BTF_MAGIC.
const MAGIC: u16 = 0xeb9f;

pub(crate) fn read_u32(b: &[u8], at: usize) -> Result<u32, LoadError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| LoadError::new(format!("BTF truncated at byte {at}")))
}

impl Btf {
    /// Parses a `.BTF` section.
    pub fn parse(data: &[u8]) -> Result<Btf, LoadError> {
        if data.len() < 24 || u16::from_le_bytes([data[0], data[1]]) != MAGIC {
            return Err(LoadError::new("the .BTF section has no BTF header (a big-endian object, or not BTF)"));
        }
        let hdr_len = read_u32(data, 4)? as usize;
        let (type_off, type_len) = (read_u32(data, 8)? as usize, read_u32(data, 12)? as usize);
        let (str_off, str_len) = (read_u32(data, 16)? as usize, read_u32(data, 20)? as usize);
        let types_at = hdr_len + type_off;
        let strings_at = hdr_len + str_off;
        let strings = data
            .get(strings_at..strings_at + str_len)
            .ok_or_else(|| LoadError::new("BTF string section out of bounds"))?
            .to_vec();
        let mut btf = Btf { types: vec![Type::void()], strings };
        let mut at = types_at;
        let end = types_at + type_len;
        while at < end {
            let name_off = read_u32(data, at)?;
            let info = read_u32(data, at + 4)?;
            let size_or_type = read_u32(data, at + 8)?;
            at += 12;
            let vlen = (info & 0xffff) as usize;
            let kind_flag = info >> 31 != 0;
            let kind = match (info >> 24) & 0x1f {
                1 => Kind::Int,
                2 => Kind::Ptr,
                3 => Kind::Array,
                4 => Kind::Struct,
                5 => Kind::Union,
                6 => Kind::Enum,
                7 => Kind::Fwd,
                8 => Kind::Typedef,
                9 => Kind::Volatile,
                10 => Kind::Const,
                11 => Kind::Restrict,
                12 => Kind::Func,
                13 => Kind::FuncProto,
                14 => Kind::Var,
                15 => Kind::Datasec,
                16 => Kind::Float,
                17 => Kind::DeclTag,
                18 => Kind::TypeTag,
                19 => Kind::Enum64,
                k => return Err(LoadError::new(format!("BTF kind {k} is unknown"))),
            };
            let mut t = Type { kind, name: btf.string(name_off), size_or_type, ..Type::void() };
            match kind {
                Kind::Int => {
                    let enc = read_u32(data, at)?;
                    t.int_bits = enc & 0xff;
                    t.int_signed = (enc >> 24) & 1 != 0;
                    at += 4;
                }
                Kind::Array => {
                    t.array = Some((read_u32(data, at)?, read_u32(data, at + 8)?));
                    at += 12;
                }
                Kind::Struct | Kind::Union => {
                    for _ in 0..vlen {
                        let (n, ty, off) = (read_u32(data, at)?, read_u32(data, at + 4)?, read_u32(data, at + 8)?);
                        let (bit_offset, bitfield_bits) = if kind_flag { (off & 0xff_ffff, off >> 24) } else { (off, 0) };
                        t.members.push(Member { name: btf.string(n), type_id: ty, bit_offset, bitfield_bits });
                        at += 12;
                    }
                }
                Kind::Enum => {
                    for _ in 0..vlen {
                        let v = read_u32(data, at + 4)? as i32 as i64;
                        t.enum_values.push((btf.string(read_u32(data, at)?), v));
                        at += 8;
                    }
                }
                Kind::Enum64 => {
                    for _ in 0..vlen {
                        let v = (read_u32(data, at + 4)? as u64 | (read_u32(data, at + 8)? as u64) << 32) as i64;
                        t.enum_values.push((btf.string(read_u32(data, at)?), v));
                        at += 12;
                    }
                }
                Kind::FuncProto => at += 8 * vlen,
                Kind::Var | Kind::DeclTag => at += 4,
                Kind::Datasec => {
                    for _ in 0..vlen {
                        t.sec_vars.push(SecVar {
                            type_id: read_u32(data, at)?,
                            offset: read_u32(data, at + 4)?,
                            size: read_u32(data, at + 8)?,
                        });
                        at += 12;
                    }
                }
                _ => {}
            }
            btf.types.push(t);
        }
        Ok(btf)
    }

    /// The NUL-terminated string at `off`.
    pub fn string(&self, off: u32) -> String {
        let s = self.strings.get(off as usize..).unwrap_or(&[]);
        let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
        String::from_utf8_lossy(&s[..end]).into_owned()
    }

    /// Type `id`, or an error naming it.
    pub fn get(&self, id: u32) -> Result<&Type, LoadError> {
        self.types.get(id as usize).ok_or_else(|| LoadError::new(format!("BTF type id {id} does not exist")))
    }

    /// Follows typedefs and modifiers (const, volatile, restrict, type
    /// tags) to the type they name.
    pub fn skip_mods(&self, mut id: u32) -> Result<u32, LoadError> {
        for _ in 0..64 {
            match self.get(id)?.kind {
                Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => {
                    id = self.get(id)?.size_or_type
                }
                _ => return Ok(id),
            }
        }
        Err(LoadError::new(format!("BTF type {id}: a cycle of typedefs")))
    }

    /// Size in bytes of type `id` (btf__resolve_size()).
    pub fn size_of(&self, id: u32) -> Result<u64, LoadError> {
        let t = self.get(self.skip_mods(id)?)?;
        Ok(match t.kind {
            Kind::Int | Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Datasec | Kind::Float => {
                t.size_or_type as u64
            }
            Kind::Ptr => 8,
            Kind::Array => {
                let (elem, n) = t.array.unwrap_or((0, 0));
                self.size_of(elem)? * n as u64
            }
            Kind::Var => self.size_of(t.size_or_type)?,
            _ => return Err(LoadError::new(format!("BTF type {id} ({:?} {}) has no size", t.kind, t.name))),
        })
    }

    /// The first type of `kind` named `name`.
    pub fn find(&self, kind: Kind, name: &str) -> Option<u32> {
        self.types.iter().position(|t| t.kind == kind && t.name == name).map(|i| i as u32)
    }
}

impl Type {
    fn void() -> Type {
        Type {
            kind: Kind::Void,
            name: String::new(),
            size_or_type: 0,
            members: Vec::new(),
            sec_vars: Vec::new(),
            array: None,
            int_bits: 0,
            int_signed: false,
            enum_values: Vec::new(),
        }
    }
}

/// `struct bpf_core_relo` (include/uapi/linux/bpf.h) with its section.
#[derive(Clone, Debug)]
pub struct CoreRelo {
    pub section: String,
    /// Byte offset of the instruction in its section.
    pub insn_off: u32,
    pub type_id: u32,
    pub access: String,
    pub kind: u32,
}

/// The CO-RE relocations of a `.BTF.ext` section (its func_info and
/// line_info are not needed to run the code).
pub fn parse_core_relos(ext: &[u8], btf: &Btf) -> Result<Vec<CoreRelo>, LoadError> {
    if ext.len() < 8 || u16::from_le_bytes([ext[0], ext[1]]) != MAGIC {
        return Err(LoadError::new("the .BTF.ext section has no BTF header"));
    }
    let hdr_len = read_u32(ext, 4)? as usize;
    // struct btf_ext_header: core_relo_off/len follow line_info (32 bytes).
    if hdr_len < 32 {
        return Ok(Vec::new());
    }
    let (off, len) = (read_u32(ext, 24)? as usize, read_u32(ext, 28)? as usize);
    let mut out = Vec::new();
    if len == 0 {
        return Ok(out);
    }
    let mut at = hdr_len + off;
    let end = at + len;
    let record = read_u32(ext, at)? as usize;
    if record < 16 {
        return Err(LoadError::new(format!("BTF.ext CO-RE record size {record} is below 16")));
    }
    at += 4;
    while at < end {
        let section = btf.string(read_u32(ext, at)?);
        let n = read_u32(ext, at + 4)? as usize;
        at += 8;
        for _ in 0..n {
            out.push(CoreRelo {
                section: section.clone(),
                insn_off: read_u32(ext, at)?,
                type_id: read_u32(ext, at + 4)?,
                access: btf.string(read_u32(ext, at + 8)?),
                kind: read_u32(ext, at + 12)?,
            });
            at += record;
        }
    }
    Ok(out)
}
