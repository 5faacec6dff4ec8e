//! Untrusted input: every entry point over mutated fixtures returns (an error or a result) and
//! never panics, and what it returns stays within what the input can hold.
//!
//! The mutator is seeded, so a failure reproduces. `ATTUNE_MEDIA_MUTATIONS` raises the number of
//! fully decoded mutants per fixture, and `ATTUNE_MEDIA_PARSER_MUTATIONS` the number of mutants
//! per fixture run through every parser with a short decode, for a longer soak (the defaults keep
//! `cargo test` short in debug builds). Inputs the cargo-fuzz targets in `fuzz/` found are kept
//! at the end, one test each.

use std::path::Path;

use attune_media::{decode_audio_limited, encoded_video, probe, video_frames};

/// xorshift64*: small, deterministic, good enough to pick bytes and offsets.
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

/// One mutant of `data`: a few random edits of the kinds that break parsers (bit flips, size
/// fields set to extremes, cuts, duplicated or deleted ranges).
fn mutate(data: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut out = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        if out.is_empty() {
            out.push(rng.next() as u8);
            continue;
        }
        let at = rng.below(out.len());
        match rng.below(6) {
            0 => out[at] ^= 1 << rng.below(8),
            1 => {
                // A length or count field blown up to its maximum or zero.
                let v = if rng.below(2) == 0 { 0xff } else { 0x00 };
                for b in out.iter_mut().skip(at).take(4) {
                    *b = v;
                }
            }
            2 => out.truncate(at),
            3 => {
                let len = rng.below(64).min(out.len() - at);
                let chunk: Vec<u8> = out[at..at + len].to_vec();
                let to = rng.below(out.len());
                out.splice(to..to, chunk);
            }
            4 => {
                let len = rng.below(256).min(out.len() - at);
                out.drain(at..at + len);
            }
            _ => out[at] = rng.next() as u8,
        }
    }
    out
}

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut out = Vec::new();
    for sub in ["", "segments"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let path = e.path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            let media = !matches!(
                path.extension().and_then(|x| x.to_str()),
                Some("json" | "md" | "sh" | "pcm")
            );
            if path.is_file() && media {
                out.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() > 20, "fixtures missing");
    out
}

fn mutations() -> usize {
    std::env::var("ATTUNE_MEDIA_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

#[test]
fn mutated_fixtures_never_panic_and_stay_bounded() {
    for (name, data) in fixtures() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64 ^ data.len() as u64);
        for i in 0..mutations() {
            let m = mutate(&data, &mut rng);
            if let Ok(info) = probe(&m) {
                assert!(
                    info.duration.is_finite() && info.duration > 0.0,
                    "{name} #{i}: {info:?}"
                );
            }
            if let Ok(frames) = video_frames(&m) {
                // Every listed frame occupies at least one byte of the input.
                assert!(
                    frames.len() <= m.len(),
                    "{name} #{i}: {} frames from {} bytes",
                    frames.len(),
                    m.len()
                );
                assert!(
                    frames.iter().all(|f| f.pts.is_finite()),
                    "{name} #{i}: non-finite pts"
                );
            }
            // A short cap keeps the soak fast; the cap itself is part of what is exercised.
            if let Ok(pcm) = decode_audio_limited(&m, 20.0) {
                assert!(
                    pcm.samples.len() <= 20 * 16_000 + 16_000,
                    "{name} #{i}: {} samples",
                    pcm.samples.len()
                );
                assert!(
                    pcm.samples.iter().all(|s| s.is_finite()),
                    "{name} #{i}: non-finite sample"
                );
            }
        }
    }
}

fn parser_mutations() -> usize {
    // 128 per fixture: about 5,800 mutants.
    std::env::var("ATTUNE_MEDIA_PARSER_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

#[test]
fn thousands_of_mutants_go_through_every_parser() {
    // Every container parser (probe, the frame lists, the encoded frames) sees each mutant in
    // full; the audio decode is capped at a quarter second, enough to set up the decoder and
    // resampler and run the demuxer's packet path, so thousands of inputs stay quick.
    for (name, data) in fixtures() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d ^ (name.len() as u64) << 32 ^ data.len() as u64);
        for i in 0..parser_mutations() {
            let m = mutate(&data, &mut rng);
            if let Ok(info) = probe(&m) {
                assert!(
                    info.duration.is_finite() && info.duration > 0.0,
                    "{name} #{i}: {info:?}"
                );
                assert!(info.tracks.len() <= m.len(), "{name} #{i}: tracks");
            }
            if let Ok(frames) = video_frames(&m) {
                assert!(frames.len() <= m.len(), "{name} #{i}: frames");
                assert!(frames.iter().all(|f| f.pts.is_finite()), "{name} #{i}: pts");
            }
            if let Ok(Some(video)) = encoded_video(&m) {
                assert!(video.frames.len() <= m.len(), "{name} #{i}: encoded frames");
            }
            if let Ok(pcm) = decode_audio_limited(&m, 0.25) {
                assert!(pcm.samples.len() <= 16_000 + 4_000, "{name} #{i}: samples");
                assert!(pcm.samples.iter().all(|s| s.is_finite()), "{name} #{i}");
            }
        }
    }
}

#[test]
fn a_pure_cut_at_every_region_of_a_file_is_handled() {
    // Truncation is the commonest real damage (an interrupted upload): cut each fixture at 7
    // evenly spaced points and run everything on what is left.
    for (name, data) in fixtures() {
        for k in 1..8 {
            let cut = &data[..data.len() * k / 8];
            let _ = probe(cut);
            let _ = video_frames(cut);
            if let Ok(pcm) = decode_audio_limited(cut, 20.0) {
                assert!(
                    pcm.samples.iter().all(|s| s.is_finite()),
                    "{name} cut {k}/8"
                );
            }
        }
    }
}

