//! The analyzer evaluated: per-signal precision and recall and the engagement
//! confusion matrix on the labelled conversation corpus
//! (`tests/fixtures/conversations/`), and its robustness to the microphone on
//! `tests/fixtures/robustness/`. Every figure in `docs/EVALUATION.md` (except
//! the diarization section) comes from here:
//!
//!     cargo test -p attune-core --test evaluation -- --nocapture --test-threads 1
//!
//! prints the tables; the asserts hold the floors in CI. Each floor is also
//! run against constant analyzers (always nothing, always everything, always
//! one state), which must fail it: a floor a constant meets measures nothing.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use attune_core::analysis::params::ModelParams;
use attune_core::analysis::{RuleAnalyzer, WindowAnalyzer, WindowFeatures, WindowResult};
use attune_core::features::{self, Span};
use attune_core::pipeline::{analyze_pcm, audio_measures, FileAnalysis};
use attune_core::window::WindowPlan;
use attune_core::wire::{EngagementLevel, Model, Probability, SignalType};

fn fixture_path(name: &str) -> String {
    format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn pcm(name: &str) -> Vec<f32> {
    let path = fixture_path(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    attune_media::decode_audio(&bytes)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .samples
}

/// One labelled window: the state it should read and the signals that must
/// and must not fire (signals in neither list are not scored there).
#[derive(Debug, Clone)]
struct Label {
    index: usize,
    state: Option<EngagementLevel>,
    should: Vec<SignalType>,
    must_not: Vec<SignalType>,
}

struct Conversation {
    name: String,
    /// Windows measured with the whole-file speaker clustering, as an
    /// upload is.
    windows: Vec<WindowFeatures>,
    /// The same windows with the online speaker tracker, as a stream is.
    online_windows: Vec<WindowFeatures>,
    /// The same windows with every speech unit given the speaker of the
    /// reference turns (RTTM) it overlaps most: the rules on perfect speaker
    /// turns, which tells rule errors from speaker confusion.
    oracle_windows: Vec<WindowFeatures>,
    labels: Vec<Label>,
    /// Each labelled window's scripted behaviour (for the diagnosis table).
    behaviours: BTreeMap<usize, String>,
}

/// Which speaker turns the windows are measured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turns {
    /// What uploads use: the whole-file voice turns (`attune_voice::diarize`).
    Tracker,
    /// What streams use: the online voice turns (`attune_voice::OnlineDiarizer`).
    Online,
    /// The reference turns of the fixture's RTTM.
    Oracle,
}

/// Reference turns of an RTTM file: (start, end, speaker index by role).
fn rttm(path: &str) -> Vec<(f64, f64, u8)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut roles: Vec<String> = Vec::new();
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 || f[0] != "SPEAKER" {
                return None;
            }
            let start: f64 = f[3].parse().ok()?;
            let duration: f64 = f[4].parse().ok()?;
            let role = f[7].to_owned();
            let id = match roles.iter().position(|r| *r == role) {
                Some(i) => i,
                None => {
                    roles.push(role);
                    roles.len() - 1
                }
            };
            Some((start, start + duration, id as u8))
        })
        .collect()
}

fn signals(value: &serde_json::Value) -> Vec<SignalType> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().and_then(SignalType::parse))
                .collect()
        })
        .unwrap_or_default()
}

/// The measured windows of a recording, exactly as the upload pipeline cuts
/// and measures them (features are extracted once, whatever analyzer runs).
fn measure(samples: &[f32], turns: Turns, reference: &[(f64, f64, u8)]) -> Vec<WindowFeatures> {
    let mut frames = if turns == Turns::Online {
        let mut x = features::FeatureExtractor::new();
        for chunk in samples.chunks(8192) {
            x.push(chunk);
        }
        x.finish();
        x.into_features()
    } else {
        // The whole-file voice turns label the units, as uploads read them.
        features::extract(samples)
    };
    if turns == Turns::Oracle {
        for unit in &mut frames.speech_units {
            let (s, e) = (unit.start_s(), unit.end_s());
            let mut overlap = [0.0f64; 8];
            for &(rs, re, id) in reference {
                overlap[usize::from(id)] += (re.min(e) - rs.max(s)).max(0.0);
            }
            let (best, most) =
                overlap.iter().enumerate().fold(
                    (0, 0.0),
                    |acc, (i, &o)| if o > acc.1 { (i, o) } else { acc },
                );
            unit.speaker = (most > 0.0).then_some(best as u8);
        }
    }
    let duration = samples.len() as f64 / f64::from(features::SAMPLE_RATE);
    WindowPlan::UPLOAD
        .windows(duration)
        .map(|span| WindowFeatures {
            start: span.start,
            end: span.end,
            audio: audio_measures(&features::summarize(
                &frames,
                Span::new(span.start, span.end),
            )),
            video: None,
            words: Vec::new(),
        })
        .collect()
}

