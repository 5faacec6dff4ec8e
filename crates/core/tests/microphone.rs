//! The same conversation reads the same through any microphone, line or codec (issue 25, item
//! 5): real speech, and variants of it made at test time (`common/variants.rs`: gain through a
//! limiter, a level step, the telephone band, noise, codec round trips through `ffmpeg`), each
//! analyzed as an upload with `inter-2-audio` and compared window by window with the original.
//!
//! Speech: the committed telephone call (`tests/fixtures/real/sample.wav`), the AMI meeting
//! excerpts and EmoDB (the first joined recording of each actor and emotion) from
//! `../shared/data/real/` (read from there, never copied; missing with
//! `ATTUNE_REQUIRE_REAL_DATA` set is a failure). Every figure is printed; run with
//! `--nocapture` to see the tables.

mod common;

use attune_core::pipeline::analyze_pcm;
use attune_core::wire::{EngagementLevel, Model, Probability, SignalType, UploadJobWindow};
use common::par_map;
use common::real_speech::{self, Emotion};
use common::variants;
use std::collections::BTreeMap;

/// One recording: its name and 16 kHz samples.
struct Speech {
    name: String,
    samples: Vec<f32>,
}

fn sample_call() -> Speech {
    Speech {
        name: "telephone call".into(),
        samples: real_speech::telephone_call(),
    }
}

/// The telephone call, then (when `../shared/data/real/` is here) the AMI excerpts and one
/// EmoDB recording per actor and emotion.
fn corpus() -> Vec<Speech> {
    let mut out = vec![sample_call()];
    let Some(real) = real_speech::shared_real() else {
        return out;
    };
    for (n, samples) in real_speech::ami(&real) {
        out.push(Speech {
            name: format!("AMI {n}"),
            samples,
        });
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in real_speech::emodb(&real) {
        if seen.insert((r.speaker.clone(), r.emotion)) && r.emotion != Emotion::Disgust {
            out.push(Speech {
                name: format!("EmoDB {} {}", r.speaker, r.emotion.name()),
                samples: r.samples,
            });
        }
    }
    out
}

fn analyze(samples: &[f32]) -> Vec<UploadJobWindow> {
    let duration = samples.len() as f64 / variants::RATE as f64;
    analyze_pcm(samples, duration, Model::Inter2Audio).windows
}

/// How a variant's windows compare with the original's.
#[derive(Debug, Default, Clone)]
struct Agreement {
    /// Windows compared (those of at least 2 s).
    windows: usize,
    /// Of them, with the same engagement state.
    same_state: usize,
    /// Signal decisions (window x signal type: present or not) compared, and the same.
    decisions: usize,
    same_decisions: usize,
    /// Windows with a signal at medium or high in the variant that the original has below
    /// medium (or not at all).
    invented: usize,
    /// Per signal type, decisions that differ; per state pair (original -> variant), windows.
    moved: BTreeMap<String, usize>,
}

fn level(w: &UploadJobWindow, t: SignalType) -> Option<Probability> {
    w.signals
        .iter()
        .filter(|s| s.signal_type == t)
        .filter_map(|s| s.probability)
        .max()
}

/// The signals the audio model reports.
fn audible() -> impl Iterator<Item = SignalType> {
    attune_core::analysis::params::INTER_2_AUDIO
        .signals
        .iter()
        .map(|rule| rule.signal)
}

impl Agreement {
    fn add(&mut self, original: &[UploadJobWindow], variant: &[UploadJobWindow]) {
        for (o, v) in original.iter().zip(variant) {
            if o.end_seconds - o.start_seconds < 2.0 || v.end_seconds - v.start_seconds < 2.0 {
                continue;
            }
            self.windows += 1;
            if o.engagement_status == v.engagement_status {
                self.same_state += 1;
            } else {
                *self
                    .moved
                    .entry(format!(
                        "{} -> {}",
                        state(o.engagement_status),
                        state(v.engagement_status)
                    ))
                    .or_default() += 1;
            }
            let mut invented = false;
            for t in audible() {
                let (lo, lv) = (level(o, t), level(v, t));
                self.decisions += 1;
                if lo.is_some() == lv.is_some() {
                    self.same_decisions += 1;
                } else {
                    *self.moved.entry(format!("{t:?}")).or_default() += 1;
                }
                let strong = |l: Option<Probability>| l.is_some_and(|p| p >= Probability::Medium);
                if strong(lv) && !strong(lo) {
                    invented = true;
                    *self.moved.entry(format!("{t:?} medium+ new")).or_default() += 1;
                }
            }
            self.invented += usize::from(invented);
        }
    }

    fn state_share(&self) -> f64 {
        self.same_state as f64 / self.windows.max(1) as f64
    }

    fn decision_share(&self) -> f64 {
        self.same_decisions as f64 / self.decisions.max(1) as f64
    }

    fn row(&self, variant: &str, set: &str) -> String {
        format!(
            "| {variant} | {set} | {}/{} ({:.0} %) | {:.1} % | {} | {:?} |",
            self.same_state,
            self.windows,
            100.0 * self.state_share(),
            100.0 * self.decision_share(),
            self.invented,
            self.moved
        )
    }
}

fn state(l: EngagementLevel) -> &'static str {
    match l {
        EngagementLevel::Engaged => "engaged",
        EngagementLevel::Disengaged => "disengaged",
        _ => "neutral",
    }
}

