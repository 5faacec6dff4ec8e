//! The affect readings on real labelled speech (`../shared/data/real/`): EmoDB joined into one
//! actor and one emotion per recording, window by window, as `attune analyze` reads it; and the
//! rated clips of `emotion-arousal/`. Prints the figures of `docs/EVALUATION.md` ("Affect on real
//! speech") for both models; with `AFFECT_CSV=path` it also writes every window's measures.
//!
//! ```text
//! cargo run --release -p attune-core --example affect_eval
//! ```

#[path = "../tests/common/par.rs"]
mod par;
#[path = "../tests/common/real_speech.rs"]
mod real_speech;

// `real_speech` maps its recordings in parallel through `super::par_map`.
use par::par_map;

use attune_core::analysis::cues::Cue;
use attune_core::analysis::params::ModelParams;
use attune_core::analysis::{RuleAnalyzer, WindowFeatures};
use attune_core::wire::{EngagementLevel, Model, SignalType};
use real_speech::{Emotion, Recording};

fn main() {
    let Some(real) = real_speech::shared_real() else {
        return;
    };
    let t = std::time::Instant::now();
    let recordings = real_speech::emodb(&real);
    let pcm: Vec<Vec<f32>> = recordings.iter().map(|r| r.samples.clone()).collect();
    let measured = real_speech::measure_all(&pcm);
    eprintln!(
        "{} recordings, {} windows measured in {:.1} s",
        recordings.len(),
        measured.iter().map(Vec::len).sum::<usize>(),
        t.elapsed().as_secs_f64()
    );
    if let Ok(path) = std::env::var("AFFECT_CSV") {
        let mut csv = String::from("speaker,emotion,rec,win,speech_s,rate,f0_mean,f0_range,f0_sd,loud,loud_range,noise,jitter,shimmer,hnr,alpha,hammarberg,slope_lo,slope_hi,pauses,pause_s,rising,falling,speakers\n");
        for (i, (r, ws)) in recordings.iter().zip(&measured).enumerate() {
            for (j, w) in ws.iter().enumerate() {
                let a = &w.audio;
                let o = |v: Option<f64>| v.map_or(String::from("NA"), |v| format!("{v:.4}"));
                csv += &format!(
                    "{},{},{i},{j},{:.2},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.2},{},{},{}\n",
                    r.speaker,
                    r.emotion.name(),
                    a.speech_seconds,
                    o(a.speech_rate),
                    o(a.f0_mean),
                    o(a.f0_range),
                    o(a.f0_sd),
                    o(a.loudness_mean),
                    o(a.loudness_range),
                    o(a.noise_floor),
                    o(a.jitter),
                    o(a.shimmer_db),
                    o(a.hnr),
                    o(a.alpha_ratio),
                    o(a.hammarberg),
                    o(a.slope_0_500),
                    o(a.slope_500_1500),
                    a.pause_count,
                    a.pause_seconds,
                    a.rising_terminals,
                    a.falling_terminals,
                    a.speakers
                );
            }
        }
        std::fs::write(&path, csv).expect("AFFECT_CSV");
    }
    norms(&real, &recordings, &measured);
    for model in [Model::Inter2Audio, Model::Inter2] {
        let params = ModelParams::for_model(model);
        report(params, &recordings, &measured);
    }
}

/// Window-level counts: (windows, with stress/tension/frustration, with
/// disengagement, engaged, disengaged) per emotion.
fn report(
    params: &'static ModelParams,
    recordings: &[Recording],
    measured: &[Vec<WindowFeatures>],
) {
    use std::collections::BTreeMap;
    let mut by: BTreeMap<Emotion, [usize; 6]> = BTreeMap::new();
    for (r, ws) in recordings.iter().zip(measured) {
        let mut analyzer = RuleAnalyzer::new(params);
        for w in ws {
            let x = analyzer.explain(w);
            let has = |s: &[SignalType]| x.verdict.findings.iter().any(|f| s.contains(&f.signal));
            let c = by.entry(r.emotion).or_default();
            c[0] += 1;
            c[1] += usize::from(has(&[
                SignalType::Stress,
                SignalType::Tension,
                SignalType::Frustration,
            ]));
            c[2] += usize::from(has(&[SignalType::Disengagement]));
            c[3] += usize::from(x.verdict.engagement == EngagementLevel::Engaged);
            c[4] += usize::from(x.verdict.engagement == EngagementLevel::Disengaged);
            c[5] += usize::from(has(&[SignalType::Interest, SignalType::Engagement]));
        }
    }
    println!("\n{}: windows per emotion", params.version);
    println!("| emotion | windows | stress/tension/frustration | disengagement | engaged | disengaged | interest/engagement |");
    println!("|---|---|---|---|---|---|---|");
    for (e, c) in &by {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            e.name(),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4],
            c[5]
        );
    }
}

