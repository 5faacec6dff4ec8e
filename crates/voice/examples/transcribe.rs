//! Transcribes a 16 kHz mono 16-bit WAV file with the committed Whisper model and prints the
//! segments (start, end, mean log-probability per token, no-speech probability, text), then
//! the cost (CPU seconds of the transcription alone, the model loaded before;
//! for `benches/whisper.sh`):
//!
//! ```text
//! cargo run --release -p attune-voice --example transcribe -- FILE.wav [--stream] [--exact]
//!     [--min S] [--max S] [--prompt TOKENS] [--reference TEXT.txt]
//! ```
//!
//! `--stream` feeds the file in 0.5 s chunks to the stream transcriber; `--exact` computes the
//! decoder in f32 (the reference's arithmetic) instead of 8 bits. For streams, `--min` and
//! `--max` set the audio held before a pause may close it and before it is decoded anyway, and
//! `--prompt` how many tokens of the previous text prompt the next window (`StreamParams`).
//! `--reference` prints the word error rate against the words of a text file (Whisper's English
//! normalization). It sets `CANDLE_NUM_THREADS=1` and `RAYON_NUM_THREADS=1` unless they are set,
//! as `attune` does (`attune_voice::threads::one_candle_thread_unless_set`).

#[path = "../tests/common/mod.rs"]
mod common;

use attune_voice::whisper::{DecodeOptions, ModelFiles, StreamParams, StreamTranscriber, Whisper};
use std::time::Instant;

fn main() {
    attune_voice::threads::one_candle_thread_unless_set();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let reference = value("--reference");
    let seconds = |flag: &str| value(flag).map(|c| c.parse::<f64>().expect("seconds"));
    let defaults = StreamParams::default();
    let min_seconds = seconds("--min").unwrap_or(defaults.min_seconds);
    let max_seconds = seconds("--max").unwrap_or(defaults.max_seconds);
    let prompt_tokens = value("--prompt").map_or(defaults.prompt_tokens, |n| {
        n.parse().expect("--prompt tokens")
    });
    let Some(path) = args.iter().enumerate().find_map(|(i, a)| {
        let is_value = i > 0
            && matches!(
                args[i - 1].as_str(),
                "--reference" | "--min" | "--max" | "--prompt"
            );
        (!a.starts_with("--") && !is_value).then_some(a)
    }) else {
        eprintln!("usage: transcribe FILE.wav [--stream] [--exact] [--min S] [--max S] [--prompt TOKENS] [--reference TEXT.txt]");
        std::process::exit(2);
    };
    let pcm = common::read_wav(path);
    let whisper = Whisper::load(&ModelFiles::default_files()).expect("the model loads");
    let decode = DecodeOptions {
        exact: args.iter().any(|a| a == "--exact"),
        ..DecodeOptions::default()
    };
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let segments = if args.iter().any(|a| a == "--stream") {
        let params = StreamParams {
            decode,
            min_seconds,
            max_seconds,
            prompt_tokens,
            ..StreamParams::default()
        };
        let mut stream = StreamTranscriber::new(&whisper, params).expect("a stream");
        let mut out = Vec::new();
        for chunk in pcm.chunks(8_000) {
            out.extend(stream.push(chunk).expect("transcribed"));
        }
        out.extend(stream.finish().expect("transcribed"));
        out
    } else {
        whisper.transcribe(&pcm, &decode).expect("transcribed")
    };
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    for s in &segments {
        println!(
            "{:8.2} {:8.2}  {:6.2} {:5.2}  {}",
            s.start, s.end, s.avg_logprob, s.no_speech_prob, s.text
        );
    }
    if let Some(reference) = reference {
        use attune_voice::whisper::wer::{normalize_english, word_errors};
        let text =
            std::fs::read_to_string(&reference).unwrap_or_else(|e| panic!("{reference}: {e}"));
        let said: String = segments
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let e = word_errors(&normalize_english(&text), &normalize_english(&said));
        println!("WER {:.4} {e:?}", e.rate());
    }
    let audio = pcm.len() as f64 / 16_000.0;
    eprintln!(
        "audio {audio:.1} s, {} segments, wall {wall:.2} s, CPU {cpu:.2} s ({:.4} CPU s per audio second)",
        segments.len(),
        cpu / audio
    );
}

/// CPU seconds (user and system) of this process so far.
fn cpu_seconds() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}
