//! Drives one stream session's event machines from a library, with no server:
//! each closed analysis window goes in, the interface's event envelopes come
//! out as JSON lines, exactly as the server would send them.
//!
//! The window results here are written out by hand to show the state
//! machines alone; `attune-core`'s analyzer produces them from media.
//!
//! Run: `cargo run --example session_events`

use attune::core::lifecycle::signals::{Detection, UpdatePolicy};
use attune::core::lifecycle::{ClosedWindow, SessionLifecycle};
use attune::core::wire::{
    EngagementLevel, Event, IncludeFlag, Modality, Probability, SignalType, Timestamp,
};

fn detection(signal_type: SignalType, probability: Probability, rationale: &str) -> Detection {
    Detection {
        signal_type,
        probability,
        rationale: rationale.to_owned(),
        modality: vec![Modality::Video],
    }
}

fn main() {
    let mut session = SessionLifecycle::new(
        UpdatePolicy::V2Stream,
        10.0,
        &[
            IncludeFlag::ConversationQualityOverall,
            IncludeFlag::ConversationQualityTimeline,
        ],
    );
    let windows = [
        (
            EngagementLevel::Neutral,
            vec![detection(
                SignalType::Hesitation,
                Probability::Medium,
                "3 pauses over 1.2 s; speech rate 2.1 syll/s, 40% below this speaker's baseline",
            )],
        ),
        (
            EngagementLevel::Engaged,
            vec![
                detection(
                    SignalType::Hesitation,
                    Probability::Low,
                    "1 pause of 0.6 s; rate back to baseline",
                ),
                detection(
                    SignalType::Interest,
                    Probability::High,
                    "pitch range 9.1 st, 60% above baseline; loudness +4 dB",
                ),
            ],
        ),
        (
            EngagementLevel::Engaged,
            vec![detection(
                SignalType::Interest,
                Probability::High,
                "pitch range 8.4 st, 48% above baseline",
            )],
        ),
        (EngagementLevel::Disengaged, vec![]),
    ];
    let correlation_id = "example-session";
    let envelope = |data| Event {
        timestamp: Timestamp::now(),
        correlation_id: correlation_id.to_owned(),
        data,
    };
    for (i, (engagement, detections)) in windows.into_iter().enumerate() {
        let start = i as f64 * 5.0;
        let window = ClosedWindow {
            start,
            end: start + 5.0,
            engagement,
            detections,
        };
        for data in session.observe_window(&window) {
            println!("{}", envelope(data).to_json());
        }
    }
    for data in session.close() {
        println!("{}", envelope(data).to_json());
    }
}
