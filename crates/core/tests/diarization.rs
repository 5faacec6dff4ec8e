//! Speaker turns on the committed corpora: diarization error rate floors on real and synthetic conversations, and the cases the pitch-jump rule got wrong.
//!
//! The figures are in `docs/EVALUATION.md`; `cargo run -p attune-core
//! --example diarization_eval` prints them per file.

use attune_core::diarization::{
    diarization_error_rate, parse_rttm, speaker_segments, DerBreakdown, SpeakerSegment,
};
use attune_core::features::{self, summarize, FrameFeatures, Span};

const COLLAR: f64 = 0.25;

fn fixtures() -> String {
    format!("{}/../../tests/fixtures", env!("CARGO_MANIFEST_DIR"))
}

fn read_wav(path: &str) -> Vec<f32> {
    let mut reader = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    reader
        .samples::<i16>()
        .map(|s| s.unwrap_or(0) as f32 / 32768.0)
        .collect()
}

fn reference(rttm: &str) -> Vec<SpeakerSegment> {
    parse_rttm(&std::fs::read_to_string(rttm).unwrap_or_else(|e| panic!("{rttm}: {e}")))
}

/// Online (as streams and uploads run) and whole-file features of a WAV.
fn both(wav: &str) -> (FrameFeatures, FrameFeatures) {
    let online = features::extract(&read_wav(wav));
    let mut offline = online.clone();
    features::diarize(&mut offline);
    (online, offline)
}

fn conversation(name: &str) -> (Vec<SpeakerSegment>, FrameFeatures, FrameFeatures) {
    let dir = format!("{}/conversations", fixtures());
    let (on, off) = both(&format!("{dir}/{name}.wav"));
    (reference(&format!("{dir}/{name}.rttm")), on, off)
}

fn names() -> Vec<String> {
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{}/conversations/manifest.json", fixtures()))
            .expect("manifest"),
    )
    .expect("manifest is JSON");
    manifest["conversations"]
        .as_array()
        .expect("conversations")
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// The hypothesis speaker holding most of a reference speaker's time.
fn main_id(reference: &[SpeakerSegment], who: &str, hypothesis: &[SpeakerSegment]) -> String {
    let mut time: Vec<(String, f64)> = Vec::new();
    for r in reference.iter().filter(|r| r.speaker == who) {
        for h in hypothesis {
            let o = r.end.min(h.end) - r.start.max(h.start);
            if o > 0.0 {
                match time.iter_mut().find(|t| t.0 == h.speaker) {
                    Some(t) => t.1 += o,
                    None => time.push((h.speaker.clone(), o)),
                }
            }
        }
    }
    time.into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|t| t.0)
        .unwrap_or_default()
}

#[test]
fn der_on_the_real_telephone_sample_stays_under_its_floor() {
    let dir = format!("{}/real", fixtures());
    let reference = reference(&format!("{dir}/sample.rttm"));
    let (online, offline) = both(&format!("{dir}/sample.wav"));
    let on = diarization_error_rate(&reference, &speaker_segments(&online), COLLAR);
    let off = diarization_error_rate(&reference, &speaker_segments(&offline), COLLAR);
    // The whole-file floor is the target (reached: 13 %, see
    // docs/EVALUATION.md); the settings were tuned on the synthetic c01-c08
    // only. The online tracker still hears the two women as one speaker.
    assert!(on.rate() <= 0.50, "online DER {:.3} ({on:?})", on.rate());
    assert!(
        off.rate() <= 0.25,
        "whole-file DER {:.3} ({off:?})",
        off.rate()
    );
    // Two women of one register are two speakers, not one.
    assert_eq!(speaker_count(&offline), 2, "{off:?}");
    // Speech detection itself is good: most of the error is confusion.
    assert!(off.missed + off.false_alarm <= 0.12 * off.total, "{off:?}");
}

#[test]
fn der_on_the_synthetic_conversations_stays_under_its_floor() {
    let (mut on, mut off) = (DerBreakdown::default(), DerBreakdown::default());
    for name in names() {
        let (reference, online, offline) = conversation(&name);
        on = on.add(&diarization_error_rate(
            &reference,
            &speaker_segments(&online),
            COLLAR,
        ));
        off = off.add(&diarization_error_rate(
            &reference,
            &speaker_segments(&offline),
            COLLAR,
        ));
    }
    assert!(on.rate() <= 0.30, "online DER {:.3} ({on:?})", on.rate());
    // The target is 15 %; reached at 12.9 % (docs/EVALUATION.md).
    assert!(
        off.rate() <= 0.135,
        "whole-file DER {:.3} ({off:?})",
        off.rate()
    );
}