/// Which set a recording belongs to, for the tables.
fn set_of(name: &str) -> &'static str {
    if name.starts_with("AMI") {
        "AMI"
    } else if name.starts_with("EmoDB") {
        "EmoDB"
    } else {
        "call"
    }
}

/// A variant: its name and how it is made from the original samples.
type Variant = (&'static str, fn(&[f32]) -> Vec<f32>);

/// A variant that may not be made (a codec without ffmpeg).
type MaybeVariant<'a> = (&'a str, Box<dyn Fn(&[f32]) -> Option<Vec<f32>> + Sync>);

/// The variants made in pure Rust (no tool needed).
fn rust_variants() -> Vec<Variant> {
    vec![
        ("+8 dB through a limiter", |s| {
            variants::gain_limited(s, 8.0)
        }),
        ("-8 dB", |s| variants::gain_limited(s, -8.0)),
        ("+8 dB step mid-window", |s| {
            // Mid-window on purpose (windows are 5 s), near the middle of the file.
            let half = s.len() as f64 / variants::RATE as f64 / 2.0;
            variants::level_step(s, (half / 5.0).floor() * 5.0 + 2.5, 8.0)
        }),
        ("telephone band", variants::telephone),
        ("pink noise 20 dB", |s| variants::with_noise(s, 20.0, true)),
        ("white noise 20 dB", |s| {
            variants::with_noise(s, 20.0, false)
        }),
    ]
}

/// Per variant, per set ("all" too): the agreement with the original.
type Figures = BTreeMap<(String, String), Agreement>;

fn measure(speech: &[Speech], with_codecs: bool) -> Figures {
    // Every analysis (the originals and each variant of each recording) is one job in one pool.
    let rust = rust_variants();
    let codecs: &[variants::Codec] = if with_codecs { &variants::CODECS } else { &[] };
    let mut jobs: Vec<(Option<usize>, usize)> = (0..speech.len()).map(|i| (None, i)).collect();
    for v in 0..rust.len() + codecs.len() {
        jobs.extend((0..speech.len()).map(|i| (Some(v), i)));
    }
    let mut out: Vec<Option<Vec<UploadJobWindow>>> = par_map(
        &jobs,
        |&(_, i)| speech[i].samples.len(),
        |&(variant, i)| {
            let s = &speech[i];
            match variant {
                None => Some(analyze(&s.samples)),
                Some(v) if v < rust.len() => Some(analyze(&(rust[v].1)(&s.samples))),
                Some(v) => {
                    let codec = codecs[v - rust.len()];
                    let tag = format!("{}-{}", codec.ext, s.name.replace(' ', "_"));
                    variants::round_trip(&s.samples, codec, &tag).map(|pcm| analyze(&pcm))
                }
            }
        },
    );
    let variant_outputs = out.split_off(speech.len());
    let originals: Vec<Vec<UploadJobWindow>> = out
        .into_iter()
        .map(|w| w.expect("the original analyzed"))
        .collect();
    let names = rust
        .iter()
        .map(|(n, _)| *n)
        .chain(codecs.iter().map(|c| c.name));
    let mut figures = Figures::new();
    for (name, outputs) in names.zip(variant_outputs.chunks(speech.len())) {
        for (i, windows) in outputs.iter().enumerate() {
            let Some(windows) = windows else { continue };
            for set in [set_of(&speech[i].name), "all"] {
                figures
                    .entry((name.to_string(), set.to_string()))
                    .or_default()
                    .add(&originals[i], windows);
            }
        }
    }
    println!("| Variant | Set | Same state | Same signal decisions | Windows with an invented medium/high signal | What moved |");
    println!("|---|---|---|---|---|---|");
    for ((variant, set), a) in &figures {
        println!("{}", a.row(variant, set));
    }
    figures
}

fn get<'a>(f: &'a Figures, variant: &str) -> &'a Agreement {
    f.get(&(variant.to_string(), "all".to_string()))
        .unwrap_or_else(|| panic!("{variant} was not measured"))
}

