//! Behaviour of the feature extractor on signals with known answers and on the speech fixtures.

use super::*;

const RATE: f64 = SAMPLE_RATE as f64;

/// A glottal-like pulse train: one decaying resonance per period, periods
/// and amplitudes given per pulse.
fn pulse_train(periods: &[f64], amplitudes: &[f64]) -> Vec<f32> {
    let total: f64 = periods.iter().sum();
    let n = (total * RATE) as usize + 400;
    let mut x = vec![0.0f32; n];
    let mut t0 = 0.01;
    for (p, a) in periods.iter().zip(amplitudes) {
        // Sampled at the true (fractional) onset, so the periods survive.
        let first = (t0 * RATE).ceil() as usize;
        for n in first..first + (p * RATE) as usize + 200 {
            let t = n as f64 / RATE - t0;
            let v = a * (-t * 600.0).exp() * (2.0 * std::f64::consts::PI * 700.0 * t).sin();
            if let Some(s) = x.get_mut(n) {
                *s += v as f32;
            }
        }
        t0 += p;
    }
    x
}

fn harmonic_tone(f0: f64, seconds: f64, amplitude: f64) -> Vec<f32> {
    (0..(seconds * RATE) as usize)
        .map(|i| {
            let t = i as f64 / RATE;
            let v: f64 = (1..=6)
                .map(|h| (2.0 * std::f64::consts::PI * f0 * h as f64 * t).sin() / h as f64)
                .sum();
            (v * amplitude) as f32
        })
        .collect()
}

fn white_noise(seconds: f64, amplitude: f32) -> Vec<f32> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..(seconds * RATE) as usize)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 2.0 * amplitude
        })
        .collect()
}

fn fixture(name: &str) -> Vec<f32> {
    let path = format!(
        "{}/../../tests/fixtures/speech/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut reader = hound::WavReader::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    reader
        .samples::<i16>()
        .map(|s| s.unwrap_or(0) as f32 / 32768.0)
        .collect()
}

/// Features of a fixture, extracted once per test binary (debug builds are slow).
fn fixture_features(name: &str) -> FrameFeatures {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, FrameFeatures>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(f) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return f;
    }
    let f = extract(&fixture(name));
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), f.clone());
    }
    f
}

fn whole(features: &FrameFeatures) -> SpanFeatures {
    summarize(features, Span::whole(features))
}

#[test]
fn a_200_hz_harmonic_tone_is_voiced_at_200_hz() {
    let f = extract(&harmonic_tone(200.0, 1.0, 0.2));
    let inner = &f.frames[10..90];
    assert!(inner.iter().all(Frame::is_voiced));
    for frame in inner {
        let hz = frame.f0_hz().unwrap_or(0.0);
        assert!((hz - 200.0).abs() < 2.0, "frame {}: {hz} Hz", frame.index);
    }
    let s = whole(&f);
    let median_hz = semitones_to_hz(s.f0_median_semitones.unwrap_or(0.0));
    assert!((median_hz - 200.0).abs() < 2.0);
}

#[test]
fn silence_is_unvoiced_and_not_speech_and_summarises_to_nothing() {
    let f = extract(&vec![0.0; 32_000]);
    assert_eq!(f.frames.len(), 200);
    assert!(f.frames.iter().all(|fr| !fr.is_voiced() && !fr.is_speech()));
    assert!(f.pulses.is_empty());
    let s = whole(&f);
    assert_eq!(s.speech_s, 0.0);
    assert_eq!(s.f0_mean_semitones, None);
    assert_eq!(s.pause_count, 0);
    assert_eq!(s.syllable_count, 0);
    assert_eq!(s.voice_count, 0);
}

#[test]
fn empty_nan_infinite_and_clipped_input_do_not_panic() {
    let empty = extract(&[]);
    assert!(empty.frames.is_empty());
    let _ = whole(&empty);
    let _ = summarize(&empty, Span::new(f64::NAN, f64::INFINITY));

    let mut odd = harmonic_tone(150.0, 0.5, 3.0); // clipped far beyond full scale
    odd[100] = f32::NAN;
    odd[200] = f32::INFINITY;
    odd[300] = f32::NEG_INFINITY;
    let f = extract(&odd);
    assert_eq!(f.frames.len(), (odd.len() + 79) / HOP);
    assert!(f.frames.iter().all(|fr| fr.intensity_db.is_finite()));
    let s = summarize(&f, Span::new(0.3, 0.1));
    assert_eq!(s.frame_count, 0);
    let _ = whole(&f);

    let tiny = extract(&[0.5; 100]);
    assert_eq!(tiny.frames.len(), 1);
}

