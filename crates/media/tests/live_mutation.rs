//! Untrusted live input: thousands of mutated, truncated, reordered chunk sequences never make
//! the live reader panic, and what it holds and returns stays within its limits.
//!
//! The mutator is seeded, so a failure reproduces. `ATTUNE_LIVE_MUTATIONS` sets the number of
//! sequences per base input (default 200; the bases are the first kilobytes of the fixtures,
//! which hold every header and the first units, so each sequence stays quick in debug builds).

use std::path::Path;

use attune_media::live::{LiveLimits, LiveMode, LivePixels, LiveReader};

fn read(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A few random edits of the kinds that break parsers: bit flips, size fields set to extremes,
/// cuts, duplicated and deleted ranges.
fn mutate(data: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..rng.below(5) {
        if out.is_empty() {
            out.push(rng.next() as u8);
            continue;
        }
        let at = rng.below(out.len());
        match rng.below(6) {
            0 => out[at] ^= 1 << rng.below(8),
            1 => {
                let v = if rng.below(2) == 0 { 0xff } else { 0x00 };
                for b in out.iter_mut().skip(at).take(1 + rng.below(8)) {
                    *b = v;
                }
            }
            2 => out.truncate(at),
            3 => {
                let len = rng.below(512).min(out.len() - at);
                let chunk: Vec<u8> = out[at..at + len].to_vec();
                let to = rng.below(out.len());
                out.splice(to..to, chunk);
            }
            4 => {
                let len = rng.below(512).min(out.len() - at);
                out.drain(at..at + len);
            }
            _ => out[at] = rng.next() as u8,
        }
    }
    out
}

/// Cuts `data` into frames of random sizes, then sometimes drops, repeats or swaps frames.
fn frames(data: &[u8], rng: &mut Rng) -> Vec<Vec<u8>> {
    let bound = [1usize, 7, 64, 1000, 5000, 100_000][rng.below(6)];
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = (1 + rng.below(bound)).min(rest.len());
        out.push(rest[..n].to_vec());
        rest = &rest[n..];
    }
    if !out.is_empty() {
        for _ in 0..rng.below(3) {
            let i = rng.below(out.len());
            match rng.below(3) {
                0 => {
                    out.remove(i);
                }
                1 => {
                    let f = out[i].clone();
                    out.insert(rng.below(out.len()), f);
                }
                _ => {
                    let j = rng.below(out.len());
                    out.swap(i, j);
                }
            }
            if out.is_empty() {
                break;
            }
        }
    }
    out
}

/// A stream whose first SimpleBlock claims `size` bytes: the shape of an allocation attack.
fn webm_with_block_size(webm: &[u8], size: u64) -> Vec<u8> {
    let cluster = webm
        .windows(4)
        .position(|w| w == [0x1f, 0x43, 0xb6, 0x75])
        .expect("a cluster");
    let mut out = webm[..cluster].to_vec();
    out.extend_from_slice(&[0x1f, 0x43, 0xb6, 0x75, 0x01, 0xff, 0xff, 0xff]);
    out.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xe7, 0x81, 0x00, 0xa3, 0x01]);
    out.extend_from_slice(&size.to_be_bytes()[1..]);
    out.extend_from_slice(&[0x81, 0x00, 0x00, 0x80]);
    out
}

struct Base {
    name: String,
    /// The frames of one clean session; mutation applies to their concatenation unless the
    /// base is a list of self-contained files.
    files: Vec<Vec<u8>>,
    mode: LiveMode,
}

fn bases() -> Vec<Base> {
    let head = |name: &str, n: usize| {
        let mut d = read(name);
        d.truncate(n);
        d
    };
    let stream = |name: &str, n: usize, mode: LiveMode| Base {
        name: name.to_string(),
        files: vec![head(name, n)],
        mode,
    };
    let webm = read("segments/continuous.webm");
    vec![
        stream("segments/continuous.webm", 8_000, LiveMode::Auto),
        stream("segments/continuous.webm", 8_000, LiveMode::Continuous),
        stream("webm_vp8_vorbis.webm", 10_000, LiveMode::Auto),
        stream("mkv_mpeg4_mp3.mkv", 8_000, LiveMode::Auto),
        stream("mp4frag_h264_aac.mp4", 6_000, LiveMode::Auto),
        stream("ts_h264_aac.ts", 12_000, LiveMode::Auto),
        stream("ts_mpeg2video_mp2.ts", 12_000, LiveMode::Continuous),
        stream(
            "speech_24k_s16le.pcm",
            9_001,
            LiveMode::RawPcm(attune_media::live::PcmRate::Hz24000),
        ),
        Base {
            name: "segments".into(),
            files: vec![
                head("segments/seg0.webm", 6_000),
                head("segments/seg1.webm", 6_000),
                head("short_2s.mp4", 20_000),
            ],
            mode: LiveMode::Segments,
        },
        Base {
            name: "huge block".into(),
            files: vec![webm_with_block_size(&webm, 1 << 50)],
            mode: LiveMode::Auto,
        },
    ]
}