/// Floors on the real speech at hand (issue 25 item 5; figures in `docs/EVALUATION.md`,
/// "Microphones, lines and codecs on real speech"). Targets of the issue and where they stand:
///
/// - codec round trips (lossless and lossy): >= 90 % of engagement states kept; met.
/// - gain +/-8 dB (+8 through a limiter) and a level step: no medium or high signal added;
///   not met: 2 windows of 201 gain one at -8 dB, 3 through the limiter, 4 with the level step
///   (the floor holds that count).
/// - telephone band and 20 dB noise: >= 85 % of states kept; met for white noise (88 %) and
///   pink noise (89 %), not for the telephone band: 80 % through a line that filters before it
///   resamples (`variants::telephone`). Through the earlier variant, which folded 4-8 kHz into
///   the band, 84 %; the floor went from 0.82 to 0.78 with the line, not with the analyzer.
const CODEC_STATES_MIN: f64 = 0.90;
const GAIN_INVENTED_MAX: usize = 4;
const BAND_STATES_MIN: f64 = 0.78;
const NOISE_STATES_MIN: f64 = 0.85;

#[test]
fn real_speech_reads_the_same_through_microphones_lines_and_codecs() {
    let speech = corpus();
    let codecs = variants::have_ffmpeg();
    if !codecs {
        eprintln!("NOT RUN: ffmpeg is not installed, so the codec round trips were not made");
    }
    let f = measure(&speech, codecs);
    for variant in ["+8 dB through a limiter", "-8 dB", "+8 dB step mid-window"] {
        let a = get(&f, variant);
        assert!(a.invented <= GAIN_INVENTED_MAX, "{variant}: {a:?}");
    }
    let a = get(&f, "telephone band");
    assert!(a.state_share() >= BAND_STATES_MIN, "telephone band: {a:?}");
    for variant in ["pink noise 20 dB", "white noise 20 dB"] {
        let a = get(&f, variant);
        assert!(a.state_share() >= NOISE_STATES_MIN, "{variant}: {a:?}");
    }
    if codecs {
        for c in variants::CODECS {
            let a = get(&f, c.name);
            assert!(a.state_share() >= CODEC_STATES_MIN, "{}: {a:?}", c.name);
        }
    }
}

/// The windows whose engagement state a variant moves, with both scores and every cue of the
/// original and the variant (the knife edges): `cargo test -p attune-core --test microphone --
/// --ignored --nocapture diagnose` (`ATTUNE_MIC_VARIANT` picks variants by name, comma-separated).
#[test]
#[ignore = "a diagnosis that prints, not a check"]
fn diagnose() {
    use attune_core::analysis::params::ModelParams;
    use attune_core::analysis::RuleAnalyzer;
    let speech = corpus();
    let only = std::env::var("ATTUNE_MIC_VARIANT").ok();
    let explain = |samples: &[f32]| {
        let mut analyzer = RuleAnalyzer::new(ModelParams::for_model(Model::Inter2Audio));
        real_speech::windows(samples)
            .iter()
            .map(|w| analyzer.explain(w))
            .collect::<Vec<_>>()
    };
    let originals = par_map(&speech, |s| s.samples.len(), |s| explain(&s.samples));
    let mut made: Vec<MaybeVariant<'_>> = rust_variants()
        .into_iter()
        .map(|(n, f)| -> MaybeVariant<'_> { (n, Box::new(move |s| Some(f(s)))) })
        .collect();
    for c in variants::CODECS {
        made.push((
            c.name,
            Box::new(move |s| variants::round_trip(s, c, &format!("diag-{}", s.len()))),
        ));
    }
    for (name, make) in made {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|o| o == name))
        {
            continue;
        }
        let out = par_map(
            &speech,
            |s| s.samples.len(),
            |s| make(&s.samples).map(|v| explain(&v)),
        );
        for ((s, o), v) in speech.iter().zip(&originals).zip(&out) {
            let Some(v) = v else { continue };
            for (x, y) in o.iter().zip(v) {
                let cues = |e: &attune_core::analysis::Explanation| {
                    e.evidence
                        .iter()
                        .map(|c| format!("{:?} {:.2}", c.cue, c.strength))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                // A signal at medium or high in the variant only ("invented").
                let medium = |e: &attune_core::analysis::Explanation, t: SignalType| {
                    e.verdict
                        .findings
                        .iter()
                        .any(|f| f.signal == t && f.probability >= Probability::Medium)
                };
                for f in &y.verdict.findings {
                    if f.probability >= Probability::Medium && !medium(x, f.signal) {
                        let before = x.verdict.findings.iter().find(|g| g.signal == f.signal);
                        println!(
                            "{name} | {} @{:.0}s | invented {:?} {:?} ({:?} before): {} | before [{}] after [{}]",
                            s.name,
                            x.verdict.start,
                            f.signal,
                            f.probability,
                            before.map(|g| g.probability),
                            f.rationale,
                            cues(x),
                            cues(y)
                        );
                    }
                }
                if x.verdict.engagement == y.verdict.engagement {
                    continue;
                }
                println!(
                    "{name} | {} @{:.0}s | {:?} e{:.2} d{:.2} [{}] -> {:?} e{:.2} d{:.2} [{}]",
                    s.name,
                    x.verdict.start,
                    x.verdict.engagement,
                    x.engaged_score,
                    x.disengaged_score,
                    cues(x),
                    y.verdict.engagement,
                    y.engaged_score,
                    y.disengaged_score,
                    cues(y)
                );
            }
        }
    }
}

