//! Realtime `transcript.generated`: a realtime session run through the library as the server
//! runs it (the session engine, the live analyzer keeping what it hears, the session's
//! `LiveTranscript` on the process's Whisper), fed a real telephone call as a browser would
//! send it, and fed silence.

use attune_core::access::{negotiate, ALL_SCOPES};
use attune_core::live::{LiveAnalyzer, LiveTranscript};
use attune_core::session::{Action, SessionSetup, StreamSession};
use attune_core::transcript::{self, Transcriber, Utterance};
use attune_core::wire::{
    AudioEncoding, AudioFormat, Endpoint, EventData, Model, SignalType, TranscriptGenerated,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn whisper() -> &'static dyn Transcriber {
    transcript::shared().expect("Whisper tiny.en is in models/ (and ATTUNE_TRANSCRIBE is not 0)")
}

/// A realtime `inter-2-audio` analyzer reading raw 16 kHz s16le PCM.
fn pcm_analyzer() -> LiveAnalyzer {
    let mut analyzer = LiveAnalyzer::new(Model::Inter2Audio, Endpoint::Realtime);
    analyzer
        .set_audio_format(AudioFormat {
            encoding: AudioEncoding::PcmS16le,
            sample_rate: 16_000,
            channels: 1,
        })
        .expect("16 kHz PCM");
    analyzer
}

/// How the media reaches the session.
enum Media {
    /// Container bytes on `inter-2`, cut into frames of this many bytes, the recording sent
    /// this many times back to back (each copy a self-contained recording cut into frames from
    /// its start; the session clock runs on).
    Container(Vec<u8>, usize, usize),
    /// Raw 16 kHz s16le PCM on an `inter-2-audio` analyzer, in frames of this many bytes.
    Pcm(Vec<u8>, usize),
}