#[test]
fn one_percent_period_jitter_measures_about_one_percent() {
    // Periods of 8 ms +/- 0.5 % alternating: |T(i) - T(i-1)| = 1 % of the mean.
    let periods: Vec<f64> = (0..150)
        .map(|i| if i % 2 == 0 { 0.00804 } else { 0.00796 })
        .collect();
    let amplitudes = vec![0.5; periods.len()];
    let s = whole(&extract(&pulse_train(&periods, &amplitudes)));
    let jitter = s.jitter_local.unwrap_or(0.0);
    assert!((0.007..0.013).contains(&jitter), "jitter {jitter}");

    let steady = vec![0.008; 150];
    let s = whole(&extract(&pulse_train(&steady, &amplitudes)));
    assert!(
        s.jitter_local.unwrap_or(1.0) < 0.003,
        "{:?}",
        s.jitter_local
    );
}

#[test]
fn alternating_pulse_amplitudes_give_their_shimmer() {
    let periods = vec![0.008; 150];
    let amplitudes: Vec<f64> = (0..150)
        .map(|i| if i % 2 == 0 { 0.5 } else { 0.4 })
        .collect();
    let s = whole(&extract(&pulse_train(&periods, &amplitudes)));
    let expected = 20.0 * (0.5f32 / 0.4).log10(); // 1.94 dB
    let shimmer = s.shimmer_local_db.unwrap_or(0.0);
    assert!(
        (shimmer - expected).abs() < 0.4,
        "shimmer {shimmer} dB, expected {expected}"
    );

    let even = vec![0.5; 150];
    let s = whole(&extract(&pulse_train(&periods, &even)));
    assert!(s.shimmer_local_db.unwrap_or(9.0) < 0.3);
}

#[test]
fn white_noise_has_a_low_hnr_and_a_tone_a_high_one() {
    let noise = whole(&extract(&white_noise(1.0, 0.3)));
    assert!(
        noise.hnr_db.unwrap_or(-200.0) < 3.0,
        "noise HNR {:?}",
        noise.hnr_db
    );
    assert!(
        noise.voiced_ratio < 0.2,
        "noise voiced {}",
        noise.voiced_ratio
    );
    let tone = whole(&extract(&harmonic_tone(180.0, 1.0, 0.2)));
    assert!(
        tone.hnr_db.unwrap_or(0.0) > 20.0,
        "tone HNR {:?}",
        tone.hnr_db
    );
}

#[test]
fn a_copy_6_db_louder_measures_6_db_louder() {
    let quiet = harmonic_tone(150.0, 1.0, 0.1);
    let loud: Vec<f32> = quiet.iter().map(|v| v * 2.0).collect();
    let (q, l) = (extract(&quiet), extract(&loud));
    for (a, b) in q.frames[10..90].iter().zip(&l.frames[10..90]) {
        let diff = b.intensity_db - a.intensity_db;
        assert!((diff - 6.02).abs() < 0.02, "frame {}: {diff} dB", a.index);
    }
    // Everything else is scale-free.
    assert_eq!(q.frames[50].f0_semitones, l.frames[50].f0_semitones);
}

#[test]
fn alternating_tones_are_not_speakers() {
    // Two pure tones a fifth apart, taking turns: voiced frames, but not speech. The voice
    // networks hear no one, so no turns are built from them.
    let mut pcm = Vec::new();
    for i in 0..6 {
        let f0 = if i % 2 == 0 { 110.0 } else { 220.0 };
        pcm.extend(harmonic_tone(f0, 0.6, 0.2));
        pcm.extend(vec![0.0; 4_800]); // 300 ms gap
    }
    let f = extract(&pcm);
    assert!(f.frames.iter().any(|fr| fr.is_voiced()));
    let s = whole(&f);
    assert_eq!(s.voice_count, 0, "{:?}", s.turns);
    assert!(s.turns.is_empty());
}