fn mutations() -> usize {
    std::env::var("ATTUNE_LIVE_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn mutated_chunk_sequences_never_panic_and_stay_bounded() {
    // Small limits, so that the fatal paths are exercised too.
    let limits = LiveLimits {
        max_pending_bytes: 256 * 1024,
        hold_bytes: 64 * 1024,
        max_media_seconds: 30.0,
    };
    let codes = [
        "ih6007", "ih5004", "ih5006", "ih5001", "ih5008", "ih5003", "ih6010", "ih6004",
    ];
    let mut sequences = 0usize;
    for base in bases() {
        let mut rng = Rng(0x5eed ^ (base.name.len() as u64) << 32 ^ base.files.len() as u64);
        for i in 0..mutations() {
            let what = format!("{} #{i}", base.name);
            let sequence: Vec<Vec<u8>> = if base.mode == LiveMode::Segments {
                base.files.iter().map(|f| mutate(f, &mut rng)).collect()
            } else {
                frames(&mutate(&base.files.concat(), &mut rng), &mut rng)
            };
            let mut reader = LiveReader::with_mode(base.mode, true).with_limits(limits);
            if i % 2 == 0 {
                // Every other sequence through the pixel decoders too (VP8 in the WebM bases).
                reader = reader.with_pixels(LivePixels::default());
            }
            let mut pushed = 0usize;
            let mut frames_seen = 0usize;
            for (k, frame) in sequence.iter().enumerate() {
                pushed += frame.len();
                let r = reader.push(frame, k as u64);
                frames_seen += r.video_frames.len();
                assert!(
                    reader.buffered_bytes() <= limits.max_pending_bytes,
                    "{what}: holds {} bytes",
                    reader.buffered_bytes()
                );
                assert!(
                    reader.buffered_bytes() <= pushed,
                    "{what}: holds more than it got"
                );
                assert!(
                    r.video_frames.iter().all(|f| f.pts.is_finite()),
                    "{what}: non-finite pts"
                );
                for p in &r.problems {
                    assert!(codes.contains(&p.problem.code_str()), "{what}: {p:?}");
                    assert!(
                        p.segment <= k as u64,
                        "{what}: problem for a future segment"
                    );
                }
                if let Some(span) = r.span {
                    assert!(
                        span.start.is_finite() && span.end.is_finite() && span.end > span.start
                    );
                }
                assert!(
                    reader.samples().iter().all(|s| s.is_finite()),
                    "{what}: non-finite sample"
                );
            }
            let r = reader.finish();
            frames_seen += r.video_frames.len();
            assert!(
                reader.samples_total() as f64 <= limits.max_media_seconds * 16_000.0,
                "{what}: {} samples",
                reader.samples_total()
            );
            // Every listed frame took at least one byte of the input.
            assert!(
                frames_seen <= pushed,
                "{what}: {frames_seen} frames from {pushed} bytes"
            );
            sequences += 1;
        }
    }
    assert!(sequences >= 10 * mutations());
}

#[test]
fn endless_garbage_ends_in_ih6010_with_nothing_held() {
    let limits = LiveLimits {
        hold_bytes: 1 << 20,
        ..LiveLimits::default()
    };
    for mode in [LiveMode::Auto, LiveMode::Continuous, LiveMode::Segments] {
        let mut rng = Rng(42);
        let mut reader = LiveReader::with_mode(mode, true).with_limits(limits);
        let mut fatal = None;
        for k in 0..1000u64 {
            let frame: Vec<u8> = (0..4096).map(|_| rng.next() as u8).collect();
            let r = reader.push(&frame, k);
            assert!(reader.buffered_bytes() <= 8192, "{mode:?}");
            if r.fatal.is_some() {
                fatal = r.fatal;
                break;
            }
        }
        assert_eq!(fatal.map(|e| e.code_str()), Some("ih6010"), "{mode:?}");
    }
}
