//! Prints the frame features and the whole-file summary of a 16 kHz mono WAV
//! as JSON (used by `tests/reference/run.sh` to compare with Praat and
//! openSMILE).
//!
//! ```text
//! cargo run --release -p attune-core --example dump_features -- FILE.wav [--chunk N]
//! ```
//!
//! `--chunk N` feeds the extractor N samples at a time instead of the whole
//! buffer (the output must not change).

use attune_core::features::{summarize, FeatureExtractor, Span, SAMPLE_RATE};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: dump_features FILE.wav [--chunk N]");
        std::process::exit(2);
    };
    let chunk = match (args.next().as_deref(), args.next()) {
        (Some("--chunk"), Some(n)) => n.parse::<usize>().unwrap_or(0).max(1),
        _ => usize::MAX,
    };
    let mut reader = match hound::WavReader::open(&path) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dump_features: {path}: {e}");
            std::process::exit(1);
        }
    };
    let spec = reader.spec();
    if spec.sample_rate != SAMPLE_RATE || spec.channels != 1 {
        eprintln!(
            "dump_features: {path}: need 16 kHz mono, got {} Hz x {} channels",
            spec.sample_rate, spec.channels
        );
        std::process::exit(1);
    }
    let pcm: Vec<f32> = match spec.sample_format {
        hound::SampleFormat::Float => reader.samples::<f32>().map(|s| s.unwrap_or(0.0)).collect(),
        hound::SampleFormat::Int => {
            let scale = (1u64 << (spec.bits_per_sample - 1)) as f32;
            reader
                .samples::<i32>()
                .map(|s| s.unwrap_or(0) as f32 / scale)
                .collect()
        }
    };
    let mut extractor = FeatureExtractor::new();
    for part in pcm.chunks(chunk.min(pcm.len().max(1))) {
        extractor.push(part);
    }
    extractor.finish();
    let features = extractor.into_features();
    let summary = summarize(&features, Span::whole(&features));
    let out = serde_json::json!({
        "file": path,
        "features": features,
        "summary": summary,
    });
    println!("{out}");
}
