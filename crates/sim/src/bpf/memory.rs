//! The address space a BPF program sees in the simulator: a few regions
//! (the hook's argument array, the socket, the ACK sample, the stack, the
//! object's global data), each at its own virtual base `id << 32`, so a
//! pointer is `region << 32 | offset` and pointer arithmetic stays inside
//! the offset. Every load and store is checked against its region's
//! bounds and write permission, and the socket's bytes against the fields
//! Linux lets a BPF congestion control write (a per-byte mask): a program
//! cannot reach anything else. Address 0 is in no region (NULL).

/// A region's number in the upper 32 bits of an address; 0 is never used.
pub const REGION_SHIFT: u32 = 32;

/// How a region may be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
    /// Writable only where the region's byte in the write mask is set.
    Masked,
}

/// One region: a name for error messages, its place in the arena, and
/// how it may be written.
#[derive(Clone, Debug)]
pub struct Region {
    pub name: String,
    pub start: usize,
    pub len: usize,
    pub access: Access,
}

/// A memory fault: what the program tried, at which address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub what: String,
}

/// The regions of one program instance, laid out in one arena.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    pub bytes: Vec<u8>,
    regions: Vec<Region>,
    /// One byte per arena byte: non-zero where a `Masked` region may be
    /// written.
    write_mask: Vec<u8>,
}

impl Memory {
    /// Adds a region of `len` zero bytes and returns its base address.
    pub fn add_region(&mut self, name: &str, len: usize, access: Access) -> u64 {
        let start = self.bytes.len();
        // 8-byte alignment, as the kernel's allocations.
        let padded = len.div_ceil(8) * 8;
        self.bytes.resize(start + padded, 0);
        self.write_mask.resize(start + padded, u8::from(access == Access::ReadWrite));
        self.regions.push(Region { name: name.to_string(), start, len, access });
        (self.regions.len() as u64) << REGION_SHIFT
    }

    /// The region whose base is `base`.
    pub fn region(&self, base: u64) -> &Region {
        &self.regions[(base >> REGION_SHIFT) as usize - 1]
    }

    /// The arena bytes of the region at `base`.
    pub fn region_bytes_mut(&mut self, base: u64) -> &mut [u8] {
        let r = self.region(base);
        let (s, l) = (r.start, r.len);
        &mut self.bytes[s..s + l]
    }

    /// The arena bytes of the region at `base`.
    pub fn region_bytes(&self, base: u64) -> &[u8] {
        let r = self.region(base);
        &self.bytes[r.start..r.start + r.len]
    }

    /// Allows writes to `len` bytes at `offset` of the `Masked` region at `base`.
    pub fn allow_writes(&mut self, base: u64, offset: usize, len: usize) {
        let start = self.region(base).start + offset;
        self.write_mask[start..start + len].fill(1);
    }

    /// The arena index of `len` bytes at `addr`, checked.
    #[inline(always)]
    fn locate(&self, addr: u64, len: usize, write: bool) -> Result<usize, Fault> {
        let id = (addr >> REGION_SHIFT) as usize;
        let off = (addr & 0xffff_ffff) as usize;
        let Some(r) = id.checked_sub(1).and_then(|i| self.regions.get(i)) else {
            return Err(self.fault(addr, len, write, "no such address"));
        };
        if off + len > r.len {
            return Err(self.fault(addr, len, write, "past the end of the region"));
        }
        let at = r.start + off;
        if write && r.access != Access::ReadWrite {
            let allowed = r.access == Access::Masked && self.write_mask[at..at + len].iter().all(|&b| b != 0);
            if !allowed {
                return Err(self.fault(addr, len, write, "read-only"));
            }
        }
        Ok(at)
    }

    fn fault(&self, addr: u64, len: usize, write: bool, why: &str) -> Fault {
        let id = (addr >> REGION_SHIFT) as usize;
        let region = id.checked_sub(1).and_then(|i| self.regions.get(i)).map_or("none", |r| r.name.as_str());
        let verb = if write { "store" } else { "load" };
        Fault { what: format!("{verb} of {len} bytes at {addr:#x} (region {region}, offset {}): {why}", addr & 0xffff_ffff) }
    }

    /// Loads `len` (1, 2, 4 or 8) bytes, zero-extended.
    #[inline(always)]
    pub fn load(&self, addr: u64, len: usize) -> Result<u64, Fault> {
        let at = self.locate(addr, len, false)?;
        let b = &self.bytes[at..at + len];
        Ok(match len {
            1 => u64::from(b[0]),
            2 => u64::from(u16::from_le_bytes([b[0], b[1]])),
            4 => u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            _ => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        })
    }

    /// Stores the low `len` bytes of `value`.
    #[inline(always)]
    pub fn store(&mut self, addr: u64, len: usize, value: u64) -> Result<(), Fault> {
        let at = self.locate(addr, len, true)?;
        self.bytes[at..at + len].copy_from_slice(&value.to_le_bytes()[..len]);
        Ok(())
    }

    /// Copies `len` bytes at `addr` out (a helper reading a buffer).
    pub fn read_bytes(&self, addr: u64, len: usize) -> Result<&[u8], Fault> {
        let at = self.locate(addr, len, false)?;
        Ok(&self.bytes[at..at + len])
    }

    /// Copies `data` to `addr` (a helper writing a buffer), checked.
    pub fn write_bytes(&mut self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        let at = self.locate(addr, data.len(), true)?;
        self.bytes[at..at + data.len()].copy_from_slice(data);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_apart_and_bounded() {
        let mut m = Memory::default();
        let a = m.add_region("a", 12, Access::ReadWrite);
        let b = m.add_region("b", 8, Access::ReadOnly);
        assert_eq!((a, b), (1 << 32, 2 << 32));
        m.store(a + 8, 4, 0xdead_beef).unwrap();
        assert_eq!(m.load(a + 8, 4).unwrap(), 0xdead_beef);
        assert!(m.load(a + 9, 4).unwrap_err().what.contains("past the end of the region"));
        assert!(m.store(b, 1, 1).unwrap_err().what.contains("read-only"));
        assert!(m.load(0, 1).unwrap_err().what.contains("no such address"));
        assert!(m.load(3 << 32, 1).is_err());
    }

    #[test]
    fn a_masked_region_takes_writes_only_where_allowed() {
        let mut m = Memory::default();
        let s = m.add_region("sock", 16, Access::Masked);
        m.allow_writes(s, 4, 4);
        m.store(s + 4, 4, 7).unwrap();
        assert!(m.store(s + 2, 4, 7).is_err(), "straddles a read-only byte");
        assert!(m.store(s + 8, 1, 7).is_err());
        assert_eq!(m.load(s + 4, 4).unwrap(), 7);
    }
}
