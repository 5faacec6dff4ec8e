//! The analyzer on controlled speech: espeak-ng recordings with a known
//! manipulation (tests/fixtures/speech/make.sh). These assert direction, not
//! exact output: the manipulated cue must show up as the signal and state the
//! literature ties it to.

use attune_core::pipeline::{analyze_bytes, analyze_pcm, AnalysisOptions, FileAnalysis};
use attune_core::upload::{whole_file_quality, Sections};
use attune_core::wire::{
    EngagementLevel, IncludeFlag, Model, QualityValues, SignalType, UploadJobWindow,
};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/../../tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn pcm(name: &str) -> Vec<f32> {
    attune_media::decode_audio(&fixture(name)).unwrap().samples
}

fn analyze(name: &str, model: Model) -> FileAnalysis {
    analyze_bytes(&fixture(name), &AnalysisOptions::new(model)).unwrap()
}

fn with_signal(windows: &[UploadJobWindow], wanted: &[SignalType]) -> usize {
    windows
        .iter()
        .filter(|w| w.signals.iter().any(|s| wanted.contains(&s.signal_type)))
        .count()
}

fn overall(windows: &[UploadJobWindow], duration: f64) -> QualityValues {
    whole_file_quality(
        windows,
        duration,
        Sections::from_flags(&[IncludeFlag::ConversationQualityOverall]),
    )
    .and_then(|q| q.overall)
    .unwrap()
}

/// Windows holding at least one second of the recording.
fn full(windows: &[UploadJobWindow]) -> Vec<UploadJobWindow> {
    windows
        .iter()
        .filter(|w| w.end_seconds - w.start_seconds >= 2.0)
        .cloned()
        .collect()
}

#[test]
fn long_pauses_fillers_and_slow_rate_read_as_hesitation_in_most_windows() {
    let a = analyze("speech/hesitant.wav", Model::Inter2Audio);
    let windows = full(&a.windows);
    let hesitant = with_signal(&windows, &[SignalType::Hesitation]);
    assert!(
        hesitant * 2 > windows.len(),
        "{hesitant} of {} windows: {:#?}",
        windows.len(),
        a.windows
    );
    let baseline = analyze("speech/baseline.wav", Model::Inter2Audio);
    assert_eq!(
        with_signal(&baseline.windows, &[SignalType::Hesitation]),
        0,
        "{:#?}",
        baseline.windows
    );
}

#[test]
fn rising_terminals_read_as_uncertainty() {
    let a = analyze("speech/rising.wav", Model::Inter2Audio);
    let windows = full(&a.windows);
    assert!(
        with_signal(&windows, &[SignalType::Uncertainty]) * 2 > windows.len(),
        "{:#?}",
        a.windows
    );
    let baseline = analyze("speech/baseline.wav", Model::Inter2Audio);
    assert_eq!(
        with_signal(&baseline.windows, &[SignalType::Uncertainty]),
        0
    );
}

#[test]
fn fast_high_loud_speech_after_calm_speech_reads_as_stress_with_more_energy() {
    // The same speaker calm first, then fast, high and loud: judged against
    // the baseline the calm part set. The calm text is read twice, so the
    // speaker's own baseline rests on the 10 s of speech it needs before it
    // judges (`cues::OWN_BASELINE_SPEECH_S`; before that only the norms do).
    let mut calm = pcm("speech/baseline.wav");
    calm.extend(calm.clone());
    let calm_seconds = (calm.len() / 16_000) as f64;
    let calm_windows = (calm_seconds / 5.0).floor() as usize;
    let mut samples = calm[..calm_windows * 5 * 16_000].to_vec();
    samples.extend(pcm("speech/stressed.wav"));
    let duration = samples.len() as f64 / 16_000.0;
    let a = analyze_pcm(&samples, duration, Model::Inter2);
    let (before, after) = a.windows.split_at(calm_windows);
    let after = full(after);
    assert!(
        with_signal(&after, &[SignalType::Stress, SignalType::Tension]) > 0,
        "{:#?}",
        a.windows
    );
    assert_eq!(
        with_signal(before, &[SignalType::Stress, SignalType::Tension]),
        0
    );
    let energy_after = overall(&after, duration).energy;
    let energy_before = overall(before, duration).energy;
    assert!(
        energy_after > 50.0 && energy_after > energy_before,
        "{energy_before} -> {energy_after}"
    );
}

