//! Loading a BPF congestion control from its ELF object, as libbpf loads
//! it for the kernel (tools/lib/bpf/libbpf.c: bpf_object__elf_collect(),
//! bpf_program__record_reloc(), bpf_object__collect_st_ops_relos(),
//! bpf_object__relocate()): the executable sections become one code array
//! (so BPF-to-BPF calls across sections are relative jumps in it), global
//! data sections become memory regions, `lddw` of a global's address gets
//! the region's address, calls to functions the object does not define
//! become kfunc calls, CO-RE relocations are applied against the
//! simulator's layout, and the struct_ops map (`.struct_ops` or
//! `.struct_ops.link`) says which program implements which hook of
//! `struct tcp_congestion_ops`.

use super::btf::{self, Btf, Kind};
use super::core;
use super::helpers;
use super::insn::*;
use super::memory::{Access, Memory};
use super::sock_layout::{ACK_SAMPLE_SIZE, RATE_SAMPLE_SIZE, TCP_SOCK_SIZE};
use super::LoadError;
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionKind, SymbolKind};
use std::collections::HashMap;

/// Base addresses of the fixed regions, in the order [`new_memory`] adds them.
pub const CTX_BASE: u64 = 1 << 32;
pub const SOCK_BASE: u64 = 2 << 32;
pub const ACK_SAMPLE_BASE: u64 = 3 << 32;
pub const STACK_BASE: u64 = 4 << 32;
pub const RATE_SAMPLE_BASE: u64 = 5 << 32;
/// Bytes of the hook's argument array (tcp_congestion_ops hooks take at
/// most 4 arguments; BPF trampolines pass them as u64s).
const CTX_BYTES: usize = 8 * 6;

/// ELF relocation types of the BPF target (include/uapi/linux/elf-em.h,
/// llvm's ELFRelocs/BPF.def).
const R_BPF_64_64: u32 = 1;
const R_BPF_64_ABS64: u32 = 2;
const R_BPF_64_32: u32 = 10;

/// The hooks of `struct tcp_congestion_ops` the simulator calls, by member
/// name, in [`Hook`]'s order.
pub const HOOKS: [&str; 10] = [
    "init",
    "release",
    "ssthresh",
    "cong_avoid",
    "set_state",
    "cwnd_event",
    "in_ack_event",
    "pkts_acked",
    "undo_cwnd",
    "cong_control",
];

/// A hook, by its place in [`HOOKS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Init,
    Release,
    Ssthresh,
    CongAvoid,
    SetState,
    CwndEvent,
    InAckEvent,
    PktsAcked,
    UndoCwnd,
    CongControl,
}

impl Hook {
    /// The member's name.
    pub fn name(self) -> &'static str {
        HOOKS[self as usize]
    }
}
/// Members the simulator does not call and why (an object implementing
/// them is refused, so nothing it does is silently skipped).
const UNSUPPORTED_HOOKS: &[(&str, &str)] = &[
    ("min_tso_segs", "the simulator does not yet run a BPF min_tso_segs"),
    ("sndbuf_expand", "the simulator does not model send-buffer expansion"),
    ("get_info", "the simulator does not read TCP_CC_INFO from a BPF CCA"),
];

/// A function of the object: its name and instruction range in the code.
#[derive(Clone, Debug)]
pub struct Function {
    pub name: String,
    pub start: usize,
    pub end: usize,
}

/// A loaded BPF congestion control, ready to instantiate per connection.
#[derive(Clone, Debug)]
pub struct Program {
    /// The name it registers (tcp_congestion_ops.name).
    pub name: String,
    /// tcp_congestion_ops.flags (TCP_CONG_NEEDS_ECN, …).
    pub flags: u32,
    pub code: Vec<Insn>,
    pub functions: Vec<Function>,
    /// Entry instruction of each implemented hook, by [`Hook`].
    entries: [Option<usize>; HOOKS.len()],
    /// The memory every connection starts from: the fixed regions and the
    /// object's global data with its initial values.
    pub memory: Memory,
    /// Instructions whose CO-RE relocation named something the simulator
    /// does not model, with why (libbpf poisons them the same way).
    pub poisoned: Vec<(usize, String)>,
}

