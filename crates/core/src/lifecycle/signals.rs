//! The per-signal lifecycle of one session: turns each closed analysis window's
//! detections into `signal.detected`, `signal.updated` and `signal.ended`.
//!
//! Each of the 13 signal types is either inactive or active. The interface's
//! "Signal activity" table moves it:
//!
//! | from | event | when |
//! |---|---|---|
//! | inactive | `signal.detected` | the type is detected in the current window |
//! | active | `signal.updated` | the type is detected again and its state differs from the last reported one ([`UpdatePolicy`] decides what "differs" means) |
//! | active | `signal.ended` | the type is absent from the current window |
//!
//! Choices where the interface is silent, made here once for every endpoint:
//! - Times. `signal.detected` and `signal.updated` carry the start of the
//!   window that produced them (when the new state applies). `signal.ended`
//!   carries the end of the last window the type was present in: that is
//!   when the evidence stopped, and it stays true when windows arrive with
//!   gaps.
//! - Gaps. Windows need not be contiguous (media may be dropped; the session
//!   reports that with `coverage.dropped`). The interface only speaks of the
//!   previous and the current window, so the next observed window is the
//!   current one whatever its start: a type present on both sides of a gap
//!   stays active, and one absent after it ends at the end of the window
//!   before the gap, never inside it.
//! - One type twice in a window. The detection with the highest probability
//!   gives probability and rationale (the first one on a tie); the modality is
//!   the union of all of them, since each is evidence from its own source.
//! - Modality is compared and reported as a set, in the order of
//!   [`Modality`]'s declaration, so `[visual, audio]` equals `[audio, visual]`.
//! - An empty rationale or modality is omitted from the event rather than
//!   written as `""` or `[]`.
//! - Event order within one window: every `signal.ended` first, then the
//!   `signal.detected` and `signal.updated` events, each group in
//!   [`SignalType`] order. Ending first means a client that keeps one row per
//!   active signal never shows a stale row next to a new one.
//!
//! No I/O and no clocks: the caller hands in window bounds in session seconds
//! and sends the returned events.

use crate::wire::{
    EngagementLevel, EventData, Modality, Probability, Seconds, SignalEnded, SignalEvent,
    SignalType,
};
use std::collections::BTreeMap;

/// What makes an active signal's state differ from its last reported state,
/// and whether events carry `modality`. One per endpoint family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpdatePolicy {
    /// `/v1` stream: updated when the probability or the modality differs;
    /// a new rationale alone is not reported. Events carry `modality`
    /// (`["video"]` for recordings read from the picture).
    V1Stream,
    /// `/v2` stream: updated when the probability or the rationale differs,
    /// so two updates may repeat a probability. Events omit `modality`, so
    /// a modality change alone is not reported either.
    V2Stream,
    /// `/v0/realtime`: updated when the probability or the modality
    /// (`audio`/`visual`) differs. The interface names only probability and
    /// modality for realtime ("modality (v1 stream, realtime)"), so a new
    /// rationale alone is not reported, as on v1. Events carry `modality`.
    Realtime,
}

impl UpdatePolicy {
    /// Whether a new rationale alone makes a `signal.updated`.
    pub const fn rationale_triggers_update(self) -> bool {
        matches!(self, UpdatePolicy::V2Stream)
    }

    /// Whether events carry `modality`, which is also whether a new modality
    /// alone makes a `signal.updated` (a change the client cannot see would
    /// be an update that repeats the last one).
    pub const fn carries_modality(self) -> bool {
        !matches!(self, UpdatePolicy::V2Stream)
    }

    /// Whether `seen` differs from the last reported state of `active`.
    fn differs(self, active: &ActiveSignal, seen: &Detection) -> bool {
        active.probability != seen.probability
            || (self.rationale_triggers_update() && active.rationale != seen.rationale)
            || (self.carries_modality() && active.modality != seen.modality)
    }
}

