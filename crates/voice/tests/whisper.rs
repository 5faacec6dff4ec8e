//! Parity of the Whisper transcriber with the reference implementation, openai-whisper
//! (fp32 on CPU, the same converted weights), on the committed real telephone call:
//! `tests/fixtures/whisper/reference.json`, made by `tests/fixtures/whisper/make.sh`.

mod common;

use attune_voice::whisper::{mel, wer, DecodeOptions, ModelFiles, Whisper, WINDOW_SAMPLES};
use common::read_wav;
use serde_json::Value;
use std::sync::OnceLock;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn call() -> Vec<f32> {
    read_wav(root().join("tests/fixtures/real/sample.wav"))
}

fn reference() -> &'static Value {
    static REF: OnceLock<Value> = OnceLock::new();
    REF.get_or_init(|| {
        let text = std::fs::read_to_string(root().join("tests/fixtures/whisper/reference.json"))
            .expect("reference.json");
        serde_json::from_str(&text).expect("reference JSON")
    })
}

fn whisper() -> &'static Whisper {
    static W: OnceLock<Whisper> = OnceLock::new();
    W.get_or_init(|| {
        Whisper::load(&ModelFiles::in_dir(
            &root().join("models"),
            "whisper-tiny-en",
        ))
        .expect("the committed model loads")
    })
}

fn rows(v: &Value) -> Vec<Vec<f32>> {
    v.as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("a row")
                .iter()
                .map(|x| x.as_f64().expect("a number") as f32)
                .collect()
        })
        .collect()
}

