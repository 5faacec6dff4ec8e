//! Throughput of the audio feature extractor on 60 s of speech.
//!
//! Criterion's "elements" are seconds of audio here, so the reported
//! throughput (elem/s) is the realtime factor: seconds of audio analysed per
//! second of one core.

use criterion::{criterion_main, Criterion, Throughput};

use attune_core::features::{extract, summarize, FeatureExtractor, Span, SAMPLE_RATE};

const SECONDS: usize = 60;

/// 60 s built by repeating the committed speech fixtures (raw s16le 16 kHz
/// dialogue followed by the analyzer's espeak-ng WAVs).
fn speech_60s() -> Vec<f32> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
    let raw = std::fs::read(format!("{root}/speech_16k_s16le.pcm")).expect("speech fixture");
    let mut source: Vec<f32> = raw
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
        .collect();
    for name in ["baseline", "two_voices", "hesitant"] {
        let mut reader =
            hound::WavReader::open(format!("{root}/speech/{name}.wav")).expect("speech wav");
        source.extend(
            reader
                .samples::<i16>()
                .map(|s| s.unwrap_or(0) as f32 / 32768.0),
        );
    }
    let n = SECONDS * SAMPLE_RATE as usize;
    source.iter().copied().cycle().take(n).collect()
}

fn bench(c: &mut Criterion) {
    let pcm = speech_60s();
    let mut group = c.benchmark_group("features");
    group.throughput(Throughput::Elements(SECONDS as u64));
    group.sample_size(10);
    group.bench_function("extract_60s", |b| {
        b.iter(|| extract(std::hint::black_box(&pcm)))
    });
    group.bench_function("stream_60s_in_20ms_chunks", |b| {
        b.iter(|| {
            let mut x = FeatureExtractor::new();
            for chunk in pcm.chunks(320) {
                std::hint::black_box(x.push(chunk).len());
            }
            x.finish();
            x.into_features()
        })
    });
    let features = extract(&pcm);
    group.bench_function("summarize_12_windows_of_5s", |b| {
        b.iter(|| {
            (0..12)
                .map(|w| {
                    summarize(&features, Span::new(w as f64 * 5.0, (w + 1) as f64 * 5.0))
                        .syllable_count
                })
                .sum::<u32>()
        })
    });
    group.finish();
}

// The macro defines an undocumented public function; a bench binary has no
// API to document.
#[allow(missing_docs)]
mod group {
    criterion::criterion_group!(benches, super::bench);
}
criterion_main!(group::benches);