/// One analysis window as it closes, in session-cumulative seconds: what the
/// analyzer concluded about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedWindow {
    /// Window start.
    pub start: Seconds,
    /// Window end.
    pub end: Seconds,
    /// The window's engagement state.
    pub engagement: EngagementLevel,
    /// The signals detected in the window, with their evidence.
    pub detections: Vec<Detection>,
}

/// One signal found by the analyzer in one window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// Which signal.
    pub signal_type: SignalType,
    /// How likely.
    pub probability: Probability,
    /// The evidence in words; empty when the analyzer gave none.
    pub rationale: String,
    /// Where the evidence came from, in the endpoint's spelling (`video` or
    /// `audio` on streams, `audio`/`visual` on realtime).
    pub modality: Vec<Modality>,
}

/// An active signal: when it became active, the state last reported to the
/// client, and the last window it was present in.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveSignal {
    signal_type: SignalType,
    since: Seconds,
    probability: Probability,
    rationale: String,
    modality: Vec<Modality>,
    last_seen_end: Seconds,
}

impl ActiveSignal {
    /// Which signal.
    pub fn signal_type(&self) -> SignalType {
        self.signal_type
    }

    /// The `start` of the `signal.detected` that made it active.
    pub fn since(&self) -> Seconds {
        self.since
    }

    /// The probability last reported.
    pub fn probability(&self) -> Probability {
        self.probability
    }

    /// The rationale last reported (empty when none was given).
    pub fn rationale(&self) -> &str {
        &self.rationale
    }

    /// The modality last reported, as a sorted set.
    pub fn modality(&self) -> &[Modality] {
        &self.modality
    }

    /// End of the last window the signal was present in: the `end` its
    /// `signal.ended` will carry if the next window lacks it.
    pub fn last_seen_end(&self) -> Seconds {
        self.last_seen_end
    }

    fn report(&mut self, seen: Detection) {
        self.probability = seen.probability;
        self.rationale = seen.rationale;
        self.modality = seen.modality;
    }
}

/// The lifecycle of all 13 signal types of one session.
#[derive(Debug, Clone)]
pub struct SignalTracker {
    policy: UpdatePolicy,
    /// A type is active exactly when it has an entry; absence is "inactive",
    /// so there is no third state to get wrong.
    active: BTreeMap<SignalType, ActiveSignal>,
}

impl SignalTracker {
    /// A tracker with every signal inactive.
    pub fn new(policy: UpdatePolicy) -> Self {
        SignalTracker {
            policy,
            active: BTreeMap::new(),
        }
    }

    /// The policy this tracker reports by.
    pub fn policy(&self) -> UpdatePolicy {
        self.policy
    }

    /// Takes the detections of one closed window `[start, end)` and returns
    /// the events it causes, ended first, then detected/updated, each group in
    /// [`SignalType`] order.
    ///
    /// Windows must be observed in session order; they may leave gaps (see
    /// the module documentation).
    pub fn observe_window(
        &mut self,
        start: Seconds,
        end: Seconds,
        detections: &[Detection],
    ) -> Vec<EventData> {
        let mut seen = strongest_per_type(detections);
        let mut ended = Vec::new();
        let mut reported = Vec::new();
        for &signal_type in SignalType::ALL {
            let current = self.active.remove(&signal_type);
            let (next, event) = self.transition(current, seen.remove(&signal_type), start, end);
            if let Some(next) = next {
                self.active.insert(signal_type, next);
            }
            match event {
                Some(event @ EventData::SignalEnded(_)) => ended.push(event),
                Some(event) => reported.push(event),
                None => {}
            }
        }
        ended.append(&mut reported);
        ended
    }

    /// Ends every active signal at `at` (for a closing session, before
    /// `session.ended`), in [`SignalType`] order, and leaves every signal
    /// inactive. A second call returns nothing.
    ///
    /// `at` is normally the end of the last analyzed window.
    pub fn close_all(&mut self, at: Seconds) -> Vec<EventData> {
        std::mem::take(&mut self.active)
            .into_keys()
            .map(|signal_type| {
                EventData::SignalEnded(SignalEnded {
                    signal_type,
                    end: at,
                })
            })
            .collect()
    }

