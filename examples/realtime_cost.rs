//! What transcription costs a realtime session: the same media run through a realtime session
//! (the session engine and the live analyzer, as `attune serve` runs them) without and with
//! its transcription (`LiveTranscript` on the process's Whisper), reporting the process's CPU
//! seconds per second of media for each, and the longest single transcription step.
//!
//! Run: `cargo run --release --example realtime_cost -- [FILE] [COPIES] [CHUNK_BYTES]`
//! (default: the real telephone call `tests/fixtures/real/sample_vp8_opus.webm`, 30 s, sent
//! 4 times back to back as self-contained recordings in 16 KiB frames: a 2-minute session).
//! The media is fed as fast as it is analyzed (CPU seconds do not depend on the pace). One
//! warm-up session first loads the networks. CPU is the process's user + system time (all
//! threads, the process CPU clock), so run it on an otherwise idle core for stable figures.
//! It sets `CANDLE_NUM_THREADS=1` and `RAYON_NUM_THREADS=1` when unset, as `attune` does. With
//! `REALTIME_COST_WORDS=FILE` it writes the text of every `transcript.generated` of its last
//! session, one per line.

use attune::core::access::{negotiate, ALL_SCOPES};
use attune::core::live::{LiveAnalyzer, LiveTranscript};
use attune::core::session::{Action, SessionSetup, StreamSession};
use attune::core::transcript;
use attune::core::wire::{Endpoint, EventData, Model};
use std::time::{Duration, Instant};

/// CPU seconds (user and system) of this process so far.
fn cpu_seconds() -> Option<f64> {
    cpu_time::ProcessTime::try_now()
        .ok()
        .map(|t| t.as_duration().as_secs_f64())
}

struct Run {
    media_seconds: f64,
    cpu: f64,
    wall: Duration,
    segments: usize,
    longest_step: Duration,
    transcribing: Duration,
}

fn session(frames: &[Vec<u8>], transcribe: bool) -> Run {
    let scopes = ALL_SCOPES.iter().copied().collect();
    let negotiated =
        negotiate(Endpoint::Realtime, None, &scopes, Model::SERVED).expect("every scope");
    let setup = SessionSetup::new(Endpoint::Realtime, negotiated, "https://docs.example");
    let (mut session, mut pending) = StreamSession::open(setup, 0.0);
    let mut analyzer = LiveAnalyzer::new(Model::Inter2, Endpoint::Realtime).defer_video();
    let mut words = None;
    if transcribe {
        analyzer = analyzer.keep_heard();
        words = Some(LiveTranscript::new(
            transcript::shared().expect("Whisper in models/ (and ATTUNE_TRANSCRIBE not 0)"),
        ));
    }
    let (cpu0, start) = (cpu_seconds().unwrap_or(f64::NAN), Instant::now());
    let mut words_sent = Vec::new();
    let mut longest_step = Duration::ZERO;
    let mut transcribing = Duration::ZERO;
    let mut inbound = frames.iter();
    let mut closed = false;
    loop {
        if pending.is_empty() {
            let now = analyzer.media_end();
            match inbound.next() {
                Some(frame) => pending = session.on_binary(now, frame.clone()),
                None if !closed => {
                    closed = true;
                    pending = session.on_text(now, r#"{"type":"session.close"}"#);
                }
                None => break,
            }
            continue;
        }
        match pending.remove(0) {
            Action::Send(EventData::TranscriptGenerated(t)) => words_sent.push(t.text),
            Action::Media { segment, bytes } => {
                analyzer.read_ahead();
                let output = analyzer.push(segment, &bytes, false);
                pending.extend(session.on_live_output(analyzer.media_end(), output));
                if let Some(words) = words.as_mut() {
                    let step = Instant::now();
                    let said = words.push(analyzer.take_heard());
                    longest_step = longest_step.max(step.elapsed());
                    transcribing += step.elapsed();
                    pending.extend(session.on_utterances(&said));
                }
            }
            Action::FinishMedia => {
                let output = analyzer.finish();
                pending.extend(session.on_live_output(analyzer.media_end(), output));
                if let Some(words) = words.as_mut() {
                    let step = Instant::now();
                    let mut said = words.push(analyzer.take_heard());
                    said.extend(words.finish());
                    longest_step = longest_step.max(step.elapsed());
                    transcribing += step.elapsed();
                    pending.extend(session.on_utterances(&said));
                }
                pending.extend(session.on_drained());
            }
            Action::Close { .. } => break,
            _ => {}
        }
    }
    if let Ok(path) = std::env::var("REALTIME_COST_WORDS") {
        if transcribe {
            if let Err(e) = std::fs::write(&path, words_sent.join("\n") + "\n") {
                eprintln!("{path}: {e}");
            }
        }
    }
    Run {
        media_seconds: analyzer.media_end(),
        cpu: cpu_seconds().unwrap_or(f64::NAN) - cpu0,
        wall: start.elapsed(),
        segments: words_sent.len(),
        longest_step,
        transcribing,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As the `attune` binary does before its first thread.
    transcript::one_candle_thread_unless_set();
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/real/sample_vp8_opus.webm"
        )
        .to_owned()
    });
    let copies: usize = args.next().map_or(Ok(4), |a| a.parse())?;
    let chunk: usize = args.next().map_or(Ok(16 * 1024), |a| a.parse())?;
    let media = std::fs::read(&path)?;
    // Each copy is a self-contained recording; its frames continue the session clock.
    let frames: Vec<Vec<u8>> = (0..copies)
        .flat_map(|_| media.chunks(chunk.max(1)).map(<[u8]>::to_vec))
        .collect();
    println!(
        "{path}, {copies} copies in {chunk}-byte frames; candle's 8-bit pool: {} thread(s); \
         RAYON_NUM_THREADS={}",
        std::env::var("CANDLE_NUM_THREADS").unwrap_or_else(|_| "all CPUs".into()),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into())
    );
    // Warm-up: the networks load on first use.
    session(&frames[..frames.len().min(4)], true);
    let mut rows = Vec::new();
    for transcribe in [false, true, false, true] {
        let run = session(&frames, transcribe);
        println!(
            "{:<22} media {:6.1} s  CPU {:6.2} s = {:.4} CPU s per media s  wall {:6.2} s  \
             segments {:3}  transcription {:6.2} s, longest step {:.2} s",
            if transcribe {
                "with transcription"
            } else {
                "without transcription"
            },
            run.media_seconds,
            run.cpu,
            run.cpu / run.media_seconds,
            run.wall.as_secs_f64(),
            run.segments,
            run.transcribing.as_secs_f64(),
            run.longest_step.as_secs_f64(),
        );
        rows.push((transcribe, run.cpu / run.media_seconds));
    }
    let mean = |t: bool| {
        let v: Vec<f64> = rows.iter().filter(|r| r.0 == t).map(|r| r.1).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    println!(
        "mean CPU s per media s: without {:.4}, with {:.4}, transcription adds {:.4}",
        mean(false),
        mean(true),
        mean(true) - mean(false)
    );
    Ok(())
}
