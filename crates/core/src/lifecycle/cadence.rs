//! The `conversation_quality.updated` cadence: fixed periods of session time,
//! at most one event per period, carrying the cumulative and per-period CQI.
//!
//! Rules (interface, Events table):
//! - Session time is cut into periods `[k·P, (k+1)·P)` from 0, `P` =
//!   [`DEFAULT_PERIOD_SECONDS`] unless configured.
//! - A period closes when a window ending at or after its end arrives. A
//!   closing period that holds analyzed media emits exactly one update; a
//!   period with no analyzed media at all (skipped by a jump ahead in time,
//!   already reported as `coverage.dropped`) emits nothing.
//! - Nothing is emitted while no CQI include flag is set, but evidence is
//!   still folded in, so an `overall` switched on later is still cumulative
//!   since the session started.
//! - `overall` is every window's evidence up to the end of the just-closed
//!   period; `timeline` holds one entry for the just-closed period. A period
//!   with no signals still emits its entry, scored from engagement alone and
//!   all 50 when that was neutral.
//! - [`QualityCadence::finish`] closes a partial last period if it holds any
//!   analyzed media.
//!
//! A window straddling a boundary is split by overlap between the periods. A
//! window (or part of one) arriving for an already-closed period counts
//! toward the next `overall` only, since that period's entry was sent.

use super::signals::ClosedWindow;
use crate::wire::{ConversationQualityUpdated, IncludeFlag, Seconds, TimelineEntry};
use attune_cqi::{EngagementEvidence, QualityAccumulator, SignalEvidence, MAX_SPAN_SECONDS};

/// The period length used unless configured: 10 s.
///
/// Existing clients see their first events about 10 s into a session and
/// leave after 10-20 s without events, so one update every 10 s keeps them
/// connected with margin, and it is two of the interface's 5 s windows.
pub const DEFAULT_PERIOD_SECONDS: Seconds = 10.0;

/// The shortest period accepted; a shorter one is raised to this, because a
/// period below the analysis window would only repeat the same window.
pub const MIN_PERIOD_SECONDS: Seconds = 1.0;

/// The most periods one window may span and still get one timeline entry
/// per period; a longer window is malformed input and counts toward
/// `overall` only, so it cannot produce an unbounded burst of events.
pub const MAX_PERIODS_PER_WINDOW: u64 = 1024;

/// One `conversation_quality.updated` payload and the period it closes.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityUpdate {
    /// Start of the just-closed period.
    pub start: Seconds,
    /// End of the just-closed period (earlier than the nominal end only for
    /// a partial last period closed by [`QualityCadence::finish`]).
    pub end: Seconds,
    /// The event data.
    pub data: ConversationQualityUpdated,
}

/// Sans-I/O state machine deciding when a stream emits
/// `conversation_quality.updated` and what it carries. See the module docs
/// for the rules.
#[derive(Debug, Clone)]
pub struct QualityCadence {
    /// Period length in seconds, already validated.
    period: Seconds,
    /// Whether updates carry `overall` (the overall include flag).
    overall: bool,
    /// Whether updates carry `timeline` (the timeline include flag).
    timeline: bool,
    /// Evidence of every closed period plus late evidence: the `overall`.
    closed: QualityAccumulator,
    /// Index `k` of the open period `[k·P, (k+1)·P)`.
    open_index: u64,
    /// Evidence inside the open period.
    open: QualityAccumulator,
    /// Latest end of analyzed media inside the open period; `None` when the
    /// open period has none yet and so would not emit.
    open_media_end: Option<Seconds>,
    /// Set by `finish`; later windows are ignored.
    finished: bool,
}

impl QualityCadence {
    /// A cadence with periods of `period_seconds` and the given include
    /// flags. A non-finite or non-positive period means the default
    /// ([`DEFAULT_PERIOD_SECONDS`]); a shorter one than
    /// [`MIN_PERIOD_SECONDS`] is raised to it.
    pub fn new(period_seconds: Seconds, include: &[IncludeFlag]) -> Self {
        let period = if period_seconds.is_finite() && period_seconds > 0.0 {
            period_seconds.max(MIN_PERIOD_SECONDS)
        } else {
            DEFAULT_PERIOD_SECONDS
        };
        let mut cadence = QualityCadence {
            period,
            overall: false,
            timeline: false,
            closed: QualityAccumulator::new(),
            open_index: 0,
            open: QualityAccumulator::new(),
            open_media_end: None,
            finished: false,
        };
        cadence.set_include(include);
        cadence
    }