fn corpus() -> &'static [Conversation] {
    static CORPUS: OnceLock<Vec<Conversation>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = fixture_path("conversations");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with('c') && n.ends_with(".json"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|json| {
                let text = std::fs::read_to_string(format!("{dir}/{json}")).unwrap();
                let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
                let labels = doc["windows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| Label {
                        index: w["index"].as_u64().unwrap() as usize,
                        state: w["state"].as_str().and_then(EngagementLevel::parse),
                        should: signals(&w["should_fire"]),
                        must_not: signals(&w["must_not_fire"]),
                    })
                    .collect();
                let behaviours = doc["windows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| {
                        (
                            w["index"].as_u64().unwrap() as usize,
                            w["behaviour"].as_str().unwrap_or("?").to_owned(),
                        )
                    })
                    .collect();
                let wav = doc["file"].as_str().unwrap();
                let name = wav.trim_end_matches(".wav").to_owned();
                let samples = pcm(&format!("conversations/{wav}"));
                let reference = rttm(&format!("{dir}/{name}.rttm"));
                Conversation {
                    windows: measure(&samples, Turns::Tracker, &reference),
                    online_windows: measure(&samples, Turns::Online, &reference),
                    oracle_windows: measure(&samples, Turns::Oracle, &reference),
                    name,
                    labels,
                    behaviours,
                }
            })
            .collect()
    })
}

/// The signals the issue sets targets for.
const TARGETS: [SignalType; 5] = [
    SignalType::Hesitation,
    SignalType::Uncertainty,
    SignalType::Stress,
    SignalType::Disengagement,
    SignalType::Engagement,
];

const STATES: [EngagementLevel; 3] = [
    EngagementLevel::Engaged,
    EngagementLevel::Neutral,
    EngagementLevel::Disengaged,
];

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    tp: u32,
    fp: u32,
    fn_: u32,
    tn: u32,
}

impl Counts {
    fn precision(&self) -> f64 {
        if self.tp + self.fp == 0 {
            0.0
        } else {
            f64::from(self.tp) / f64::from(self.tp + self.fp)
        }
    }
    fn recall(&self) -> f64 {
        if self.tp + self.fn_ == 0 {
            0.0
        } else {
            f64::from(self.tp) / f64::from(self.tp + self.fn_)
        }
    }
}

#[derive(Debug, Default)]
struct Scores {
    signals: BTreeMap<SignalType, Counts>,
    /// `confusion[truth][read]`, in [`STATES`] order.
    confusion: [[u32; 3]; 3],
}

impl Scores {
    fn accuracy(&self) -> f64 {
        let total: u32 = self.confusion.iter().flatten().sum();
        let right: u32 = (0..3).map(|i| self.confusion[i][i]).sum();
        if total == 0 {
            0.0
        } else {
            f64::from(right) / f64::from(total)
        }
    }

    fn counts(&self, signal: SignalType) -> Counts {
        self.signals.get(&signal).copied().unwrap_or_default()
    }
}

fn state_index(state: EngagementLevel) -> usize {
    STATES.iter().position(|&s| s == state).unwrap()
}

/// Runs a fresh analyzer per conversation over the corpus and scores it.
/// A signal counts as fired at any probability level.
fn evaluate(make: &dyn Fn() -> Box<dyn WindowAnalyzer>) -> Scores {
    evaluate_with(make, Turns::Tracker)
}