#[test]
fn streaming_in_any_chunks_gives_the_same_features_as_one_buffer() {
    let pcm = fixture("two_voices.wav");
    let whole_file = extract(&pcm);
    let mut one = FeatureExtractor::new();
    one.push(&pcm);
    one.finish();
    let reference = one.into_features();
    // The frames are those of a file; the speakers those a stream hears.
    assert_eq!(reference.frames, whole_file.frames);
    for chunk in [1usize, 160, 777, 16_000] {
        let mut x = FeatureExtractor::new();
        let mut streamed = Vec::new();
        for part in pcm.chunks(chunk) {
            streamed.extend_from_slice(x.push(part));
        }
        streamed.extend_from_slice(x.finish());
        assert_eq!(streamed, reference.frames, "chunk {chunk}");
        assert_eq!(x.features(), &reference, "chunk {chunk}");
        assert!(
            x.push(&pcm[..100]).is_empty(),
            "input after finish is ignored"
        );
    }
    assert_eq!(
        reference
            .speech_units
            .iter()
            .filter_map(|u| u.speaker)
            .max(),
        Some(1),
        "two voices"
    );
}

#[test]
fn frames_stream_out_with_bounded_delay() {
    let pcm = fixture("baseline.wav");
    let mut x = FeatureExtractor::new();
    let mut out = 0usize;
    let mut fed = 0usize;
    for part in pcm.chunks(1_600) {
        fed += part.len();
        out += x.push(part).len();
        // At most the look-ahead plus one second of undecided F0 path behind.
        let due = (fed / HOP).saturating_sub(104);
        assert!(out >= due, "{out} frames out after {fed} samples");
    }
}

