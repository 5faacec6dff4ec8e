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
    diarization_error_rate, parse_rttm, speaker_segments, DerBreakdown, SpeakerSegment,
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
    if std::env::var("DIARIZATION_PAIRS").is_ok() {
        pairs(wav, &offline, Some(&reference));
    }
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
/// `DIARIZE_PASSES`, `DIARIZE_F0`, `DIARIZE_RECLUSTER`, `DIARIZE_TIMBRE`, `DIARIZE_MIN_S`,
/// `DIARIZE_ISLAND`.
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
        timbre_merge: var("DIARIZE_TIMBRE").unwrap_or(d.timbre_merge),
        min_cluster_s: var("DIARIZE_MIN_S").unwrap_or(d.min_cluster_s),
        island_s: var("DIARIZE_ISLAND").unwrap_or(d.island_s),
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

/// Per hypothesis speaker: voiced seconds, mean timbre (MFCC 1-13) and
/// median-free mean F0; and the pooled within-unit timbre variance.
#[allow(clippy::type_complexity)]
fn speaker_models(f: &FrameFeatures) -> (Vec<(u8, f64, Vec<f64>, f64)>, Vec<f64>) {
    let dims = features::TIMBRE_DIMS;
    let mut acc: std::collections::BTreeMap<u8, (f64, Vec<f64>, f64)> = Default::default();
    let (mut within, mut n_within) = (vec![0.0; dims], 0.0);
    for u in &f.speech_units {
        let Some(s) = u.speaker else { continue };
        let xs: Vec<([f32; 13], f32)> = (u.start_frame..u.end_frame)
            .filter_map(|k| f.frame(k))
            .filter_map(|fr| fr.f0_semitones.map(|f0| (fr.timbre, f0)))
            .collect();
        if xs.is_empty() {
            continue;
        }
        let n = xs.len() as f64;
        let e = acc.entry(s).or_insert((0.0, vec![0.0; dims], 0.0));
        for (t, f0) in &xs {
            e.0 += 1.0;
            for (m, v) in e.1.iter_mut().zip(t) {
                *m += f64::from(*v);
            }
            e.2 += f64::from(*f0);
        }
        for (i, w) in within.iter_mut().enumerate() {
            let m: f64 = xs.iter().map(|x| f64::from(x.0[i])).sum::<f64>() / n;
            *w += xs
                .iter()
                .map(|x| (f64::from(x.0[i]) - m).powi(2))
                .sum::<f64>();
        }
        n_within += n;
    }
    let models = acc
        .into_iter()
        .map(|(s, (n, sum, f0))| (s, n / 100.0, sum.iter().map(|v| v / n).collect(), f0 / n))
        .collect();
    (
        models,
        within.iter().map(|w| w / n_within.max(1.0)).collect(),
    )
}

/// Prints every pair of hypothesis speakers with the reference speaker each
/// mostly covers (or "-"), and their timbre distances: MFCC 1-13 and 2-13,
/// root mean square in pooled within-unit standard deviations.
fn pairs(name: &str, f: &FrameFeatures, reference: Option<&[SpeakerSegment]>) {
    let (models, var) = speaker_models(f);
    let owner = |s: u8| -> String {
        let Some(reference) = reference else {
            return "-".into();
        };
        let mut cover: std::collections::BTreeMap<&str, f64> = Default::default();
        for u in f.speech_units.iter().filter(|u| u.speaker == Some(s)) {
            for r in reference {
                let o = r.end.min(u.end_s()) - r.start.max(u.start_s());
                if o > 0.0 {
                    *cover.entry(r.speaker.as_str()).or_default() += o;
                }
            }
        }
        cover
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or("?".into(), |c| c.0.to_string())
    };
    let dist = |a: &[f64], b: &[f64], first: usize| -> f64 {
        let d: f64 = (first..a.len())
            .map(|i| (a[i] - b[i]).powi(2) / var[i].max(1e-9))
            .sum();
        (d / (a.len() - first) as f64).sqrt()
    };
    let short = std::path::Path::new(name)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    for (i, a) in models.iter().enumerate() {
        for b in &models[i + 1..] {
            println!(
                "PAIR {short} {}:{}({:.1}s) {}:{}({:.1}s) all {:.3} no-c1 {:.3} f0 {:+.1}",
                a.0,
                owner(a.0),
                a.1,
                b.0,
                owner(b.0),
                b.1,
                dist(&a.2, &b.2, 0),
                dist(&a.2, &b.2, 1),
                b.3 - a.3
            );
        }
    }
}

/// Speakers the whole-file clustering finds in `samples` (one voice, or the
/// known count).
fn count_speakers(name: &str, samples: &[f32], expected: usize) {
    let mut f = features::extract(samples);
    features::diarize_with(&mut f, &params());
    let mut ids: Vec<u8> = f.speech_units.iter().filter_map(|u| u.speaker).collect();
    ids.sort_unstable();
    ids.dedup();
    println!("| {name} | {} speakers (expected {expected}) |", ids.len());
    if std::env::var("DIARIZATION_PAIRS").is_ok() {
        pairs(name, &f, None);
    }
}

fn main() {
    let root = format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    // The controlled-speech fixtures: one espeak-ng voice each (two in
    // two_voices), its pitch, rate and level moved by the behaviour. The
    // calm-then-stressed recording is the behaviour test's.
    let speech = |n: &str| read_wav(&format!("{root}/speech/{n}.wav"));
    let mut calm = speech("baseline");
    calm.extend(calm.clone());
    calm.truncate((calm.len() / 80_000) * 80_000);
    calm.extend(speech("stressed"));
    count_speakers("calm then stressed (one voice)", &calm, 1);
    for n in [
        "baseline",
        "hesitant",
        "rising",
        "stressed",
        "disengaged",
        "fillers",
    ] {
        count_speakers(n, &speech(n), 1);
    }
    count_speakers("two_voices", &speech("two_voices"), 2);
    let mut robust = Vec::new();
    for n in ["base", "plus8", "step8", "phone", "pink20", "babble15"] {
        let path = format!("{root}/robustness/{n}.flac");
        if let Ok(bytes) = std::fs::read(&path) {
            if let Ok(pcm) = attune_media::decode_audio(&bytes) {
                robust.push((n, pcm.samples));
            }
        }
    }
    for (n, pcm) in &robust {
        count_speakers(&format!("robustness/{n}"), pcm, 2);
    }
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