fn speaker_count(f: &FrameFeatures) -> usize {
    let mut ids: Vec<u8> = f.speech_units.iter().filter_map(|u| u.speaker).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}

#[test]
fn two_voices_of_one_register_are_told_apart_in_whole_files() {
    // c03: two female espeak voices (F1, F2), c08: two others (F3, F4); the
    // mean-MFCC clustering heard each pair as one speaker (51 % and 20 %).
    for name in ["c03_agreeing_f1_f2", "c08_disengaged_f3_f4"] {
        let (reference, _, offline) = conversation(name);
        let hyp = speaker_segments(&offline);
        let d = diarization_error_rate(&reference, &hyp, COLLAR);
        assert!(d.rate() <= 0.10, "{name}: DER {:.3} ({d:?})", d.rate());
        assert_ne!(
            main_id(&reference, "A", &hyp),
            main_id(&reference, "B", &hyp),
            "{name}"
        );
    }
}

#[test]
fn whole_file_diarization_keeps_mixed_register_pairs_apart() {
    for name in [
        "c01_lively_m1_f1",
        "c04_disagreeing_m3_f3",
        "c06_uncertain_m2_f4",
    ] {
        let (reference, _, offline) = conversation(name);
        let d = diarization_error_rate(&reference, &speaker_segments(&offline), COLLAR);
        assert!(d.rate() <= 0.05, "{name}: DER {:.3} ({d:?})", d.rate());
    }
}

#[test]
fn whole_file_units_tile_the_voiced_frames_in_order() {
    // Resegmentation may split units where the speaker changes: the units
    // stay ordered, disjoint, within the file, and every one has a speaker.
    let (_, online, offline) = conversation("c07_stressed_m3_m4");
    let voiced =
        |f: &FrameFeatures| -> u32 { f.speech_units.iter().map(|u| u.voiced_frames).sum() };
    assert_eq!(voiced(&online), voiced(&offline));
    for w in offline.speech_units.windows(2) {
        assert!(w[0].end_frame <= w[1].start_frame, "{w:?}");
    }
    for u in &offline.speech_units {
        assert!(u.start_frame < u.end_frame && u.end_frame <= offline.end_index());
        assert!(u.speaker.is_some(), "{u:?}");
    }
    // Voiced segments follow the new labels.
    for s in &offline.voiced_segments {
        if let Some(u) = offline
            .speech_units
            .iter()
            .find(|u| u.start_frame <= s.start_frame && s.start_frame < u.end_frame)
        {
            assert_eq!(s.speaker, u.speaker);
        }
    }
}

#[test]
fn a_voice_whose_pitch_and_rate_move_with_its_state_stays_one_speaker() {
    // The behaviour test's recording: one espeak-ng voice calm (read twice),
    // then fast, 5 semitones higher and louder. Clustered on MFCC and F0
    // the stressed part became a second speaker, so its own baseline
    // restarted and the stress it carries was never judged against the calm.
    let dir = format!("{}/speech", fixtures());
    let mut samples = read_wav(&format!("{dir}/baseline.wav"));
    samples.extend(samples.clone());
    samples.truncate(samples.len() / 80_000 * 80_000);
    samples.extend(read_wav(&format!("{dir}/stressed.wav")));
    let mut f = features::extract(&samples);
    features::diarize(&mut f);
    assert_eq!(speaker_count(&f), 1);
    // c07: M3 calm, M4 stressed later in the file: two speakers, not three.
    let (reference, _, offline) = conversation("c07_stressed_m3_m4");
    assert_eq!(speaker_count(&offline), 2);
    let d = diarization_error_rate(&reference, &speaker_segments(&offline), COLLAR);
    assert!(d.rate() <= 0.05, "c07: DER {:.3} ({d:?})", d.rate());
}

#[test]
fn a_male_and_a_female_voice_on_a_telephone_band_stay_two_speakers() {
    // The band squeezes the two envelopes together (timbre distance 0.34,
    // under the merge threshold): the register guard keeps them apart.
    let bytes = std::fs::read(format!("{}/robustness/phone.flac", fixtures())).expect("phone");
    let samples = attune_media::decode_audio(&bytes).expect("flac").samples;
    let mut f = features::extract(&samples);
    features::diarize(&mut f);
    assert_eq!(speaker_count(&f), 2);
}

#[test]
fn whole_file_diarization_of_silence_or_one_voice_is_safe() {
    // No speech: nothing to label, no panic.
    let mut silent = features::extract(&vec![0.0; 16_000 * 3]);
    features::diarize(&mut silent);
    assert!(silent.speech_units.iter().all(|u| u.speaker.is_none()));
    // One synthetic voice alone is one speaker.
    let dir = format!("{}/speech", fixtures());
    let (_, offline) = both(&format!("{dir}/baseline.wav"));
    assert_eq!(speaker_count(&offline), 1);
}