    /// The active signals in [`SignalType`] order.
    pub fn active(&self) -> impl Iterator<Item = &ActiveSignal> + '_ {
        self.active.values()
    }

    /// Whether `signal_type` is active.
    pub fn is_active(&self, signal_type: SignalType) -> bool {
        self.active.contains_key(&signal_type)
    }

    /// One type's step through one window: the next state and at most one
    /// event.
    fn transition(
        &self,
        current: Option<ActiveSignal>,
        seen: Option<Detection>,
        start: Seconds,
        end: Seconds,
    ) -> (Option<ActiveSignal>, Option<EventData>) {
        match (current, seen) {
            (None, None) => (None, None),
            (None, Some(seen)) => {
                let event = EventData::SignalDetected(self.signal_event(&seen, start));
                let active = ActiveSignal {
                    signal_type: seen.signal_type,
                    since: start,
                    probability: seen.probability,
                    rationale: seen.rationale,
                    modality: seen.modality,
                    last_seen_end: end,
                };
                (Some(active), Some(event))
            }
            (Some(active), None) => {
                let event = EventData::SignalEnded(SignalEnded {
                    signal_type: active.signal_type,
                    end: active.last_seen_end,
                });
                (None, Some(event))
            }
            (Some(mut active), Some(seen)) => {
                active.last_seen_end = end;
                if !self.policy.differs(&active, &seen) {
                    return (Some(active), None);
                }
                let event = EventData::SignalUpdated(self.signal_event(&seen, start));
                active.report(seen);
                (Some(active), Some(event))
            }
        }
    }

    fn signal_event(&self, seen: &Detection, start: Seconds) -> SignalEvent {
        SignalEvent {
            signal_type: seen.signal_type,
            start,
            probability: seen.probability,
            rationale: (!seen.rationale.is_empty()).then(|| seen.rationale.clone()),
            modality: (self.policy.carries_modality() && !seen.modality.is_empty())
                .then(|| seen.modality.clone()),
        }
    }
}

