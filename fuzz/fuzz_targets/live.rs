//! The live reader fed the input cut into frames whose sizes come from the input itself.
//!
//! Layout: byte 0 picks the mode (bits 0-2: auto, segments, continuous, raw PCM at 16 kHz or
//! 24 kHz), whether the model needs video (bit 3), small limits (bit 4, so the hold and
//! pending limits and the media cap are reached) and the frame-size scale (bits 5-7: about 1,
//! 7, 64, 512 or 4096 bytes, the whole input as one frame, or sizes spread over 1 to 64 KiB);
//! bytes 1-4 seed the generator of the frame sizes; the rest is the media. `fuzz/seed.sh`
//! prepends such headers to the fixtures.
#![no_main]

use attune_media::live::{LiveLimits, LiveMode, LiveReader, PcmRate};

/// Header bytes before the media.
const HEADER: usize = 5;

/// xorshift32: deterministic frame sizes from the input's seed.
struct Sizes {
    state: u32,
    scale: Option<usize>,
}

impl Sizes {
    fn next(&mut self, left: usize) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        let r = self.state as usize;
        let size = match self.scale {
            None => left,
            // Around the scale: from 1 to twice it.
            Some(scale) => 1 + r % (2 * scale),
        };
        size.clamp(1, left.max(1))
    }
}

libfuzzer_sys::fuzz_target!(init: attune_media_fuzz::init(), |data: &[u8]| {
    let Some((header, media)) = data.split_first_chunk::<HEADER>() else {
        return;
    };
    let flags = header[0];
    let needs_video = flags & 0x08 != 0;
    let mode = match flags & 0x07 {
        1 => LiveMode::Segments,
        2 => LiveMode::Continuous,
        3 => LiveMode::RawPcm(PcmRate::Hz16000),
        4 => LiveMode::RawPcm(PcmRate::Hz24000),
        _ => LiveMode::Auto,
    };
    let limits = if flags & 0x10 != 0 {
        LiveLimits {
            max_pending_bytes: 16 * 1024,
            hold_bytes: 48 * 1024,
            max_media_seconds: 5.0,
        }
    } else {
        LiveLimits::default()
    };
    let scale = match flags >> 5 {
        0 => Some(1),
        1 => Some(4),
        2 => Some(32),
        3 => Some(256),
        4 => Some(2048),
        5 => None,
        _ => Some(32 * 1024),
    };
    let seed = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) | 1;
    let mut sizes = Sizes { state: seed, scale };

    let mut reader = LiveReader::with_mode(mode, needs_video).with_limits(limits);
    let mut rest = media;
    let mut segment = 0u64;
    let mut total = 0u64;
    let mut stopped = false;
    while !rest.is_empty() {
        let (frame, tail) = rest.split_at(sizes.next(rest.len()));
        rest = tail;
        let report = reader.push(frame, segment);
        total = checked(&mut reader, &report, total, &mut stopped, &limits);
        segment += 1;
    }
    let report = reader.finish();
    checked(&mut reader, &report, total, &mut stopped, &limits);
});

/// Checks one report against the reader's state; returns the new sample total.
fn checked(
    reader: &mut LiveReader,
    report: &attune_media::live::ChunkReport,
    total_before: u64,
    stopped: &mut bool,
    limits: &LiveLimits,
) -> u64 {
    if *stopped {
        assert!(
            report.fatal.is_some(),
            "a stopped reader forgot its fatal error"
        );
        assert!(!report.appended_media(), "a stopped reader appended media");
    }
    *stopped |= report.fatal.is_some();
    let total = reader.samples_total();
    assert_eq!(
        total - total_before,
        report.samples_appended as u64,
        "sample count"
    );
    if let Some(span) = report.span {
        assert!(
            span.start.is_finite() && span.end.is_finite() && span.start <= span.end,
            "span {span:?}"
        );
    }
    assert!(
        report.video_frames.iter().all(|f| f.pts.is_finite()),
        "non-finite pts"
    );
    assert!(
        reader.buffered_bytes() <= limits.max_pending_bytes,
        "{} bytes held over a limit of {}",
        reader.buffered_bytes(),
        limits.max_pending_bytes
    );
    // A session hands its PCM on as it goes; draining keeps the fuzzer's memory to one frame's.
    let pcm = reader.drain_samples();
    assert!(pcm.iter().all(|s| s.is_finite()), "non-finite sample");
    total
}