/// The memory layout every program shares: argument array, socket, ACK
/// sample, stack (MAX_CALL_FRAMES frames).
fn new_memory() -> Memory {
    let mut m = Memory::default();
    assert_eq!(m.add_region("ctx", CTX_BYTES, Access::ReadOnly), CTX_BASE);
    assert_eq!(m.add_region("tcp_sock", TCP_SOCK_SIZE as usize, Access::Masked), SOCK_BASE);
    for (offset, len) in super::sock_layout::writable_ranges() {
        m.allow_writes(SOCK_BASE, offset as usize, len as usize);
    }
    assert_eq!(m.add_region("ack_sample", ACK_SAMPLE_SIZE as usize, Access::ReadOnly), ACK_SAMPLE_BASE);
    assert_eq!(m.add_region("stack", STACK_BYTES * MAX_CALL_FRAMES, Access::ReadWrite), STACK_BASE);
    assert_eq!(m.add_region("rate_sample", RATE_SAMPLE_SIZE as usize, Access::ReadOnly), RATE_SAMPLE_BASE);
    m
}

/// Licenses the kernel takes as GPL-compatible (include/linux/license.h,
/// license_is_gpl_compatible()); struct_ops programs must have one
/// (kernel/bpf/verifier.c check_struct_ops_btf_id()).
const GPL_COMPATIBLE: &[&str] =
    &["GPL", "GPL v2", "GPL and additional rights", "Dual BSD/GPL", "Dual MIT/GPL", "Dual MPL/GPL"];