fn truth() -> serde_json::Value {
    let path = format!(
        "{}/../../tests/fixtures/speech/truth.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_default()
}

#[test]
fn speaker_turns_alone_are_the_turns_of_the_summary() {
    let f = fixture_features("two_voices.wav");
    let span = Span::whole(&f);
    let turns = speaker_turns(&f, span);
    assert!(turns.len() >= 2, "{turns:?}");
    assert_eq!(turns, summarize(&f, span).turns);
    let part = Span::new(2.0, 7.0);
    assert_eq!(speaker_turns(&f, part), summarize(&f, part).turns);
}

#[test]
fn the_two_voice_exchange_has_two_speakers_with_their_talk_shares_and_short_gaps() {
    let s = whole(&fixture_features("two_voices.wav"));
    assert_eq!(s.voice_count, 2);
    let truth = truth();
    let shares = &truth["files"]["two_voices.wav"]["talk_share"];
    let first = shares["en-us"].as_f64().unwrap_or(0.0) as f32;
    // The first voice heard is voice 0.
    assert!(
        (s.talk_share[0] - first).abs() < 0.1,
        "{:?} vs {first}",
        s.talk_share
    );
    let turns = truth["files"]["two_voices.wav"]["turns"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(s.turns.len(), turns);
    let gap = s.gap_mean_s.unwrap_or(9.0);
    assert!((0.15..0.35).contains(&gap), "gap {gap}");
}

#[test]
fn slow_hesitant_speech_is_slower_with_more_and_longer_pauses_than_the_baseline() {
    let base = whole(&fixture_features("baseline.wav"));
    let hesitant = whole(&fixture_features("hesitant.wav"));
    assert!(hesitant.speech_rate_syl_per_s < 0.6 * base.speech_rate_syl_per_s);
    assert!(hesitant.pause_count > base.pause_count);
    assert!(hesitant.pause_mean_s.unwrap_or(0.0) > 2.0 * base.pause_mean_s.unwrap_or(0.0));
    assert!(hesitant.pause_max_s.unwrap_or(0.0) > 1.0);
}

#[test]
fn fast_high_loud_speech_has_higher_f0_intensity_and_rate_than_the_baseline() {
    let base = whole(&fixture_features("baseline.wav"));
    let stressed = whole(&fixture_features("stressed.wav"));
    assert!(
        stressed.f0_mean_semitones.unwrap_or(0.0) > base.f0_mean_semitones.unwrap_or(0.0) + 3.0
    );
    assert!(
        stressed.intensity_mean_db.unwrap_or(0.0) > base.intensity_mean_db.unwrap_or(0.0) + 3.0
    );
    assert!(stressed.speech_rate_syl_per_s > base.speech_rate_syl_per_s);
}

#[test]
fn raised_final_words_rise_and_statements_fall() {
    let rising = whole(&fixture_features("rising.wav"));
    assert!(rising.rising_terminals >= 3, "{:?}", rising.terminals);
    assert_eq!(rising.falling_terminals, 0);
    let base = whole(&fixture_features("baseline.wav"));
    assert!(base.falling_terminals >= 3, "{:?}", base.terminals);
    assert_eq!(base.rising_terminals, 0);
}

#[test]
fn quiet_monotone_speech_with_long_silences_is_quieter_sparser_and_one_voice() {
    let base = whole(&fixture_features("baseline.wav"));
    let quiet = whole(&fixture_features("disengaged.wav"));
    assert!(quiet.intensity_mean_db.unwrap_or(99.0) < base.intensity_mean_db.unwrap_or(0.0) - 3.0);
    assert!(quiet.speech_ratio < 0.5 * base.speech_ratio);
    assert!(quiet.pause_max_s.unwrap_or(0.0) > 1.5);
    assert_eq!(quiet.voice_count, 1);
}

#[test]
fn one_speaker_fixtures_are_one_voice() {
    for name in ["baseline.wav", "hesitant.wav", "rising.wav", "stressed.wav"] {
        let s = whole(&fixture_features(name));
        assert_eq!(s.voice_count, 1, "{name}");
        assert_eq!(s.speaker_changes, 0, "{name}");
    }
}

#[test]
fn windows_partition_the_file() {
    let f = fixture_features("baseline.wav");
    let total: usize = (0..2)
        .map(|w| summarize(&f, Span::new(w as f64 * 5.0, (w + 1) as f64 * 5.0)).frame_count)
        .sum();
    assert_eq!(total, f.frames.len());
}

/// Every committed speech fixture, one after another (about 77 s: long
/// enough that forgetting drops real frames, pulses and voiced segments).
fn all_speech_fixtures() -> Vec<f32> {
    let path = format!(
        "{}/../../tests/fixtures/speech_16k_s16le.pcm",
        env!("CARGO_MANIFEST_DIR")
    );
    let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut pcm: Vec<f32> = raw
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
        .collect();
    for name in [
        "baseline.wav",
        "two_voices.wav",
        "hesitant.wav",
        "rising.wav",
        "stressed.wav",
        "disengaged.wav",
        "fillers.wav",
    ] {
        pcm.extend(fixture(name));
    }
    pcm
}

const WINDOW_S: f64 = 5.0;

fn window(w: usize) -> Span {
    Span::new(w as f64 * WINDOW_S, (w + 1) as f64 * WINDOW_S)
}

#[test]
fn forgetting_before_each_window_leaves_every_window_summary_unchanged() {
    let pcm = all_speech_fixtures();
    let windows = (pcm.len() as f64 / SAMPLE_RATE as f64 / WINDOW_S).ceil() as usize;
    // The never-forgetting reference, summarised after the whole input.
    let mut keep_all = FeatureExtractor::new();
    let mut forgetting = FeatureExtractor::new();
    let (mut next, mut settled_early, mut forgot) = (0usize, 0usize, false);
    let summarise_settled = |x: &mut FeatureExtractor, next: &mut usize| {
        let mut got = Vec::new();
        while *next < windows && window(*next).end_s <= x.settled_s() {
            x.forget_before(window(*next).start_s);
            got.push((*next, summarize(x.features(), window(*next))));
            *next += 1;
        }
        got
    };
    let mut streamed = Vec::new();
    for part in pcm.chunks(2_345) {
        keep_all.push(part);
        forgetting.push(part);
        let got = summarise_settled(&mut forgetting, &mut next);
        settled_early += got.len();
        streamed.extend(got);
        forgot |= forgetting.features().first_index > 0;
        assert_eq!(forgetting.voice_count(), keep_all.voice_count());
    }
    keep_all.finish();
    forgetting.finish();
    streamed.extend(summarise_settled(&mut forgetting, &mut next));
    assert_eq!(streamed.len(), windows);
    assert!(forgot, "nothing was forgotten");
    assert!(settled_early >= windows - 2, "{settled_early} of {windows}");
    let reference = keep_all.features();
    for (w, summary) in &streamed {
        assert_eq!(summary, &summarize(reference, window(*w)), "window {w}");
    }
    // What is held is the tail of the full output.
    let held = forgetting.features();
    assert!(held.first_index > 0);
    assert_eq!(
        held.frames[..],
        reference.frames[held.first_index as usize..]
    );
    assert_eq!(
        held.frame(held.first_index + 3),
        reference.frames.get(held.first_index as usize + 3)
    );
    assert_eq!(held.frame(held.first_index - 1), None);
    assert_eq!(held.end_index(), reference.end_index());
    assert!(held.pulses.len() < reference.pulses.len());
    assert!(held.voiced_segments.len() < reference.voiced_segments.len());
    assert_eq!(forgetting.voice_count(), 2);
}

#[test]
fn a_twenty_minute_stream_that_forgets_as_it_goes_holds_bounded_output() {
    let source = all_speech_fixtures();
    let total = 20 * 60 * SAMPLE_RATE as usize;
    // Context, one window, one window's advance before the next forget, and
    // the F0 decision delay and chunk (see the loop): 25 s of frames.
    let bound_frames = 2_500;
    let mut x = FeatureExtractor::new();
    let (mut next, mut fed) = (0usize, 0usize);
    let (mut most_frames, mut most_pulses, mut most_segments) = (0usize, 0usize, 0usize);
    let mut speech_s = 0.0;
    // The fixtures again and again, one second at a time.
    let mut samples = source.iter().copied().cycle().take(total);
    let mut part = Vec::with_capacity(16_000);
    loop {
        part.clear();
        part.extend(samples.by_ref().take(16_000));
        if part.is_empty() {
            break;
        }
        x.push(&part);
        fed += part.len();
        while window(next).end_s <= x.settled_s() {
            x.forget_before(window(next).start_s);
            speech_s += summarize(x.features(), window(next)).speech_s;
            next += 1;
        }
        let held = x.features();
        most_frames = most_frames.max(held.frames.len());
        most_pulses = most_pulses.max(held.pulses.len());
        most_segments = most_segments.max(held.voiced_segments.len());
        assert!(
            held.frames.capacity() <= 2 * bound_frames,
            "after {fed} samples"
        );
    }
    assert!(next >= 20 * 60 / 5 - 1, "{next} windows summarised");
    assert!(speech_s > 10.0 * 60.0, "{speech_s} s of speech found");
    assert!(most_frames <= bound_frames, "{most_frames} frames held");
    // At most 25 s of voicing at the 600 Hz F0 ceiling, and 10 voiced
    // segments a second.
    assert!(most_pulses <= 25 * 600, "{most_pulses} pulses held");
    assert!(most_segments <= 250, "{most_segments} voiced segments held");
    // The fixtures hold three espeak-ng voices (en-us at several pitches,
    // en-gb, en-us+f3); forgetting output keeps the speakers found.
    assert!((2..=3).contains(&x.voice_count()), "{}", x.voice_count());
    assert!(x.features().first_index > 19 * 60 * 100);
}

/// A harmonic tone whose F0 moves from `from_hz` by `st_per_s` semitones per
/// second.
fn gliding_tone(from_hz: f64, st_per_s: f64, seconds: f64, amplitude: f64) -> Vec<f32> {
    let mut phase = [0.0f64; 6];
    (0..(seconds * RATE) as usize)
        .map(|i| {
            let f0 = from_hz * (st_per_s * i as f64 / RATE / 12.0).exp2();
            let mut v = 0.0;
            for (h, p) in phase.iter_mut().enumerate() {
                *p += 2.0 * std::f64::consts::PI * f0 * (h + 1) as f64 / RATE;
                v += p.sin() / (h + 1) as f64;
            }
            (v * amplitude) as f32
        })
        .collect()
}

fn between_silences(sound: Vec<f32>) -> Vec<f32> {
    let mut pcm = vec![0.0; 8_000];
    pcm.extend(sound);
    pcm.extend(vec![0.0; 8_000]);
    pcm
}

#[test]
fn a_held_level_tone_is_a_filled_pause_and_a_glide_or_a_long_hum_is_not() {
    // 200 Hz: two whole periods per hop, so every frame sees the same
    // spectrum (at other F0s a pure tone's few harmonics beat in the
    // spectral window and its MFCC wobble like no voice's).
    let held = whole(&extract(&between_silences(harmonic_tone(200.0, 0.4, 0.2))));
    assert_eq!(held.filled_pause_count, 1);
    assert!(
        (held.filled_pause_s - 0.4).abs() < 0.05,
        "{}",
        held.filled_pause_s
    );
    // 40 st/s: an accent's speed, not a filler's drift.
    let glide = whole(&extract(&between_silences(gliding_tone(
        200.0, -40.0, 0.4, 0.2,
    ))));
    assert_eq!(glide.filled_pause_count, 0);
    let hum = whole(&extract(&between_silences(harmonic_tone(200.0, 1.5, 0.2))));
    assert_eq!(hum.filled_pause_count, 0);
    let blip = whole(&extract(&between_silences(harmonic_tone(200.0, 0.12, 0.2))));
    assert_eq!(blip.filled_pause_count, 0);
}

#[test]
fn written_fillers_are_counted_as_filled_pauses_and_fluent_speech_has_none() {
    let truth = truth();
    for name in ["hesitant.wav", "fillers.wav"] {
        let written = truth["files"][name]["filled_pauses"].as_u64().unwrap_or(0) as u32;
        assert!(written >= 3, "{name}: truth.json lists its fillers");
        let f = fixture_features(name);
        let s = whole(&f);
        // Most fillers found, at most one held word taken for one.
        assert!(
            s.filled_pause_count * 5 >= written * 3 && s.filled_pause_count <= written + 1,
            "{name}: {} of {written}",
            s.filled_pause_count
        );
        let n = s.filled_pause_count as f32;
        assert!(
            (0.2 * n..=1.0 * n).contains(&s.filled_pause_s),
            "{name}: {} s",
            s.filled_pause_s
        );
        // Each is counted once, in the window where it starts.
        let per_window: u32 = (0..3)
            .map(|w| summarize(&f, window(w)).filled_pause_count)
            .sum();
        assert_eq!(per_window, s.filled_pause_count, "{name}");
    }
    for name in [
        "baseline.wav",
        "rising.wav",
        "stressed.wav",
        "two_voices.wav",
    ] {
        let s = whole(&fixture_features(name));
        assert_eq!(s.filled_pause_count, 0, "{name}");
        assert_eq!(s.filled_pause_s, 0.0, "{name}");
    }
    let sparse = whole(&fixture_features("disengaged.wav"));
    assert!(
        sparse.filled_pause_count <= 1,
        "{}",
        sparse.filled_pause_count
    );
}

/// A file's diarization reads the voice activity its features computed instead of running
/// Silero again, which is only right if those scores are exactly what Silero gives the whole
/// file in one go: the same bits, one per 32 ms block, the last partial block zero-padded.
/// Lengths that end mid-block and on a block boundary, and a buffer with clipped and
/// non-finite samples (both sanitise them alike).
#[test]
fn the_features_voice_activity_is_what_silero_gives_the_whole_file() {
    let speech = fixture("baseline.wav");
    let mut dirty = speech.clone();
    dirty[100] = f32::NAN;
    dirty[2000] = 3.0;
    dirty[4000] = f32::NEG_INFINITY;
    let block = attune_voice::VAD_FRAME_SAMPLES;
    for pcm in [
        speech.clone(),
        speech[..speech.len() / block * block].to_vec(),
        speech[..speech.len() / block * block + 7].to_vec(),
        dirty,
    ] {
        let (_, ours) = extract_unlabelled_with_vad(&pcm);
        let ours = ours.expect("every block's score kept");
        let silero = attune_voice::speech_probabilities(&pcm).expect("Silero runs");
        assert_eq!(ours.len(), silero.len(), "{} samples", pcm.len());
        let same_bits = ours
            .iter()
            .zip(&silero)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(
            same_bits,
            "{} samples: {ours:?} against {silero:?}",
            pcm.len()
        );
        assert!(silero.iter().any(|&p| p > 0.5), "the fixture holds speech");
    }
}
