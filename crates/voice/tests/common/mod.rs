//! Shared by this crate's tests and examples (the examples include it with `#[path]`).

use std::path::Path;

/// The samples of a 16 kHz mono 16-bit PCM WAV file, in -1..1. Panics, naming the file, on
/// anything else: these are the committed fixtures and the files a developer points at.
pub fn read_wav(path: impl AsRef<Path>) -> Vec<f32> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE",
        "{}: not a WAV file",
        path.display()
    );
    let mut at = 12;
    let mut format_ok = false;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        let body = &bytes[at + 8..(at + 8 + size).min(bytes.len())];
        if id == b"fmt " && body.len() >= 16 {
            let u16_at = |i: usize| u16::from_le_bytes([body[i], body[i + 1]]);
            let rate = u32::from_le_bytes(body[4..8].try_into().unwrap());
            format_ok = u16_at(0) == 1 && u16_at(2) == 1 && rate == 16_000 && u16_at(14) == 16;
        } else if id == b"data" {
            assert!(format_ok, "{}: not 16 kHz mono 16-bit PCM", path.display());
            return body
                .chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
                .collect();
        }
        at += 8 + size + (size & 1);
    }
    panic!("{}: no data chunk", path.display())
}
