//! Affect on real labelled speech (`../shared/data/real/`, never copied here): what the analyzer
//! says about real people in one emotional state, window by window, leaving one speaker out for
//! everything fitted. Every figure of "Affect on real speech" in `docs/EVALUATION.md` comes from
//!
//!     cargo test -p attune-core --test affect -- --nocapture
//!
//! and the asserts hold its floors in CI (where a missing `../shared/data/real/` fails them).
//!
//! Mapping from emotion labels to signals (the proxies of `../shared/data/real/README.md`): anger
//! and fear are high-arousal negative states (stress, tension, frustration), boredom and sadness
//! low-arousal ones (disengagement, the `disengaged` state), anger, fear and happiness high
//! arousal (the `engaged` state); neutral is the control on which none of these may fire.
//! Disgust has no proxy and counts only against precision where stated.

mod common;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use attune_core::analysis::arousal::ArousalModel;
use attune_core::analysis::params::ModelParams;
use attune_core::analysis::{RuleAnalyzer, WindowFeatures, WindowResult};
use attune_core::wire::{EngagementLevel, Model, SignalType};
use common::real_speech::{self, Emotion, Recording};

struct Corpus {
    recordings: Vec<Recording>,
    measured: Vec<Vec<WindowFeatures>>,
    folds: BTreeMap<String, &'static ArousalModel>,
}

fn corpus() -> Option<&'static Corpus> {
    static CORPUS: OnceLock<Option<Corpus>> = OnceLock::new();
    CORPUS
        .get_or_init(|| {
            let real = real_speech::shared_real()?;
            let recordings = real_speech::emodb(&real);
            let pcm: Vec<Vec<f32>> = recordings.iter().map(|r| r.samples.clone()).collect();
            let measured = real_speech::measure_all(&pcm);
            let folds = real_speech::loso_models(&recordings, &measured)
                .into_iter()
                .map(|(s, m)| (s, &*Box::leak(Box::new(m))))
                .collect();
            Some(Corpus {
                recordings,
                measured,
                folds,
            })
        })
        .as_ref()
}

/// Every window's verdict, each recording read by a fresh analyzer whose arousal model never
/// heard its speaker.
fn verdicts(c: &Corpus, model: Model) -> Vec<(Emotion, WindowResult)> {
    let params = ModelParams::for_model(model);
    let mut out = Vec::new();
    for (r, ws) in c.recordings.iter().zip(&c.measured) {
        let mut analyzer = RuleAnalyzer::with_arousal(params, c.folds[&r.speaker]);
        for w in ws {
            let x = analyzer.explain(w);
            // `AFFECT_WHY=neutral` prints what the analyzer weighed in that emotion's windows
            // whenever something fired.
            let fired =
                !x.verdict.findings.is_empty() || x.verdict.engagement != EngagementLevel::Neutral;
            if fired && std::env::var("AFFECT_WHY").is_ok_and(|e| e == r.emotion.name()) {
                eprintln!(
                    "{} {:?} {:.0}-{:.0} s: {:?} {:?}\n  {:#?}",
                    r.speaker,
                    r.clips,
                    w.start,
                    w.end,
                    x.verdict.engagement,
                    x.verdict
                        .findings
                        .iter()
                        .map(|f| f.signal)
                        .collect::<Vec<_>>(),
                    x.evidence
                );
            }
            out.push((r.emotion, x.verdict));
        }
    }
    out
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    tp: usize,
    fp: usize,
    fn_: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fp).max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.tp as f64 / (self.tp + self.fn_).max(1) as f64
    }
}

/// Precision and recall of `fires` on windows of `positive` emotions against those of
/// `negative` ones (other emotions are not counted).
fn score(
    v: &[(Emotion, WindowResult)],
    positive: &[Emotion],
    negative: &[Emotion],
    fires: impl Fn(&WindowResult) -> bool,
) -> Counts {
    let mut c = Counts::default();
    for (e, w) in v {
        let f = fires(w);
        if positive.contains(e) {
            if f {
                c.tp += 1;
            } else {
                c.fn_ += 1;
            }
        } else if negative.contains(e) && f {
            c.fp += 1;
        }
    }
    c
}