impl Program {
    /// Loads the object in `elf`.
    pub fn load(elf: &[u8]) -> Result<Program, LoadError> {
        let file = object::File::parse(elf).map_err(|e| LoadError::new(format!("not an ELF object: {e}")))?;
        if file.architecture() != object::Architecture::Bpf {
            return Err(LoadError::new(format!("an object for {:?}, not BPF (build with clang -target bpf)", file.architecture())));
        }
        let license = file
            .section_by_name("license")
            .and_then(|s| s.data().ok())
            .map(|d| String::from_utf8_lossy(d.split(|&b| b == 0).next().unwrap_or(&[])).into_owned())
            .unwrap_or_default();
        if !GPL_COMPATIBLE.contains(&license.as_str()) {
            return Err(LoadError::new(format!(
                "license {license:?}: struct_ops programs must have a GPL-compatible license (char _license[] SEC(\"license\") = \"GPL\")"
            )));
        }
        let btf_data = file.section_by_name(".BTF").and_then(|s| s.data().ok()).ok_or_else(|| {
            LoadError::new("the object has no .BTF section (build with clang -g: struct_ops needs BTF)")
        })?;
        let btf = Btf::parse(btf_data)?;
        let relos = match file.section_by_name(".BTF.ext").and_then(|s| s.data().ok()) {
            Some(ext) => btf::parse_core_relos(ext, &btf)?,
            None => Vec::new(),
        };

        // Code: every executable section, one after the other.
        let mut code = Vec::new();
        let mut code_base: HashMap<object::SectionIndex, usize> = HashMap::new();
        let mut section_name: HashMap<object::SectionIndex, String> = HashMap::new();
        for s in file.sections() {
            let name = s.name().unwrap_or("").to_string();
            section_name.insert(s.index(), name.clone());
            if s.kind() == SectionKind::Text && s.size() > 0 {
                code_base.insert(s.index(), code.len());
                code.extend(Insn::decode_all(s.data().unwrap_or(&[])));
            }
        }

        // Global data: .rodata*, .data*, .bss* (and .kconfig for externs).
        let mut memory = new_memory();
        let mut data_base: HashMap<object::SectionIndex, u64> = HashMap::new();
        for s in file.sections() {
            let name = s.name().unwrap_or("");
            let access = if name.starts_with(".rodata") {
                Access::ReadOnly
            } else if name.starts_with(".data") || name.starts_with(".bss") {
                Access::ReadWrite
            } else {
                continue;
            };
            let base = memory.add_region(name, s.size() as usize, access);
            if s.kind() != SectionKind::UninitializedData {
                let bytes = s.data().unwrap_or(&[]);
                memory.region_bytes_mut(base)[..bytes.len()].copy_from_slice(bytes);
            }
            data_base.insert(s.index(), base);
        }
        if let Some(s) = file.section_by_name(".maps") {
            let names: Vec<String> = file
                .symbols()
                .filter(|y| y.section_index() == Some(s.index()))
                .filter_map(|y| y.name().ok().map(str::to_string))
                .collect();
            return Err(LoadError::new(format!(
                "the object defines BPF maps ({}); the simulator runs global data (.data, .bss, .rodata) but no maps yet",
                names.join(", ")
            )));
        }
        let kconfig = Kconfig::collect(&btf, &mut memory)?;

        // Functions, by symbol.
        let mut functions = Vec::new();
        for y in file.symbols() {
            if y.kind() != SymbolKind::Text || y.size() == 0 {
                continue;
            }
            let Some(base) = y.section_index().and_then(|i| code_base.get(&i)) else { continue };
            let start = base + y.address() as usize / INSN_BYTES;
            functions.push(Function { name: y.name().unwrap_or("").to_string(), start, end: start + y.size() as usize / INSN_BYTES });
        }
        functions.sort_by_key(|f| f.start);

        // Code relocations.
        for s in file.sections() {
            let Some(&base) = code_base.get(&s.index()) else { continue };
            for (offset, r) in s.relocations() {
                let at = base + offset as usize / INSN_BYTES;
                let RelocationFlags::Elf { r_type } = r.flags() else { continue };
                let RelocationTarget::Symbol(sym_index) = r.target() else { continue };
                let sym = file.symbol_by_index(sym_index).map_err(|e| LoadError::new(e.to_string()))?;
                let sym_name = sym.name().unwrap_or("").to_string();
                let insn = code[at];
                match r_type {
                    R_BPF_64_64 if insn.is_lddw() && at + 1 < code.len() => {
                        let value = if sym.is_undefined() {
                            kconfig.address(&sym_name)?
                        } else if let Some(&region) = sym.section_index().and_then(|i| data_base.get(&i)) {
                            region + sym.address() + insn.imm as u32 as u64
                        } else {
                            let sec = sym.section_index().and_then(|i| section_name.get(&i)).cloned().unwrap_or_default();
                            return Err(LoadError::new(format!(
                                "instruction {at} takes the address of {sym_name:?} in section {sec:?}, which the simulator cannot place"
                            )));
                        };
                        code[at].imm = value as u32 as i32;
                        code[at].src = 0;
                        code[at + 1].imm = (value >> 32) as u32 as i32;
                    }
                    R_BPF_64_32 if insn.op == CLASS_JMP | JMP_CALL => {
                        if sym.is_undefined() {
                            let id = helpers::kfunc_id(&sym_name).ok_or_else(|| {
                                LoadError::new(format!(
                                    "the program calls kernel function {sym_name}, which the simulator does not provide; it provides {}",
                                    helpers::KFUNCS.join(", ")
                                ))
                            })?;
                            code[at] = Insn { src: CALL_KFUNC, imm: id, ..insn };
                        } else {
                            let Some(&target_base) = sym.section_index().and_then(|i| code_base.get(&i)) else {
                                return Err(LoadError::new(format!("instruction {at} calls {sym_name:?}, which is not code")));
                            };
                            let target = target_base as i64 + sym.address() as i64 / INSN_BYTES as i64 + insn.imm as i64 + 1;
                            code[at] = Insn { src: CALL_LOCAL, imm: (target - at as i64 - 1) as i32, ..insn };
                        }
                    }
                    _ => {
                        return Err(LoadError::new(format!(
                            "instruction {at}: relocation type {r_type} against {sym_name:?} is not one the simulator applies"
                        )))
                    }
                }
            }
        }

        // CO-RE.
        let guarded = relos.iter().any(|r| r.kind == core::FIELD_EXISTS || r.kind == core::TYPE_EXISTS);
        let mut poisoned = Vec::new();
        for s in file.sections() {
            let Some(&base) = code_base.get(&s.index()) else { continue };
            let name = s.name().unwrap_or("");
            let mine: Vec<_> = relos.iter().filter(|r| r.section == name).cloned().collect();
            core::relocate(&mut code, base, &mine, &btf, guarded, &mut poisoned)?;
        }

        let (name, flags, hooks) = struct_ops(&file, &btf, &functions)?;
        let entries = HOOKS.map(|h| hooks.get(h).copied());
        let program = Program { name, flags, code, functions, entries, memory, poisoned };
        super::verify::check(&program)?;
        Ok(program)
    }