    /// A cadence with the default 10 s period.
    pub fn with_default_period(include: &[IncludeFlag]) -> Self {
        QualityCadence::new(DEFAULT_PERIOD_SECONDS, include)
    }

    /// Replaces the active include flags (a config frame replaces the whole
    /// set). Flags that are not CQI sections are ignored. Takes effect at the
    /// next period close.
    pub fn set_include(&mut self, include: &[IncludeFlag]) {
        self.overall = include.contains(&IncludeFlag::ConversationQualityOverall);
        self.timeline = include.contains(&IncludeFlag::ConversationQualityTimeline);
    }

    /// The period length in use.
    pub fn period_seconds(&self) -> Seconds {
        self.period
    }

    /// Whether updates are emitted at all (some CQI flag is set).
    pub fn is_reporting(&self) -> bool {
        self.overall || self.timeline
    }

    /// Folds in one closed window and returns the updates for every period
    /// it closes, in time order.
    ///
    /// A window with a NaN or infinite bound, no positive length, or longer
    /// than [`MAX_SPAN_SECONDS`] is ignored, as is everything after
    /// [`QualityCadence::finish`]. A negative start is clipped to 0.
    pub fn observe_window(&mut self, window: &ClosedWindow) -> Vec<QualityUpdate> {
        let mut updates = Vec::new();
        // Checked before clipping, since `NaN.max(0.0)` is 0.
        let usable = window.start.is_finite() && window.end.is_finite();
        let start = window.start.max(0.0);
        let end = window.end;
        let usable = usable && end > start;
        if self.finished || !usable || end - start > MAX_SPAN_SECONDS {
            return updates;
        }

        // The part before the open period belongs to periods already sent.
        let open_start = self.boundary(self.open_index);
        if start < open_start {
            add_window(&mut self.closed, window, start, end.min(open_start));
        }
        let rest_start = start.max(open_start);
        if rest_start >= end {
            return updates;
        }

        let first = self.period_index(rest_start).max(self.open_index);
        let last = self.period_index_ending(end).max(first);
        if last - first > MAX_PERIODS_PER_WINDOW {
            self.close_open(None, &mut updates);
            add_window(&mut self.closed, window, rest_start, end);
            self.open_index = self.period_index(end);
            return updates;
        }

        for index in first..=last {
            if index > self.open_index {
                self.close_open(None, &mut updates);
                self.open_index = index;
            }
            let lo = rest_start.max(self.boundary(index));
            let hi = end.min(self.boundary(index + 1));
            if hi > lo {
                add_window(&mut self.open, window, lo, hi);
                self.open_media_end = Some(self.open_media_end.map_or(hi, |e| e.max(hi)));
            }
        }
        if end >= self.boundary(self.open_index + 1) {
            self.close_open(None, &mut updates);
            self.open_index += 1;
        }
        updates
    }

    /// Ends the cadence at session time `at`: closes the partial open period
    /// if it holds analyzed media, with its entry ending at `at` (kept within
    /// the period and after the media it holds). Later windows are ignored
    /// and a second call returns nothing.
    pub fn finish(&mut self, at: Seconds) -> Option<QualityUpdate> {
        if self.finished {
            return None;
        }
        self.finished = true;
        let mut updates = Vec::new();
        self.close_open(Some(at), &mut updates);
        updates.pop()
    }

    /// Closes the open period: folds it into the overall and, if it holds
    /// media and a CQI flag is set, pushes its update. `end_at` shortens the
    /// entry of a partial period.
    fn close_open(&mut self, end_at: Option<Seconds>, updates: &mut Vec<QualityUpdate>) {
        let open = std::mem::take(&mut self.open);
        let Some(media_end) = self.open_media_end.take() else {
            return;
        };
        self.closed.merge(&open);
        if !self.is_reporting() {
            return;
        }
        let start = self.boundary(self.open_index);
        let nominal_end = self.boundary(self.open_index + 1);
        let end = match end_at {
            // `max` before `min`: a NaN `at` yields the media end.
            Some(at) => media_end.max(at).min(nominal_end),
            None => nominal_end,
        };
        updates.push(QualityUpdate {
            start,
            end,
            data: ConversationQualityUpdated {
                overall: self.overall.then(|| self.closed.values()),
                timeline: self.timeline.then(|| {
                    vec![TimelineEntry {
                        start,
                        end,
                        values: open.values(),
                    }]
                }),
            },
        });
    }