#[test]
fn quiet_monotone_speech_with_long_silences_is_disengaged_with_low_energy() {
    let a = analyze("speech/disengaged.wav", Model::Inter2Audio);
    let windows = full(&a.windows);
    let disengaged = windows
        .iter()
        .filter(|w| w.engagement_status == EngagementLevel::Disengaged)
        .count();
    assert!(disengaged * 2 > windows.len(), "{:#?}", a.windows);
    assert!(overall(&a.windows, a.duration).energy < 50.0);
}

#[test]
fn a_lively_two_voice_exchange_is_engaged() {
    let a = analyze("speech/two_voices.wav", Model::Inter2Audio);
    let windows = full(&a.windows);
    let engaged = windows
        .iter()
        .filter(|w| w.engagement_status == EngagementLevel::Engaged)
        .count();
    assert!(engaged * 2 > windows.len(), "{:#?}", a.windows);
    assert!(overall(&a.windows, a.duration).energy > 50.0);
}

#[test]
fn the_same_audio_in_different_containers_gives_the_same_windows() {
    let reference = analyze("wav_pcm_s16le.wav", Model::Inter2Audio);
    let others = [
        "flac_flac.flac",
        "mp3_mp3.mp3",
        "m4a_aac.m4a",
        "m4a_alac.m4a",
        "ogg_vorbis.ogg",
        "ogg_opus.ogg",
        "webm_opus.webm",
        "mp4_aac.mp4",
    ];
    // One decision per window for the engagement state and one per signal
    // type the model reports (present or not): a borderline low-probability
    // signal flipping under a lossy codec costs one decision, not the window.
    let audible = || {
        attune_core::analysis::params::INTER_2_AUDIO
            .signals
            .iter()
            .map(|rule| rule.signal)
    };
    let (mut same, mut total) = (0, 0);
    for name in others {
        let a = analyze(name, Model::Inter2Audio);
        assert_eq!(a.windows.len(), reference.windows.len(), "{name}");
        for (x, y) in a.windows.iter().zip(&reference.windows) {
            total += 1;
            same += usize::from(x.engagement_status == y.engagement_status);
            for t in audible() {
                let has = |w: &UploadJobWindow| w.signals.iter().any(|s| s.signal_type == t);
                total += 1;
                same += usize::from(has(x) == has(y));
            }
        }
    }
    assert!(total >= 8 * 7);
    assert!(
        same as f64 >= 0.95 * total as f64,
        "{same} of {total} agree"
    );
}

#[test]
fn fillers_in_fluent_rate_speech_read_as_hesitation_quoting_them() {
    // No long silences here: the "um"s and "uh"s carry the hesitation.
    let a = analyze("speech/fillers.wav", Model::Inter2Audio);
    let quoted = |w: &UploadJobWindow| {
        w.signals.iter().any(|s| {
            s.signal_type == SignalType::Hesitation
                && s.rationale
                    .as_deref()
                    .is_some_and(|r| r.contains(" filled pauses ("))
        })
    };
    assert!(a.windows.iter().any(quoted), "{:#?}", a.windows);
    let baseline = analyze("speech/baseline.wav", Model::Inter2Audio);
    assert!(
        baseline.windows.iter().all(|w| w.signals.iter().all(|s| !s
            .rationale
            .as_deref()
            .unwrap_or("")
            .contains("filled pause"))),
        "{:#?}",
        baseline.windows
    );
}