fn evaluate_with(make: &dyn Fn() -> Box<dyn WindowAnalyzer>, turns: Turns) -> Scores {
    let mut scores = Scores::default();
    for conversation in corpus() {
        let mut analyzer = make();
        let windows = match turns {
            Turns::Tracker => &conversation.windows,
            Turns::Online => &conversation.online_windows,
            Turns::Oracle => &conversation.oracle_windows,
        };
        let verdicts: Vec<WindowResult> = windows.iter().map(|w| analyzer.analyze(w)).collect();
        for label in &conversation.labels {
            let Some(verdict) = verdicts.get(label.index) else {
                continue;
            };
            if let Some(truth) = label.state {
                scores.confusion[state_index(truth)][state_index(verdict.engagement)] += 1;
            }
            for &signal in label.should.iter().chain(&label.must_not) {
                let fired = verdict.findings.iter().any(|f| f.signal == signal);
                let positive = label.should.contains(&signal);
                let c = scores.signals.entry(signal).or_default();
                match (positive, fired) {
                    (true, true) => c.tp += 1,
                    (true, false) => c.fn_ += 1,
                    (false, true) => c.fp += 1,
                    (false, false) => c.tn += 1,
                }
            }
        }
    }
    scores
}

fn rules() -> Box<dyn WindowAnalyzer> {
    Box::new(RuleAnalyzer::new(ModelParams::for_model(Model::Inter2)))
}

/// The floors CI holds: the figures reached when they were set, rounded
/// down (targets: accuracy 0.8, precision 0.7 and recall 0.6 each; see
/// docs/EVALUATION.md for which are met).
/// Upload floors since the speaker turns come from the voice networks (`inter-2/rules-7`): the
/// rules were tuned on the MFCC clustering's turns of these espeak-ng voices, which
/// segmentation-3.0 and CAM++ hear less well apart (two voices of one register as one); the
/// turn-based cues (agreement from backchannels, interest, stress against one's own baseline)
/// lose most. The rules are refitted on real speech next (docs/EVALUATION.md).
///
/// rules-8 lowered the floors of the arousal-borne readings (the engagement
/// state, stress, disengagement) on this corpus: the arousal models are
/// fitted on real voices (`tests/affect.rs` holds their floors on real
/// speech), and espeak-ng's voices have spectra of no human voice (a flat
/// tilt and low harmonicity read as vocal effort: 6 of the corpus's neutral
/// windows read aroused), so what they say of these voices measures nothing.
/// The floors of the conversational signals stay.
const ACCURACY_FLOOR: f64 = 0.6;
const FLOORS: [(SignalType, f64, f64); 8] = [
    (SignalType::Hesitation, 0.75, 0.9),
    (SignalType::Uncertainty, 0.95, 0.85),
    (SignalType::Stress, 0.2, 0.6),
    (SignalType::Disengagement, 0.35, 0.7),
    (SignalType::Engagement, 0.95, 0.8),
    // Not among the targets; floors keep them from regressing.
    (SignalType::Disagreement, 0.95, 0.7),
    (SignalType::Interest, 0.95, 0.3),
    (SignalType::Agreement, 0.95, 0.14),
];

/// The floors of the online tracker (what a stream of the same audio
/// reads): the figures of the tracker before uploads clustered whole files.
/// rules-8: the arousal-borne floors lowered as [`FLOORS`] says. Disagreement's precision
/// 0.95 to 0.8 when streams began to find one voice in two speakers (alike, never at once,
/// `attune_voice::OnlineParams::merge_similarity`), as uploads do: c07's two espeak-ng men of
/// one register became one voice mid-stream, and a 0.1 s blip still labelled as the second
/// then reads as a late reply (window 5, 5 of 6). On real speech the merge joins an actor
/// heard as two (EmoDB) and changes no meeting (AMI) or the telephone call.
const ONLINE_ACCURACY_FLOOR: f64 = 0.6;
const ONLINE_FLOORS: [(SignalType, f64, f64); 7] = [
    (SignalType::Hesitation, 0.9, 0.9),
    (SignalType::Uncertainty, 0.95, 0.85),
    (SignalType::Stress, 0.2, 0.6),
    (SignalType::Disengagement, 0.35, 0.7),
    (SignalType::Engagement, 0.95, 0.75),
    (SignalType::Disagreement, 0.8, 0.55),
    (SignalType::Interest, 0.95, 0.3),
];

