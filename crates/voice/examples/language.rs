//! Names the language of 16 kHz mono 16-bit WAV files with the committed language-identification
//! model (Whisper base, `models/whisper-base-language.*`) and prints, per file, the most probable
//! language, its probability, the probability of English, and the CPU seconds it took (the model
//! loaded before):
//!
//! ```text
//! cargo run --release -p attune-voice --example language -- FILE.wav...
//! ```

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
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let data = bytes
            .windows(4)
            .position(|w| w == b"data")
            .expect("a WAV data chunk");
        let pcm: Vec<f32> = bytes[data + 8..]
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
            .collect();
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