    /// Start of period `index`.
    fn boundary(&self, index: u64) -> Seconds {
        index as f64 * self.period
    }

    /// The period containing time `t` (`t` finite and non-negative).
    fn period_index(&self, t: Seconds) -> u64 {
        // Saturating float-to-int cast; times are bounded by the span cap.
        (t / self.period).floor() as u64
    }

    /// The period containing the last instant before `t`.
    fn period_index_ending(&self, t: Seconds) -> u64 {
        ((t / self.period).ceil() as u64).saturating_sub(1)
    }
}

/// Adds the part `[start, end)` of a window to `accumulator`.
fn add_window(
    accumulator: &mut QualityAccumulator,
    window: &ClosedWindow,
    start: Seconds,
    end: Seconds,
) {
    accumulator.add_engagement(&EngagementEvidence {
        level: window.engagement,
        start,
        end,
    });
    for detection in &window.detections {
        accumulator.add_signal(&SignalEvidence {
            signal_type: detection.signal_type,
            probability: Some(detection.probability),
            start,
            end,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::signals::Detection;
    use crate::wire::{EngagementLevel, Probability, QualityValues, SignalType};
    use attune_cqi::score;

    const BOTH: [IncludeFlag; 2] = [
        IncludeFlag::ConversationQualityOverall,
        IncludeFlag::ConversationQualityTimeline,
    ];

    fn window(
        start: f64,
        end: f64,
        engagement: EngagementLevel,
        signals: &[(SignalType, Probability)],
    ) -> ClosedWindow {
        ClosedWindow {
            start,
            end,
            engagement,
            detections: signals
                .iter()
                .map(|&(signal_type, probability)| Detection {
                    signal_type,
                    probability,
                    rationale: String::new(),
                    modality: Vec::new(),
                })
                .collect(),
        }
    }

    fn neutral(start: f64, end: f64) -> ClosedWindow {
        window(start, end, EngagementLevel::Neutral, &[])
    }

    fn engaged(start: f64, end: f64) -> ClosedWindow {
        window(start, end, EngagementLevel::Engaged, &[])
    }

    /// Feeds windows in order and collects every update.
    fn feed(cadence: &mut QualityCadence, windows: &[ClosedWindow]) -> Vec<QualityUpdate> {
        windows
            .iter()
            .flat_map(|w| cadence.observe_window(w))
            .collect()
    }

    fn timeline_values(update: &QualityUpdate) -> QualityValues {
        let timeline = update.data.timeline.as_ref().expect("timeline present");
        assert_eq!(timeline.len(), 1, "exactly one entry per update");
        assert_eq!(
            (timeline[0].start, timeline[0].end),
            (update.start, update.end)
        );
        timeline[0].values
    }

    const CONFIDENT: &[(SignalType, Probability)] = &[(SignalType::Confidence, Probability::High)];

    #[test]
    fn default_period_is_ten_seconds_and_bad_periods_fall_back() {
        assert_eq!(
            QualityCadence::with_default_period(&BOTH).period_seconds(),
            10.0
        );
        assert_eq!(QualityCadence::new(0.0, &BOTH).period_seconds(), 10.0);
        assert_eq!(QualityCadence::new(-3.0, &BOTH).period_seconds(), 10.0);
        assert_eq!(QualityCadence::new(f64::NAN, &BOTH).period_seconds(), 10.0);
        assert_eq!(
            QualityCadence::new(0.01, &BOTH).period_seconds(),
            MIN_PERIOD_SECONDS
        );
        assert_eq!(QualityCadence::new(30.0, &BOTH).period_seconds(), 30.0);
    }

    #[test]
    fn one_update_when_the_period_closes_not_before() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        assert!(cadence.observe_window(&neutral(0.0, 5.0)).is_empty());
        let updates = cadence.observe_window(&neutral(5.0, 10.0));
        assert_eq!(updates.len(), 1);
        assert_eq!((updates[0].start, updates[0].end), (0.0, 10.0));
    }

    #[test]
    fn at_most_one_update_per_period() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        let windows: Vec<_> = (0..15)
            .map(|i| neutral(f64::from(i) * 2.0, f64::from(i + 1) * 2.0))
            .collect();
        let updates = feed(&mut cadence, &windows);
        let spans: Vec<_> = updates.iter().map(|u| (u.start, u.end)).collect();
        assert_eq!(spans, [(0.0, 10.0), (10.0, 20.0), (20.0, 30.0)]);
    }

    #[test]
    fn no_cqi_flag_means_no_updates() {
        for include in [&[][..], &[IncludeFlag::Signals][..]] {
            let mut cadence = QualityCadence::with_default_period(include);
            assert!(!cadence.is_reporting());
            assert!(feed(&mut cadence, &[engaged(0.0, 10.0), engaged(10.0, 25.0)]).is_empty());
            assert_eq!(cadence.finish(25.0), None);
        }
    }

    #[test]
    fn sections_follow_their_flags() {
        let mut overall_only =
            QualityCadence::with_default_period(&[IncludeFlag::ConversationQualityOverall]);
        let update = &overall_only.observe_window(&engaged(0.0, 10.0))[0];
        assert!(update.data.overall.is_some());
        assert_eq!(update.data.timeline, None);

        let mut timeline_only =
            QualityCadence::with_default_period(&[IncludeFlag::ConversationQualityTimeline]);
        let update = &timeline_only.observe_window(&engaged(0.0, 10.0))[0];
        assert_eq!(update.data.overall, None);
        assert!(update.data.timeline.is_some());
    }

    #[test]
    fn set_include_replaces_the_flags_and_overall_stays_cumulative() {
        let mut cadence = QualityCadence::with_default_period(&[]);
        assert!(cadence
            .observe_window(&window(0.0, 10.0, EngagementLevel::Engaged, CONFIDENT))
            .is_empty());

        cadence.set_include(&[IncludeFlag::ConversationQualityOverall]);
        let updates = cadence.observe_window(&neutral(10.0, 20.0));
        assert_eq!(updates.len(), 1);
        // The overall covers the whole session, including the period closed
        // while nothing was requested.
        let expected = score(
            &[
                EngagementEvidence {
                    level: EngagementLevel::Engaged,
                    start: 0.0,
                    end: 10.0,
                },
                EngagementEvidence {
                    level: EngagementLevel::Neutral,
                    start: 10.0,
                    end: 20.0,
                },
            ],
            &[SignalEvidence {
                signal_type: SignalType::Confidence,
                probability: Some(Probability::High),
                start: 0.0,
                end: 10.0,
            }],
        );
        assert_eq!(updates[0].data.overall, Some(expected));
        assert!(expected.authority > 50.0);

        cadence.set_include(&[]);
        assert!(cadence.observe_window(&neutral(20.0, 30.0)).is_empty());
    }

    #[test]
    fn a_period_without_signals_still_emits_its_timeline() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        let quiet = feed(&mut cadence, &[neutral(0.0, 5.0), neutral(5.0, 10.0)]);
        assert_eq!(timeline_values(&quiet[0]), QualityValues::NEUTRAL);
        assert_eq!(quiet[0].data.overall, Some(QualityValues::NEUTRAL));

        // Engagement alone moves the scores.
        let lively = cadence.observe_window(&engaged(10.0, 20.0));
        let values = timeline_values(&lively[0]);
        assert!(values.energy > 50.0);
        assert_eq!(values.authority, 50.0);
    }

    #[test]
    fn the_timeline_entry_holds_only_its_own_period() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        let updates = feed(
            &mut cadence,
            &[
                window(0.0, 10.0, EngagementLevel::Engaged, CONFIDENT),
                neutral(10.0, 20.0),
            ],
        );
        assert_eq!(updates.len(), 2);
        assert!(timeline_values(&updates[0]).authority > 50.0);
        assert_eq!(timeline_values(&updates[1]), QualityValues::NEUTRAL);
        // The overall after the second period mixes both.
        let overall = updates[1].data.overall.expect("overall");
        assert!(
            50.0 < overall.authority && overall.authority < timeline_values(&updates[0]).authority
        );
    }

    #[test]
    fn a_window_across_a_boundary_is_split_by_overlap() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        assert!(cadence.observe_window(&neutral(0.0, 8.0)).is_empty());
        let updates = cadence.observe_window(&engaged(8.0, 12.0));
        assert_eq!(updates.len(), 1);
        assert_eq!((updates[0].start, updates[0].end), (0.0, 10.0));
        // 2 s of the engaged window fell in the first period ...
        let first = timeline_values(&updates[0]);
        let expected_first = score(
            &[
                EngagementEvidence {
                    level: EngagementLevel::Neutral,
                    start: 0.0,
                    end: 8.0,
                },
                EngagementEvidence {
                    level: EngagementLevel::Engaged,
                    start: 8.0,
                    end: 10.0,
                },
            ],
            &[],
        );
        assert_eq!(first, expected_first);
        // ... and the `overall` stops at the period end, excluding [10, 12).
        assert_eq!(updates[0].data.overall, Some(expected_first));

        // The other 2 s open the second period.
        let second = cadence.observe_window(&neutral(12.0, 20.0));
        let expected_second = score(
            &[
                EngagementEvidence {
                    level: EngagementLevel::Engaged,
                    start: 10.0,
                    end: 12.0,
                },
                EngagementEvidence {
                    level: EngagementLevel::Neutral,
                    start: 12.0,
                    end: 20.0,
                },
            ],
            &[],
        );
        assert_eq!(timeline_values(&second[0]), expected_second);
    }

    #[test]
    fn a_window_spanning_several_periods_closes_each() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        let updates = cadence.observe_window(&engaged(0.0, 30.0));
        let spans: Vec<_> = updates.iter().map(|u| (u.start, u.end)).collect();
        assert_eq!(spans, [(0.0, 10.0), (10.0, 20.0), (20.0, 30.0)]);
        assert!(updates.iter().all(|u| timeline_values(u).energy > 50.0));
    }

    #[test]
    fn periods_without_media_are_skipped() {
        // A jump ahead from 5 s to 35 s: [10, 20) and [20, 30) saw no media.
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        let updates = feed(&mut cadence, &[engaged(0.0, 5.0), neutral(35.0, 40.0)]);
        let spans: Vec<_> = updates.iter().map(|u| (u.start, u.end)).collect();
        assert_eq!(spans, [(0.0, 10.0), (30.0, 40.0)]);
        // The first period is scored over its 5 s of media, not diluted by
        // the 5 s nobody sent.
        assert_eq!(
            timeline_values(&updates[0]),
            score(
                &[EngagementEvidence {
                    level: EngagementLevel::Engaged,
                    start: 0.0,
                    end: 5.0
                }],
                &[]
            )
        );
    }

    #[test]
    fn a_late_window_counts_in_the_next_overall_only() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        assert_eq!(cadence.observe_window(&neutral(0.0, 10.0)).len(), 1);
        assert!(cadence
            .observe_window(&window(2.0, 4.0, EngagementLevel::Engaged, CONFIDENT))
            .is_empty());
        let updates = cadence.observe_window(&neutral(10.0, 20.0));
        assert_eq!(timeline_values(&updates[0]), QualityValues::NEUTRAL);
        let overall = updates[0].data.overall.expect("overall");
        assert!(overall.authority > 50.0);
    }

    #[test]
    fn finish_emits_a_partial_period_with_media() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        feed(&mut cadence, &[neutral(0.0, 10.0), engaged(10.0, 13.0)]);
        let update = cadence.finish(13.0).expect("partial period with media");
        assert_eq!((update.start, update.end), (10.0, 13.0));
        assert!(timeline_values(&update).energy > 50.0);
        // Once only, and nothing after.
        assert_eq!(cadence.finish(20.0), None);
        assert!(cadence.observe_window(&neutral(13.0, 20.0)).is_empty());
    }

    #[test]
    fn finish_keeps_the_entry_within_media_and_period() {
        let mut early = QualityCadence::with_default_period(&BOTH);
        early.observe_window(&neutral(10.0, 13.0));
        assert_eq!(early.finish(11.0).map(|u| u.end), Some(13.0));

        let mut late = QualityCadence::with_default_period(&BOTH);
        late.observe_window(&neutral(10.0, 13.0));
        assert_eq!(late.finish(55.0).map(|u| u.end), Some(20.0));

        let mut nan = QualityCadence::with_default_period(&BOTH);
        nan.observe_window(&neutral(10.0, 13.0));
        assert_eq!(nan.finish(f64::NAN).map(|u| u.end), Some(13.0));
    }

    #[test]
    fn finish_without_media_in_the_open_period_emits_nothing() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        assert_eq!(cadence.observe_window(&neutral(0.0, 10.0)).len(), 1);
        assert_eq!(cadence.finish(10.0), None);

        let mut untouched = QualityCadence::with_default_period(&BOTH);
        assert_eq!(untouched.finish(4.0), None);
    }

    #[test]
    fn malformed_windows_are_ignored() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        for (start, end) in [
            (f64::NAN, 10.0),
            (0.0, f64::NAN),
            (0.0, f64::INFINITY),
            (10.0, 10.0),
            (12.0, 3.0),
            (-5.0, 0.0),
            (0.0, 2.0 * MAX_SPAN_SECONDS),
        ] {
            assert!(cadence
                .observe_window(&window(start, end, EngagementLevel::Engaged, CONFIDENT))
                .is_empty());
        }
        assert_eq!(cadence.finish(10.0), None);
    }

    #[test]
    fn a_negative_start_is_clipped_to_zero() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        let updates = cadence.observe_window(&engaged(-5.0, 10.0));
        assert_eq!(updates.len(), 1);
        assert_eq!(
            timeline_values(&updates[0]),
            score(
                &[EngagementEvidence {
                    level: EngagementLevel::Engaged,
                    start: 0.0,
                    end: 10.0
                }],
                &[],
            )
        );
    }

    #[test]
    fn an_oversized_window_feeds_the_overall_without_a_burst() {
        let mut cadence = QualityCadence::with_default_period(&BOTH);
        assert!(cadence.observe_window(&neutral(0.0, 5.0)).is_empty());
        let huge_end = 10.0 * (MAX_PERIODS_PER_WINDOW as f64 + 10.0);
        let updates =
            cadence.observe_window(&window(5.0, huge_end, EngagementLevel::Engaged, CONFIDENT));
        // Only the period that was open before it closes.
        let spans: Vec<_> = updates.iter().map(|u| (u.start, u.end)).collect();
        assert_eq!(spans, [(0.0, 10.0)]);
        assert_eq!(timeline_values(&updates[0]), QualityValues::NEUTRAL);
        // The next update's overall carries the oversized window's evidence.
        let next = cadence.observe_window(&neutral(huge_end, huge_end + 10.0));
        assert_eq!(next.len(), 1);
        assert!(next[0].data.overall.expect("overall").authority > 50.0);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Any window sequence, contiguous or with gaps, overlaps and
            /// late windows: periods are emitted in time order, each at most
            /// once, with one timeline entry inside 0..=100.
            #[test]
            fn at_most_one_update_per_period_in_order(
                period in 1.0..20.0f64,
                windows in prop::collection::vec(
                    (-5.0..300.0f64, 0.0..25.0f64, prop::sample::select(EngagementLevel::ALL)),
                    0..60,
                ),
                finish_at in 0.0..400.0f64,
            ) {
                let mut cadence = QualityCadence::new(period, &BOTH);
                let mut updates = Vec::new();
                for &(start, length, level) in &windows {
                    updates.extend(cadence.observe_window(&window(start, start + length, level, CONFIDENT)));
                }
                updates.extend(cadence.finish(finish_at));
                for pair in updates.windows(2) {
                    prop_assert!(pair[0].end <= pair[1].start, "{:?} then {:?}", pair[0], pair[1]);
                }
                for update in &updates {
                    prop_assert!(update.start < update.end);
                    prop_assert!(update.end - update.start <= period + 1e-9);
                    let values = timeline_values(update);
                    let overall = update.data.overall.expect("overall");
                    for s in values.dimensions().into_iter().chain(overall.dimensions()) {
                        prop_assert!((0.0..=100.0).contains(&s));
                    }
                }
            }
        }
    }
}