/// The rules' own floors, on the reference speaker turns (the oracle): what
/// the rules reach when the speaker turns are right, so a change of the
/// speaker tracker moves the floors above but not these.
/// rules-8: the arousal-borne floors lowered as [`FLOORS`] says.
const ORACLE_ACCURACY_FLOOR: f64 = 0.65;
const ORACLE_FLOORS: [(SignalType, f64, f64); 8] = [
    (SignalType::Hesitation, 0.95, 0.9),
    (SignalType::Uncertainty, 0.95, 0.85),
    (SignalType::Stress, 0.2, 0.8),
    (SignalType::Disengagement, 0.55, 0.7),
    (SignalType::Engagement, 0.95, 0.95),
    (SignalType::Disagreement, 0.95, 0.7),
    (SignalType::Interest, 0.95, 0.55),
    (SignalType::Agreement, 0.95, 0.7),
];

/// Which floors the scores miss (empty when all are met).
fn missed_floors(scores: &Scores) -> Vec<String> {
    missed_floors_of(scores, ACCURACY_FLOOR, &FLOORS)
}

fn missed_floors_of(
    scores: &Scores,
    accuracy: f64,
    floors: &[(SignalType, f64, f64)],
) -> Vec<String> {
    let mut missed = Vec::new();
    if scores.accuracy() < accuracy {
        missed.push(format!(
            "engagement accuracy {:.2} < {accuracy}",
            scores.accuracy()
        ));
    }
    for &(signal, precision, recall) in floors {
        let c = scores.counts(signal);
        if c.precision() < precision {
            missed.push(format!(
                "{signal} precision {:.2} < {precision}",
                c.precision()
            ));
        }
        if c.recall() < recall {
            missed.push(format!("{signal} recall {:.2} < {recall}", c.recall()));
        }
    }
    missed
}

fn report(scores: &Scores) -> String {
    let mut out = String::new();
    out.push_str("| Signal | Windows where it must fire | must not fire | Precision | Recall |\n");
    out.push_str("|---|---|---|---|---|\n");
    for (signal, c) in &scores.signals {
        out.push_str(&format!(
            "| {signal}{} | {} | {} | {:.2} ({}/{}) | {:.2} ({}/{}) |\n",
            if TARGETS.contains(signal) { " *" } else { "" },
            c.tp + c.fn_,
            c.fp + c.tn,
            c.precision(),
            c.tp,
            c.tp + c.fp,
            c.recall(),
            c.tp,
            c.tp + c.fn_,
        ));
    }
    out.push_str("\n| Truth \\ read | engaged | neutral | disengaged |\n|---|---|---|---|\n");
    for (i, truth) in STATES.iter().enumerate() {
        let row = scores.confusion[i];
        out.push_str(&format!(
            "| {truth} | {} | {} | {} |\n",
            row[0], row[1], row[2]
        ));
    }
    let total: u32 = scores.confusion.iter().flatten().sum();
    out.push_str(&format!(
        "\nEngagement window accuracy: {:.2} ({} windows)\n",
        scores.accuracy(),
        total
    ));
    out
}

