use super::*;
use crate::access::{negotiate, Scope, Scopes, ALL_SCOPES};
use crate::lifecycle::signals::Detection;
use crate::recommend::Period;
use crate::wire::{EngagementLevel, ErrorEvent, Modality, Probability, SignalType};
use proptest::prelude::*;

fn setup(endpoint: Endpoint, scopes: &[Scope], model: Option<&str>) -> SessionSetup {
    let scopes: Scopes = scopes.iter().copied().collect();
    let negotiated =
        negotiate(endpoint, model, &scopes, Model::SERVED).expect("handshake accepted");
    SessionSetup::new(endpoint, negotiated, "https://docs.example.com")
}

fn open(endpoint: Endpoint) -> StreamSession {
    let (session, actions) = StreamSession::open(setup(endpoint, ALL_SCOPES, None), 0.0);
    assert_eq!(types(&actions), ["session.ready"]);
    session
}

/// Each action as a short name: the event type, `media`, `finish`, `close:<code>`.
fn types(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .map(|a| match a {
            Action::Send(EventData::Error(e)) => format!("error:{}", e.code),
            Action::Send(e) => e.type_name().to_owned(),
            Action::Media { segment, .. } => format!("media:{segment}"),
            Action::SetAudioFormat(_) => "audio_format".into(),
            Action::FinishMedia => "finish".into(),
            Action::Recommend(r) => format!("recommend:{}-{}", r.period().start, r.period().end),
            Action::Close { code, .. } => format!("close:{code}"),
        })
        .collect()
}

fn error_of(actions: &[Action]) -> &ErrorEvent {
    actions
        .iter()
        .find_map(|a| match a {
            Action::Send(EventData::Error(e)) => Some(e),
            _ => None,
        })
        .expect("an error event")
}

fn window(start: f64, found: &[(SignalType, Modality)]) -> ClosedWindow {
    ClosedWindow {
        start,
        end: start + 5.0,
        engagement: EngagementLevel::Engaged,
        detections: found
            .iter()
            .map(|&(signal_type, modality)| Detection {
                signal_type,
                probability: Probability::Medium,
                rationale: "evidence".into(),
                modality: vec![modality],
            })
            .collect(),
    }
}

#[test]
fn ready_is_sent_once_with_reference_values() {
    let (session, actions) = StreamSession::open(setup(Endpoint::StreamV2, ALL_SCOPES, None), 0.0);
    let Action::Send(EventData::SessionReady(ready)) = &actions[0] else {
        panic!("{actions:?}")
    };
    assert_eq!(ready.session_idle_timeout_seconds, 300);
    assert_eq!(ready.session_max_duration_seconds, 3600);
    assert_eq!(ready.min_segment_size_bytes, 1);
    assert_eq!(ready.max_segment_size_bytes, 33_554_432);
    let options = &ready.supported_session_config_options;
    assert_eq!(options.model, Some(vec![Model::Inter2, Model::Inter2Audio]));
    assert_eq!(session.phase(), Phase::Open);

    let (_, v1) = StreamSession::open(setup(Endpoint::StreamV1, ALL_SCOPES, None), 0.0);
    let Action::Send(EventData::SessionReady(ready)) = &v1[0] else {
        panic!()
    };
    assert_eq!(
        ready.supported_session_config_options.model, None,
        "null on v1"
    );

    let (_, rt) = StreamSession::open(setup(Endpoint::Realtime, ALL_SCOPES, None), 0.0);
    let Action::Send(EventData::SessionReady(ready)) = &rt[0] else {
        panic!()
    };
    let options = &ready.supported_session_config_options;
    assert_eq!(
        options.analysis_groups.as_deref(),
        Some(&[AnalysisGroup::Visual, AnalysisGroup::Audio][..])
    );
    assert!(options.realtime_recommendation_frequency.is_some());
}

#[test]
fn valid_config_is_acknowledged_with_the_post_apply_state() {
    let mut session = open(Endpoint::StreamV2);
    let actions = session.on_text(
        1.0,
        r#"{"include":["conversation_quality_overall","bogus"]}"#,
    );
    let [Action::Send(EventData::SessionUpdated(SessionUpdated::Stream { include, model }))] =
        &actions[..]
    else {
        panic!("{actions:?}")
    };
    assert_eq!(include, &[IncludeFlag::ConversationQualityOverall]);
    assert_eq!(*model, Some(Model::Inter2));
    // An omitted include clears the set: each frame replaces the config.
    let actions = session.on_text(2.0, "{}");
    assert!(matches!(
        &actions[0],
        Action::Send(EventData::SessionUpdated(SessionUpdated::Stream { include, .. })) if include.is_empty()
    ));
}