    /// The entry instruction of `hook`, if the program implements it.
    #[inline]
    pub fn entry(&self, hook: Hook) -> Option<usize> {
        self.entries[hook as usize]
    }

    /// The names of the hooks the program implements, in [`HOOKS`] order.
    pub fn hook_names(&self) -> Vec<&'static str> {
        HOOKS.iter().zip(&self.entries).filter(|(_, e)| e.is_some()).map(|(h, _)| *h).collect()
    }

    /// The function containing instruction `pc`, for messages.
    pub fn function_at(&self, pc: usize) -> &str {
        self.functions.iter().find(|f| f.start <= pc && pc < f.end).map_or("?", |f| f.name.as_str())
    }
}

/// The object's `extern ... __kconfig` variables (libbpf's .kconfig map),
/// with the values of the simulated kernel's configuration.
struct Kconfig {
    base: u64,
    offsets: HashMap<String, u64>,
}

impl Kconfig {
    fn collect(btf: &Btf, memory: &mut Memory) -> Result<Kconfig, LoadError> {
        let mut offsets = HashMap::new();
        let Some(sec) = btf.find(Kind::Datasec, ".kconfig") else {
            return Ok(Kconfig { base: 0, offsets });
        };
        let vars = btf.get(sec)?.sec_vars.clone();
        let mut values = Vec::new();
        let mut at = 0u64;
        for v in &vars {
            let var = btf.get(v.type_id)?;
            let size = btf.size_of(var.size_or_type)?;
            let value = helpers::kconfig_value(&var.name).ok_or_else(|| {
                LoadError::new(format!(
                    "the program reads {} (__kconfig), which the simulated kernel does not define; it defines {}",
                    var.name,
                    helpers::KCONFIG.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ))
            })?;
            at = at.div_ceil(size.max(1)) * size.max(1);
            offsets.insert(var.name.clone(), at);
            values.push((at, size, value));
            at += size;
        }
        let base = memory.add_region(".kconfig", at as usize, Access::ReadOnly);
        for (off, size, value) in values {
            let bytes = value.to_le_bytes();
            memory.region_bytes_mut(base)[off as usize..(off + size) as usize].copy_from_slice(&bytes[..size as usize]);
        }
        Ok(Kconfig { base, offsets })
    }

    fn address(&self, name: &str) -> Result<u64, LoadError> {
        self.offsets
            .get(name)
            .map(|o| self.base + o)
            .ok_or_else(|| LoadError::new(format!("the program refers to {name}, which the object does not define")))
    }
}