/// One line per labelled window the analyzer misreads (wrong state, a
/// signal missed or a negative control fired), with every cue it found and
/// its strength, and the measures behind them: the diagnosis table of
/// docs/EVALUATION.md.
fn diagnosis(turns: Turns) -> String {
    let mut out = String::new();
    for c in corpus() {
        let mut analyzer = RuleAnalyzer::new(ModelParams::for_model(Model::Inter2));
        let windows = match turns {
            Turns::Tracker => &c.windows,
            Turns::Online => &c.online_windows,
            Turns::Oracle => &c.oracle_windows,
        };
        for (k, w) in windows.iter().enumerate() {
            let x = analyzer.explain(w);
            let Some(label) = c.labels.iter().find(|l| l.index == k) else {
                continue;
            };
            let fired = |s: &SignalType| x.verdict.findings.iter().any(|f| f.signal == *s);
            let missed: Vec<&str> = label
                .should
                .iter()
                .filter(|s| !fired(s))
                .map(|s| s.as_str())
                .collect();
            let false_alarms: Vec<&str> = label
                .must_not
                .iter()
                .filter(|s| fired(s))
                .map(|s| s.as_str())
                .collect();
            let wrong_state = label.state.is_some_and(|s| s != x.verdict.engagement);
            let all = std::env::var_os("EVAL_ALL").is_some();
            if !all && !wrong_state && missed.is_empty() && false_alarms.is_empty() {
                continue;
            }
            let a = &w.audio;
            let cues: Vec<String> = x
                .evidence
                .iter()
                .map(|e| format!("{:?} {:.2}", e.cue, e.strength))
                .collect();
            let speakers: Vec<String> = a
                .per_speaker
                .iter()
                .map(|p| {
                    format!(
                        "s{}:{:.1}s/{}/{}/{}",
                        p.speaker,
                        p.speech_seconds,
                        p.f0_mean.map_or("-".into(), |f| format!("{f:.1}st")),
                        p.f0_range.map_or("-".into(), |f| format!("r{f:.1}")),
                        p.loudness_mean.map_or("-".into(), |f| format!("{f:.1}dB"))
                    )
                })
                .collect();
            let turn_list: Vec<String> = a
                .turn_list
                .iter()
                .map(|t| {
                    format!(
                        "s{}{} {:.1}s{}",
                        t.speaker,
                        if t.backchannel { "(bc)" } else { "" },
                        t.end - t.start,
                        t.gap_before
                            .map_or(String::new(), |g| format!(" after {g:.2}"))
                    )
                })
                .collect();
            out.push_str(&format!(
                "{} #{k} [{}] truth {} read {} (E {:.2} / D {:.2}){}{} | cues: {} | speech {:.1}s, {} voices [{}], turns {} [{}], latency {}, overlaps {}, backchannels {}, pauses {}/{:.1}s max {:.1}s, fillers {}, rise/fall {}/{}, rate {}, loud {}, range {}\n",
                &c.name[..3],
                c.behaviours.get(&k).map_or("?", |b| b.as_str()),
                label.state.map_or("-", |s| s.as_str()),
                x.verdict.engagement.as_str(),
                x.engaged_score,
                x.disengaged_score,
                if missed.is_empty() { String::new() } else { format!(" | missed {}", missed.join(",")) },
                if false_alarms.is_empty() { String::new() } else { format!(" | false {}", false_alarms.join(",")) },
                cues.join(", "),
                a.speech_seconds,
                a.speakers,
                speakers.join(" "),
                a.turns,
                turn_list.join("; "),
                a.response_latency.map_or("-".into(), |l| format!("{l:.2}s")),
                a.overlaps,
                a.backchannels,
                a.pause_count,
                a.pause_seconds,
                a.pause_max,
                a.filled_pause_count,
                a.rising_terminals,
                a.falling_terminals,
                a.speech_rate.map_or("-".into(), |r| format!("{r:.1}")),
                a.loudness_mean.map_or("-".into(), |r| format!("{r:.1}")),
                a.f0_range.map_or("-".into(), |r| format!("{r:.1}")),
            ));
        }
    }
    out
}

#[test]
fn the_rule_analyzer_meets_its_floors_on_the_labelled_corpus() {
    let scores = evaluate(&rules);
    eprintln!("\n{}", report(&scores));
    eprintln!(
        "Misread windows (speaker tracker):\n{}",
        diagnosis(Turns::Tracker)
    );
    let online = evaluate_with(&rules, Turns::Online);
    eprintln!(
        "\nWith the online speaker tracker (streams):\n{}",
        report(&online)
    );
    eprintln!(
        "Misread windows (online speaker tracker):\n{}",
        diagnosis(Turns::Online)
    );
    let missed_online = missed_floors_of(&online, ONLINE_ACCURACY_FLOOR, &ONLINE_FLOORS);
    assert!(
        missed_online.is_empty(),
        "{missed_online:#?}\n{}",
        report(&online)
    );
    let oracle = evaluate_with(&rules, Turns::Oracle);
    eprintln!(
        "\nWith the reference speaker turns (oracle):\n{}",
        report(&oracle)
    );
    eprintln!(
        "Misread windows (oracle turns):\n{}",
        diagnosis(Turns::Oracle)
    );
    for c in corpus() {
        let analysis_windows = c.windows.len();
        assert!(
            c.labels.iter().all(|l| l.index < analysis_windows),
            "{}: labels beyond the analysis",
            c.name
        );
    }
    let missed = missed_floors(&scores);
    assert!(missed.is_empty(), "{missed:#?}\n{}", report(&scores));
}

