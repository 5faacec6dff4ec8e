//! Names the language of 16 kHz mono 16-bit WAV files with the committed language-identification
//! model (Whisper base, `models/whisper-base-language.*`) and prints, per file, the most probable
//! language, its probability, the probability of English, and the CPU seconds it took (the model
//! loaded before):
//!
//! ```text
//! cargo run --release -p attune-voice --example language -- FILE.wav...
//! ```

#[path = "../tests/common/mod.rs"]
mod common;

use attune_voice::whisper::LanguageIdentifier;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: language FILE.wav...");
        std::process::exit(2);
    }
    let (weights, config) = LanguageIdentifier::default_files();
    let id = LanguageIdentifier::load(&weights, &config).expect("the model loads");
    for path in &files {
        let pcm = common::read_wav(path);
        let cpu = cpu_time::ProcessTime::now();
        let guess = id.identify(&pcm).expect("identification runs");
        let (best, p) = guess.best();
        println!(
            "{path}\t{best}\t{p:.3}\ten {:.3}\t{:.1} s audio\t{:.2} CPU s",
            guess.probability("en"),
            pcm.len() as f64 / 16000.0,
            cpu.elapsed().as_secs_f64()
        );
    }
}