fn mean_sd(v: &[f64]) -> String {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n).sqrt();
    format!("{m:.2} +/- {sd:.2} (n {})", v.len())
}

/// Population norms of the measures the cues judge, from real speech: EmoDB's neutral windows and
/// the windows of the AMI meetings where one voice speaks for at least 2 s.
fn norms(real: &str, recordings: &[Recording], measured: &[Vec<WindowFeatures>]) {
    let mut sets: Vec<(&str, Vec<&WindowFeatures>)> = Vec::new();
    // Neutral speech is the norm; boredom and sadness show what an absolute low-arousal reading
    // would look for, beside natural meetings.
    for (name, emotion) in [
        ("EmoDB neutral", Emotion::Neutral),
        ("EmoDB boredom", Emotion::Boredom),
        ("EmoDB sadness", Emotion::Sadness),
    ] {
        sets.push((
            name,
            recordings
                .iter()
                .zip(measured)
                .filter(|(r, _)| r.emotion == emotion)
                .flat_map(|(_, ws)| ws.iter())
                .collect(),
        ));
    }
    let ami: Vec<Vec<f32>> = real_speech::ami(real).into_iter().map(|(_, s)| s).collect();
    let ami_windows = real_speech::measure_all(&ami);
    let leaked: &'static [Vec<WindowFeatures>] = Box::leak(ami_windows.into_boxed_slice());
    sets.push((
        "AMI, one voice",
        leaked
            .iter()
            .flatten()
            .filter(|w| w.audio.speakers == 1 && w.audio.speech_seconds >= 2.0)
            .collect(),
    ));
    // How the arousal models read natural conversation (no emotion labels: what share of
    // voices they call aroused or low).
    let tel = real_speech::telephone_call();
    let tel_windows = real_speech::windows(&tel);
    // How the analyzer reads natural conversation (no emotion labels: what share of windows it
    // calls engaged, disengaged, stressed), file by file as uploads read them.
    let files: Vec<(&str, &[WindowFeatures])> = leaked
        .iter()
        .map(|ws| ("AMI", ws.as_slice()))
        .chain(std::iter::once((
            "telephone sample",
            tel_windows.as_slice(),
        )))
        .collect();
    let mut tally: std::collections::BTreeMap<&str, [usize; 7]> = Default::default();
    for (name, ws) in files {
        let mut analyzer = RuleAnalyzer::new(ModelParams::for_model(Model::Inter2));
        for w in ws {
            let x = analyzer.explain(w);
            if std::env::var("AFFECT_WHY").is_ok_and(|v| v == name) {
                for e in x
                    .evidence
                    .iter()
                    .filter(|e| matches!(e.cue, Cue::HighArousal | Cue::LowArousal))
                {
                    eprintln!(
                        "{name} {:.0}-{:.0} s: {:?} {:.2} {}",
                        w.start, w.end, e.cue, e.strength, e.text
                    );
                }
            }
            let t = tally.entry(name).or_default();
            t[0] += 1;
            t[1] += usize::from(x.verdict.engagement == EngagementLevel::Engaged);
            t[2] += usize::from(x.verdict.engagement == EngagementLevel::Disengaged);
            let has = |s: SignalType| x.verdict.findings.iter().any(|f| f.signal == s);
            t[3] += usize::from(has(SignalType::Stress) || has(SignalType::Frustration));
            t[4] += usize::from(has(SignalType::Disengagement));
            let cue = |c: Cue| x.evidence.iter().any(|e| e.cue == c);
            t[5] += usize::from(cue(Cue::HighArousal));
            t[6] += usize::from(cue(Cue::LowArousal));
        }
    }
    println!("\nNatural conversation, inter-2 (no labels):");
    println!("| set | windows | engaged | disengaged | stress or frustration | disengagement | high arousal cue | low arousal cue |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, t) in tally {
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            t[0], t[1], t[2], t[3], t[4], t[5], t[6]
        );
    }
    println!("\nNorms of real speech (window level, 5 s):");
    println!("| set | articulation rate, syll/s | pitch range, st | longest pause, s | alpha ratio, dB | Hammarberg index, dB | harmonics-to-noise, dB | loudness dynamics, dB |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, ws) in sets {
        let get = |f: &dyn Fn(&WindowFeatures) -> Option<f64>| -> Vec<f64> {
            ws.iter().filter_map(|w| f(w)).collect()
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            mean_sd(&get(&|w| w.audio.speech_rate)),
            mean_sd(&get(&|w| w.audio.f0_range)),
            mean_sd(&get(&|w| Some(w.audio.pause_max))),
            mean_sd(&get(&|w| w.audio.alpha_ratio)),
            mean_sd(&get(&|w| w.audio.hammarberg)),
            mean_sd(&get(&|w| w.audio.hnr)),
            mean_sd(&get(&|w| w.audio.loudness_range)),
        );
    }
}