#[test]
fn the_rules_meet_their_floors_on_the_reference_speaker_turns() {
    let scores = evaluate_with(&rules, Turns::Oracle);
    let missed = missed_floors_of(&scores, ORACLE_ACCURACY_FLOOR, &ORACLE_FLOORS);
    assert!(missed.is_empty(), "{missed:#?}\n{}", report(&scores));
    // A constant analyzer fails these floors too.
    for state in STATES {
        for all in [false, true] {
            let verdict = constant(state, all);
            let scores = evaluate_with(&|| Box::new(Constant(verdict.clone())), Turns::Oracle);
            assert!(
                !missed_floors_of(&scores, ORACLE_ACCURACY_FLOOR, &ORACLE_FLOORS).is_empty(),
                "a constant {state} analyzer meets the oracle floors"
            );
        }
    }
}

/// An analyzer that answers the same verdict whatever it hears.
struct Constant(WindowResult);

impl WindowAnalyzer for Constant {
    fn analyze(&mut self, _: &WindowFeatures) -> WindowResult {
        self.0.clone()
    }
}

fn constant(engagement: EngagementLevel, all_signals: bool) -> WindowResult {
    WindowResult {
        start: 0.0,
        end: 0.0,
        engagement,
        findings: if all_signals {
            SignalType::ALL
                .iter()
                .map(|&signal| attune_core::analysis::Finding {
                    signal,
                    probability: Probability::High,
                    rationale: "constant".to_owned(),
                    channels: vec![attune_core::analysis::Channel::Audio],
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}

#[test]
fn constant_analyzers_fail_the_floors() {
    for state in STATES {
        for all in [false, true] {
            let verdict = constant(state, all);
            let scores = evaluate(&|| Box::new(Constant(verdict.clone())));
            let missed = missed_floors(&scores);
            assert!(
                !missed.is_empty(),
                "a constant {state} analyzer ({}) meets every floor:\n{}",
                if all { "every signal" } else { "no signal" },
                report(&scores)
            );
        }
    }
}

#[test]
fn every_scored_signal_has_negative_controls() {
    let scores = evaluate(&rules);
    // Signals the corpus never asks for (confidence, confusion, frustration,
    // tension) are scored on their negative controls alone.
    for (signal, c) in &scores.signals {
        assert!(c.fp + c.tn > 0, "{signal}: {c:?} has no negative control");
    }
    for signal in TARGETS {
        let c = scores.counts(signal);
        assert!(
            c.tp + c.fn_ >= 5 && c.fp + c.tn >= 5,
            "{signal}: {c:?} (needs windows where it must and must not fire)"
        );
    }
}

/// Prints every labelled window's measures and verdict (for tuning):
/// `cargo test -p attune-core --test evaluation dump -- --ignored --nocapture`.
#[test]
#[ignore]
fn dump() {
    for c in corpus() {
        let mut analyzer = rules();
        for (k, w) in c.windows.iter().enumerate() {
            let v = analyzer.analyze(w);
            let label = c.labels.iter().find(|l| l.index == k);
            let a = &w.audio;
            eprintln!(
                "{} #{k} truth={:?} should={:?} | read={} {:?} | sp={:.1} spk={} who={:?} turns={} dom={:?} lat={:?} ovl={} bc={} rate={:?} f0={:?} rng={:?} loud={:?} nf={:?} pauses={}/{:.1}/{:.1} fill={} rise={} fall={}",
                c.name,
                label.and_then(|l| l.state).map(|s| s.as_str()),
                label.map(|l| l.should.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
                v.engagement.as_str(),
                v.findings.iter().map(|f| format!("{}:{:?}", f.signal, f.probability)).collect::<Vec<_>>(),
                a.speech_seconds, a.speakers, a.speaker, a.turns, a.dominant_share.map(|x| (x * 100.0).round()),
                a.response_latency.map(|x| (x * 100.0).round() / 100.0), a.overlaps, a.backchannels,
                a.speech_rate.map(|x| (x * 10.0).round() / 10.0), a.f0_mean.map(|x| x.round()),
                a.f0_range.map(|x| x.round()), a.loudness_mean.map(|x| x.round()), a.noise_floor.map(|x| x.round()),
                a.pause_count, a.pause_seconds, a.pause_max, a.filled_pause_count, a.rising_terminals, a.falling_terminals,
            );
        }
    }
}

// ---------------------------------------------------------------- robustness

fn analyze_fixture(name: &str) -> FileAnalysis {
    let samples = pcm(&format!("robustness/{name}.flac"));
    let duration = samples.len() as f64 / f64::from(features::SAMPLE_RATE);
    analyze_pcm(&samples, duration, Model::Inter2)
}

fn base() -> &'static FileAnalysis {
    static BASE: OnceLock<FileAnalysis> = OnceLock::new();
    BASE.get_or_init(|| analyze_fixture("base"))
}

/// Medium or high findings of `variant` that the same window of the base
/// recording does not have at medium or high.
fn added_strong_signals(variant: &FileAnalysis) -> Vec<String> {
    let strong = |w: &attune_core::wire::UploadJobWindow| -> Vec<SignalType> {
        w.signals
            .iter()
            .filter(|s| s.probability >= Some(Probability::Medium))
            .map(|s| s.signal_type)
            .collect()
    };
    let mut added = Vec::new();
    for (v, b) in variant.windows.iter().zip(&base().windows) {
        let before = strong(b);
        for s in &v.signals {
            if s.probability >= Some(Probability::Medium) && !before.contains(&s.signal_type) {
                added.push(format!(
                    "window {}: {} {:?}: {}",
                    v.index,
                    s.signal_type,
                    s.probability,
                    s.rationale.as_deref().unwrap_or("")
                ));
            }
        }
    }
    added
}

/// Share of windows whose engagement state is the base recording's.
fn kept_states(variant: &FileAnalysis) -> f64 {
    let windows = &base().windows;
    assert_eq!(variant.windows.len(), windows.len());
    let same = variant
        .windows
        .iter()
        .zip(windows)
        .filter(|(v, b)| v.engagement_status == b.engagement_status)
        .count();
    same as f64 / windows.len() as f64
}

fn states(a: &FileAnalysis) -> String {
    a.windows
        .iter()
        .map(|w| &w.engagement_status.as_str()[..1])
        .collect()
}

#[test]
fn a_whole_file_gain_of_plus_or_minus_8_db_adds_no_medium_or_high_signal() {
    for name in ["plus8", "minus8"] {
        let variant = analyze_fixture(name);
        let added = added_strong_signals(&variant);
        eprintln!(
            "{name}: {} medium/high signals added, {:.0}% of states kept",
            added.len(),
            kept_states(&variant) * 100.0
        );
        assert!(added.is_empty(), "{name}: {added:#?}");
    }
}

#[test]
fn an_8_db_level_step_mid_file_adds_at_most_one_medium_or_high_signal() {
    let variant = analyze_fixture("step8");
    let added = added_strong_signals(&variant);
    eprintln!(
        "step8: {} medium/high signals added, {:.0}% of states kept",
        added.len(),
        kept_states(&variant) * 100.0
    );
    assert!(added.len() <= 1, "{added:#?}");
}

/// Share of windows that must keep their state under noise, a telephone
/// band or background talk: the target for noise and the telephone was 0.9,
/// and both reached it with the energy VAD and the MFCC speaker turns (0.91
/// each). With Silero's speech probabilities and the voice networks' turns
/// (`inter-2/rules-7`) noise keeps 1.0, the telephone band 0.73 (3 of 11
/// windows move, docs/EVALUATION.md) and babble at 15 dB, which has no
/// target, 0.55 (0.45 before: Silero does not hear the babble as speech).
/// `inter-2/rules-8` (vocal arousal): noise 1.0, telephone 0.82, babble 0.45
/// (the talk behind the voice moves its spectral measures, and the
/// synthetic voices' arousal readings sit near the cue's floor).
/// `inter-2/rules-14` (the high-arousal model reads the alpha ratio inside the
/// telephone band): telephone 0.73 here, where real speech through the same
/// band went from 77 % to 84 % of 201 windows (`tests/microphone.rs`, the
/// measure that counts: espeak-ng's spectra are no human voice's, and these
/// 11 windows sit near the cue's floor).
const KEPT_STATES_FLOORS: [(&str, f64); 3] = [("pink20", 0.9), ("phone", 0.7), ("babble15", 0.4)];

#[test]
fn pink_noise_at_20_db_snr_or_a_telephone_band_keeps_most_engagement_states() {
    eprintln!("base:   {}", states(base()));
    let mut kept = Vec::new();
    for (name, floor) in KEPT_STATES_FLOORS {
        let variant = analyze_fixture(name);
        let share = kept_states(&variant);
        eprintln!(
            "{name}: {}  {:.0}% of states kept, {} medium/high signals added",
            states(&variant),
            share * 100.0,
            added_strong_signals(&variant).len()
        );
        kept.push((name, share, floor));
    }
    for (name, share, floor) in kept {
        assert!(share >= floor, "{name}: {:.0}% kept", share * 100.0);
    }
}

/// Stretches of the robustness recording (`tests/fixtures/robustness/make.sh`
/// joins the speech fixtures in this order; durations from
/// `tests/fixtures/speech/truth.json`) with the syllables of their text
/// (`tests/fixtures/speech/make.sh`), counted by hand: the lively exchange,
/// the neutral monologue and the stressed one.
const TEXT_SYLLABLES: [(&str, f64, f64, u32); 3] = [
    ("two voices", 0.0, 10.394, 40),
    ("baseline", 10.394, 20.291, 36),
    ("stressed", 42.511, 52.227, 58),
];

/// The syllable-nucleus counter (speech rate) agrees with the text's
/// syllables, in full band and through a telephone band (300-3400 Hz):
/// before nuclei had to stand 2 dB above the dip on both sides, it counted
/// 17-28 % too many in full band (47, 46, 69) and fewer through the
/// telephone band, so the band read as slower speech.
#[test]
fn syllable_nuclei_match_the_text_in_full_band_and_through_a_telephone_band() {
    for name in ["base", "phone"] {
        let f = features::extract(&pcm(&format!("robustness/{name}.flac")));
        for (what, start, end, text) in TEXT_SYLLABLES {
            let count = features::summarize(&f, Span::new(start, end)).syllable_count;
            let error = (f64::from(count) - f64::from(text)) / f64::from(text);
            eprintln!(
                "{name} {what}: {count} nuclei, {text} syllables in the text ({:+.0} %)",
                error * 100.0
            );
            assert!(
                error.abs() <= 0.05,
                "{name} {what}: {count} nuclei for {text} syllables"
            );
        }
    }
}

/// Prints each robustness variant's window measures beside the base
/// recording's (for diagnosis):
/// `cargo test -p attune-core --test evaluation robustness_dump -- --ignored --nocapture`.
#[test]
#[ignore]
fn robustness_dump() {
    for name in ["base", "phone", "pink20", "step8", "minus8"] {
        let windows = measure(
            &pcm(&format!("robustness/{name}.flac")),
            Turns::Tracker,
            &[],
        );
        let analysis = analyze_fixture(name);
        let mut analyzer = RuleAnalyzer::new(ModelParams::for_model(Model::Inter2));
        for (w, r) in windows.iter().zip(&analysis.windows) {
            let a = &w.audio;
            let x = analyzer.explain(w);
            eprintln!(
                "  arousal measures {:?}",
                attune_core::analysis::arousal::ArousalModel::shipped()
                    .read_voices(a, None, None)
                    .iter()
                    .map(|(v, r)| (
                        v,
                        r.values.map(|x| (x * 10.0).round() / 10.0),
                        (r.high * 100.0).round()
                    ))
                    .collect::<Vec<_>>()
            );
            eprintln!(
                "  engaged {:.2} disengaged {:.2} speakers {} | {}",
                x.engaged_score,
                x.disengaged_score,
                a.speakers,
                x.evidence
                    .iter()
                    .map(|e| format!("{:?} {:.2}: {}", e.cue, e.strength, e.text))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            eprintln!(
                "{name} #{} {} speech {:.1}s pauses {}/{:.1}s max {:.1}s rate {} gaps {:?} | {}",
                r.index,
                r.engagement_status.as_str(),
                a.speech_seconds,
                a.pause_count,
                a.pause_seconds,
                a.pause_max,
                a.speech_rate.map_or("-".into(), |x| format!("{x:.1}")),
                a.turn_list
                    .iter()
                    .filter_map(|t| t.gap_before)
                    .map(|g| (g * 100.0).round() / 100.0)
                    .collect::<Vec<_>>(),
                r.signals
                    .iter()
                    .map(|s| format!("{}:{:?}", s.signal_type, s.probability))
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
}
