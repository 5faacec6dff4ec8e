//! Diarization error rate of the speaker tracker on the committed corpora: the real pyannote.audio sample and the labelled synthetic conversations.
//!
//! ```text
//! cargo run --release -p attune-core --example diarization_eval
//! ```
//!
//! Prints one row per file (DER with a 0.25 s collar, pyannote.metrics
//! convention, for the online tracker that streams and uploads use and for
//! the whole-file clustering) and the corpus totals (time-weighted).

use attune_core::diarization::{
    diarization_error_rate, parse_rttm, speaker_segments, DerBreakdown,
};
use attune_core::features::{self, DiarizeParams, FrameFeatures};

const COLLAR: f64 = 0.25;

fn read_wav(path: &str) -> Vec<f32> {
    let mut reader = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    reader
        .samples::<i16>()
        .map(|s| s.unwrap_or(0) as f32 / 32768.0)
        .collect()
}

fn evaluate(wav: &str, rttm: &str) -> (DerBreakdown, DerBreakdown, usize, usize) {
    let reference = parse_rttm(&std::fs::read_to_string(rttm).unwrap_or_default());
    let online: FrameFeatures = features::extract(&read_wav(wav));
    // For tuning outside Rust: the units and the hypothesis speech segments.
    if let Ok(dir) = std::env::var("DIARIZATION_DUMP") {
        let name = std::path::Path::new(wav)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let speech: Vec<(f64, f64)> = speaker_segments(&online)
            .iter()
            .map(|s| (s.start, s.end))
            .collect();
        let dump = serde_json::json!({ "units": online.speech_units, "speech": speech });
        let _ = std::fs::write(format!("{dir}/{name}.json"), dump.to_string());
    }
    let mut offline = online.clone();
    features::diarize_with(&mut offline, &params());
    let count = |f: &FrameFeatures| {
        let mut ids: Vec<u8> = f.speech_units.iter().filter_map(|u| u.speaker).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    (
        diarization_error_rate(&reference, &speaker_segments(&online), COLLAR),
        diarization_error_rate(&reference, &speaker_segments(&offline), COLLAR),
        count(&online),
        count(&offline),
    )
}

/// The whole-file settings, defaults unless overridden for tuning by
/// `DIARIZE_LAMBDA`, `DIARIZE_LINEAR`, `DIARIZE_SHRINK`, `DIARIZE_BLOCK`, `DIARIZE_SWITCH`,
/// `DIARIZE_PASSES`, `DIARIZE_F0`, `DIARIZE_RECLUSTER`.
fn params() -> DiarizeParams {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
    let d = DiarizeParams::default();
    DiarizeParams {
        lambda: var("DIARIZE_LAMBDA").unwrap_or(d.lambda),
        linear_lambda: var("DIARIZE_LINEAR").unwrap_or(d.linear_lambda),
        shrink_frames: var("DIARIZE_SHRINK").unwrap_or(d.shrink_frames),
        block_frames: var("DIARIZE_BLOCK").map_or(d.block_frames, |v| v as usize),
        switch_penalty: var("DIARIZE_SWITCH").unwrap_or(d.switch_penalty),
        passes: var("DIARIZE_PASSES").map_or(d.passes, |v| v as usize),
        f0_weight: var("DIARIZE_F0").unwrap_or(d.f0_weight),
        recluster_lambda: var("DIARIZE_RECLUSTER").unwrap_or(d.recluster_lambda),
    }
}

fn row(name: &str, (on, off, n_on, n_off): &(DerBreakdown, DerBreakdown, usize, usize)) {
    println!(
        "| {name} | {:.1} % ({n_on}) | {:.1} % ({n_off}) | {:.1} / {:.1} / {:.1} % |",
        100.0 * on.rate(),
        100.0 * off.rate(),
        100.0 * off.missed / off.total.max(1e-9),
        100.0 * off.false_alarm / off.total.max(1e-9),
        100.0 * off.confusion / off.total.max(1e-9),
    );
}

fn main() {
    let root = format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    println!("| File | DER online (speakers) | DER whole file (speakers) | whole file: missed / false alarm / confusion |");
    println!("|---|---|---|---|");
    let real = evaluate(
        &format!("{root}/real/sample.wav"),
        &format!("{root}/real/sample.rttm"),
    );
    row("real/sample (2 speakers)", &real);
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/conversations/manifest.json"))
            .expect("conversation manifest"),
    )
    .expect("manifest is JSON");
    let mut total = (DerBreakdown::default(), DerBreakdown::default());
    for c in manifest["conversations"].as_array().into_iter().flatten() {
        let name = c["name"].as_str().unwrap_or_default();
        let speakers = c["speakers"].as_object().map_or(0, |o| o.len());
        let r = evaluate(
            &format!("{root}/conversations/{name}.wav"),
            &format!("{root}/conversations/{name}.rttm"),
        );
        row(&format!("{name} ({speakers} speakers)"), &r);
        total = (total.0.add(&r.0), total.1.add(&r.1));
    }
    println!(
        "| synthetic set, total | {:.1} % | {:.1} % | |",
        100.0 * total.0.rate(),
        100.0 * total.1.rate()
    );
}
