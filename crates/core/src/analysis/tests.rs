use super::params::{INTER_2, INTER_2_AUDIO};
use super::*;

/// A calm single speaker: 4.5 syll/s, 7 st range, few short pauses.
fn calm(start: f64) -> WindowFeatures {
    WindowFeatures {
        start,
        end: start + 5.0,
        audio: AudioMeasures {
            speech_seconds: 4.0,
            pause_count: 1,
            pause_seconds: 0.3,
            pause_max: 0.3,
            speech_rate: Some(4.5),
            f0_mean: Some(24.0),
            f0_range: Some(7.0),
            loudness_mean: Some(-22.0),
            jitter: Some(1.0),
            shimmer_db: Some(0.5),
            hnr: Some(12.0),
            alpha_ratio: Some(-10.0),
            speakers: 1,
            ..AudioMeasures::default()
        },
        video: None,
    }
}

fn run(params: &'static params::ModelParams, windows: &[WindowFeatures]) -> Vec<WindowVerdict> {
    let mut analyzer = RuleAnalyzer::new(params);
    windows.iter().map(|w| analyzer.analyze(w)).collect()
}

fn finding(verdict: &WindowVerdict, signal: SignalType) -> Option<&Finding> {
    verdict.findings.iter().find(|f| f.signal == signal)
}

#[test]
fn calm_speech_reports_nothing_alarming() {
    let verdicts = run(&INTER_2, &[calm(0.0), calm(5.0), calm(10.0)]);
    for v in &verdicts {
        for alarming in [
            SignalType::Hesitation,
            SignalType::Stress,
            SignalType::Uncertainty,
            SignalType::Disengagement,
        ] {
            assert!(finding(v, alarming).is_none(), "{v:?}");
        }
        assert_ne!(v.engagement, EngagementLevel::Disengaged);
    }
}

#[test]
fn long_pauses_and_slow_rate_read_as_hesitation_with_quoted_evidence() {
    let mut hesitant = calm(10.0);
    hesitant.audio.pause_count = 3;
    hesitant.audio.pause_seconds = 2.4;
    hesitant.audio.pause_max = 1.2;
    hesitant.audio.speech_rate = Some(2.6);
    hesitant.audio.speech_seconds = 2.5;
    let verdicts = run(&INTER_2, &[calm(0.0), calm(5.0), hesitant]);
    let f = finding(&verdicts[2], SignalType::Hesitation).expect("hesitation");
    assert!(f.probability >= Probability::Medium, "{f:?}");
    assert!(
        f.rationale.contains("3 pauses over 2.4 s (longest 1.2 s)"),
        "{}",
        f.rationale
    );
    assert!(
        f.rationale.contains("speech rate 2.6 syll/s"),
        "{}",
        f.rationale
    );
    assert!(
        f.rationale.contains("% below this speaker's baseline"),
        "{}",
        f.rationale
    );
    assert_eq!(f.channels, [Channel::Audio]);
}

#[test]
fn rising_terminals_read_as_uncertainty() {
    let mut rising = calm(5.0);
    rising.audio.rising_terminals = 3;
    rising.audio.falling_terminals = 0;
    rising.audio.terminal_rise_max = Some(24.0);
    let verdicts = run(&INTER_2_AUDIO, &[calm(0.0), rising]);
    let f = finding(&verdicts[1], SignalType::Uncertainty).expect("uncertainty");
    assert!(
        f.rationale
            .contains("3 of 3 phrases ended rising (up to +24 st/s)"),
        "{}",
        f.rationale
    );
}

#[test]
fn fast_high_loud_speech_reads_as_stress_against_the_baseline() {
    let mut tense = calm(10.0);
    tense.audio.speech_rate = Some(6.8);
    tense.audio.f0_mean = Some(29.0);
    tense.audio.f0_range = Some(9.0);
    tense.audio.loudness_mean = Some(-16.0);
    let verdicts = run(&INTER_2, &[calm(0.0), calm(5.0), tense]);
    let f = finding(&verdicts[2], SignalType::Stress).expect("stress");
    assert!(
        f.rationale
            .contains("semitones above this speaker's baseline"),
        "{}",
        f.rationale
    );
    assert_ne!(verdicts[2].engagement, EngagementLevel::Disengaged);
    // The same window heard by the audio-only model cannot report stress.
    let audio_only = run(&INTER_2_AUDIO, &[calm(0.0), calm(5.0), verdict_input(10.0)]);
    assert!(audio_only
        .iter()
        .all(|v| finding(v, SignalType::Stress).is_none()));
}

fn verdict_input(start: f64) -> WindowFeatures {
    let mut w = calm(start);
    w.audio.speech_rate = Some(6.8);
    w.audio.f0_mean = Some(29.0);
    w
}

#[test]
fn quiet_monotone_with_long_silences_is_disengaged() {
    let mut flat = calm(10.0);
    flat.audio.speech_seconds = 1.2;
    flat.audio.f0_range = Some(2.5);
    flat.audio.loudness_mean = Some(-31.0);
    flat.audio.pause_count = 2;
    flat.audio.pause_seconds = 2.0;
    flat.audio.pause_max = 1.5;
    let verdicts = run(&INTER_2, &[calm(0.0), calm(5.0), flat]);
    assert_eq!(verdicts[2].engagement, EngagementLevel::Disengaged);
    let f = finding(&verdicts[2], SignalType::Disengagement).expect("disengagement");
    assert!(
        f.rationale.contains("speech in only 24% of the window"),
        "{}",
        f.rationale
    );
}

