//! CPU cost of each voice network on one recording: Silero VAD over the whole input, one
//! segmentation-3.0 chunk of 10 s (ours, and tract's run of the same ONNX graph beside it), one
//! CAM++ embedding at each length the embedder cuts to (ours, and tract's run beside it), the filterbank of 2 s alone, and Whisper's log-mel of the first 30 s with its
//! 30 s of padding (what a transcription computes before its first window).
//!
//!     cargo run --release -p attune-voice --example voice_cost -- FILE.wav [REPEATS]
//!
//! Reads 16 kHz mono 16-bit PCM WAV (at least 3 s). Each network is run once before timing
//! (loading and planning are not counted). Prints the process's CPU time (user + system, the
//! process CPU clock) per call, so a loaded machine moves the figures less than wall time.

#[path = "../tests/common/mod.rs"]
mod common;

use attune_voice::embed::{mean_subtracted, TractCamPlus, EMBED_LENGTHS};
use attune_voice::fbank::{fbank, FbankFrame};
use attune_voice::whisper::mel::log_mel_padded;
use attune_voice::whisper::WINDOW_SAMPLES;
use attune_voice::{speech_probabilities, Segmenter, SpeakerEmbedder};

/// CPU seconds (user and system) of this process so far.
fn cpu_s() -> f64 {
    cpu_time::ProcessTime::now().as_duration().as_secs_f64()
}

/// Mean CPU seconds per call of `f`, over `n` calls after one untimed call.
fn per_call(n: usize, mut f: impl FnMut()) -> f64 {
    f();
    let t = cpu_s();
    for _ in 0..n {
        f();
    }
    (cpu_s() - t) / n as f64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: voice_cost FILE.wav [REPEATS]");
    let n: usize = args
        .next()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20)
        .max(1);
    let pcm = common::read_wav(&path);
    assert!(pcm.len() >= 48_000, "at least 3 s of 16 kHz audio");
    let audio_s = pcm.len() as f64 / 16_000.0;
    println!("{path}: {audio_s:.1} s, {n} calls each");

    let vad = per_call(n.div_ceil(10), || {
        speech_probabilities(&pcm).expect("vad");
    });
    println!("silero vad: {:.2} ms per audio s", vad * 1000.0 / audio_s);

    let seg = Segmenter::new().expect("segmenter");
    let chunk = &pcm[..160_000.min(pcm.len())];
    let s = per_call(n, || {
        seg.run(chunk).expect("segment");
    });
    println!("segmentation-3.0: {:.1} ms per 10 s chunk", s * 1000.0);
    let t = per_call(n, || {
        seg.run_in_tract(chunk).expect("segment in tract");
    });
    println!(
        "segmentation-3.0 in tract (the same ONNX graph): {:.1} ms per 10 s chunk",
        t * 1000.0
    );

    let mut frames: Vec<FbankFrame> = Vec::new();
    fbank(&pcm[..48_000], &mut frames);
    for &len in &EMBED_LENGTHS {
        if frames.len() < len {
            continue;
        }
        let e = per_call(n, || {
            SpeakerEmbedder.embed(&frames[..len], len).expect("embed");
        });
        println!("cam++ {len} frames: {:.1} ms", e * 1000.0);
        // tract's run of the same graph on the same input (mean-subtracted like the embedder's).
        let tract = TractCamPlus::new(len).expect("tract plans the graph");
        let input = mean_subtracted(&frames[..len]);
        let t = per_call(n, || {
            tract.run(&input).expect("tract runs");
        });
        println!(
            "cam++ {len} frames in tract (the same ONNX graph): {:.1} ms",
            t * 1000.0
        );
    }
    let f = per_call(n, || {
        let mut out = Vec::new();
        fbank(&pcm[..32_000], &mut out);
    });
    println!("fbank of 2 s: {:.2} ms", f * 1000.0);
    let first = &pcm[..pcm.len().min(WINDOW_SAMPLES)];
    let m = per_call(n, || {
        log_mel_padded(first, WINDOW_SAMPLES);
    });
    println!(
        "whisper log-mel of {:.1} s and 30 s of padding: {:.2} ms",
        first.len() as f64 / 16_000.0,
        m * 1000.0
    );
}