fn has(w: &WindowResult, signals: &[SignalType]) -> bool {
    w.findings.iter().any(|f| signals.contains(&f.signal))
}

const NEGATIVE_AROUSED: [SignalType; 3] = [
    SignalType::Stress,
    SignalType::Tension,
    SignalType::Frustration,
];
/// Every signal read from arousal: none may fire on neutral speech.
const AROUSAL_SIGNALS: [SignalType; 6] = [
    SignalType::Stress,
    SignalType::Tension,
    SignalType::Frustration,
    SignalType::Disengagement,
    SignalType::Engagement,
    SignalType::Interest,
];

use Emotion::*;

struct Figures {
    stress: Counts,
    withdrawn: Counts,
    engaged: Counts,
    neutral_fired: (usize, usize),
}

fn figures(v: &[(Emotion, WindowResult)]) -> Figures {
    let stress = score(v, &[Anger, Fear], &[Neutral, Boredom, Sadness], |w| {
        has(w, &NEGATIVE_AROUSED)
    });
    let withdrawn = score(
        v,
        &[Boredom, Sadness],
        &[Anger, Disgust, Fear, Happiness, Neutral],
        |w| w.engagement == EngagementLevel::Disengaged || has(w, &[SignalType::Disengagement]),
    );
    let engaged = score(
        v,
        &[Anger, Fear, Happiness],
        &[Neutral, Boredom, Sadness],
        |w| w.engagement == EngagementLevel::Engaged,
    );
    let neutral: Vec<&WindowResult> = v
        .iter()
        .filter(|(e, _)| *e == Neutral)
        .map(|(_, w)| w)
        .collect();
    let fired = neutral
        .iter()
        .filter(|w| has(w, &AROUSAL_SIGNALS) || w.engagement != EngagementLevel::Neutral)
        .count();
    Figures {
        stress,
        withdrawn,
        engaged,
        neutral_fired: (fired, neutral.len()),
    }
}

fn table(v: &[(Emotion, WindowResult)]) -> String {
    let mut out = String::from(
        "| emotion | windows | stress, tension or frustration | disengagement or `disengaged` | `engaged` | interest |\n|---|---|---|---|---|---|\n",
    );
    for e in Emotion::ALL {
        let ws: Vec<&WindowResult> = v.iter().filter(|(x, _)| *x == e).map(|(_, w)| w).collect();
        let n = |f: &dyn Fn(&WindowResult) -> bool| ws.iter().filter(|w| f(w)).count();
        out += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            e.name(),
            ws.len(),
            n(&|w| has(w, &NEGATIVE_AROUSED)),
            n(&|w| w.engagement == EngagementLevel::Disengaged
                || has(w, &[SignalType::Disengagement])),
            n(&|w| w.engagement == EngagementLevel::Engaged),
            n(&|w| has(w, &[SignalType::Interest])),
        );
    }
    out
}

/// The floors (the targets where they are met, else the figure measured less a margin:
/// `docs/EVALUATION.md` says which).
fn missed(model: Model, f: &Figures) -> Vec<String> {
    let mut missed = Vec::new();
    let mut floor = |name: &str, value: f64, min: f64| {
        if value < min {
            missed.push(format!("{model:?} {name} {value:.2} < {min:.2}"));
        }
    };
    floor("stress precision", f.stress.precision(), 0.7);
    floor("stress recall", f.stress.recall(), 0.6);
    // Disengagement is not floored here: low arousal is read only against a conversation's own
    // level, which these 10-15 s recordings never build (`docs/ANALYZER.md`); what the low
    // model can tell is floored in `the_low_arousal_model_tells_boredom_and_sadness_from_the_rest`.
    floor("engaged precision", f.engaged.precision(), 0.8);
    floor("engaged recall", f.engaged.recall(), 0.6);
    let (fired, n) = f.neutral_fired;
    floor(
        "neutral windows without an arousal reading",
        1.0 - fired as f64 / n.max(1) as f64,
        0.9,
    );
    missed
}

