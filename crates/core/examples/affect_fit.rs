//! Fits the vocal arousal models (`attune_core::analysis::arousal`) on EmoDB
//! (`../shared/data/real/emodb`, joined per actor and emotion as
//! `tests/common/real_speech.rs` describes), prints their leave-one-speaker-out
//! figures, and writes the weights fitted on all ten actors to
//! `crates/core/data/arousal.json`:
//!
//! ```text
//! cargo run --release -p attune-core --example affect_fit
//! ```
//!
//! The figures per emotion are the shares of windows whose held-out reading
//! passes 0.5 and the cues' 0.675 (strength 0.5).

#[path = "../tests/common/par.rs"]
mod par;
#[path = "../tests/common/real_speech.rs"]
mod real_speech;

// `real_speech` maps its recordings in parallel through `super::par_map`.
use par::par_map;

use attune_core::analysis::arousal::{ArousalModel, Measure};
use real_speech::Emotion;

fn main() {
    let Some(real) = real_speech::shared_real() else {
        std::process::exit(1);
    };
    let recordings = real_speech::emodb(&real);
    let pcm: Vec<Vec<f32>> = recordings.iter().map(|r| r.samples.clone()).collect();
    let measured = real_speech::measure_all(&pcm);

    let folds = real_speech::loso_models(&recordings, &measured);
    let mut rows: std::collections::BTreeMap<Emotion, [usize; 5]> = Default::default();
    for (r, ws) in recordings.iter().zip(&measured) {
        let model = &folds[&r.speaker];
        for w in ws {
            let Some(x) = model.read(&w.audio) else {
                continue;
            };
            let c = rows.entry(r.emotion).or_default();
            c[0] += 1;
            c[1] += usize::from(x.high > 0.5);
            c[2] += usize::from(x.high > 0.675);
            c[3] += usize::from(x.low > 0.5);
            c[4] += usize::from(x.low > 0.675);
        }
    }
    println!("Leave one speaker out, windows per emotion (EmoDB, 10 actors):");
    println!("| emotion | windows read | high > 0.5 | high > 0.675 | low > 0.5 | low > 0.675 |");
    println!("|---|---|---|---|---|---|");
    for (e, c) in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            e.name(),
            c[0],
            c[1],
            c[2],
            c[3],
            c[4]
        );
    }

    let all = real_speech::samples(&recordings, &measured, |_| true);
    let source = format!(
        "EmoDB (../shared/data/real/emodb; Burkhardt et al. 2005): {} windows of 5 s from {} \
         recordings of one actor in one emotion (10 actors; anger, fear, happiness high; \
         boredom, sadness low; neutral; disgust left out), L2 {} on standardized measures; \
         fitted by crates/core/examples/affect_fit.rs",
        all.len(),
        recordings.len(),
        real_speech::L2
    );
    let model = ArousalModel::fit(&all, real_speech::L2, source);
    println!("\nWeights on all ten actors (per spread of each measure):");
    println!("| measure | neutral speech | spread | high | low |");
    println!("|---|---|---|---|---|");
    for (i, m) in Measure::ALL.iter().enumerate() {
        println!(
            "| {} | {:.3} | {:.3} | {:+.2} | {:+.2} |",
            m.words(),
            model.neutral[i],
            model.sd[i],
            model.high.weights[i],
            model.low.weights[i]
        );
    }
    println!(
        "| intercept | | | {:+.2} | {:+.2} |",
        model.high.bias, model.low.bias
    );
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/data/arousal.json");
    let json = serde_json::to_string_pretty(&model).expect("serializes");
    std::fs::write(path, json + "\n").expect("writes arousal.json");
    println!("\nwrote {path}");
}