/// Power of `x` over its middle half (clear of the filters' start-up), dB.
fn middle_power_db(x: &[f32]) -> f64 {
    let mid = &x[x.len() / 4..3 * x.len() / 4];
    10.0 * (mid.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / mid.len() as f64).log10()
}

/// The telephone variant is a telephone channel: the band passes, and what lies above 4 kHz
/// is taken away rather than folded into the band (at 8 kHz a 5 kHz tone would return as
/// 3 kHz; ITU-T P.48's sending filter has it 52 dB down).
#[test]
fn the_telephone_variant_passes_the_band_and_folds_nothing_into_it() {
    let tone = |hz: f64| -> Vec<f32> {
        (0..variants::RATE)
            .map(|i| {
                (0.5 * (2.0 * std::f64::consts::PI * hz * i as f64 / variants::RATE as f64).sin())
                    as f32
            })
            .collect()
    };
    let loss_at = |hz: f64| {
        let x = tone(hz);
        middle_power_db(&x) - middle_power_db(&variants::telephone(&x))
    };
    for hz in [1000.0, 2000.0] {
        let loss = loss_at(hz);
        assert!(loss.abs() < 1.0, "{hz} Hz loses {loss:.2} dB in the band");
    }
    // Fourth-order edges: 38 dB at 100 Hz.
    for (hz, floor) in [(100.0, 35.0), (5000.0, 40.0), (6500.0, 40.0)] {
        let loss = loss_at(hz);
        assert!(
            loss > floor,
            "{hz} Hz is only {loss:.1} dB down through the line"
        );
    }
}

/// The mean change of the arousal models' measures between each window with one voice and its
/// telephone-band copy (`docs/EVALUATION.md`, "Microphones, lines and codecs"): `cargo test -p
/// attune-core --test microphone -- --ignored --nocapture arousal_measures_under_the_telephone_band`
/// (`ATTUNE_LINE_HIGH_PASS=0`: the same line without its 300 Hz high-pass).
#[test]
#[ignore = "a diagnosis that prints, not a check"]
fn arousal_measures_under_the_telephone_band() {
    use attune_core::analysis::arousal::{ArousalModel, Measure, MEASURES};
    let (mut sums, mut n) = ([0.0f64; MEASURES], 0usize);
    for s in &corpus() {
        let high_pass = std::env::var("ATTUNE_LINE_HIGH_PASS").map_or(true, |v| v != "0");
        let phone = real_speech::windows(&variants::line(&s.samples, high_pass));
        for (a, b) in real_speech::windows(&s.samples).iter().zip(&phone) {
            let (Some(x), Some(y)) = (
                ArousalModel::measures_of(&a.audio),
                ArousalModel::measures_of(&b.audio),
            ) else {
                continue;
            };
            for (sum, (x, y)) in sums.iter_mut().zip(x.iter().zip(&y)) {
                *sum += y - x;
            }
            n += 1;
        }
    }
    for (m, sum) in Measure::ALL.iter().zip(sums) {
        println!(
            "{}: mean change {:.2} over {n} windows",
            m.key(),
            sum / n.max(1) as f64
        );
    }
}

/// The arousal model's five measures of a few recordings at their level and 8 dB quieter (a
/// pure gain: the limiter does not act): which of them a gain moves. `cargo test -p
/// attune-core --test microphone -- --ignored --nocapture arousal_measures_under_gain`
#[test]
#[ignore = "a diagnosis that prints, not a check"]
fn arousal_measures_under_gain() {
    use attune_core::analysis::arousal::ArousalModel;
    let speech = corpus();
    for s in speech.iter().step_by(7).take(6) {
        for db in [0.0, -8.0, -20.0] {
            let scaled: Vec<f32> = s
                .samples
                .iter()
                .map(|x| x * 10f32.powf(db / 20.0))
                .collect();
            for (i, w) in real_speech::windows(&scaled).iter().enumerate() {
                let a = &w.audio;
                println!(
                    "{} {db} dB w{i}: measures {:?} loudness {:?} noise floor {:?} speech {:.2} s",
                    s.name,
                    ArousalModel::measures_of(a).map(|m| m.map(|v| (v * 100.0).round() / 100.0)),
                    a.loudness_mean,
                    a.noise_floor,
                    a.speech_seconds
                );
            }
        }
    }
}