/// Runs a realtime session to its graceful end: config, every frame, `session.close`. Analysis
/// and transcription run inline, in the order the server runs them (each frame's windows,
/// then what its audio finalized; at the drain the analyzer's last windows, then the
/// transcriber's last words, then the end). Returns every event sent.
fn realtime_session(media: Media) -> Vec<EventData> {
    let scopes = ALL_SCOPES.iter().copied().collect();
    let negotiated = negotiate(Endpoint::Realtime, None, &scopes, Model::SERVED).expect("scopes");
    let setup = SessionSetup::new(Endpoint::Realtime, negotiated, "https://docs.example");
    let (mut session, first) = StreamSession::open(setup, 0.0);
    let (frames, pcm) = match media {
        Media::Container(bytes, chunk, copies) => (frames_of(&bytes, chunk, copies), false),
        Media::Pcm(bytes, chunk) => (frames_of(&bytes, chunk, 1), true),
    };
    let mut analyzer = if pcm {
        pcm_analyzer()
    } else {
        LiveAnalyzer::new(Model::Inter2, Endpoint::Realtime)
    }
    .keep_heard();
    let mut transcript = LiveTranscript::new(whisper());
    let mut events = Vec::new();
    let mut pending: Vec<Action> = first;
    pending.extend(session.on_text(0.0, r#"{"analysis_groups":["audio","visual"]}"#));
    let mut frames = frames;
    frames.reverse();
    let mut closed = false;
    loop {
        let Some(action) = (!pending.is_empty()).then(|| pending.remove(0)) else {
            let now = analyzer.media_end();
            match frames.pop() {
                Some(frame) => pending = session.on_binary(now, frame),
                None if !closed => {
                    closed = true;
                    pending = session.on_text(now, r#"{"type":"session.close"}"#);
                }
                None => panic!("the session never ended"),
            }
            continue;
        };
        match action {
            Action::Send(data) => events.push(data),
            Action::Media { segment, bytes } => {
                let output = analyzer.push(segment, &bytes, false);
                let now = analyzer.media_end();
                pending.extend(session.on_live_output(now, output));
                let words = transcript.push(analyzer.take_heard());
                analyzer.add_utterances(&words);
                pending.extend(session.on_utterances(&words));
            }
            Action::FinishMedia => {
                let output = analyzer.finish();
                let now = analyzer.media_end();
                pending.extend(session.on_live_output(now, output));
                let mut words = transcript.push(analyzer.take_heard());
                words.extend(transcript.finish());
                pending.extend(session.on_utterances(&words));
                pending.extend(session.on_drained());
            }
            Action::Close { code, .. } => {
                assert_eq!(code, 1000, "{events:?}");
                break;
            }
            Action::SetAudioFormat(_) | Action::Recommend(_) => {}
        }
    }
    assert!(transcript.error().is_none(), "{:?}", transcript.error());
    events
}

/// `copies` of `bytes`, each cut into frames of `chunk` bytes from its start.
fn frames_of(bytes: &[u8], chunk: usize, copies: usize) -> Vec<Vec<u8>> {
    (0..copies)
        .flat_map(|_| bytes.chunks(chunk).map(<[u8]>::to_vec))
        .collect()
}

fn segments(events: &[EventData]) -> Vec<&TranscriptGenerated> {
    events
        .iter()
        .filter_map(|e| match e {
            EventData::TranscriptGenerated(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The pyannote sample call (30 s, two women, `tests/fixtures/real/sample.stm`) as one
/// continuous VP8 + Opus WebM in 16 KiB frames.
#[test]
fn a_realtime_session_sends_the_words_of_a_real_call_in_session_time_before_it_ends() {
    let events = realtime_session(Media::Container(
        fixture("real/sample_vp8_opus.webm"),
        16 * 1024,
        1,
    ));
    let said = segments(&events);
    for s in &said {
        eprintln!("{:6.2}-{:6.2} [{}] {}", s.start, s.end, s.speaker, s.text);
    }
    assert!(said.len() >= 3, "{said:?}");
    // Each segment is final, in spoken order, within the 30 s of media, with words.
    for pair in said.windows(2) {
        assert!(pair[0].start <= pair[1].start, "{pair:?}");
    }
    for s in &said {
        assert!(0.0 <= s.start && s.start <= s.end && s.end <= 30.5, "{s:?}");
        assert!(!s.text.trim().is_empty(), "{s:?}");
        assert_eq!(s.text, s.text.trim(), "{s:?}");
    }
    // "This is Diane in New Jersey." is said at 12.54-14.18 s of the call: the segment that
    // holds it is at that time (Whisper tiny.en's timestamps are coarse: whole seconds on
    // this call, for openai-whisper too).
    let diane = said
        .iter()
        .find(|s| s.text.contains("Diane"))
        .unwrap_or_else(|| panic!("no segment names Diane: {said:?}"));
    assert!(diane.text.contains("New Jersey"), "{diane:?}");
    assert!(diane.start < 14.18 && diane.end > 12.54, "{diane:?}");
    assert!((diane.start - 12.54).abs() < 1.5, "{diane:?}");
    // The call's last words (28.4-30.0 s) come at the drain, before `session.ended`.
    let last = said.last().unwrap();
    assert!(last.end >= 29.0, "{last:?}");
    assert!(last.text.contains("New Jersey"), "{last:?}");
    let position = |f: &dyn Fn(&EventData) -> bool| events.iter().rposition(f).unwrap();
    let last_words = position(&|e| matches!(e, EventData::TranscriptGenerated(_)));
    let ended = position(&|e| matches!(e, EventData::SessionEnded(_)));
    assert!(last_words < ended);
    assert_eq!(ended, events.len() - 1);
    // Voices numbered from 1 in order of first speech (0 where no speaker turn overlaps a
    // segment): Diane speaks first, so she is 1; Sheila's "they all call me a Yankee down
    // here" (24.1-28.4 s) is another voice.
    assert!(said.iter().all(|s| s.speaker <= 8), "{said:?}");
    assert_eq!(diane.speaker, 1, "{diane:?}");
    let yankee = said
        .iter()
        .find(|s| s.text.contains("Yankee"))
        .unwrap_or_else(|| panic!("no segment says Yankee: {said:?}"));
    assert!(yankee.speaker >= 2, "{yankee:?}");
}

/// The words of `tests/fixtures/real/sample.stm`, in order.
fn call_words() -> String {
    attune_voice::whisper::wer::stm_text(&String::from_utf8(fixture("real/sample.stm")).unwrap())
}

/// A longer session: the call sent four times back to back (two minutes, the session of
/// `examples/realtime_cost.rs`). Each window is prompted with the previous text; with
/// openai-whisper's 223 tokens of it, the third and fourth copies came back as long runs
/// without timestamps and a greeting said four times (`StreamParams::prompt_tokens`,
/// BENCHMARKS.md "Words"). Every copy must read as the first does.
#[test]
fn a_two_minute_realtime_session_reads_every_copy_of_the_call_as_the_first() {
    let events = realtime_session(Media::Container(
        fixture("real/sample_vp8_opus.webm"),
        16 * 1024,
        4,
    ));
    let said = segments(&events);
    for s in &said {
        eprintln!("{:6.2}-{:6.2} [{}] {}", s.start, s.end, s.speaker, s.text);
    }
    for copy in 0..4 {
        let at = 30.0 * copy as f64;
        let diane = said
            .iter()
            .find(|s| s.text.contains("Diane") && s.start >= at && s.start < at + 30.0)
            .unwrap_or_else(|| panic!("copy {copy}: no segment names Diane: {said:?}"));
        assert!(
            (diane.start - (at + 12.54)).abs() < 1.5,
            "copy {copy}: {diane:?}"
        );
    }
    // The call's longest utterance is 4.3 s; Whisper's segments of it at most 5.6 s.
    for s in &said {
        assert!(
            s.end - s.start <= 8.0,
            "a segment of {:.1} s: {s:?}",
            s.end - s.start
        );
    }
    let reference = [call_words(), call_words(), call_words(), call_words()].join(" ");
    let heard: Vec<&str> = said.iter().map(|s| s.text.as_str()).collect();
    let errors = attune_voice::whisper::wer::word_errors(
        &attune_voice::whisper::wer::normalize_english(&reference),
        &attune_voice::whisper::wer::normalize_english(&heard.join(" ")),
    );
    eprintln!("word error rate {:.3} {errors:?}", errors.rate());
    assert!(errors.rate() < 0.2, "word error rate {:.3}", errors.rate());
}

/// Digital silence and faint noise: nothing is said, nothing is sent.
#[test]
fn a_silent_realtime_session_sends_no_transcript() {
    let mut state = 0x2545_f491_u32;
    let mut pcm = Vec::new();
    for i in 0..16_000 * 20 {
        // 10 s of zeros, then 10 s of white noise at about -46 dBFS.
        let sample: i16 = if i < 16_000 * 10 {
            0
        } else {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            ((state >> 16) as i16) / 200
        };
        pcm.extend_from_slice(&sample.to_le_bytes());
    }
    let events = realtime_session(Media::Pcm(pcm, 3_200));
    assert!(segments(&events).is_empty(), "{events:?}");
    assert!(matches!(events.last(), Some(EventData::SessionEnded(_))));
}

/// A live window reads the words that arrived before it closed, said in it or earlier, once,
/// and quotes them: words are final seconds after they are said, so the window they were said
/// in has usually closed by then. Here the real call's PCM (`tests/fixtures/real/sample.wav`)
/// on `inter-2-audio`, with one utterance of agreement (said at 3.0-4.5 s) arriving when
/// 8 s of audio were analyzed.
#[test]
fn live_windows_read_the_words_that_arrived_and_quote_them_once() {
    let wav = fixture("real/sample.wav");
    let data = wav
        .windows(4)
        .position(|w| w == b"data")
        .expect("a data chunk");
    let pcm = &wav[data + 8..];
    let mut analyzer = pcm_analyzer();
    let said = Utterance {
        start: 3.0,
        end: 4.5,
        speaker: Some(1),
        text: "Yeah, exactly, I agree.".into(),
        after_question: false,
        avg_logprob: None,
    };
    let mut windows = Vec::new();
    let mut added = false;
    for (segment, frame) in pcm.chunks(3_200).enumerate() {
        let output = analyzer.push(segment as u64, frame, false);
        windows.extend(output.windows);
        if !added && analyzer.media_end() >= 8.0 {
            analyzer.add_utterances(std::slice::from_ref(&said));
            added = true;
        }
    }
    windows.extend(analyzer.finish().windows);
    assert!(analyzer.utterances().is_empty(), "a window read them");
    let quoting: Vec<_> = windows
        .iter()
        .filter(|w| format!("{w:?}").contains("exactly, I agree"))
        .collect();
    assert_eq!(quoting.len(), 1, "{windows:#?}");
    let window = quoting[0];
    // The first window to close after the words arrived: 5-10 s (0-5 s had closed).
    assert_eq!((window.start, window.end), (5.0, 10.0), "{window:#?}");
    let agreement = window
        .detections
        .iter()
        .find(|d| d.signal_type == SignalType::Agreement)
        .unwrap_or_else(|| panic!("no agreement: {window:#?}"));
    assert!(
        agreement.rationale.contains("3.0 s"),
        "the rationale says when: {agreement:#?}"
    );
}
