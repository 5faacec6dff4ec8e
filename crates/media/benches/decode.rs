//! Audio decode throughput of `decode_audio` on 60 s files: AAC in MP4, Opus in WebM, FLAC;
//! and video decode cost per frame at 720p (5 s at 30 fps of ffmpeg's `testsrc2`) for H.264
//! (High profile with B-frames, as libx264 writes by default), VP8 and VP9.
//!
//! For video, criterion's "elements" are frames, so elem/s is frames decoded per second of one
//! core. Two settings: every frame to 160 px luma (`luma`, what the motion measures use), and
//! the analysis setting (`sampled`: every frame decoded, 10 of 30 a second converted to 160 px
//! luma and 320 px RGB).
//!
//! Criterion's "elements" are seconds of media, so the reported throughput (elem/s) is seconds
//! of media decoded (to 16 kHz mono, resampling included) per second of one core. The files are
//! not committed: `benches/decode_vs_ffmpeg.sh` makes them with ffmpeg from the speech fixtures
//! and runs this bench with `ATTUNE_BENCH_MEDIA` set to their directory (default:
//! `target/bench-media` of the workspace, or of `CARGO_TARGET_DIR`). Without the files the bench
//! says so and measures nothing.

use std::path::PathBuf;

use criterion::{criterion_main, Criterion, Throughput};

/// The files, their seconds of media and the benchmark names.
const FILES: [(&str, u64); 3] = [
    ("aac_60s.mp4", 60),
    ("opus_60s.webm", 60),
    ("flac_60s.flac", 60),
];

/// The 720p video files and their frame counts.
const VIDEO_FILES: [(&str, u64); 3] = [
    ("h264_720p.mp4", 150),
    ("vp8_720p.webm", 150),
    ("vp9_720p.webm", 150),
];

fn media_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ATTUNE_BENCH_MEDIA") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../target")));
    target.join("bench-media")
}

fn bench(c: &mut Criterion) {
    let dir = media_dir();
    let mut group = c.benchmark_group("decode_audio");
    group.sample_size(10);
    for (name, seconds) in FILES {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!(
                "decode bench: skipping {name}: {} not found (run benches/decode_vs_ffmpeg.sh, \
                 or set ATTUNE_BENCH_MEDIA to a directory holding it)",
                path.display()
            );
            continue;
        };
        // A file that does not decode would measure an error path: refuse it loudly.
        let pcm = attune_media::decode_audio(&bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let decoded = pcm.samples.len() as f64 / f64::from(attune_media::Pcm::SAMPLE_RATE);
        assert!(
            (decoded - seconds as f64).abs() < 0.5,
            "{name} decodes to {decoded} s, not {seconds} s"
        );
        group.throughput(Throughput::Elements(seconds));
        group.bench_function(name, |b| {
            b.iter(|| attune_media::decode_audio(std::hint::black_box(&bytes)))
        });
    }
    group.finish();
    bench_video(c, &dir);
}

fn bench_video(c: &mut Criterion, dir: &std::path::Path) {
    use attune_media::video::{decode_pictures_each, PictureOptions};
    let mut group = c.benchmark_group("decode_video");
    group.sample_size(10);
    for (name, frames) in VIDEO_FILES {
        let path = dir.join(name);
        let Ok(bytes) = std::fs::read(&path) else {
            eprintln!(
                "decode bench: skipping {name}: {} not found",
                path.display()
            );
            continue;
        };
        let luma = PictureOptions {
            luma_width: 160,
            rgb_width: None,
            sample_fps: None,
        };
        let sampled = PictureOptions {
            luma_width: 160,
            rgb_width: Some(320),
            sample_fps: Some(10.0),
        };
        let mut n = 0u64;
        let summary = decode_pictures_each(&bytes, luma, |_| n += 1)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!((n, summary.skipped), (frames, 0), "{name}");
        group.throughput(Throughput::Elements(frames));
        for (setting, options) in [("luma", luma), ("sampled", sampled)] {
            group.bench_function(format!("{name}/{setting}"), |b| {
                b.iter(|| decode_pictures_each(std::hint::black_box(&bytes), options, |_| {}))
            });
        }
    }
    group.finish();
}

// The macro defines an undocumented public function; a bench binary has no API to document.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
