//! A bounds-checked cursor over untrusted bytes, so no parser indexes a slice by a size it read.

/// A forward cursor over a byte slice whose every read checks the remaining length.
///
/// Reads past the end return `None` instead of panicking; parsers turn that into
/// [`MediaError::Unreadable`](crate::MediaError::Unreadable).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The read position from the start of the slice.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Whether every byte has been read.
    pub(crate) fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The next `n` bytes, or `None` when fewer remain.
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.data.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    /// Skips `n` bytes, or returns `None` when fewer remain.
    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    /// Everything not yet read, consuming it.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let out = &self.data[self.pos..];
        self.pos = self.data.len();
        out
    }

    /// The next `N` bytes as an array.
    pub(crate) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    /// One byte.
    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    /// Big-endian `u16`.
    pub(crate) fn u16_be(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes(self.array()?))
    }

    /// Big-endian 24-bit unsigned integer.
    pub(crate) fn u24_be(&mut self) -> Option<u32> {
        let [a, b, c] = self.array()?;
        Some(u32::from_be_bytes([0, a, b, c]))
    }

    /// Big-endian `u32`.
    pub(crate) fn u32_be(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes(self.array()?))
    }

    /// Big-endian `i32`.
    pub(crate) fn i32_be(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.array()?))
    }

    /// Big-endian `u64`.
    pub(crate) fn u64_be(&mut self) -> Option<u64> {
        Some(u64::from_be_bytes(self.array()?))
    }

    /// Big-endian `i64`.
    pub(crate) fn i64_be(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.array()?))
    }

    /// Little-endian `u16`.
    pub(crate) fn u16_le(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.array()?))
    }

    /// Little-endian `u32`.
    pub(crate) fn u32_le(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }
}

/// A little-endian `u16` at `off`, if in bounds.
pub(crate) fn le_u16(data: &[u8], off: usize) -> Option<u16> {
    Cursor::new(data.get(off..)?).u16_le()
}

/// A little-endian `u32` at `off`, if in bounds.
pub(crate) fn le_u32(data: &[u8], off: usize) -> Option<u32> {
    Cursor::new(data.get(off..)?).u32_le()
}