fn worst(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn mel_filters_are_openai_whispers() {
    let path = root().join("models/whisper-mel-filters-80.safetensors");
    let tensors = candle_core::safetensors::load(&path, &candle_core::Device::Cpu).unwrap();
    let want: Vec<f32> = tensors["mel_80"].flatten_all().unwrap().to_vec1().unwrap();
    let d = worst(mel::filters(), &want);
    assert!(d < 1e-7, "filters differ by up to {d}");
}

#[test]
fn log_mel_matches_openai_whisper() {
    let pcm = call();
    let r = &reference()["mel"];
    assert_eq!(reference()["samples"].as_u64(), Some(pcm.len() as u64));
    let frames = mel::log_mel_padded(&pcm, WINDOW_SAMPLES);
    assert_eq!(frames.len(), r["padded_frames"].as_u64().unwrap() as usize);
    let want = rows(&r["frames_1000_1100"]);
    let got: Vec<f32> = frames[1000..1100].iter().flatten().copied().collect();
    let want: Vec<f32> = want.into_iter().flatten().collect();
    let d = worst(&got, &want);
    assert!(d < 2e-4, "frames 1000..1100 differ by up to {d}");
    let max = frames
        .iter()
        .flatten()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    assert!((max - r["max"].as_f64().unwrap() as f32).abs() < 1e-4);
    let edge: Vec<f32> = frames[2996..3000].iter().flatten().copied().collect();
    let want: Vec<f32> = rows(&r["frames_2996_3000"]).into_iter().flatten().collect();
    assert!(worst(&edge, &want) < 2e-4);
}

#[test]
fn encoder_matches_openai_whisper() {
    let pcm = call();
    let r = &reference()["encoder"];
    let frames = mel::log_mel_padded(&pcm, WINDOW_SAMPLES);
    let out = whisper().encode_frames(&frames[..3000]).unwrap();
    assert_eq!(out.dims(), &[1, 1500, 384]);
    let out = out.squeeze(0).unwrap().to_vec2::<f32>().unwrap();
    for (key, from) in [("positions_0_4", 0usize), ("positions_700_704", 700)] {
        let want: Vec<f32> = rows(&r[key]).into_iter().flatten().collect();
        let got: Vec<f32> = out[from..from + 4].iter().flatten().copied().collect();
        let d = worst(&got, &want);
        // f32 sums in another order through four layers: about 1e-3 of values near 1.
        assert!(d < 5e-3, "{key}: differs by up to {d}");
    }
    let all: Vec<f32> = out.into_iter().flatten().collect();
    let mean = all.iter().map(|&x| x as f64).sum::<f64>() / all.len() as f64;
    assert!(
        (mean - r["mean"].as_f64().unwrap()).abs() < 1e-4,
        "mean {mean}"
    );
}

#[test]
fn a_greedy_window_gives_the_reference_tokens_and_probabilities() {
    let pcm = call();
    let r = &reference()["greedy_window"];
    let w = whisper();
    let frames = mel::log_mel_padded(&pcm, WINDOW_SAMPLES);
    let audio = w.encode_frames(&frames[..3000]).unwrap();
    let want: Vec<u32> = r["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect();
    for exact in [true, false] {
        let options = DecodeOptions {
            exact,
            ..DecodeOptions::default()
        };
        let decoder = w.window_decoder();
        assert_eq!(
            decoder.initial_tokens(&[]),
            vec![r["initial_tokens"][0].as_u64().unwrap() as u32]
        );
        let got = decoder
            .decode(
                &audio,
                &[],
                0.0,
                &options,
                &mut attune_voice::whisper::decode::Rng::new(0),
            )
            .unwrap();
        if exact {
            assert_eq!(got.tokens, want);
            assert_eq!(got.text, r["text"].as_str().unwrap());
        } else {
            // The 8-bit decoder may choose another of two near-equal tokens ("Hello?" for
            // "Hello."): the timestamps (hence the segments) are the same and the words too.
            assert_eq!(got.tokens.len(), want.len());
            let differ = got.tokens.iter().zip(&want).filter(|(a, b)| a != b).count();
            assert!(differ <= 3, "{differ} tokens differ");
            let stamps = |t: &[u32]| {
                t.iter()
                    .copied()
                    .filter(|&t| t >= 50363)
                    .collect::<Vec<_>>()
            };
            assert_eq!(stamps(&got.tokens), stamps(&want));
            assert_eq!(
                wer::normalize_english(&got.text),
                wer::normalize_english(r["text"].as_str().unwrap())
            );
        }
        let tol = if exact { 2e-3 } else { 2e-2 };
        let d = (got.avg_logprob - r["avg_logprob"].as_f64().unwrap() as f32).abs();
        assert!(d < tol, "avg logprob differs by {d} (exact {exact})");
        let d = (got.no_speech_prob - r["no_speech_prob"].as_f64().unwrap() as f32).abs();
        assert!(
            d < tol,
            "no-speech probability differs by {d} (exact {exact})"
        );
        let d = (got.compression_ratio - r["compression_ratio"].as_f64().unwrap() as f32).abs();
        assert!(d < 0.1, "compression ratio differs by {d}");
    }
}

#[test]
fn filtered_log_probabilities_match_step_by_step() {
    let pcm = call();
    let r = &reference()["greedy_window"];
    let w = whisper();
    let frames = mel::log_mel_padded(&pcm, WINDOW_SAMPLES);
    let audio = w.encode_frames(&frames[..3000]).unwrap();
    let decoder = w.window_decoder();
    let options = DecodeOptions::default();
    let mut state = w.net().start(&audio).unwrap();
    let mut logits = w
        .net()
        .step_with(&mut state, &decoder.initial_tokens(&[]), 1, true)
        .unwrap()
        .get(0)
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let mut sampled = Vec::new();
    for step in r["steps"].as_array().unwrap() {
        // The raw logits first: the network alone.
        for pair in step["top5_raw"].as_array().unwrap() {
            let id = pair[0].as_u64().unwrap() as usize;
            let want = pair[1].as_f64().unwrap() as f32;
            assert!(
                (logits[id] - want).abs() < 2e-2,
                "step {}: raw logit of {id}: {} vs {want}",
                step["step"],
                logits[id]
            );
        }
        let given = decoder.filter(&mut logits, &sampled, &options);
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let lse = max
            + logits
                .iter()
                .map(|&x| ((x - max) as f64).exp())
                .sum::<f64>()
                .ln() as f32;
        for pair in step["top5_filtered_logprob"].as_array().unwrap() {
            let id = pair[0].as_u64().unwrap() as usize;
            let want = pair[1].as_f64().unwrap() as f32;
            let got = logits[id] - lse;
            assert!(
                (got - want).abs() < 2e-2,
                "step {}: filtered log-probability of {id}: {got} vs {want}",
                step["step"]
            );
            // The log-probabilities the filter hands back (the decoder sums them) are those
            // of what it left.
            if let Some(given) = &given {
                assert!(
                    (given[id] - got).abs() < 1e-4,
                    "step {}: the filter's log-probability of {id}: {} vs {got}",
                    step["step"],
                    given[id]
                );
            }
        }
        let chosen = step["chosen"].as_u64().unwrap() as u32;
        sampled.push(chosen);
        logits = w
            .net()
            .step_with(&mut state, &[chosen], 1, true)
            .unwrap()
            .get(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
    }
}

fn reference_segments() -> Vec<(f64, f64, String, Vec<u32>)> {
    reference()["transcribe"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !s["text"].as_str().unwrap().trim().is_empty())
        .map(|s| {
            (
                s["start"].as_f64().unwrap(),
                s["end"].as_f64().unwrap(),
                s["text"].as_str().unwrap().trim().to_string(),
                s["tokens"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_u64().unwrap() as u32)
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn a_recording_gives_the_reference_segments() {
    let pcm = call();
    let options = DecodeOptions {
        exact: true,
        ..DecodeOptions::default()
    };
    let got = whisper().transcribe(&pcm, &options).unwrap();
    let want = reference_segments();
    let texts: Vec<&str> = got.iter().map(|s| s.text.as_str()).collect();
    let want_texts: Vec<&str> = want.iter().map(|s| s.2.as_str()).collect();
    assert_eq!(texts, want_texts);
    for (g, w) in got.iter().zip(&want) {
        assert!((g.start - w.0).abs() < 1e-6 && (g.end - w.1).abs() < 1e-6);
        assert_eq!(g.tokens, w.3);
    }
}

#[test]
fn the_default_eight_bit_decoder_gives_the_reference_segments_and_words() {
    let pcm = call();
    let got = whisper()
        .transcribe(&pcm, &DecodeOptions::default())
        .unwrap();
    let want = reference_segments();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g.start - w.0).abs() < 1e-6 && (g.end - w.1).abs() < 1e-6);
        assert_eq!(
            wer::normalize_english(&g.text),
            wer::normalize_english(&w.2)
        );
    }
}

/// The words of `tests/fixtures/real/sample.stm`, in order.
fn stm_words() -> String {
    wer::stm_text(&std::fs::read_to_string(root().join("tests/fixtures/real/sample.stm")).unwrap())
}

#[test]
fn our_normalizer_gives_whispers_words_on_the_reference_texts() {
    let r = &reference()["wer"];
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(wer::normalize_english(&stm_words()), list(&r["reference"]));
    let hypothesis = reference()["transcribe"]["text"].as_str().unwrap();
    assert_eq!(wer::normalize_english(hypothesis), list(&r["hypothesis"]));
}

#[test]
fn word_error_rate_is_within_a_tenth_of_openai_whispers() {
    let pcm = call();
    let words = wer::normalize_english(&stm_words());
    let theirs = wer::word_errors(
        &words,
        &wer::normalize_english(reference()["transcribe"]["text"].as_str().unwrap()),
    );
    let got = whisper()
        .transcribe(&pcm, &DecodeOptions::default())
        .unwrap();
    let text: Vec<&str> = got.iter().map(|s| s.text.as_str()).collect();
    let ours = wer::word_errors(&words, &wer::normalize_english(&text.join(" ")));
    println!(
        "WER on the telephone call: ours {:.1} % ({:?}), openai-whisper {:.1} % ({:?})",
        100.0 * ours.rate(),
        ours,
        100.0 * theirs.rate(),
        theirs
    );
    assert!((theirs.rate() - reference()["wer"]["wer"].as_f64().unwrap()).abs() < 1e-3);
    assert!(
        ours.rate() <= 1.1 * theirs.rate() + 1e-9,
        "ours {:.3} vs the reference's {:.3}",
        ours.rate(),
        theirs.rate()
    );
}

#[test]
fn a_stream_is_transcribed_as_it_arrives_at_its_pauses() {
    use attune_voice::whisper::{StreamParams, StreamTranscriber};
    let pcm = call();
    let mut stream = StreamTranscriber::new(whisper(), StreamParams::default()).unwrap();
    let mut segments = Vec::new();
    let mut before_end = 0;
    for chunk in pcm.chunks(8_000) {
        let got = stream.push(chunk).unwrap();
        before_end += got.len();
        segments.extend(got);
    }
    segments.extend(stream.finish().unwrap());
    for s in &segments {
        println!("{:6.2} {:6.2} {}", s.start, s.end, s.text);
    }
    // Finalized at pauses while the call went on, not all at its end.
    assert!(before_end >= 2, "{before_end} segments before the end");
    for pair in segments.windows(2) {
        assert!(pair[0].start <= pair[1].start && pair[0].end <= pair[1].end + 1e-6);
    }
    assert!(segments
        .iter()
        .all(|s| s.start <= s.end && s.end <= 30.0 + 1e-6));
    let text: Vec<&str> = segments.iter().map(|s| s.text.as_str()).collect();
    let e = wer::word_errors(
        &wer::normalize_english(&stm_words()),
        &wer::normalize_english(&text.join(" ")),
    );
    println!("stream WER {:.3} {e:?}", e.rate());
    assert!(e.rate() < 0.25, "stream WER {:.3}", e.rate());
}

/// Language identification (Whisper base, trimmed: `models/whisper-base-language.*`) against
/// openai-whisper's own `detect_language` with the same weights
/// (`tests/fixtures/whisper/language_reference.json`, made by `make_language.sh`): the real
/// English call and a German clip give the reference's language and probabilities.
#[test]
fn language_identification_matches_openai_whisper() {
    use attune_voice::whisper::LanguageIdentifier;
    let text =
        std::fs::read_to_string(root().join("tests/fixtures/whisper/language_reference.json"))
            .expect("language_reference.json");
    let reference: Value = serde_json::from_str(&text).expect("reference JSON");
    let models = root().join("models");
    let id = LanguageIdentifier::load(
        &models.join("whisper-base-language.safetensors"),
        &models.join("whisper-base-language.json"),
    )
    .expect("the committed language model loads");
    let codes: Vec<&str> = reference["languages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(id.languages(), codes.as_slice());
    let files = reference["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    for file in files {
        let name = file["name"].as_str().unwrap();
        let guess = id.identify(&read_wav(root().join(name))).unwrap();
        let (best, p) = guess.best();
        assert_eq!(best, file["best"].as_str().unwrap(), "{name}");
        let want: Vec<f32> = file["probabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        let got: Vec<f32> = codes.iter().map(|c| guess.probability(c)).collect();
        let d = worst(&got, &want);
        println!("{name}: {best} {p:.4}, probabilities within {d:.1e} of the reference");
        assert!(
            d < 1e-4,
            "{name}: probabilities differ by up to {d} ({best} {p})"
        );
        assert!(p > 0.9, "{name}: {best} only at {p}");
    }
}