fn print(model: Model, v: &[(Emotion, WindowResult)], f: &Figures) {
    println!(
        "\n{} on EmoDB, leave one speaker out, window level:\n{}",
        ModelParams::for_model(model).version,
        table(v)
    );
    println!(
        "stress/tension/frustration on anger and fear (against neutral, boredom, sadness): precision {:.2}, recall {:.2}",
        f.stress.precision(),
        f.stress.recall()
    );
    println!(
        "disengaged or disengagement on boredom and sadness (against all others): precision {:.2}, recall {:.2}",
        f.withdrawn.precision(),
        f.withdrawn.recall()
    );
    println!(
        "`engaged` on anger, fear, happiness (against neutral, boredom, sadness): precision {:.2}, recall {:.2}",
        f.engaged.precision(),
        f.engaged.recall()
    );
    println!(
        "neutral windows with an arousal signal or a non-neutral state: {} of {}",
        f.neutral_fired.0, f.neutral_fired.1
    );
}

#[test]
fn emodb_speakers_never_heard_read_as_their_emotion() {
    let Some(c) = corpus() else { return };
    let mut all_missed = Vec::new();
    for model in [Model::Inter2, Model::Inter2Audio] {
        let v = verdicts(c, model);
        let f = figures(&v);
        print(model, &v, &f);
        all_missed.extend(missed(model, &f));
    }
    assert!(all_missed.is_empty(), "floors missed: {all_missed:#?}");
}

#[test]
fn analyzers_that_ignore_the_voice_fail_the_floors() {
    let Some(c) = corpus() else { return };
    let v = verdicts(c, Model::Inter2);
    for state in [
        EngagementLevel::Engaged,
        EngagementLevel::Neutral,
        EngagementLevel::Disengaged,
    ] {
        let constant: Vec<(Emotion, WindowResult)> = v
            .iter()
            .map(|(e, w)| {
                let mut w = w.clone();
                w.engagement = state;
                w.findings = if state == EngagementLevel::Engaged {
                    v[0].1.findings.clone()
                } else {
                    Vec::new()
                };
                (*e, w)
            })
            .collect();
        assert!(
            !missed(Model::Inter2, &figures(&constant)).is_empty(),
            "always {state:?} meets the floors: they measure nothing"
        );
    }
}

/// Spearman's rank correlation (average ranks for ties).
fn spearman(x: &[f64], y: &[f64]) -> f64 {
    fn ranks(v: &[f64]) -> Vec<f64> {
        let mut idx: Vec<usize> = (0..v.len()).collect();
        idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
        let mut r = vec![0.0; v.len()];
        let mut i = 0;
        while i < idx.len() {
            let mut j = i;
            while j + 1 < idx.len() && v[idx[j + 1]] == v[idx[i]] {
                j += 1;
            }
            for &k in &idx[i..=j] {
                r[k] = (i + j) as f64 / 2.0;
            }
            i = j + 1;
        }
        r
    }
    let (rx, ry) = (ranks(x), ranks(y));
    let n = x.len() as f64;
    let (mx, my) = (rx.iter().sum::<f64>() / n, ry.iter().sum::<f64>() / n);
    let cov: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = rx.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = ry.iter().map(|b| (b - my).powi(2)).sum();
    cov / (vx * vy).sqrt()
}

#[test]
fn the_arousal_score_follows_listeners_ratings_on_clips_it_never_saw() {
    // The committed model was fitted on EmoDB only: these clips are held out entirely.
    let Some(real) = real_speech::shared_real() else {
        return;
    };
    let clips = real_speech::rated_clips(&real);
    let pcm: Vec<Vec<f32>> = clips.iter().map(|(_, s, _)| s.clone()).collect();
    let measured = real_speech::measure_all(&pcm);
    let model = ArousalModel::shipped();
    let mut scores = Vec::new();
    let mut ratings = Vec::new();
    for ((_, _, rating), ws) in clips.iter().zip(&measured) {
        // A clip is read like one window of a file: its first window.
        if let Some(x) = ws.first().and_then(|w| model.read(&w.audio)) {
            scores.push(x.score);
            ratings.push(*rating);
        }
    }
    let rho = spearman(&scores, &ratings);
    println!(
        "\nemotion-arousal: {} of {} clips read; Spearman rho between the arousal score and the ratings {rho:.2}",
        scores.len(),
        clips.len()
    );
    assert!(scores.len() * 10 >= clips.len() * 8, "too few clips read");
    assert!(rho >= 0.5, "Spearman {rho:.2} < 0.5");
}