/// Reads the struct_ops map: the registered name, the flags and the
/// function behind each hook.
fn struct_ops(
    file: &object::File,
    btf: &Btf,
    functions: &[Function],
) -> Result<(String, u32, HashMap<String, usize>), LoadError> {
    let mut found = Vec::new();
    for s in file.sections() {
        let sec_name = s.name().unwrap_or("").to_string();
        if !sec_name.starts_with(".struct_ops") {
            continue;
        }
        let data = s.data().unwrap_or(&[]);
        let relocs: Vec<(u64, String)> = s
            .relocations()
            .filter_map(|(off, r)| match (r.flags(), r.target()) {
                (RelocationFlags::Elf { r_type: R_BPF_64_ABS64 }, RelocationTarget::Symbol(i)) => {
                    file.symbol_by_index(i).ok().and_then(|y| y.name().ok().map(|n| (off, n.to_string())))
                }
                _ => None,
            })
            .collect();
        let Some(sec) = btf.find(Kind::Datasec, &sec_name) else { continue };
        for v in &btf.get(sec)?.sec_vars {
            let var = btf.get(v.type_id)?;
            let ty_id = btf.skip_mods(var.size_or_type)?;
            let ty = btf.get(ty_id)?;
            if ty.name != "tcp_congestion_ops" {
                return Err(LoadError::new(format!(
                    "struct_ops map {} is a struct {}; the simulator runs struct tcp_congestion_ops only",
                    var.name, ty.name
                )));
            }
            let mut name = String::new();
            let mut flags = 0u32;
            let mut hooks = HashMap::new();
            for m in &ty.members {
                let at = v.offset as usize + m.bit_offset as usize / 8;
                if m.name == "name" {
                    let raw = data.get(at..at + 16).unwrap_or(&[]);
                    name = String::from_utf8_lossy(raw.split(|&b| b == 0).next().unwrap_or(&[])).into_owned();
                } else if m.name == "flags" {
                    flags = btf::read_u32(data, at).unwrap_or(0);
                } else if let Some((_, func)) = relocs.iter().find(|(off, _)| *off as usize == at) {
                    if let Some((_, why)) = UNSUPPORTED_HOOKS.iter().find(|(h, _)| *h == m.name) {
                        return Err(LoadError::new(format!("{} implements {} ({func}): {why}", var.name, m.name)));
                    }
                    if !HOOKS.contains(&m.name.as_str()) {
                        return Err(LoadError::new(format!("{} implements {}, a hook the simulator does not know", var.name, m.name)));
                    }
                    let f = functions
                        .iter()
                        .find(|f| f.name == *func)
                        .ok_or_else(|| LoadError::new(format!("hook {} names {func}, which is not a function of the object", m.name)))?;
                    hooks.insert(m.name.clone(), f.start);
                }
            }
            found.push((var.name.clone(), name, flags, hooks));
        }
    }
    match found.len() {
        0 => Err(LoadError::new("the object has no struct_ops map (SEC(\".struct_ops\") or SEC(\".struct_ops.link\") struct tcp_congestion_ops)")),
        1 => {
            let (var, name, flags, hooks) = found.pop().expect("one");
            if name.is_empty() {
                return Err(LoadError::new(format!("struct_ops map {var} has no name")));
            }
            for required in ["ssthresh", "undo_cwnd"] {
                if !hooks.contains_key(required) {
                    // tcp_validate_congestion_control(): ssthresh, undo_cwnd
                    // and cong_avoid or cong_control are required.
                    return Err(LoadError::new(format!("{name}: tcp_congestion_ops.{required} is required (tcp_validate_congestion_control)")));
                }
            }
            if !hooks.contains_key("cong_avoid") && !hooks.contains_key("cong_control") {
                return Err(LoadError::new(format!(
                    "{name}: tcp_congestion_ops.cong_avoid or cong_control is required (tcp_validate_congestion_control)"
                )));
            }
            Ok((name, flags, hooks))
        }
        _ => Err(LoadError::new(format!(
            "the object has {} struct_ops maps ({}); the simulator loads objects with one",
            found.len(),
            found.iter().map(|f| f.0.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}