#[test]
fn lively_two_voice_exchange_is_engaged() {
    let mut lively = calm(0.0);
    lively.audio.speakers = 2;
    lively.audio.turns = 4;
    lively.audio.dominant_share = Some(0.55);
    lively.audio.response_latency = Some(0.2);
    lively.audio.backchannels = 1;
    let verdicts = run(&INTER_2, &[lively.clone()]);
    assert_eq!(verdicts[0].engagement, EngagementLevel::Engaged);
    assert!(
        finding(&verdicts[0], SignalType::Engagement).is_some(),
        "{verdicts:?}"
    );
}

#[test]
fn nods_read_as_agreement_from_the_picture() {
    let mut nodding = calm(0.0);
    nodding.video = Some(VideoMeasures {
        coverage: 1.0,
        motion: Some(3.0),
        stillness: Some(0.2),
        nod: Some(0.9),
        shake: Some(0.0),
    });
    let verdicts = run(&INTER_2, &[nodding]);
    let f = finding(&verdicts[0], SignalType::Agreement).expect("agreement");
    assert_eq!(f.channels, [Channel::Visual]);
    assert_eq!(
        modality(f, Model::Inter2, Some(Endpoint::Realtime)),
        [Modality::Visual]
    );
    assert_eq!(
        modality(f, Model::Inter2, Some(Endpoint::StreamV1)),
        [Modality::Video]
    );
    assert_eq!(modality(f, Model::Inter2Audio, None), [Modality::Audio]);
    // Video evidence of a window with too little decodable video is ignored.
    let mut sparse = calm(0.0);
    sparse.video = Some(VideoMeasures {
        coverage: 0.2,
        nod: Some(0.9),
        ..VideoMeasures::default()
    });
    assert!(finding(&run(&INTER_2, &[sparse])[0], SignalType::Agreement).is_none());
}

#[test]
fn the_same_windows_give_the_same_verdicts() {
    let mut odd = calm(5.0);
    odd.audio.rising_terminals = 2;
    odd.audio.response_latency = Some(0.9);
    let windows = [calm(0.0), odd, calm(10.0)];
    assert_eq!(run(&INTER_2, &windows), run(&INTER_2, &windows));
}

#[test]
fn degenerate_windows_never_panic() {
    let mut w = WindowFeatures {
        start: 5.0,
        end: 5.0,
        ..WindowFeatures::default()
    };
    w.audio.speech_rate = Some(f64::NAN);
    w.audio.f0_mean = Some(f64::INFINITY);
    w.audio.loudness_mean = Some(f64::NEG_INFINITY);
    let verdicts = run(&INTER_2, &[w.clone(), w]);
    assert!(verdicts
        .iter()
        .all(|v| v.findings.iter().all(|f| !f.rationale.contains("NaN"))));
}

#[test]
fn filled_pauses_read_as_hesitation_with_their_count_quoted() {
    let mut filled = calm(10.0);
    filled.audio.filled_pause_count = 2;
    filled.audio.filled_pause_seconds = 0.9;
    let verdicts = run(&INTER_2_AUDIO, &[calm(0.0), calm(5.0), filled.clone()]);
    let f = finding(&verdicts[2], SignalType::Hesitation).expect("hesitation");
    assert!(
        f.rationale.starts_with("2 filled pauses (0.9 s)"),
        "{}",
        f.rationale
    );
    assert_eq!(f.channels, [Channel::Audio]);

    // With silent pauses and a slow rate as well, the evidence adds up and
    // the rationale quotes both kinds of pause.
    let mut hesitant = filled;
    hesitant.audio.pause_count = 3;
    hesitant.audio.pause_seconds = 2.4;
    hesitant.audio.pause_max = 1.2;
    hesitant.audio.speech_rate = Some(2.6);
    hesitant.audio.speech_seconds = 2.5;
    let verdicts = run(&INTER_2, &[calm(0.0), calm(5.0), hesitant]);
    let f = finding(&verdicts[2], SignalType::Hesitation).expect("hesitation");
    assert_eq!(f.probability, Probability::High, "{f:?}");
    for quoted in ["3 pauses over 2.4 s", "2 filled pauses (0.9 s)"] {
        assert!(f.rationale.contains(quoted), "{}", f.rationale);
    }

    // One filler in a window is habit, not hesitation; it still keeps the
    // window from reading as fluent.
    let mut one = calm(10.0);
    one.audio.filled_pause_count = 1;
    one.audio.filled_pause_seconds = 0.4;
    let verdicts = run(&INTER_2_AUDIO, &[calm(0.0), calm(5.0), one.clone()]);
    assert!(finding(&verdicts[2], SignalType::Hesitation).is_none());
    let evidence = cues::SpeakerBaselines::default().cues(&one);
    assert!(evidence.iter().all(|e| e.cue != cues::Cue::Fluent));
    assert!(cues::SpeakerBaselines::default()
        .cues(&calm(0.0))
        .iter()
        .any(|e| e.cue == cues::Cue::Fluent));
}
