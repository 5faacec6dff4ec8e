//! The real labelled speech in `../shared/data/real/` as the affect evaluations read it
//! (shared by `tests/affect.rs` and the `affect_eval` / `affect_fit` examples; never copied into
//! the repository).
//!
//! - **EmoDB** (10 actors, 7 emotions, 2.00 s clips in this copy): per actor and emotion, each
//!   clip's leading and trailing silence trimmed, the clips joined in name order with 0.4 s
//!   pauses into recordings of 10 to 15 s, the way a new user would try the analyzer on it.
//! - **emotion-arousal**: 47 clips with one continuous arousal rating each, in `[-1, 1]`.

#![allow(dead_code)]

use std::path::Path;

/// Samples per second of every recording here.
pub const RATE: usize = 16_000;

/// `../shared/data/real` (or the directory `ATTUNE_REAL_DATA` names, for a checkout that is
/// not beside `shared/`), or `None` (said on stderr) when it is missing; missing with
/// `ATTUNE_REQUIRE_REAL_DATA` set is a failure.
pub fn shared_real() -> Option<String> {
    let dir = std::env::var("ATTUNE_REAL_DATA")
        .unwrap_or_else(|_| format!("{}/../../../shared/data/real", env!("CARGO_MANIFEST_DIR")));
    if Path::new(&dir).is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("ATTUNE_REQUIRE_REAL_DATA").is_none(),
        "{dir} is missing: the real-data evaluation cannot run"
    );
    eprintln!("NOT RUN: {dir} is missing, so the real-data evaluation did not run");
    None
}

/// An EmoDB emotion (the letter in the file name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Emotion {
    /// W (Wut).
    Anger,
    /// L (Langeweile).
    Boredom,
    /// E (Ekel).
    Disgust,
    /// A (Angst).
    Fear,
    /// F (Freude).
    Happiness,
    /// T (Trauer).
    Sadness,
    /// N.
    Neutral,
}

impl Emotion {
    /// Every emotion, in EmoDB's letter order above.
    pub const ALL: [Emotion; 7] = [
        Emotion::Anger,
        Emotion::Boredom,
        Emotion::Disgust,
        Emotion::Fear,
        Emotion::Happiness,
        Emotion::Sadness,
        Emotion::Neutral,
    ];

    fn from_letter(c: char) -> Option<Emotion> {
        Some(match c {
            'W' => Emotion::Anger,
            'L' => Emotion::Boredom,
            'E' => Emotion::Disgust,
            'A' => Emotion::Fear,
            'F' => Emotion::Happiness,
            'T' => Emotion::Sadness,
            'N' => Emotion::Neutral,
            _ => return None,
        })
    }

    /// The emotion's arousal class in the proxies of `../shared/data/real/README.md`:
    /// `Some(true)` high (anger, fear, happiness), `Some(false)` low (boredom, sadness,
    /// neutral), `None` for disgust (rated in between in the literature; left out of the
    /// arousal classes and the figures).
    pub fn high_arousal(self) -> Option<bool> {
        match self {
            Emotion::Anger | Emotion::Fear | Emotion::Happiness => Some(true),
            Emotion::Boredom | Emotion::Sadness | Emotion::Neutral => Some(false),
            Emotion::Disgust => None,
        }
    }

    /// Lower-case English name.
    pub fn name(self) -> &'static str {
        match self {
            Emotion::Anger => "anger",
            Emotion::Boredom => "boredom",
            Emotion::Disgust => "disgust",
            Emotion::Fear => "fear",
            Emotion::Happiness => "happiness",
            Emotion::Sadness => "sadness",
            Emotion::Neutral => "neutral",
        }
    }
}

/// One joined recording: one actor in one emotion.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The actor (EmoDB's two-digit speaker code).
    pub speaker: String,
    /// The emotion of every clip in it.
    pub emotion: Emotion,
    /// 16 kHz mono samples.
    pub samples: Vec<f32>,
    /// The clips joined, by file name.
    pub clips: Vec<String>,
}