/// One detection per type: the strongest one's probability and rationale
/// (first on a tie), the union of all their modalities, sorted.
fn strongest_per_type(detections: &[Detection]) -> BTreeMap<SignalType, Detection> {
    let mut merged: BTreeMap<SignalType, Detection> = BTreeMap::new();
    for detection in detections {
        match merged.get_mut(&detection.signal_type) {
            None => {
                merged.insert(detection.signal_type, detection.clone());
            }
            Some(kept) => {
                if detection.probability > kept.probability {
                    kept.probability = detection.probability;
                    kept.rationale.clone_from(&detection.rationale);
                }
                kept.modality.extend_from_slice(&detection.modality);
            }
        }
    }
    for detection in merged.values_mut() {
        detection.modality.sort_unstable();
        detection.modality.dedup();
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use Modality::{Audio, Video, Visual};
    use Probability::{High, Low, Medium};
    use SignalType::{Agreement, Confusion, Stress, Tension};

    fn det(
        signal_type: SignalType,
        probability: Probability,
        rationale: &str,
        modality: &[Modality],
    ) -> Detection {
        Detection {
            signal_type,
            probability,
            rationale: rationale.to_owned(),
            modality: modality.to_vec(),
        }
    }

    fn detected(
        signal_type: SignalType,
        start: Seconds,
        probability: Probability,
        rationale: &str,
        modality: Option<&[Modality]>,
    ) -> EventData {
        EventData::SignalDetected(SignalEvent {
            signal_type,
            start,
            probability,
            rationale: Some(rationale.to_owned()),
            modality: modality.map(<[Modality]>::to_vec),
        })
    }

    fn updated(
        signal_type: SignalType,
        start: Seconds,
        probability: Probability,
        rationale: &str,
        modality: Option<&[Modality]>,
    ) -> EventData {
        EventData::SignalUpdated(SignalEvent {
            signal_type,
            start,
            probability,
            rationale: Some(rationale.to_owned()),
            modality: modality.map(<[Modality]>::to_vec),
        })
    }

    fn ended(signal_type: SignalType, end: Seconds) -> EventData {
        EventData::SignalEnded(SignalEnded { signal_type, end })
    }

    const ALL_POLICIES: [UpdatePolicy; 3] = [
        UpdatePolicy::V1Stream,
        UpdatePolicy::V2Stream,
        UpdatePolicy::Realtime,
    ];

    #[test]
    fn first_detection_emits_detected_at_window_start() {
        let mut v1 = SignalTracker::new(UpdatePolicy::V1Stream);
        assert_eq!(
            v1.observe_window(5.0, 10.0, &[det(Confusion, Medium, "pauses", &[Video])]),
            vec![detected(Confusion, 5.0, Medium, "pauses", Some(&[Video]))]
        );
        assert!(v1.is_active(Confusion));

        let mut v2 = SignalTracker::new(UpdatePolicy::V2Stream);
        assert_eq!(
            v2.observe_window(5.0, 10.0, &[det(Confusion, Medium, "pauses", &[Video])]),
            vec![detected(Confusion, 5.0, Medium, "pauses", None)],
            "v2 signal events omit modality"
        );
    }

    #[test]
    fn probability_change_emits_updated_on_every_policy() {
        for policy in ALL_POLICIES {
            let mut tracker = SignalTracker::new(policy);
            tracker.observe_window(0.0, 5.0, &[det(Stress, Low, "loud", &[Audio])]);
            let events = tracker.observe_window(5.0, 10.0, &[det(Stress, High, "loud", &[Audio])]);
            let modality = policy.carries_modality().then_some(&[Audio][..]);
            assert_eq!(
                events,
                vec![updated(Stress, 5.0, High, "loud", modality)],
                "{policy:?}"
            );
            assert_eq!(tracker.active().next().map(|a| a.probability()), Some(High));
        }
    }

    #[test]
    fn rationale_change_updates_on_v2_only() {
        let windows = [
            det(Stress, Medium, "raised pitch", &[Audio]),
            det(Stress, Medium, "sighs", &[Audio]),
        ];
        let mut v2 = SignalTracker::new(UpdatePolicy::V2Stream);
        v2.observe_window(0.0, 5.0, &windows[..1]);
        assert_eq!(
            v2.observe_window(5.0, 10.0, &windows[1..]),
            vec![updated(Stress, 5.0, Medium, "sighs", None)]
        );

        for policy in [UpdatePolicy::V1Stream, UpdatePolicy::Realtime] {
            let mut tracker = SignalTracker::new(policy);
            tracker.observe_window(0.0, 5.0, &windows[..1]);
            assert_eq!(
                tracker.observe_window(5.0, 10.0, &windows[1..]),
                vec![],
                "{policy:?}"
            );
            assert_eq!(
                tracker.active().next().map(ActiveSignal::rationale),
                Some("raised pitch"),
                "an unreported rationale is not the last reported state"
            );
        }
    }

    #[test]
    fn modality_change_updates_on_v1_and_realtime_only() {
        for (policy, before, after) in [
            (UpdatePolicy::V1Stream, Video, Audio),
            (UpdatePolicy::Realtime, Audio, Visual),
        ] {
            let mut tracker = SignalTracker::new(policy);
            tracker.observe_window(0.0, 5.0, &[det(Tension, Low, "overlap", &[before])]);
            assert_eq!(
                tracker.observe_window(5.0, 10.0, &[det(Tension, Low, "overlap", &[after])]),
                vec![updated(Tension, 5.0, Low, "overlap", Some(&[after]))],
                "{policy:?}"
            );
        }

        let mut v2 = SignalTracker::new(UpdatePolicy::V2Stream);
        v2.observe_window(0.0, 5.0, &[det(Tension, Low, "overlap", &[Video])]);
        assert_eq!(
            v2.observe_window(5.0, 10.0, &[det(Tension, Low, "overlap", &[Audio])]),
            vec![]
        );
    }

    #[test]
    fn v2_repeats_probability_when_only_the_rationale_is_new() {
        let mut v2 = SignalTracker::new(UpdatePolicy::V2Stream);
        v2.observe_window(0.0, 5.0, &[det(Agreement, High, "nods", &[])]);
        let second = v2.observe_window(5.0, 10.0, &[det(Agreement, High, "backchannels", &[])]);
        let third = v2.observe_window(10.0, 15.0, &[det(Agreement, High, "nods", &[])]);
        assert_eq!(
            second,
            vec![updated(Agreement, 5.0, High, "backchannels", None)]
        );
        assert_eq!(third, vec![updated(Agreement, 10.0, High, "nods", None)]);
    }

    #[test]
    fn unchanged_state_emits_nothing() {
        for policy in ALL_POLICIES {
            let mut tracker = SignalTracker::new(policy);
            let same = [det(Confusion, Medium, "rising questions", &[Audio, Visual])];
            tracker.observe_window(0.0, 5.0, &same);
            assert_eq!(
                tracker.observe_window(5.0, 10.0, &same),
                vec![],
                "{policy:?}"
            );
            let reordered = [det(Confusion, Medium, "rising questions", &[Visual, Audio])];
            assert_eq!(
                tracker.observe_window(10.0, 15.0, &reordered),
                vec![],
                "{policy:?}: modality is a set"
            );
            assert_eq!(tracker.active().next().map(|a| a.since()), Some(0.0));
        }
    }

    #[test]
    fn absent_type_ends_at_the_end_of_its_last_window() {
        let mut tracker = SignalTracker::new(UpdatePolicy::V1Stream);
        tracker.observe_window(0.0, 5.0, &[det(Stress, Low, "loud", &[Video])]);
        tracker.observe_window(5.0, 10.0, &[det(Stress, Low, "loud", &[Video])]);
        assert_eq!(
            tracker.observe_window(10.0, 15.0, &[]),
            vec![ended(Stress, 10.0)]
        );
        assert!(!tracker.is_active(Stress));
        assert_eq!(tracker.observe_window(15.0, 20.0, &[]), vec![], "ends once");
    }

    #[test]
    fn detection_after_ended_is_detected_again() {
        let mut tracker = SignalTracker::new(UpdatePolicy::V2Stream);
        tracker.observe_window(0.0, 5.0, &[det(Tension, Medium, "gaps", &[])]);
        tracker.observe_window(5.0, 10.0, &[]);
        assert_eq!(
            tracker.observe_window(10.0, 15.0, &[det(Tension, Medium, "gaps", &[])]),
            vec![detected(Tension, 10.0, Medium, "gaps", None)]
        );
        assert_eq!(tracker.active().next().map(|a| a.since()), Some(10.0));
    }

    #[test]
    fn gap_between_windows_is_not_evidence() {
        let mut tracker = SignalTracker::new(UpdatePolicy::V1Stream);
        tracker.observe_window(
            0.0,
            5.0,
            &[
                det(Stress, Low, "loud", &[Video]),
                det(Agreement, Low, "nods", &[Video]),
            ],
        );
        // 5..20 was dropped; the next window is still "the current window".
        assert_eq!(
            tracker.observe_window(20.0, 25.0, &[det(Agreement, Low, "nods", &[Video])]),
            vec![ended(Stress, 5.0)]
        );
        assert!(tracker.is_active(Agreement));
    }

    #[test]
    fn window_events_list_ended_first_then_by_signal_type() {
        let mut tracker = SignalTracker::new(UpdatePolicy::V2Stream);
        tracker.observe_window(
            0.0,
            5.0,
            &[det(Tension, Low, "a", &[]), det(Agreement, Low, "a", &[])],
        );
        let events = tracker.observe_window(
            5.0,
            10.0,
            &[
                det(Stress, High, "b", &[]),
                det(Tension, High, "b", &[]),
                det(Confusion, Low, "b", &[]),
            ],
        );
        assert_eq!(
            events,
            vec![
                ended(Agreement, 5.0),
                detected(Confusion, 5.0, Low, "b", None),
                detected(Stress, 5.0, High, "b", None),
                updated(Tension, 5.0, High, "b", None),
            ]
        );
    }

    #[test]
    fn duplicate_type_in_a_window_keeps_the_strongest_and_merges_modality() {
        let mut tracker = SignalTracker::new(UpdatePolicy::Realtime);
        let events = tracker.observe_window(
            0.0,
            5.0,
            &[
                det(Stress, Low, "heard", &[Audio]),
                det(Stress, High, "seen", &[Visual]),
                det(Stress, High, "seen again", &[Visual]),
            ],
        );
        assert_eq!(
            events,
            vec![detected(Stress, 0.0, High, "seen", Some(&[Audio, Visual]))]
        );
    }

    #[test]
    fn empty_rationale_and_modality_are_omitted() {
        let mut tracker = SignalTracker::new(UpdatePolicy::V1Stream);
        let events = tracker.observe_window(0.0, 5.0, &[det(Stress, Low, "", &[])]);
        assert_eq!(
            events,
            vec![EventData::SignalDetected(SignalEvent {
                signal_type: Stress,
                start: 0.0,
                probability: Low,
                rationale: None,
                modality: None,
            })]
        );
    }

    #[test]
    fn close_all_ends_every_active_signal_once_in_type_order() {
        let mut tracker = SignalTracker::new(UpdatePolicy::V1Stream);
        tracker.observe_window(
            0.0,
            5.0,
            &[
                det(Tension, Low, "a", &[Video]),
                det(Agreement, Low, "a", &[Video]),
                det(Stress, Low, "a", &[Video]),
            ],
        );
        tracker.observe_window(
            5.0,
            10.0,
            &[
                det(Tension, Low, "a", &[Video]),
                det(Agreement, Low, "a", &[Video]),
            ],
        );
        assert_eq!(
            tracker.close_all(10.0),
            vec![ended(Agreement, 10.0), ended(Tension, 10.0)]
        );
        assert_eq!(tracker.active().count(), 0);
        assert_eq!(tracker.close_all(10.0), vec![]);
        assert_eq!(
            tracker.observe_window(10.0, 15.0, &[]),
            vec![],
            "nothing left to end"
        );
    }

    /// Window as generated: gap before it (0 = contiguous) and detections as
    /// (type index, probability index, rationale index, modality bits).
    type GenWindow = (u8, Vec<(usize, usize, usize, u8)>);

    fn policy_strategy() -> impl Strategy<Value = UpdatePolicy> {
        prop_oneof![
            Just(UpdatePolicy::V1Stream),
            Just(UpdatePolicy::V2Stream),
            Just(UpdatePolicy::Realtime),
        ]
    }

    fn windows_strategy() -> impl Strategy<Value = Vec<GenWindow>> {
        let detection = (0..SignalType::ALL.len(), 0..3usize, 0..3usize, 0..8u8);
        proptest::collection::vec(
            (
                prop_oneof![3 => Just(0u8), 1 => 1..4u8],
                proptest::collection::vec(detection, 0..6),
            ),
            0..40,
        )
    }

    fn to_detections(raw: &[(usize, usize, usize, u8)]) -> Vec<Detection> {
        const RATIONALES: [&str; 3] = ["", "pauses", "fillers"];
        const PROBABILITIES: [Probability; 3] = [Low, Medium, High];
        const MODALITIES: [Modality; 3] = [Audio, Video, Visual];
        raw.iter()
            .map(|&(t, p, r, bits)| Detection {
                signal_type: SignalType::ALL[t],
                probability: PROBABILITIES[p],
                rationale: RATIONALES[r].to_owned(),
                modality: (0..3)
                    .filter(|i| bits & (1 << i) != 0)
                    .map(|i| MODALITIES[i])
                    .collect(),
            })
            .collect()
    }

    /// What a client knows of one type from the events alone.
    #[derive(Default)]
    struct ClientView {
        active_since: Option<Seconds>,
        last: Option<SignalEvent>,
    }

    fn order_key(event: &EventData) -> (u8, SignalType) {
        match event {
            EventData::SignalEnded(e) => (0, e.signal_type),
            EventData::SignalDetected(e) | EventData::SignalUpdated(e) => (1, e.signal_type),
            other => panic!("unexpected event {other:?}"),
        }
    }

    proptest! {
        #[test]
        fn lifecycle_holds_over_random_windows(
            policy in policy_strategy(),
            windows in windows_strategy(),
        ) {
            let mut tracker = SignalTracker::new(policy);
            let mut views: BTreeMap<SignalType, ClientView> = BTreeMap::new();
            let mut clock = 0.0;
            for (gap, raw) in &windows {
                let start = clock + f64::from(*gap) * 5.0;
                let end = start + 5.0;
                clock = end;
                let detections = to_detections(raw);
                let events = tracker.observe_window(start, end, &detections);

                let keys: Vec<_> = events.iter().map(order_key).collect();
                let mut sorted = keys.clone();
                sorted.sort();
                sorted.dedup();
                prop_assert_eq!(&keys, &sorted, "order: ended first, by type, one event per type");

                for event in events {
                    match event {
                        EventData::SignalDetected(e) => {
                            let view = views.entry(e.signal_type).or_default();
                            prop_assert!(view.active_since.is_none(), "detected while active");
                            prop_assert_eq!(e.start, start);
                            view.active_since = Some(e.start);
                            view.last = Some(e);
                        }
                        EventData::SignalUpdated(e) => {
                            let view = views.entry(e.signal_type).or_default();
                            prop_assert!(view.active_since.is_some(), "updated while inactive");
                            prop_assert_eq!(e.start, start);
                            let last = view.last.as_ref().expect("active has a last state");
                            let differs = last.probability != e.probability
                                || (policy.rationale_triggers_update() && last.rationale != e.rationale)
                                || (policy.carries_modality() && last.modality != e.modality);
                            prop_assert!(differs, "updated repeats the last reported state");
                            view.last = Some(e);
                        }
                        EventData::SignalEnded(e) => {
                            let view = views.entry(e.signal_type).or_default();
                            let since = view.active_since.take();
                            prop_assert!(since.is_some(), "ended while inactive");
                            prop_assert!(e.end > since.unwrap_or(f64::NAN) && e.end <= start);
                            view.last = None;
                        }
                        other => prop_assert!(false, "unexpected event {:?}", other),
                    }
                }

                for &signal_type in SignalType::ALL {
                    let present = detections.iter().any(|d| d.signal_type == signal_type);
                    let client_active = views.get(&signal_type).is_some_and(|v| v.active_since.is_some());
                    prop_assert_eq!(tracker.is_active(signal_type), present);
                    prop_assert_eq!(client_active, present, "client view matches the window");
                }
                if !policy.carries_modality() {
                    prop_assert!(views.values().filter_map(|v| v.last.as_ref()).all(|e| e.modality.is_none()));
                }
            }

            let was_active: Vec<SignalType> = tracker.active().map(ActiveSignal::signal_type).collect();
            let closing = tracker.close_all(clock);
            let closed: Vec<SignalType> = closing.iter().map(|e| order_key(e).1).collect();
            prop_assert_eq!(closed, was_active);
            for event in &closing {
                let EventData::SignalEnded(e) = event else {
                    unreachable!("close_all only ends");
                };
                let view = views.entry(e.signal_type).or_default();
                prop_assert!(view.active_since.take().is_some(), "close_all ended an inactive type");
            }
            prop_assert_eq!(tracker.active().count(), 0);
            prop_assert!(views.values().all(|v| v.active_since.is_none()));
            prop_assert!(tracker.close_all(clock).is_empty());
        }
    }
}
