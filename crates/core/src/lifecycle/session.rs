//! The three event machines of one session composed: one closed window in,
//! the session's `signal.*`, `engagement.updated` and
//! `conversation_quality.updated` events out, and the closing sequence.
//!
//! Order of events for one window: the signal events (ended first, then
//! detected/updated, see [`super::signals`]), then `engagement.updated`, then
//! any `conversation_quality.updated` whose period the window closed. On
//! close: the partial last CQI period (if it holds analyzed media), then
//! `signal.ended` for every still-active signal, then `session.ended`, so a
//! client never sees a signal outlive its session.

use super::cadence::QualityCadence;
use super::engagement::EngagementTracker;
use super::signals::{ClosedWindow, SignalTracker, UpdatePolicy};
use crate::wire::{EventData, IncludeFlag, Seconds, SessionEndReason, SessionEnded};

/// Per-session event state: signal lifecycle, engagement and CQI cadence.
#[derive(Debug, Clone)]
pub struct SessionLifecycle {
    signals: SignalTracker,
    engagement: EngagementTracker,
    quality: QualityCadence,
    /// End of the latest observed window: where close-time events are dated.
    media_end: Seconds,
    /// Set once `close` ran; later input is ignored.
    closed: bool,
}

impl SessionLifecycle {
    /// A session with the endpoint's update policy, a CQI period and the
    /// initial include flags.
    pub fn new(policy: UpdatePolicy, quality_period: Seconds, include: &[IncludeFlag]) -> Self {
        SessionLifecycle {
            signals: SignalTracker::new(policy),
            engagement: EngagementTracker::new(),
            quality: QualityCadence::new(quality_period, include),
            media_end: 0.0,
            closed: false,
        }
    }

    /// Replaces the active include flags (an accepted config frame).
    pub fn set_include(&mut self, include: &[IncludeFlag]) {
        self.quality.set_include(include);
    }

    /// The signal tracker, to inspect which signals are active.
    pub fn signals(&self) -> &SignalTracker {
        &self.signals
    }

    /// Whether [`SessionLifecycle::close`] has run.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Feeds one closed window and returns the events it causes, in order.
    pub fn observe_window(&mut self, window: &ClosedWindow) -> Vec<EventData> {
        if self.closed {
            return Vec::new();
        }
        let mut events = self
            .signals
            .observe_window(window.start, window.end, &window.detections);
        if let Some(update) = self.engagement.observe(window.start, window.engagement) {
            events.push(EventData::EngagementUpdated(update));
        }
        events.extend(
            self.quality
                .observe_window(window)
                .into_iter()
                .map(|u| EventData::ConversationQualityUpdated(u.data)),
        );
        if window.end.is_finite() {
            self.media_end = self.media_end.max(window.end);
        }
        events
    }

    /// Ends the session gracefully: the partial last CQI period, `signal.ended`
    /// for every active signal, then `session.ended` (`client_shutdown`).
    /// A second call returns nothing.
    pub fn close(&mut self) -> Vec<EventData> {
        if self.closed {
            return Vec::new();
        }
        self.closed = true;
        let mut events: Vec<EventData> = self
            .quality
            .finish(self.media_end)
            .into_iter()
            .map(|u| EventData::ConversationQualityUpdated(u.data))
            .collect();
        events.extend(self.signals.close_all(self.media_end));
        events.push(EventData::SessionEnded(SessionEnded {
            reason: SessionEndReason::ClientShutdown,
        }));
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::signals::Detection;
    use crate::wire::Modality;
    use crate::wire::{EngagementLevel, Probability, SignalType};

    fn window(
        start: f64,
        level: EngagementLevel,
        found: &[(SignalType, Probability)],
    ) -> ClosedWindow {
        ClosedWindow {
            start,
            end: start + 5.0,
            engagement: level,
            detections: found
                .iter()
                .map(|&(signal_type, probability)| Detection {
                    signal_type,
                    probability,
                    rationale: format!("{signal_type} evidence"),
                    modality: vec![Modality::Video],
                })
                .collect(),
        }
    }

    fn names(events: &[EventData]) -> Vec<&'static str> {
        events.iter().map(EventData::type_name).collect()
    }

    #[test]
    fn window_events_come_in_signal_engagement_quality_order() {
        let mut session = SessionLifecycle::new(
            UpdatePolicy::V2Stream,
            10.0,
            &[IncludeFlag::ConversationQualityOverall],
        );
        let first = session.observe_window(&window(
            0.0,
            EngagementLevel::Engaged,
            &[(SignalType::Interest, Probability::High)],
        ));
        assert_eq!(names(&first), ["signal.detected", "engagement.updated"]);
        let second = session.observe_window(&window(5.0, EngagementLevel::Engaged, &[]));
        assert_eq!(
            names(&second),
            ["signal.ended", "conversation_quality.updated"],
            "same engagement level is not re-sent; the window closing 0-10 s emits the CQI"
        );
    }

    #[test]
    fn close_ends_open_signals_before_session_ended_and_only_once() {
        let mut session = SessionLifecycle::new(UpdatePolicy::V1Stream, 10.0, &[]);
        session.observe_window(&window(
            0.0,
            EngagementLevel::Neutral,
            &[
                (SignalType::Hesitation, Probability::Medium),
                (SignalType::Agreement, Probability::Low),
            ],
        ));
        let closing = session.close();
        assert_eq!(
            names(&closing),
            ["signal.ended", "signal.ended", "session.ended"]
        );
        for event in &closing[..2] {
            match event {
                EventData::SignalEnded(ended) => assert_eq!(ended.end, 5.0),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(session.is_closed());
        assert!(session.close().is_empty());
        assert!(session
            .observe_window(&window(5.0, EngagementLevel::Engaged, &[]))
            .is_empty());
    }

    #[test]
    fn close_flushes_a_partial_cqi_period_when_a_flag_is_set() {
        let mut session = SessionLifecycle::new(
            UpdatePolicy::V2Stream,
            10.0,
            &[IncludeFlag::ConversationQualityTimeline],
        );
        session.observe_window(&window(0.0, EngagementLevel::Engaged, &[]));
        let closing = session.close();
        assert_eq!(
            names(&closing),
            ["conversation_quality.updated", "session.ended"]
        );
        match &closing[0] {
            EventData::ConversationQualityUpdated(cq) => {
                let timeline = cq.timeline.as_ref().expect("timeline flag set");
                assert_eq!(timeline.len(), 1);
                assert_eq!((timeline[0].start, timeline[0].end), (0.0, 5.0));
                assert!(cq.overall.is_none());
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn include_flags_can_be_switched_on_mid_session() {
        let mut session = SessionLifecycle::new(UpdatePolicy::V2Stream, 10.0, &[]);
        let quiet: Vec<_> = (0..2)
            .flat_map(|i| {
                session.observe_window(&window(i as f64 * 5.0, EngagementLevel::Engaged, &[]))
            })
            .collect();
        assert!(!names(&quiet).contains(&"conversation_quality.updated"));
        session.set_include(&[IncludeFlag::ConversationQualityOverall]);
        let events: Vec<_> = (2..4)
            .flat_map(|i| {
                session.observe_window(&window(i as f64 * 5.0, EngagementLevel::Engaged, &[]))
            })
            .collect();
        assert_eq!(names(&events), ["conversation_quality.updated"]);
    }
}