#[test]
fn mixed_register_conversations_are_diarized_well() {
    // One low and one high voice: what the pitch-jump rule handled too,
    // now with 1 s turn resolution and latching turns (0.15 s gaps).
    for name in [
        "c01_lively_m1_f1",
        "c04_disagreeing_m3_f3",
        "c06_uncertain_m2_f4",
    ] {
        let (reference, online, _) = conversation(name);
        let d = diarization_error_rate(&reference, &speaker_segments(&online), COLLAR);
        assert!(d.rate() <= 0.20, "{name}: DER {:.3} ({d:?})", d.rate());
    }
}

#[test]
fn a_higher_voice_taking_over_alone_is_another_speaker_not_a_pitch_rise() {
    // c12: M1 (108 Hz) and F3 talk stressed, then F3 (182 Hz) talks alone
    // for 15 s. The pitch-jump rule compared F3 with M1's baseline.
    let (reference, online, _) = conversation("c12_stressed_disengaged_m1_f3");
    let hyp = speaker_segments(&online);
    let (a, b) = (
        main_id(&reference, "A", &hyp),
        main_id(&reference, "B", &hyp),
    );
    assert_ne!(a, b);
    // A window where only F3 speaks: one speaker, F3's, with F3's pitch.
    let solo = reference
        .iter()
        .find(|r| r.speaker == "B" && r.end - r.start >= 5.0)
        .expect("F3's long turn");
    let s = summarize(&online, Span::new(solo.start + 0.5, solo.start + 5.5));
    let main = s
        .per_speaker
        .iter()
        .max_by(|x, y| x.speech_s.total_cmp(&y.speech_s))
        .expect("someone speaks");
    assert_eq!(main.speaker.to_string(), b, "{:?}", s.per_speaker);
    assert!(main.talk_share >= 0.8, "{:?}", s.per_speaker);
    let f0 = main.f0_mean_semitones.unwrap_or(0.0);
    // 182 Hz is 32.7 semitones re 27.5 Hz; M1's 108 Hz is 23.7.
    assert!(f0 > 29.0, "F3's own pitch, not a rise of M1's: {f0}");
}

#[test]
fn backchannels_are_short_flat_turns_and_counted_per_speaker() {
    // c03 puts three backchannels ("Yeah.", "Mm hmm.", "Sure.") by A into
    // B's pauses; the neutral span before has none. Speaker ids aside,
    // the agreeing span must hold backchannels and the neutral one none.
    let (_, online, _) = conversation("c09_three_neutral_agreeing_m1_f2_m3");
    let labels: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/conversations/c09_three_neutral_agreeing_m1_f2_m3.json",
            fixtures()
        ))
        .expect("labels"),
    )
    .expect("JSON");
    let spans = labels["spans"].as_array().expect("spans");
    let span = |k: usize| {
        Span::new(
            spans[k]["start_s"].as_f64().unwrap_or(0.0),
            spans[k]["end_s"].as_f64().unwrap_or(0.0),
        )
    };
    let neutral = summarize(&online, span(0));
    let agreeing = summarize(&online, span(1));
    assert!(
        agreeing.backchannel_count >= 1,
        "agreeing span: {:?}",
        agreeing.turns
    );
    assert!(
        agreeing.backchannel_count > neutral.backchannel_count,
        "neutral {} vs agreeing {}",
        neutral.backchannel_count,
        agreeing.backchannel_count
    );
}

#[test]
fn uploads_use_the_whole_file_labels_and_the_online_option_the_stream_ones() {
    // c03: two female voices of one register. The online tracker hears one
    // speaker; an upload clusters the whole file and reports both.
    use attune_core::pipeline::{analyze_media_with, analyze_pcm, Diarization};
    use attune_core::wire::Model;
    let samples = read_wav(&format!(
        "{}/conversations/c03_agreeing_f1_f2.wav",
        fixtures()
    ));
    let duration = samples.len() as f64 / 16_000.0;
    let speakers = |turns: &[features::Turn]| {
        let mut ids: Vec<u8> = turns.iter().map(|t| t.speaker).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    let upload = analyze_pcm(&samples, duration, Model::Inter2Audio);
    assert_eq!(speakers(&upload.speaker_turns), 2);
    let online = analyze_media_with(
        &samples,
        None,
        duration,
        Model::Inter2Audio,
        Diarization::Online,
    );
    assert_eq!(speakers(&online.speaker_turns), 1);
}