#[test]
fn invalid_config_closes_v1_but_not_v2() {
    let mut v1 = open(Endpoint::StreamV1);
    let actions = v1.on_text(1.0, r#"{"include":[],"colour":"red"}"#);
    assert_eq!(types(&actions), ["error:ih6001", "close:1008"]);
    assert_eq!(v1.phase(), Phase::Closed);
    assert!(v1.on_text(2.0, "{}").is_empty(), "nothing after close");

    let mut v1 = open(Endpoint::StreamV1);
    let actions = v1.on_text(1.0, r#"{"model":"inter-2"}"#);
    assert_eq!(
        types(&actions),
        ["error:ih6001", "close:1008"],
        "v1 rejects model"
    );

    let mut v2 = open(Endpoint::StreamV2);
    let actions = v2.on_text(1.0, r#"{"include":[],"colour":"red"}"#);
    assert_eq!(types(&actions), ["error:ih6001"]);
    assert_eq!(v2.phase(), Phase::Open);
    assert_eq!(error_of(&actions).segment, None);
}

#[test]
fn malformed_text_is_a_non_fatal_ih4006_everywhere() {
    for endpoint in [Endpoint::StreamV1, Endpoint::StreamV2, Endpoint::Realtime] {
        let mut session = open(endpoint);
        for text in ["not json", "[1,2]", r#"{"type":"session.start"}"#] {
            let actions = session.on_text(1.0, text);
            assert_eq!(types(&actions), ["error:ih4006"], "{endpoint:?} {text}");
        }
        assert_eq!(session.phase(), Phase::Open);
    }
}

#[test]
fn model_switch_rules_on_v2() {
    let mut session = open(Endpoint::StreamV2);
    let actions = session.on_text(0.5, r#"{"model":"inter-2-audio"}"#);
    assert_eq!(types(&actions), ["session.updated"]);
    assert_eq!(session.model(), Model::Inter2Audio);

    let actions = session.on_text(0.6, r#"{"model":"inter-2-deep"}"#);
    assert_eq!(types(&actions), ["error:ih4005"]);

    session.on_binary(1.0, vec![1, 2, 3]);
    let actions = session.on_text(1.5, r#"{"model":"inter-2"}"#);
    assert_eq!(
        types(&actions),
        ["error:ih4005"],
        "no switch after the first chunk"
    );
    assert_eq!(session.model(), Model::Inter2Audio);
    // Naming the current model is not a switch.
    let actions = session.on_text(1.6, r#"{"model":"inter-2-audio","include":[]}"#);
    assert_eq!(types(&actions), ["session.updated"]);
}

#[test]
fn switch_to_a_model_the_credential_lacks_is_a_non_fatal_ih2003() {
    let (mut session, _) =
        StreamSession::open(setup(Endpoint::StreamV2, &[Scope::Stream], None), 0.0);
    let actions = session.on_text(
        1.0,
        r#"{"model":"inter-2-audio","include":["conversation_quality_overall"]}"#,
    );
    assert_eq!(types(&actions), ["error:ih2003"]);
    assert_eq!(session.model(), Model::Inter2);
    assert!(
        session.include().is_empty(),
        "a refused frame applies nothing"
    );
    assert_eq!(session.phase(), Phase::Open);
}

#[test]
fn audio_format_only_on_inter_2_audio_and_before_media() {
    let mut session = open(Endpoint::StreamV2);
    let pcm = r#"{"audio_format":{"encoding":"pcm_s16le","sample_rate":16000,"channels":1}}"#;
    assert_eq!(types(&session.on_text(0.1, pcm)), ["error:ih6001"]);
    assert_eq!(session.audio_format(), None);

    let both = r#"{"model":"inter-2-audio","audio_format":{"encoding":"pcm_s16le","sample_rate":24000,"channels":1}}"#;
    assert_eq!(
        types(&session.on_text(0.2, both)),
        ["audio_format", "session.updated"]
    );
    assert_eq!(session.audio_format().map(|f| f.sample_rate), Some(24000));
    // A later frame omitting it keeps raw PCM in force.
    assert_eq!(types(&session.on_text(0.3, "{}")), ["session.updated"]);
    assert!(session.audio_format().is_some());
    // Odd-sized PCM frames are fine: the pipeline carries the odd byte over.
    assert_eq!(types(&session.on_binary(0.4, vec![0; 1023])), ["media:0"]);
    let other = r#"{"audio_format":{"encoding":"pcm_s16le","sample_rate":16000,"channels":1}}"#;
    assert_eq!(types(&session.on_text(0.5, other)), ["error:ih6001"]);
}

#[test]
fn binary_frames_are_numbered_and_size_checked() {
    let mut session = open(Endpoint::StreamV2);
    assert_eq!(types(&session.on_binary(1.0, vec![7; 10])), ["media:0"]);
    let empty = session.on_binary(1.1, Vec::new());
    assert_eq!(types(&empty), ["error:ih6007"]);
    assert_eq!(error_of(&empty).segment, Some(1));
    let mut small = setup(Endpoint::StreamV2, ALL_SCOPES, None);
    small.limits.max_segment_size_bytes = 16;
    let (mut session, _) = StreamSession::open(small, 0.0);
    let big = session.on_binary(1.0, vec![0; 17]);
    assert_eq!(types(&big), ["error:ih6002"]);
    assert_eq!(error_of(&big).segment, Some(0));
    assert_eq!(
        session.phase(),
        Phase::Open,
        "an oversized frame is refused, not fatal"
    );
    assert_eq!(types(&session.on_binary(1.0, vec![0; 16])), ["media:1"]);
}

#[test]
fn token_byte_cap_closes_with_ih6008() {
    let mut capped = setup(Endpoint::StreamV2, ALL_SCOPES, None);
    capped.limits.max_bytes = Some(100);
    let (mut session, _) = StreamSession::open(capped, 0.0);
    assert_eq!(types(&session.on_binary(1.0, vec![0; 60])), ["media:0"]);
    assert_eq!(
        types(&session.on_binary(2.0, vec![0; 41])),
        ["error:ih6008", "close:1008"]
    );
    assert_eq!(session.bytes_received(), 101);
}

#[test]
fn graceful_close_drains_then_ends_open_signals_then_session() {
    let mut session = open(Endpoint::StreamV1);
    session.on_binary(1.0, vec![1; 8]);
    let events = session.on_windows(&[window(0.0, &[(SignalType::Interest, Modality::Video)])]);
    assert_eq!(types(&events), ["signal.detected", "engagement.updated"]);

    let closing = session.on_text(6.0, r#"{"type":"session.close"}"#);
    assert_eq!(types(&closing), ["session.closing", "finish"]);
    let Action::Send(EventData::SessionClosing(c)) = &closing[0] else {
        panic!()
    };
    assert_eq!(c.max_drain_seconds, 30);
    assert!(matches!(session.phase(), Phase::Closing { deadline } if deadline == 36.0));

    // First binary frame during the drain: ih6009 once, then silence.
    let refused = session.on_binary(6.5, vec![1; 8]);
    assert_eq!(types(&refused), ["error:ih6009"]);
    assert_eq!(error_of(&refused).segment, Some(1));
    assert!(session.on_binary(6.6, vec![1; 8]).is_empty());
    // Duplicate close ignored; config applied; malformed text answered; v1's
    // invalid config is not fatal while draining.
    assert!(session
        .on_text(6.7, r#"{"type":"session.close"}"#)
        .is_empty());
    assert_eq!(
        types(&session.on_text(6.8, r#"{"include":[]}"#)),
        ["session.updated"]
    );
    assert_eq!(types(&session.on_text(6.9, "{oops")), ["error:ih4006"]);
    assert_eq!(types(&session.on_text(7.0, r#"{"x":1}"#)), ["error:ih6001"]);
    assert!(matches!(session.phase(), Phase::Closing { .. }));

    // Windows still arriving from the drain are reported.
    let late = session.on_windows(&[window(5.0, &[(SignalType::Interest, Modality::Video)])]);
    assert!(types(&late).is_empty(), "same state: no event");
    let ended = session.on_drained();
    assert_eq!(
        types(&ended),
        ["signal.ended", "session.ended", "close:1000"]
    );
    assert!(session.on_drained().is_empty());
    assert_eq!(session.next_deadline(), None);
}

#[test]
fn drain_deadline_abandons_unfinished_work() {
    let mut session = open(Endpoint::StreamV2);
    session.on_text(1.0, r#"{"type":"session.close"}"#);
    assert_eq!(session.next_deadline(), Some(31.0));
    assert!(session.on_tick(30.9).is_empty());
    assert_eq!(
        types(&session.on_tick(31.0)),
        ["session.ended", "close:1000"]
    );
}

#[test]
fn close_with_extra_fields_is_refused_and_the_session_stays_open() {
    let mut session = open(Endpoint::StreamV2);
    let actions = session.on_text(1.0, r#"{"type":"session.close","reason":"bye"}"#);
    assert_eq!(types(&actions), ["error:ih4005"]);
    assert_eq!(session.phase(), Phase::Open);
}

#[test]
fn idle_timeout_counts_from_the_last_inbound_frame() {
    let mut session = open(Endpoint::StreamV2);
    assert_eq!(session.next_deadline(), Some(300.0));
    session.on_text(100.0, "{}");
    assert_eq!(session.next_deadline(), Some(400.0));
    assert!(session.on_tick(399.0).is_empty());
    assert_eq!(
        types(&session.on_tick(400.0)),
        ["error:ih6003", "close:4008"]
    );
}

#[test]
fn max_duration_closes_with_ih6004() {
    let mut session = open(Endpoint::StreamV2);
    for t in (0..3600).step_by(60) {
        session.on_text(t as f64, "{}");
        assert!(session.on_tick(t as f64).is_empty());
    }
    assert_eq!(
        types(&session.on_tick(3600.0)),
        ["error:ih6004", "close:1008"]
    );
}

#[test]
fn disabled_limits_set_no_deadline() {
    let mut no_limits = setup(Endpoint::StreamV2, ALL_SCOPES, None);
    no_limits.limits.idle_timeout_seconds = 0;
    no_limits.limits.max_duration_seconds = 0;
    let (session, actions) = StreamSession::open(no_limits, 0.0);
    let Action::Send(EventData::SessionReady(ready)) = &actions[0] else {
        panic!()
    };
    assert_eq!(ready.session_idle_timeout_seconds, 0);
    assert_eq!(session.next_deadline(), None);
}

#[test]
fn stream_not_advancing_closes_with_ih6010() {
    // The reader examined the frames and nothing advanced.
    let examined = |frames| LiveOutput {
        frames_examined: frames,
        ..LiveOutput::default()
    };
    let mut session = open(Endpoint::StreamV2);
    session.on_binary(10.0, vec![9; 100]);
    session.on_live_output(10.5, examined(1));
    assert_eq!(session.next_deadline(), Some(40.5));
    session.on_binary(20.0, vec![9; 100]);
    session.on_live_output(20.5, examined(1));
    assert_eq!(
        session.next_deadline(),
        Some(40.5),
        "more undecodable data does not reset it"
    );
    assert_eq!(
        types(&session.on_tick(40.5)),
        ["error:ih6010", "close:1008"]
    );

    let mut session = open(Endpoint::StreamV2);
    session.on_binary(10.0, vec![9; 100]);
    session.on_live_output(10.5, examined(1));
    session.on_media_progress(12.0, 3.0);
    assert_eq!(
        session.next_deadline(),
        Some(310.0),
        "decoded media clears the hold timer"
    );
}

/// Found by `benches/soak.sh` on an overloaded machine: frames that wait in the analysis queue
/// longer than the hold limit have not been looked at, so the session is not "not advancing";
/// the timer starts only once the reader examined them without progress.
#[test]
fn frames_waiting_behind_other_sessions_do_not_start_the_ih6010_timer() {
    let mut session = open(Endpoint::StreamV1);
    session.on_binary(10.0, vec![0x1a, 0x45, 0xdf, 0xa3]);
    assert_eq!(
        session.next_deadline(),
        Some(310.0),
        "only the idle timer runs while the frame waits"
    );
    assert!(
        types(&session.on_tick(45.0)).is_empty(),
        "no ih6010 at 35 s of waiting"
    );
    // The reader finally examines it: the header is not complete yet, the timer starts.
    session.on_live_output(
        50.0,
        LiveOutput {
            frames_examined: 1,
            ..LiveOutput::default()
        },
    );
    assert_eq!(session.next_deadline(), Some(80.0));
}

#[test]
fn shutdown_warns_twice_then_goes_away() {
    let mut session = open(Endpoint::StreamV2);
    session.on_windows(&[window(0.0, &[(SignalType::Stress, Modality::Video)])]);
    session.on_text(10.0, "{}");
    let first = session.on_shutdown_scheduled(10.0, 310.0);
    assert_eq!(types(&first), ["error:ih6006"]);
    assert_eq!(error_of(&first).seconds_remaining, Some(300));
    assert_eq!(session.next_deadline(), Some(280.0));
    session.on_text(200.0, "{}");
    let second = session.on_tick(280.0);
    assert_eq!(types(&second), ["error:ih6006"]);
    assert_eq!(error_of(&second).seconds_remaining, Some(30));
    assert_eq!(session.next_deadline(), Some(310.0));
    let last = session.on_tick(310.0);
    assert_eq!(types(&last), ["signal.ended", "error:ih6005", "close:1001"]);
    assert!(session.on_shutdown_scheduled(311.0, 400.0).is_empty());
}

#[test]
fn pipeline_problems_are_reported_with_their_segment() {
    let mut session = open(Endpoint::StreamV2);
    let actions = session.on_media_problem(Some(3), ServiceError::new(ErrorCode::Ih6007), false);
    assert_eq!(types(&actions), ["error:ih6007"]);
    assert_eq!(error_of(&actions).segment, Some(3));
    assert_eq!(
        error_of(&actions).link.as_deref(),
        Some(
            "https://docs.example.com/api-reference/error-handling#ih6007-unreadable-video-segment"
        )
    );
    let actions = session.on_media_problem(None, ServiceError::new(ErrorCode::Ih2014), true);
    assert_eq!(types(&actions), ["error:ih2014", "close:4001"]);
}

#[test]
fn coverage_events_pass_through() {
    let mut session = open(Endpoint::StreamV2);
    let range = TimeRange {
        start: 5.0,
        end: 10.0,
    };
    assert_eq!(
        types(&session.on_coverage_degraded(vec![range])),
        ["coverage.degraded"]
    );
    assert_eq!(
        types(&session.on_coverage_dropped(vec![range])),
        ["coverage.dropped"]
    );
    assert!(session.on_coverage_dropped(Vec::new()).is_empty());
}

#[test]
fn realtime_config_transcript_and_analysis_groups() {
    let mut session = open(Endpoint::Realtime);
    let actions = session.on_text(
        1.0,
        r#"{"realtime_recommendation_instructions":"coach the seller","realtime_recommendation_frequency":"high","analysis_groups":["audio"]}"#,
    );
    assert_eq!(types(&actions), ["session.updated"]);
    let transcript = r#"{"type":"transcript.updated","transcript":[{"start":0,"end":2,"text":"hi","speaker":0}]}"#;
    assert!(session.on_text(2.0, transcript).is_empty());
    assert_eq!(session.realtime().transcript.len(), 1);
    let events = session.on_windows(&[window(
        0.0,
        &[
            (SignalType::Interest, Modality::Visual),
            (SignalType::Stress, Modality::Audio),
        ],
    )]);
    let detected: Vec<_> = events
        .iter()
        .filter_map(|a| match a {
            Action::Send(EventData::SignalDetected(s)) => Some(s.signal_type),
            _ => None,
        })
        .collect();
    assert_eq!(
        detected,
        [SignalType::Stress],
        "audio group only: no visual signals"
    );
    // Transcripts are accepted while draining too.
    session.on_text(3.0, r#"{"type":"session.close"}"#);
    assert!(session.on_text(3.5, transcript).is_empty());
    assert_eq!(session.realtime().transcript.len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    /// Random and mutated frames never panic, never produce anything after a
    /// close, and every close is the last action.
    #[test]
    fn random_frames_never_wedge_a_session(
        endpoint in prop_oneof![Just(Endpoint::StreamV1), Just(Endpoint::StreamV2), Just(Endpoint::Realtime)],
        frames in proptest::collection::vec(
            prop_oneof![
                any::<String>().prop_map(FrameInput::Text),
                prop_oneof![
                    Just(r#"{"type":"session.close"}"#.to_owned()),
                    Just(r#"{"include":["conversation_quality_timeline"]}"#.to_owned()),
                    Just(r#"{"model":"inter-2-audio","audio_format":{"encoding":"pcm_s16le","sample_rate":16000,"channels":1}}"#.to_owned()),
                    Just(r#"{"realtime_recommendation_frequency":"low"}"#.to_owned()),
                ].prop_map(FrameInput::Text),
                proptest::collection::vec(any::<u8>(), 0..64).prop_map(FrameInput::Binary),
                (0.0f64..400.0).prop_map(FrameInput::Tick),
                Just(FrameInput::Drained),
            ],
            0..40,
        ),
    ) {
        let (mut session, _) = StreamSession::open(setup(endpoint, ALL_SCOPES, None), 0.0);
        let mut now = 0.0;
        let mut closed = false;
        for frame in frames {
            now += 0.5;
            let actions = match frame {
                FrameInput::Text(text) => session.on_text(now, &text),
                FrameInput::Binary(bytes) => session.on_binary(now, bytes),
                FrameInput::Tick(dt) => { now += dt; session.on_tick(now) }
                FrameInput::Drained => session.on_drained(),
            };
            if closed {
                prop_assert!(actions.is_empty());
            }
            if let Some(i) = actions.iter().position(|a| matches!(a, Action::Close { .. })) {
                prop_assert_eq!(i, actions.len() - 1);
                closed = true;
                prop_assert_eq!(session.phase(), Phase::Closed);
            }
        }
    }
}

#[derive(Debug, Clone)]
enum FrameInput {
    Text(String),
    Binary(Vec<u8>),
    Tick(f64),
    Drained,
}

#[test]
fn realtime_recommendations_are_due_per_frequency_with_signals_and_a_new_transcript() {
    let mut session = open(Endpoint::Realtime);
    session.on_text(
        0.5,
        r#"{"realtime_recommendation_instructions":"coach the seller","realtime_recommendation_frequency":"high"}"#,
    );
    let transcript = r#"{"type":"transcript.updated","transcript":[{"start":0,"end":2,"text":"hi?","speaker":0}]}"#;
    let stress = [(SignalType::Stress, Modality::Audio)];
    // 5 s of analyzed media: under the 10 s of `high`.
    assert!(types(&session.on_windows(&[window(0.0, &stress)]))
        .iter()
        .all(|t| !t.starts_with("recommend")));
    // A transcript alone does not make it due before the period is long enough.
    assert!(session.on_text(6.0, transcript).is_empty());
    let actions = session.on_windows(&[window(5.0, &stress)]);
    let request = recommendation(&actions).expect("due after 10 s with a signal and a transcript");
    assert_eq!((request.period().start, request.period().end), (0.0, 10.0));
    let input = request.input().expect("instructions are set");
    assert_eq!(input.instructions, "coach the seller");
    assert_eq!(input.transcript.len(), 1);
    assert!(!input.signals.is_empty());
    let sent = session.on_recommendation(request.period(), Some("Slow down.".into()));
    let Action::Send(EventData::RealtimeRecommendationGenerated(r)) = &sent[0] else {
        panic!("{sent:?}");
    };
    assert_eq!((r.text.as_str(), r.start, r.end), ("Slow down.", 0.0, 10.0));
    // No transcript since: nothing due after another 10 s.
    let quiet = session.on_windows(&[window(10.0, &stress), window(15.0, &stress)]);
    assert!(!types(&quiet).iter().any(|t| t.starts_with("recommend")));
    // A transcript makes it due at once (the period already holds 10 s).
    let due = types(&session.on_text(21.0, transcript));
    assert_eq!(due, ["recommend:10-20"]);
    // A declined period sends nothing, and the transcript still counts for the next one.
    assert!(session
        .on_recommendation(
            Period {
                start: 10.0,
                end: 20.0
            },
            None
        )
        .is_empty());
    let next = types(&session.on_windows(&[window(20.0, &stress), window(25.0, &stress)]));
    assert!(next.contains(&"recommend:20-30".to_owned()), "{next:?}");
}

/// The recommendation among `actions`, if one is due.
fn recommendation(actions: &[Action]) -> Option<RecommendationRequest> {
    actions.iter().find_map(|a| match a {
        Action::Recommend(r) => Some(r.clone()),
        _ => None,
    })
}

fn said(start: f64, end: f64, speaker: Option<usize>, text: &str) -> Utterance {
    Utterance {
        start,
        end,
        speaker,
        text: text.to_owned(),
        after_question: false,
        avg_logprob: None,
    }
}

fn transcripts(actions: &[Action]) -> Vec<TranscriptGenerated> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(EventData::TranscriptGenerated(t)) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

/// Realtime: each final utterance of the server's transcript is one `transcript.generated`
/// (session seconds to the millisecond, voices from 1, 0 when unknown); recommendations read
/// the server's transcript while the client sent none, and the client's once it does.
#[test]
fn realtime_sends_the_server_transcript_and_recommends_from_it_until_the_client_sends_one() {
    let mut session = open(Endpoint::Realtime);
    session.on_text(
        0.5,
        r#"{"realtime_recommendation_instructions":"coach the seller","realtime_recommendation_frequency":"high"}"#,
    );
    let stress = [(SignalType::Stress, Modality::Audio)];
    assert!(!types(&session.on_windows(&[window(0.0, &stress)]))
        .iter()
        .any(|t| t.starts_with("recommend")));
    let actions = session.on_utterances(&[
        said(0.5004, 4.25, Some(0), " Our plan covers every team. "),
        said(4.5, 6.0, Some(1), "Is onboarding included?"),
        said(6.0, 6.5, None, "Yes."),
        said(6.5, 6.6, Some(1), "  "),
    ]);
    assert_eq!(
        transcripts(&actions),
        [
            TranscriptGenerated {
                start: 0.5,
                end: 4.25,
                text: "Our plan covers every team.".into(),
                speaker: 1
            },
            TranscriptGenerated {
                start: 4.5,
                end: 6.0,
                text: "Is onboarding included?".into(),
                speaker: 2
            },
            TranscriptGenerated {
                start: 6.0,
                end: 6.5,
                text: "Yes.".into(),
                speaker: 0
            },
        ]
    );
    // With 10 s analyzed, a signal and the server's transcript, a recommendation is due,
    // and it reads the server's words (voices from 0, an unknown one as the previous voice).
    let actions = session.on_windows(&[window(5.0, &stress)]);
    let request = recommendation(&actions).expect("due on the server's transcript");
    let input = request.input().expect("instructions are set");
    let read: Vec<(&str, u32)> = input
        .transcript
        .iter()
        .map(|t| (t.text.as_str(), t.speaker))
        .collect();
    assert_eq!(
        read,
        [
            ("Our plan covers every team.", 0),
            ("Is onboarding included?", 1),
            ("Yes.", 1)
        ]
    );
    // The client's transcript replaces it; later server segments are still sent but no
    // longer read, and no longer count as a transcript arriving.
    session.on_text(
        11.0,
        r#"{"type":"transcript.updated","transcript":[{"start":0,"end":2,"text":"hi?","speaker":0}]}"#,
    );
    let actions = session.on_utterances(&[said(7.0, 9.0, Some(0), "It is.")]);
    assert_eq!(types(&actions), ["transcript.generated"]);
    assert_eq!(session.realtime().transcript.len(), 1);
    assert_eq!(session.realtime().transcript[0].text, "hi?");
}

#[test]
fn streams_send_no_transcript() {
    for endpoint in [Endpoint::StreamV1, Endpoint::StreamV2] {
        let mut session = open(endpoint);
        assert!(session
            .on_utterances(&[said(0.0, 1.0, Some(0), "hello")])
            .is_empty());
    }
    // Nor does a realtime session once it ended.
    let mut session = open(Endpoint::Realtime);
    session.on_text(0.0, r#"{"type":"session.close"}"#);
    session.on_drained();
    assert!(session
        .on_utterances(&[said(0.0, 1.0, Some(0), "hello")])
        .is_empty());
}

#[test]
fn streams_never_ask_for_recommendations() {
    let mut session = open(Endpoint::StreamV2);
    let stress = [(SignalType::Stress, Modality::Video)];
    let actions = session.on_windows(&[
        window(0.0, &stress),
        window(5.0, &stress),
        window(10.0, &stress),
    ]);
    assert!(!types(&actions).iter().any(|t| t.starts_with("recommend")));
}

/// Issue 11, defect 1: a strictly typed client reads `session.ready` on realtime. Each
/// `supported_session_config_options` member has the JSON type such a client declares: the
/// instructions a string, the two enumerations arrays of strings, `include` an array and
/// `model` null; the limits are integers.
#[test]
fn realtime_ready_has_the_json_types_typed_clients_declare() {
    let (_, actions) = StreamSession::open(setup(Endpoint::Realtime, ALL_SCOPES, None), 0.0);
    let Action::Send(data @ EventData::SessionReady(_)) = &actions[0] else {
        panic!("{actions:?}")
    };
    let event = crate::wire::Event {
        timestamp: crate::wire::Timestamp::now(),
        correlation_id: "c".into(),
        data: data.clone(),
    };
    let json: serde_json::Value = serde_json::from_str(&event.to_json()).unwrap();
    let ready = &json["data"];
    for limit in [
        "session_idle_timeout_seconds",
        "session_max_duration_seconds",
        "min_segment_size_bytes",
        "max_segment_size_bytes",
    ] {
        assert!(ready[limit].is_u64(), "{limit}: {ready}");
    }
    assert!(ready["max_segment_duration_seconds"].is_null(), "{ready}");
    let options = ready["supported_session_config_options"]
        .as_object()
        .unwrap();
    let instructions = options["realtime_recommendation_instructions"]
        .as_str()
        .unwrap_or_else(|| panic!("instructions must be a JSON string: {ready}"));
    assert!(instructions.contains("4000"), "{instructions}");
    let strings = |name: &str| -> Vec<String> {
        options[name]
            .as_array()
            .unwrap_or_else(|| panic!("{name} must be an array: {ready}"))
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        strings("realtime_recommendation_frequency"),
        ["high", "medium", "low"]
    );
    assert_eq!(strings("analysis_groups"), ["visual", "audio"]);
    assert!(strings("include").is_empty());
    assert!(options["model"].is_null());
    let mut names: Vec<&str> = options.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "analysis_groups",
            "include",
            "model",
            "realtime_recommendation_frequency",
            "realtime_recommendation_instructions"
        ]
    );
}

/// Issue 11, defect 10: `update_config(realtime_recommendation_frequency=...)` of the official
/// Python client sends that one field; the instructions stay and recommendations go on.
#[test]
fn partial_realtime_config_keeps_the_instructions_and_recommendations_go_on() {
    let mut session = open(Endpoint::Realtime);
    session.on_text(
        0.0,
        r#"{"realtime_recommendation_instructions":"coach the seller","analysis_groups":["audio"]}"#,
    );
    let actions = session.on_text(0.5, r#"{"realtime_recommendation_frequency":"high"}"#);
    let [Action::Send(EventData::SessionUpdated(SessionUpdated::Realtime {
        realtime_recommendation_instructions,
        realtime_recommendation_frequency,
        analysis_groups,
    }))] = &actions[..]
    else {
        panic!("{actions:?}")
    };
    // `session.updated` reports the whole config in force after the merge.
    assert_eq!(
        realtime_recommendation_instructions.as_deref(),
        Some("coach the seller")
    );
    assert_eq!(
        *realtime_recommendation_frequency,
        RecommendationFrequency::High
    );
    assert_eq!(analysis_groups, &[AnalysisGroup::Audio]);
    let transcript = r#"{"type":"transcript.updated","transcript":[{"start":0,"end":2,"text":"hi","speaker":0}]}"#;
    session.on_text(1.0, transcript);
    let stress = [(SignalType::Stress, Modality::Audio)];
    let actions = session.on_windows(&[window(0.0, &stress), window(5.0, &stress)]);
    assert!(
        types(&actions).contains(&"recommend:0-10".to_owned()),
        "{:?}",
        types(&actions)
    );
    // An explicit null clears the instructions.
    session.on_text(11.0, r#"{"realtime_recommendation_instructions":null}"#);
    assert_eq!(
        session
            .realtime()
            .config
            .realtime_recommendation_instructions,
        None
    );
    assert_eq!(
        session.realtime().config.realtime_recommendation_frequency,
        RecommendationFrequency::High
    );
}

/// Issue 11, defect 4: a revoked credential ends a running session with its code and close.
#[test]
fn a_revoked_credential_ends_the_session_with_its_code() {
    for (revoked, code, close) in [
        (Revoked::Token, ErrorCode::Ih2014, "close:4001"),
        (Revoked::Key, ErrorCode::Ih2001, "close:4001"),
    ] {
        let mut session = open(Endpoint::StreamV2);
        session.on_binary(1.0, vec![1; 10]);
        let actions = session.on_credential_revoked(revoked);
        assert_eq!(types(&actions), [format!("error:{code}"), close.to_owned()]);
        assert_eq!(error_of(&actions).segment, None);
        assert_eq!(session.phase(), Phase::Closed);
        // Nothing follows the close.
        assert!(session.on_credential_revoked(revoked).is_empty());
        assert!(session.on_binary(2.0, vec![1; 10]).is_empty());
    }
}

/// Issue 11, defect 7: a message over the socket cap is `ih6002` and close 1009, not a
/// silent 1000.
#[test]
fn a_message_over_the_socket_cap_is_ih6002_and_close_1009() {
    let mut session = open(Endpoint::StreamV1);
    let actions = session.on_message_too_large(Some(70 << 20), 64 << 20);
    assert_eq!(types(&actions), ["error:ih6002", "close:1009"]);
    let error = error_of(&actions);
    assert!(
        error.message.contains(&(70u64 << 20).to_string()),
        "{}",
        error.message
    );
    assert_eq!(session.phase(), Phase::Closed);
}

/// Issue 11, defect 6: past the hard backlog bound the session closes cleanly (`ih1002`,
/// 1013, "try again later") rather than dropping bytes of a continuous container.
#[test]
fn a_backlog_past_the_hard_bound_closes_with_ih1002_and_1013() {
    let mut session = open(Endpoint::StreamV2);
    session.on_binary(1.0, vec![1; 10]);
    let actions = session.on_media_backlog_overflow(200, 100);
    assert_eq!(types(&actions), ["error:ih1002", "close:1013"]);
    assert_eq!(session.phase(), Phase::Closed);
}