#[test]
fn spearman_is_one_for_monotone_and_minus_one_for_reversed_ranks() {
    let x = [1.0, 2.0, 3.0, 4.0];
    assert!((spearman(&x, &[10.0, 20.0, 25.0, 90.0]) - 1.0).abs() < 1e-9);
    assert!((spearman(&x, &[4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-9);
}

#[test]
fn the_arousal_models_tell_the_emotions_apart_on_speakers_they_never_heard() {
    let Some(c) = corpus() else { return };
    let mut high = Counts::default();
    let mut low = Counts::default();
    for (r, ws) in c.recordings.iter().zip(&c.measured) {
        let model = c.folds[&r.speaker];
        for x in ws.iter().filter_map(|w| model.read(&w.audio)) {
            let (is_high, is_low) = match r.emotion {
                Anger | Fear | Happiness => (true, false),
                Boredom | Sadness => (false, true),
                Neutral => (false, false),
                Disgust => continue,
            };
            for (counts, truth, p) in [(&mut high, is_high, x.high), (&mut low, is_low, x.low)] {
                match (truth, p > 0.8) {
                    (true, true) => counts.tp += 1,
                    (true, false) => counts.fn_ += 1,
                    (false, true) => counts.fp += 1,
                    (false, false) => {}
                }
            }
        }
    }
    println!(
        "\narousal models, leave one speaker out, p > 0.8: high arousal precision {:.2} recall {:.2}; low arousal (boredom, sadness) precision {:.2} recall {:.2}",
        high.precision(),
        high.recall(),
        low.precision(),
        low.recall()
    );
    assert!(high.precision() >= 0.9 && high.recall() >= 0.7, "{high:?}");
    assert!(low.precision() >= 0.85 && low.recall() >= 0.5, "{low:?}");
}

/// The windows of the AMI meetings and the committed telephone call read as uploads read them.
fn natural_conversations() -> Option<Vec<Vec<WindowFeatures>>> {
    let real = real_speech::shared_real()?;
    let mut pcm: Vec<Vec<f32>> = real_speech::ami(&real)
        .into_iter()
        .map(|(_, s)| s)
        .collect();
    pcm.push(real_speech::telephone_call());
    Some(real_speech::measure_all(&pcm))
}

#[test]
fn natural_meetings_and_a_telephone_call_are_rarely_read_as_aroused_or_low() {
    // No emotion labels here: a negative control. Models fitted on acted read speech in a
    // studio must not read the style and channel of natural talk (slower, far-field, a
    // telephone band) as arousal: at most 15% of windows carry either arousal cue.
    let Some(files) = natural_conversations() else {
        return;
    };
    let (mut windows, mut high, mut low) = (0, 0, 0);
    for ws in &files {
        let mut analyzer = RuleAnalyzer::new(ModelParams::for_model(Model::Inter2));
        for w in ws {
            let x = analyzer.explain(w);
            windows += 1;
            let cue = |c: attune_core::analysis::cues::Cue| x.evidence.iter().any(|e| e.cue == c);
            high += usize::from(cue(attune_core::analysis::cues::Cue::HighArousal));
            low += usize::from(cue(attune_core::analysis::cues::Cue::LowArousal));
        }
    }
    println!(
        "\nnatural conversation (12 AMI excerpts, the telephone call): {windows} windows, high arousal cue in {high}, low arousal cue in {low}"
    );
    assert!(high * 100 <= windows * 15, "{high} of {windows}");
    assert!(low * 100 <= windows * 15, "{low} of {windows}");
}
