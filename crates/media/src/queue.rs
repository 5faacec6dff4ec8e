//! A byte queue over a growing stream, for the stream demuxers: bytes are appended as frames arrive and dropped as parsed.

/// Bytes of a stream not yet consumed, with their absolute position in the stream.
///
/// Consumed bytes are not moved on every call: the front is compacted only once it is at least
/// as large as what remains (or 64 KiB), so feeding a stream one byte at a time stays linear.
#[derive(Debug, Default)]
pub(crate) struct ByteQueue {
    buf: Vec<u8>,
    /// Index in `buf` of the first unconsumed byte.
    head: usize,
    /// Stream position of `buf[head]`.
    pos: u64,
}

impl ByteQueue {
    /// Appends `data`.
    pub(crate) fn extend(&mut self, data: &[u8]) {
        if self.head > 0 && (self.head >= 64 * 1024 || self.head >= self.buf.len() - self.head) {
            self.buf.drain(..self.head);
            self.head = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The unconsumed bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[self.head..]
    }

    /// How many bytes are unconsumed.
    pub(crate) fn len(&self) -> usize {
        self.buf.len() - self.head
    }

    /// Stream position of the first unconsumed byte.
    #[cfg(test)]
    pub(crate) fn pos(&self) -> u64 {
        self.pos
    }

    /// Drops up to `n` bytes from the front; returns how many were dropped.
    pub(crate) fn consume(&mut self, n: usize) -> usize {
        let n = n.min(self.len());
        self.head += n;
        self.pos += n as u64;
        if self.head == self.buf.len() {
            self.buf.clear();
            self.head = 0;
        }
        n
    }

    /// Drops everything waiting.
    pub(crate) fn clear(&mut self) {
        let n = self.len();
        self.consume(n);
        self.buf = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_stay_absolute_across_compaction() {
        let mut q = ByteQueue::default();
        for i in 0..200_000u32 {
            q.extend(&[i as u8]);
            if q.len() > 3 {
                q.consume(1);
            }
        }
        assert_eq!(q.len(), 3);
        assert_eq!(q.pos(), 200_000 - 3);
        assert_eq!(q.bytes()[2], (199_999u32) as u8);
        assert!(q.buf.len() < 70 * 1024, "consumed bytes were kept");
    }
}
