//! A bounds-checked little-endian reader that knows its byte offset, so every failure can say
//! which field it was reading and where.

use super::GgufError;

pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    pub fn remaining(&self) -> u64 {
        (self.bytes.len() - self.pos) as u64
    }

    pub fn take(&mut self, n: u64, field: &dyn Fn() -> String) -> Result<&'a [u8], GgufError> {
        if n > self.remaining() {
            return Err(GgufError::Truncated {
                field: field(),
                offset: self.offset(),
                needed: n,
                available: self.remaining(),
            });
        }
        let start = self.pos;
        self.pos += n as usize;
        Ok(&self.bytes[start..self.pos])
    }

    pub fn array<const N: usize>(&mut self, field: &dyn Fn() -> String) -> Result<[u8; N], GgufError> {
        let bytes = self.take(N as u64, field)?;
        Ok(bytes.try_into().expect("take returned N bytes"))
    }

    pub fn u8(&mut self, field: &dyn Fn() -> String) -> Result<u8, GgufError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub fn u32(&mut self, field: &dyn Fn() -> String) -> Result<u32, GgufError> {
        self.array(field).map(u32::from_le_bytes)
    }

    pub fn u64(&mut self, field: &dyn Fn() -> String) -> Result<u64, GgufError> {
        self.array(field).map(u64::from_le_bytes)
    }

    /// A count of items of at least `min_item_size` bytes each, rejected when that many items
    /// cannot fit in what is left of the file: no allocation is ever sized by a bogus count.
    pub fn count(
        &mut self,
        min_item_size: u64,
        what: &'static str,
        field: &dyn Fn() -> String,
    ) -> Result<u64, GgufError> {
        let offset = self.offset();
        let count = self.u64(field)?;
        if count.saturating_mul(min_item_size) > self.remaining() {
            return Err(GgufError::CountTooLarge {
                field: field(),
                offset,
                count,
                what,
                remaining: self.remaining(),
            });
        }
        Ok(count)
    }

    /// A GGUF string: u64 byte length, then UTF-8 bytes (no terminator).
    pub fn string(&mut self, field: &dyn Fn() -> String) -> Result<String, GgufError> {
        let len = self.count(1, "bytes", field)?;
        let offset = self.offset();
        let bytes = self.take(len, field)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| GgufError::InvalidUtf8 { field: field(), offset })
    }
}