fn decode(path: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    attune_media::decode_audio_limited(&bytes, 60.0)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .samples
}

/// The clip without its leading and trailing silence: from the first to the last 10 ms frame
/// within 35 dB of the clip's loudest, with 50 ms kept on either side.
pub fn trim(samples: &[f32]) -> &[f32] {
    let frame = RATE / 100;
    let levels: Vec<f32> = samples
        .chunks(frame)
        .map(|c| {
            let e = c.iter().map(|s| s * s).sum::<f32>() / c.len() as f32;
            10.0 * (e + 1e-12).log10()
        })
        .collect();
    let peak = levels.iter().copied().fold(f32::MIN, f32::max);
    let loud = |l: &f32| *l > peak - 35.0;
    let (Some(first), Some(last)) = (levels.iter().position(loud), levels.iter().rposition(loud))
    else {
        return &samples[..0];
    };
    let start = (first * frame).saturating_sub(RATE / 20);
    let end = ((last + 1) * frame + RATE / 20).min(samples.len());
    &samples[start..end]
}

/// The committed real telephone call, `tests/fixtures/real/sample.wav` (30 s, two speakers).
pub fn telephone_call() -> Vec<f32> {
    decode(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/real/sample.wav"
    ))
}

/// The AMI meeting excerpts (`ami/*.wav`, 30 s each), by file name: `(file name, samples)`.
pub fn ami(real: &str) -> Vec<(String, Vec<f32>)> {
    let dir = format!("{real}/ami");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wav"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let samples = decode(&format!("{dir}/{n}"));
            (n, samples)
        })
        .collect()
}

/// EmoDB as joined recordings (see the module docs), in speaker, emotion, then clip order.
pub fn emodb(real: &str) -> Vec<Recording> {
    let dir = format!("{real}/emodb");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 11 && n.ends_with(".wav"))
        .collect();
    names.sort();
    let mut groups: std::collections::BTreeMap<(String, Emotion), Vec<String>> = Default::default();
    for n in names {
        let Some(emotion) = n.chars().nth(5).and_then(Emotion::from_letter) else {
            continue;
        };
        groups
            .entry((n[..2].to_string(), emotion))
            .or_default()
            .push(n);
    }
    let pause = vec![0.0f32; RATE * 2 / 5];
    let mut out = Vec::new();
    for ((speaker, emotion), clips) in groups {
        let trimmed: Vec<(String, Vec<f32>)> = clips
            .into_iter()
            .map(|n| {
                let pcm = decode(&format!("{dir}/{n}"));
                let t = trim(&pcm).to_vec();
                (n, t)
            })
            .filter(|(_, t)| t.len() >= RATE / 4)
            .collect();
        let mut current: Option<Recording> = None;
        for (name, clip) in trimmed {
            let rec = current.get_or_insert_with(|| Recording {
                speaker: speaker.clone(),
                emotion,
                samples: Vec::new(),
                clips: Vec::new(),
            });
            if !rec.samples.is_empty() {
                rec.samples.extend_from_slice(&pause);
            }
            rec.samples.extend_from_slice(&clip);
            rec.clips.push(name);
            if rec.samples.len() >= 10 * RATE {
                out.push(current.take().expect("just filled"));
            }
        }
        // What is left joins the last recording while that stays within 15 s, else stands
        // alone if it fills at least one 5 s window.
        if let Some(rest) = current {
            let last = out
                .last_mut()
                .filter(|r| r.speaker == speaker && r.emotion == emotion);
            match last {
                Some(r) if r.samples.len() + pause.len() + rest.samples.len() <= 15 * RATE => {
                    r.samples.extend_from_slice(&pause);
                    r.samples.extend_from_slice(&rest.samples);
                    r.clips.extend(rest.clips);
                }
                _ if rest.samples.len() >= 5 * RATE => out.push(rest),
                _ => {}
            }
        }
    }
    out
}

