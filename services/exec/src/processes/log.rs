//! A background process's output log: bounded, dropping its oldest bytes,
//! addressed by absolute offsets that stay valid as the front is dropped.

use std::collections::VecDeque;

/// The newest `cap` bytes of an output stream.
#[derive(Debug)]
pub(super) struct OutputLog {
    bytes: VecDeque<u8>,
    /// Absolute offset of `bytes[0]`: how many bytes were dropped so far.
    start: u64,
    cap: usize,
}

/// What [`OutputLog::read`] found.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Slice {
    pub(super) data: Vec<u8>,
    pub(super) next_offset: u64,
    /// Bytes between the requested offset and the oldest one still kept.
    pub(super) dropped: u64,
}

impl OutputLog {
    pub(super) fn new(cap: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            start: 0,
            cap,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        let excess = self.bytes.len().saturating_sub(self.cap);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.start += excess as u64;
        }
    }

    /// Up to `max` bytes from absolute `offset`. An offset whose bytes were
    /// dropped reads from the oldest byte kept; one past the end reads
    /// nothing and points at the end.
    pub(super) fn read(&self, offset: u64, max: usize) -> Slice {
        let end = self.start + self.bytes.len() as u64;
        let from = offset.clamp(self.start, end);
        let skip = usize::try_from(from - self.start).unwrap_or(usize::MAX);
        let data: Vec<u8> = self.bytes.iter().skip(skip).take(max).copied().collect();
        Slice {
            next_offset: from + data.len() as u64,
            dropped: self.start.saturating_sub(offset),
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{OutputLog, Slice};

    fn slice(data: &[u8], next_offset: u64, dropped: u64) -> Slice {
        Slice {
            data: data.to_vec(),
            next_offset,
            dropped,
        }
    }

    #[test]
    fn reads_incrementally() {
        let mut log = OutputLog::new(100);
        log.push(b"hello ");
        assert_eq!(log.read(0, 3), slice(b"hel", 3, 0));
        assert_eq!(log.read(3, 100), slice(b"lo ", 6, 0));
        assert_eq!(log.read(6, 100), slice(b"", 6, 0));
        log.push(b"world");
        assert_eq!(log.read(6, 100), slice(b"world", 11, 0));
    }

    #[test]
    fn drops_the_oldest_bytes_and_keeps_offsets_absolute() {
        let mut log = OutputLog::new(4);
        log.push(b"abcdef");
        assert_eq!(log.read(0, 100), slice(b"cdef", 6, 2));
        log.push(b"gh");
        assert_eq!(log.read(5, 100), slice(b"fgh", 8, 0));
        assert_eq!(log.read(1, 2), slice(b"ef", 6, 3));
    }

    #[test]
    fn offset_past_the_end_reads_nothing() {
        let mut log = OutputLog::new(4);
        log.push(b"ab");
        assert_eq!(log.read(10, 5), slice(b"", 2, 0));
    }
}