#[test]
fn oversized_size_fields_are_refused_without_allocating_them() {
    // An MP4 whose moov claims 4 GiB, an EBML segment of 2^56 bytes, a RIFF chunk of 4 GiB: each
    // must be refused (or read as far as the bytes go) rather than trusted.
    let mut mp4 = b"\x00\x00\x00\x10ftypisom\x00\x00\x00\x00".to_vec();
    mp4.extend_from_slice(b"\xff\xff\xff\xffmoov\x00\x00\x00\x00");
    assert_eq!(probe(&mp4).unwrap_err().code_str(), "ih5002");

    let mut mkv = vec![
        0x1a, 0x45, 0xdf, 0xa3, 0x87, 0x42, 0x82, 0x84, b'w', b'e', b'b', b'm',
    ];
    mkv.extend_from_slice(&[
        0x18, 0x53, 0x80, 0x67, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    ]);
    mkv.extend_from_slice(&[
        0x16, 0x54, 0xae, 0x6b, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    ]);
    assert_eq!(probe(&mkv).unwrap_err().code_str(), "ih5002");

    let mut avi = b"RIFF\xff\xff\xff\xffAVI LIST\xff\xff\xff\xffhdrl".to_vec();
    avi.extend_from_slice(b"avih\xff\xff\xff\xff");
    assert_eq!(probe(&avi).unwrap_err().code_str(), "ih5002");
}

// Inputs the fuzz targets found (fuzz/README.md), minimised with `cargo fuzz tmin`.

#[test]
fn a_huge_finite_float_sample_decodes_to_finite_pcm() {
    // Fuzz target `wav`: a WAVE_FORMAT_EXTENSIBLE 32-bit float file at 10112 Hz whose only
    // sample is -1.7e38 (bytes 00 00 00 ff). Finite, so it passed the NaN/infinity filter, and
    // the resampler's sums overflowed to infinity and NaN around it.
    const INPUT: &[u8] = b"RIFF\x48\xee\x02\x00WAVEfmt \x28\x00\x00\x00\xfe\xff\x01\x00\x80\x27\
        \x00\x00\x00\xfa\x00\x00\x04\x00\x20\x00\x16\x00\x20\x00\x04\x00\x00\x00\x03\x00\x00\x00\
        \x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71fact\x04\x00\x00\x00\x80\xbb\x00\x00\
        data\x00\xee\x02\x00\x00\x00\x00\xff";
    let pcm = decode_audio_limited(INPUT, 20.0).expect("one float sample is decodable audio");
    assert!(!pcm.samples.is_empty());
    assert!(
        pcm.samples.iter().all(|s| s.is_finite()),
        "non-finite samples: {:?}",
        &pcm.samples[..pcm.samples.len().min(8)]
    );
}

/// 16-bit mono PCM WAV of `seconds` of a tone at 16 kHz, its `RIFF` and `data` sizes as given
/// (`None`: the true sizes).
fn wav(seconds: f64, riff_size: Option<u32>, data_size: Option<u32>) -> Vec<u8> {
    let rate = 16_000u32;
    let n = (seconds * f64::from(rate)) as usize;
    let mut data = Vec::with_capacity(n * 2);
    for i in 0..n {
        let s =
            (8000.0 * (i as f64 * 180.0 * std::f64::consts::TAU / f64::from(rate)).sin()) as i16;
        data.extend_from_slice(&s.to_le_bytes());
    }
    let true_data = data.len() as u32;
    let mut out = Vec::new();
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&riff_size.unwrap_or(36 + true_data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    for field in [
        16u32.to_le_bytes().as_slice(),
        &1u16.to_le_bytes(),
        &1u16.to_le_bytes(),
    ] {
        out.extend_from_slice(field);
    }
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_size.unwrap_or(true_data).to_le_bytes());
    out.extend_from_slice(&data);
    out
}

#[test]
fn a_wav_whose_header_claims_more_than_it_holds_is_read_for_what_it_holds() {
    // Issue 16: a recorder that crashed leaves the sizes of the data it meant to write; a capture
    // written to a pipe leaves 0xFFFFFFFF. ffmpeg and Praat read the samples present; so do we.
    let intact = wav(8.0, None, None);
    let claimed = 8 * 16_000 * 2 * 10;
    let cases = [
        (
            "crashed recorder",
            wav(8.0, Some(36 + claimed), Some(claimed)),
        ),
        (
            "written to a pipe",
            wav(8.0, Some(u32::MAX), Some(u32::MAX)),
        ),
        ("sizes left at zero", wav(8.0, Some(0), Some(0))),
    ];
    let reference = probe(&intact).unwrap();
    let reference_pcm = decode_audio_limited(&intact, 60.0).unwrap();
    assert!((reference.duration - 8.0).abs() < 1e-6);
    for (what, bytes) in cases {
        let info = probe(&bytes).unwrap_or_else(|e| panic!("{what}: refused: {e}"));
        assert!(
            (info.duration - reference.duration).abs() < 1e-6,
            "{what}: {} s, the file holds 8 s",
            info.duration
        );
        let pcm = decode_audio_limited(&bytes, 60.0).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(
            pcm.samples, reference_pcm.samples,
            "{what}: the same samples"
        );
    }
}