/// The rated clips of `emotion-arousal/`: (file name, samples, arousal rating in `[-1, 1]`).
pub fn rated_clips(real: &str) -> Vec<(String, Vec<f32>, f64)> {
    let dir = format!("{real}/emotion-arousal");
    let csv = std::fs::read_to_string(format!("{dir}/arousal.csv"))
        .unwrap_or_else(|e| panic!("{dir}/arousal.csv: {e}"));
    csv.lines()
        .filter_map(|line| {
            let (name, rating) = line.trim().split_once(',')?;
            let rating: f64 = rating.trim().parse().ok()?;
            Some((name.to_string(), decode(&format!("{dir}/{name}")), rating))
        })
        .collect()
}

/// The measured windows of a recording, exactly as the upload pipeline cuts and measures them
/// (whole-file voice turns).
pub fn windows(samples: &[f32]) -> Vec<attune_core::analysis::WindowFeatures> {
    use attune_core::features::{self, Span};
    let frames = features::extract(samples);
    let duration = samples.len() as f64 / f64::from(features::SAMPLE_RATE);
    attune_core::window::WindowPlan::UPLOAD
        .windows(duration)
        .map(|span| attune_core::analysis::WindowFeatures {
            start: span.start,
            end: span.end,
            audio: attune_core::pipeline::audio_measures(&features::summarize(
                &frames,
                Span::new(span.start, span.end),
            )),
            video: None,
            words: Vec::new(),
        })
        .collect()
}

/// [`windows`] of every recording, on every core.
pub fn measure_all(recordings: &[Vec<f32>]) -> Vec<Vec<attune_core::analysis::WindowFeatures>> {
    super::par_map(recordings, Vec::len, |r| windows(r))
}

/// The arousal class of an emotion's windows (disgust has none).
pub fn arousal_class(e: Emotion) -> Option<attune_core::analysis::arousal::Class> {
    use attune_core::analysis::arousal::Class;
    match e.high_arousal() {
        Some(true) => Some(Class::High),
        Some(false) if e == Emotion::Neutral => Some(Class::Neutral),
        Some(false) => Some(Class::Low),
        None => None,
    }
}

/// The regularization every fit here uses (on standardized measures).
pub const L2: f64 = 1.0;

/// The training samples of the windows of `recordings` whose speaker passes `keep`.
pub fn samples(
    recordings: &[Recording],
    measured: &[Vec<attune_core::analysis::WindowFeatures>],
    keep: impl Fn(&str) -> bool,
) -> Vec<(
    [f64; attune_core::analysis::arousal::MEASURES],
    attune_core::analysis::arousal::Class,
)> {
    use attune_core::analysis::arousal::ArousalModel;
    recordings
        .iter()
        .zip(measured)
        .filter(|(r, _)| keep(&r.speaker))
        .filter_map(|(r, ws)| Some((arousal_class(r.emotion)?, ws)))
        .flat_map(|(class, ws)| {
            ws.iter()
                .filter_map(move |w| Some((ArousalModel::measures_of(&w.audio)?, class)))
        })
        .collect()
}

/// Per speaker, the models fitted without them (leave one speaker out).
pub fn loso_models(
    recordings: &[Recording],
    measured: &[Vec<attune_core::analysis::WindowFeatures>],
) -> std::collections::BTreeMap<String, attune_core::analysis::arousal::ArousalModel> {
    use attune_core::analysis::arousal::ArousalModel;
    let speakers: std::collections::BTreeSet<String> =
        recordings.iter().map(|r| r.speaker.clone()).collect();
    speakers
        .into_iter()
        .map(|s| {
            let train = samples(recordings, measured, |x| x != s);
            let model = ArousalModel::fit(&train, L2, format!("EmoDB without speaker {s}"));
            (s, model)
        })
        .collect()
}
