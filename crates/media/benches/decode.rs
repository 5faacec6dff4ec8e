//! Audio decode throughput of `decode_audio` on 60 s files: AAC in MP4, Opus in WebM, FLAC.
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
}

// The macro defines an undocumented public function; a bench binary has no API to document.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
